package jobs_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/jobs"
)

// TestMessageBatchIsSealedMessage builds the same jobs with a
// MessageBatch and with SealedMessage, whose allocations it shares out,
// and compares the messages: texts small and large (one above a quarter
// of a chunk, one in the Object Store), more messages than the batch was
// made for, and bodies that must not overlap.
func TestMessageBatchIsSealedMessage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := setup(t)
	p := jobs.NewPublisher(js, jobs.WithInlineLimit(200<<10), jobs.WithMaxDocument(1<<20))
	texts := []string{"short", "", strings.Repeat("ü", 1000), strings.Repeat("a", 70<<10), strings.Repeat("b", 300<<10), "tail"}
	for i := range 600 { // past a chunk of 256 KiB
		texts = append(texts, strings.Repeat("c", 300+i%700))
	}
	b := p.NewMessageBatch(len(texts) - 3)
	base := envelope("doc", "m")
	var got [][]byte
	for i, text := range texts {
		env, want := new(*base), new(*base)
		env.Seal(text)
		want.Seal(text)
		m, err := b.Sealed(ctx, env, text)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		w, err := p.SealedMessage(ctx, want, text)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if m.Subject != w.Subject || !bytes.Equal(m.Data, w.Data) || !reflect.DeepEqual(m.Header, w.Header) || m.Reply != w.Reply {
			t.Fatalf("%d: batch built %s %v %.200q, SealedMessage %s %v %.200q", i, m.Subject, m.Header, m.Data, w.Subject, w.Header, w.Data)
		}
		if i < len(texts)-3 && cap(m.Data) != len(m.Data) {
			t.Fatalf("%d: body has %d bytes of room after it: an append would write into the next", i, cap(m.Data)-len(m.Data))
		}
		got = append(got, m.Data)
	}
	// Every body still holds its own job once all are built.
	for i, text := range texts {
		want := new(*base)
		want.Seal(text)
		w, err := p.SealedMessage(ctx, want, text)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[i], w.Data) {
			t.Fatalf("%d: body changed after later ones were built", i)
		}
	}
}

// TestMessageBatchAllocations checks the point of a MessageBatch: fewer
// allocations per message than SealedMessage.
func TestMessageBatchAllocations(t *testing.T) {
	ctx := t.Context()
	p := jobs.NewPublisher(nil)
	env := envelope("doc", "m")
	env.Seal("some text")
	one := testing.AllocsPerRun(200, func() {
		if _, err := p.SealedMessage(ctx, env, "some text"); err != nil {
			t.Fatal(err)
		}
	})
	b := p.NewMessageBatch(1000)
	batched := testing.AllocsPerRun(200, func() {
		if _, err := b.Sealed(ctx, env, "some text"); err != nil {
			t.Fatal(err)
		}
	})
	if batched > one-2 {
		t.Fatalf("%.1f allocations per message in a batch, %.1f alone: want at least two fewer", batched, one)
	}
}

// TestMessageBatchTailFollowsEnvelope: a MessageBatch encodes the end of
// an envelope (schema, provider, model, pool, options, time,
// resubmission) once and reuses it while it stays the same; every change
// of one of those fields, and a pointed-to option changed in place, must
// still give SealedMessage's body.
func TestMessageBatchTailFollowsEnvelope(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	p := jobs.NewPublisher(nil)
	at := time.Date(2026, 11, 27, 6, 0, 0, 123456789, time.UTC)
	three := 3
	changes := []func(*jobs.Envelope){
		func(*jobs.Envelope) {},
		func(e *jobs.Envelope) { e.Schema.Name = "receipt" },
		func(e *jobs.Envelope) { e.Schema.Version = 2 },
		func(e *jobs.Envelope) { e.Schema.Fingerprint = "sha256:def<&>" },
		func(e *jobs.Envelope) { e.Provider = "sim:other" },
		func(e *jobs.Envelope) { e.Model = "other" },
		func(e *jobs.Envelope) { e.Pool = "sim_other" },
		func(e *jobs.Envelope) { e.Options.Mode = "json" },
		func(e *jobs.Envelope) { e.Options.Chunking, e.Options.Input = "off", "text" },
		func(e *jobs.Envelope) { e.Options.MaxReasks = &three },
		func(e *jobs.Envelope) { e.SubmittedAt = at.Add(time.Nanosecond) },
		func(e *jobs.Envelope) { e.SubmittedAt = at.Add(-123456789) }, // no fraction
		func(e *jobs.Envelope) { e.SubmittedAt = at.In(time.FixedZone("X", 3600)) },
		func(e *jobs.Envelope) { e.SubmittedAt = time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC) }, // json.Marshal fails on it
		func(e *jobs.Envelope) { e.Resubmission = "dlq:7" },
		func(e *jobs.Envelope) { e.Run = "" }, // before the tail: not in it
	}
	b := p.NewMessageBatch(10 * len(changes))
	for round := range 3 {
		for i, change := range changes {
			for k := range 3 { // the same tail several times, then back to the base
				env := &jobs.Envelope{DocumentID: fmt.Sprintf("d%d-%d-%d", round, i, k), Run: "r1", Provider: "sim:m", Model: "m", Pool: "sim_m",
					Schema: jobs.SchemaRef{Name: "invoice", Version: 1, Fingerprint: "sha256:abc"}, SubmittedAt: at}
				if k < 2 {
					change(env)
				}
				text := fmt.Sprintf("text %d <%d>", i, k)
				env.Seal(text)
				want := new(*env)
				m, err := b.Sealed(ctx, env, text)
				w, werr := p.SealedMessage(ctx, want, text)
				if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
					t.Fatalf("change %d, job %d: batch %v, SealedMessage %v", i, k, err, werr)
				}
				if err != nil {
					continue
				}
				if !bytes.Equal(m.Data, w.Data) {
					t.Fatalf("change %d, job %d: batch built\n%s\nSealedMessage\n%s", i, k, m.Data, w.Data)
				}
				if k == 0 {
					three++ // an option pointed to changes in place before the next job
				}
			}
		}
	}
}
