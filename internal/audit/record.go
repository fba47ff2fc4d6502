// Package audit is extractq's memory in PostgreSQL: migrations, a
// group-commit writer for attempts and results, and the queries behind status,
// history, export and resubmission.
package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/extractq/extractq/llm"
)

// Record is everything one delivery of one job produced. The worker hands it
// to a Writer and acks the job only after Write returns nil.
type Record struct {
	JobID             string
	DocumentID        string
	DocumentHash      string // sha256 of the document text, hex: keys the result (each text of a document gets its own)
	Run               string
	SchemaName        string
	SchemaVersion     int
	SchemaFingerprint string
	Provider          string // provider string, e.g. "openai:gpt-4o-mini"
	Model             string
	Pool              string
	Delivery          int // JetStream delivery count, 1-based
	WorkerID          string
	StartedAt         time.Time
	FinishedAt        time.Time

	Attempts []llm.Attempt
	Outcome  llm.Outcome
	Reason   string          // readable reason when not ok
	Value    json.RawMessage // the validated value when Outcome is ok
	// Sources say where each value of Value was found (page, range within
	// the page, box, snippet), keyed by JSON pointer; stored with the
	// result. nil when the result has none.
	Sources map[string]llm.Source
	Usage   llm.Usage // summed over Attempts

	// Final is false when the job will be redelivered (a transport outage
	// nak'd with delay): attempts are recorded, the job stays open.
	Final bool
	// DeadLetter is set when the job was moved to the dead-letter stream.
	DeadLetter *DeadLetter
}

// DeadLetter references a message in the dead-letter stream.
type DeadLetter struct {
	Stream string // e.g. "EXTRACTQ_DLQ"
	// Seq is the letter's stream sequence; 0 records the letter before it
	// is published (Store.SetDeadLetterSeq sets it after).
	Seq    uint64
	Reason string
}

// Writer makes records durable. Write blocks until the record's rows are
// committed (group commit) or ctx ends; a nil error means durable. Writing the
// same job's final record twice creates no duplicate result.
type Writer interface {
	Write(ctx context.Context, rec *Record) error
}

// TimedWriter is a Writer that can also wait for a record with a
// deadline of its own (GroupWriter, and writers over one that pass it
// on), making no context for it.
type TimedWriter interface {
	Writer
	// WriteWithin is Write with a deadline timeout from now.
	WriteWithin(rec *Record, timeout time.Duration) error
}

// WriteWithin writes rec through w within timeout: by w's WriteWithin
// when it is a TimedWriter, else by Write with a context.WithTimeout.
func WriteWithin(w Writer, rec *Record, timeout time.Duration) error {
	if tw, ok := w.(TimedWriter); ok {
		return tw.WriteWithin(rec, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return w.Write(ctx, rec)
}
