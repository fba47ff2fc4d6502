package worker

import (
	"context"
	"testing"

	"github.com/extractq/extractq/internal/audit"
)

// doneWriter takes every record at once, looking at its context as
// audit.GroupWriter does.
type doneWriter struct{}

func (doneWriter) Write(ctx context.Context, _ *audit.Record) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}

// BenchmarkAuditWrite is a write's own cost around the writer: its
// deadline context.
func BenchmarkAuditWrite(b *testing.B) {
	w := &Worker{writer: doneWriter{}}
	rec := &audit.Record{JobID: "job-1", DocumentID: "doc-1"}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.write(rec); err != nil {
			b.Fatal(err)
		}
	}
}
