package worker

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/extractq/extractq/internal/jobs"
)

// TestJobLoggerWritesWhatWithWould checks that a job's logger, which keeps
// its attributes unformatted until a record is logged, writes the same
// lines as the handler's own With, including groups and levels below the
// handler's.
func TestJobLoggerWritesWhatWithWould(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		log  func(l *slog.Logger)
	}{
		{"attrs", func(l *slog.Logger) { l.With("pool", "p").With("job_id", "j1", "attempt", 2).Info("done", "tokens", 7) }},
		{"group", func(l *slog.Logger) { l.With("pool", "p").WithGroup("g").With("k", 1).Warn("x", "v", true) }},
		{"below level", func(l *slog.Logger) { l.With("pool", "p").Debug("not written") }},
		{"no attrs", func(l *slog.Logger) { l.Error("bare") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var want, got bytes.Buffer
			opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}
			base := func(b *bytes.Buffer) *slog.Logger { return slog.New(slog.NewJSONHandler(b, opts)).With("worker", "w1") }
			tc.log(base(&want))
			tc.log(jobLogger(base(&got)))
			if got.String() != want.String() {
				t.Errorf("job logger wrote\n%s\nwant\n%s", got.String(), want.String())
			}
		})
	}
}

// TestDeliveryLoggerInPlace: a delivery's logger costs no allocation of
// its own (it lives in the delivery) and writes the lines the handler's
// own With would.
func TestDeliveryLoggerInPlace(t *testing.T) {
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	var want, got bytes.Buffer
	w := &Worker{log: slog.New(slog.NewJSONHandler(&got, opts)).With("worker", "w1")}
	d := &delivery{env: &jobs.Envelope{JobID: "j1", DocumentID: "d1", Run: "r1"}, pool: "p", seq: 7, n: 2}
	if n := testing.AllocsPerRun(100, func() { w.deliveryLogger(d) }); n != 0 {
		t.Errorf("deliveryLogger allocated %v times, want 0", n)
	}
	w.deliveryLogger(d).With("k", 1).Warn("held", "v", true)
	slog.New(slog.NewJSONHandler(&want, opts)).With("worker", "w1").
		With("pool", "p", "stream_seq", uint64(7), "attempt", 2, "job_id", "j1", "document_id", "d1", "run", "r1").
		With("k", 1).Warn("held", "v", true)
	if got.String() != want.String() {
		t.Errorf("delivery logger wrote\n%s\nwant\n%s", got.String(), want.String())
	}
}
