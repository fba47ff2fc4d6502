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

	"github.com/extractq/extractq/internal/cli"
)

func main() {
	os.Exit(cli.Run(newSubmitCmd(), os.Args[1:], os.Stderr))
}
