// The peer of bench/cost: instructor-js (@instructor-ai/instructor) with
// the openai client and a zod schema mirroring examples/invoice.schema.json,
// extracting every document of a JSONL file against an OpenAI-compatible
// endpoint. One JSON line per document on stdout: {"id", "value"} or
// {"id", "error"}.
//
//   node peer.mjs BASE_URL MODE CONCURRENCY MAX_RETRIES DOCS.jsonl
import { readFileSync } from "node:fs";
import Instructor from "@instructor-ai/instructor";
import OpenAI from "openai";
import { z } from "zod";

const [baseURL, mode, concurrency, maxRetries, docsPath] = process.argv.slice(2);
const docs = readFileSync(docsPath, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));

const Invoice = z.object({
  invoice_number: z.string().min(1).describe("The invoice's own number or reference"),
  issue_date: z.string().date().describe("ISO 8601 date the invoice was issued"),
  due_date: z.string().date().nullable().optional(),
  vendor: z.object({
    name: z.string().min(1),
    address: z.string().optional(),
    tax_id: z.string().optional(),
  }),
  customer: z.string().min(1),
  currency: z.enum(["EUR", "USD", "GBP", "SEK", "INR", "CAD", "JPY"]),
  line_items: z.array(z.object({
    description: z.string().min(1),
    quantity: z.number().gt(0),
    unit_price: z.number().min(0),
    amount: z.number().min(0),
  })).min(1),
  tax: z.number().min(0).optional(),
  total: z.number().min(0),
}).describe("The fields of a supplier invoice.");

// maxRetries 0 on the client: the simulator profile of the benchmark
// injects no transport faults, and instructor's own re-asks are what is
// compared. retryAllErrors: a JSON syntax error is re-asked too, as
// extractq re-asks it (without it instructor gives up at once).
const client = Instructor({
  client: new OpenAI({ apiKey: "sk-sim-bench", baseURL, maxRetries: 0 }),
  mode,
  retryAllErrors: true,
});

let next = 0;
async function worker() {
  while (next < docs.length) {
    const d = docs[next++];
    let line;
    try {
      const out = await client.chat.completions.create({
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: d.text }],
        response_model: { schema: Invoice, name: "invoice" },
        max_retries: Number(maxRetries),
      });
      delete out._meta;
      line = { id: d.id, value: out };
    } catch (e) {
      line = { id: d.id, error: String(e && e.message ? e.message : e).slice(0, 300) };
    }
    process.stdout.write(JSON.stringify(line) + "\n");
  }
}
await Promise.all(Array.from({ length: Number(concurrency) }, worker));
