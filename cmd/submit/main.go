// Command submit queues documents for extraction by the fleet: files,
// folders, JSONL or stdin, with a schema and a provider. It registers the
// schema, stores the documents in the audit database (so failed or
// outdated ones can be resubmitted without the original files), publishes
// one job per document to NATS JetStream and prints a summary; with --wait
// it follows the jobs until each is done.
//
//	submit --schema invoice.json --provider openai:gpt-4o-mini --run march ./invoices
//	submit resubmit --from-dlq --run march
//
// Exit codes (the same in extractq and worker, see package internal/cli):
// 0 all queued (and, with --wait, all succeeded); 1 some documents were
// rejected or failed, or --timeout passed; 2 bad usage, schema, provider or
// an empty input; 3 NATS or Postgres unreachable; 130 interrupted.
package main

import (
	"os"
	"runtime/debug"

	"github.com/extractq/extractq/internal/cli"
)

// defaultGOGC is submit's garbage collection target unless GOGC is set,
// the worker's: submit allocates about 7 KB per document (its NATS and
// Postgres clients included) against a live heap of a few hundred bytes
// per document (the job ids it follows), so at Go's default of 100 the
// collector runs several times a second. In BenchmarkSubmitDocument
// (submit and an embedded NATS server in one process) 400 took about 6%
// off the CPU per document (doc/performance-cpu.md, "Fourth pass:
// submit"), for a heap up to five times the live one.
const defaultGOGC = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
	}
	os.Exit(cli.Run(newSubmitCmd(), os.Args[1:], os.Stderr))
}
