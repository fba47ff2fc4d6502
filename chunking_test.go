package extractq_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// longInvoice is a document with n line items in filler text.
func longInvoice(n, fillerPerItem int) (string, []string) {
	var b strings.Builder
	b.WriteString("Invoice number: INV-77\n\n")
	var skus []string
	for i := range n {
		b.WriteString(strings.Repeat("The parties agree to the delivery schedule and the payment terms. ", fillerPerItem))
		b.WriteString("\n\n")
		sku := fmt.Sprintf("SKU-%03d", i+1)
		skus = append(skus, sku)
		fmt.Fprintf(&b, "Item: sku=%s; description=Part number %d; quantity=%d; unit_price=%d.50\n\n", sku, i+1, i+2, i+10)
	}
	return b.String(), skus
}

const invoiceSchema = `{"type":"object","required":["invoice_number","items"],"properties":{
"invoice_number":{"type":"string"},
"items":{"type":"array","minItems":1,"items":{"type":"object","required":["sku","quantity"],"properties":{
"sku":{"type":"string"},"description":{"type":"string"},"quantity":{"type":"integer"},"unit_price":{"type":"number"}}}}}}`

func TestChunkedExtractionLongerThanWindow(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(invoiceSchema))
	if err != nil {
		t.Fatal(err)
	}
	doc, skus := longInvoice(30, 40) // ~25k tokens, a 4k-token model
	for _, tt := range []struct {
		profile string
		opts    []extractq.Option
	}{
		{"clean", nil},
		{"sloppy", []extractq.Option{extractq.WithMaxReasks(6)}},
	} {
		t.Run(tt.profile, func(t *testing.T) {
			t.Parallel()
			p, err := extractqtest.Simulator(tt.profile + "/sim-4k")
			if err != nil {
				t.Fatal(err)
			}
			// Sent whole, the document does not fit: the simulator answers
			// 400 context_length_exceeded as the real APIs do.
			_, err = extractq.Extract(t.Context(), doc, s, extractq.WithProvider(p), extractq.WithChunking(extractq.ChunkOff))
			var pe *llm.Error
			if !errors.As(err, &pe) || pe.Class != llm.ClassContextLength {
				t.Fatalf("whole document: want a context_length error, got %v", err)
			}
			res, err := extractq.Extract(t.Context(), doc, s, append([]extractq.Option{extractq.WithProvider(p)}, tt.opts...)...)
			if err != nil {
				t.Fatalf("chunked: %v", err)
			}
			if len(res.Chunks) < 2 {
				t.Fatalf("document was not split: %d chunks", len(res.Chunks))
			}
			var v struct {
				Invoice string `json:"invoice_number"`
				Items   []struct {
					SKU      string `json:"sku"`
					Quantity int    `json:"quantity"`
				} `json:"items"`
			}
			if err := json.Unmarshal(res.Value, &v); err != nil {
				t.Fatal(err)
			}
			if v.Invoice != "INV-77" {
				t.Errorf("invoice number %q", v.Invoice)
			}
			var got []string
			for _, it := range v.Items {
				got = append(got, it.SKU)
			}
			if tt.profile == "sloppy" {
				// Sloppy answers that drop a field or the item list are
				// re-asked (the part's schema keeps them required, null
				// allowed): every item comes through. Order may differ
				// where a part's answer was re-asked.
				slices.Sort(got)
				if strings.Join(got, ",") != strings.Join(skus, ",") {
					t.Errorf("sloppy: items %v\nwant  %v", got, skus)
				}
				return
			}
			if strings.Join(got, ",") != strings.Join(skus, ",") {
				t.Errorf("items %v\nwant  %v", got, skus)
			}
			runes := []rune(doc)
			for i, sku := range skus {
				src, ok := res.Sources[fmt.Sprintf("/items/%d/sku", i)]
				if !ok || string(runes[src.Start:src.End]) != sku {
					t.Errorf("item %d: source %+v does not point at %s", i, src, sku)
				}
				q := res.Sources[fmt.Sprintf("/items/%d/quantity", i)]
				if line := string(runes[:q.Start]); !strings.Contains(line[strings.LastIndex(line, "\n")+1:], sku) {
					t.Errorf("item %d: quantity source is not on its item's line", i)
				}
			}
			for _, a := range res.Attempts {
				if a.Chunk == nil {
					t.Errorf("attempt %d has no chunk span", a.N)
				}
			}
		})
	}
}

func TestChunkedFailureNamesChunk(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(invoiceSchema))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := longInvoice(6, 30)
	p := extractqtest.New(nil, extractqtest.WithResponder(func(int, llm.Request) extractqtest.Reply {
		return extractqtest.Text("not json at all")
	}))
	res, err := extractq.Extract(t.Context(), doc, s, extractq.WithProvider(p), extractq.WithChunking(extractq.ChunkSize(500)), extractq.WithMaxReasks(0))
	if !errors.Is(err, extractq.ErrExhausted) {
		t.Fatalf("want ErrExhausted, got %v", err)
	}
	if res.FailedChunk == nil || !strings.Contains(err.Error(), "chunk ") {
		t.Fatalf("the error does not say which chunk failed: %v (failed chunk %v)", err, res.FailedChunk)
	}
}

// Two parts state different invoice numbers: the final call sees both
// candidates as labelled lines with their passages and settles the field
// with one of them, which the simulator (reading "field: value" lines) can
// do as a model would; the conflict must not end as a violation.
func TestChunkedConflictResolvedByFinalCall(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(invoiceSchema))
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := longInvoice(12, 40)
	doc += "\n\nInvoice number: INV-78\n"
	p, err := extractqtest.Simulator("clean/sim-4k")
	if err != nil {
		t.Fatal(err)
	}
	res, err := extractq.Extract(t.Context(), doc, s, extractq.WithProvider(p))
	if err != nil {
		t.Fatalf("chunked extraction with a conflict: %v", err)
	}
	var v struct {
		Invoice string `json:"invoice_number"`
	}
	if err := json.Unmarshal(res.Value, &v); err != nil {
		t.Fatal(err)
	}
	if v.Invoice != "INV-77" && v.Invoice != "INV-78" {
		t.Errorf("invoice number %q is neither candidate", v.Invoice)
	}
	final := 0
	for _, a := range res.Attempts {
		if a.Chunk == nil {
			final++
		}
	}
	if final == 0 {
		t.Errorf("no conflict-resolution attempt recorded (%d attempts)", len(res.Attempts))
	}
}

// A server that leaves out a nullable key (several OpenAI-compatible ones
// do with null values) answers a part without invoice_number where the
// part lacks it: each part is judged by its relaxed schema, where a field
// left out is null, not by the strict wire form, so the document
// succeeds on first answers.
func TestChunkedPartsMayLeaveOutNullableFields(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(invoiceSchema))
	if err != nil {
		t.Fatal(err)
	}
	doc, skus := longInvoice(8, 30)
	item := regexp.MustCompile(`sku=(SKU-\d+); description=([^;]+); quantity=(\d+)`)
	p := extractqtest.New(nil, extractqtest.WithModes(llm.ModeStrict), extractqtest.WithResponder(func(_ int, r llm.Request) extractqtest.Reply {
		var text string
		for _, m := range r.Messages {
			text += m.Content
		}
		out := map[string]any{}
		if strings.Contains(text, "Invoice number: INV-77") {
			out["invoice_number"] = "INV-77"
		}
		items := []any{}
		for _, m := range item.FindAllStringSubmatch(text, -1) {
			q, _ := strconv.Atoi(m[3])
			items = append(items, map[string]any{"sku": m[1], "description": m[2], "quantity": q})
		}
		out["items"] = items
		b, _ := json.Marshal(out)
		return extractqtest.Text(string(b))
	}))
	res, err := extractq.Extract(t.Context(), doc, s, extractq.WithProvider(p), extractq.WithMode(llm.ModeStrict),
		extractq.WithChunking(extractq.ChunkSize(500)), extractq.WithMaxReasks(0))
	if err != nil {
		t.Fatalf("a part without the nullable key failed the document: %v", err)
	}
	if len(res.Chunks) < 2 {
		t.Fatalf("the document was not split: %d chunks", len(res.Chunks))
	}
	var v struct {
		Items []struct{ SKU string } `json:"items"`
	}
	if err := json.Unmarshal(res.Value, &v); err != nil || len(v.Items) != len(skus) {
		t.Fatalf("merged %d items of %d: %s", len(v.Items), len(skus), res.Value)
	}
}
