package worker

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/llm"
)

// fixedProvider answers every call with the same response.
type fixedProvider struct{ resp *llm.Response }

func (p fixedProvider) Name() string                   { return "sim:fixed" }
func (p fixedProvider) Model() string                  { return "fixed" }
func (p fixedProvider) Capabilities() llm.Capabilities { return llm.Capabilities{} }
func (p fixedProvider) Chat(context.Context, llm.Request) (*llm.Response, error) {
	return p.resp, nil
}

// TestSlottedCallOnOwnSlot: a call on its job's own slot allocates
// nothing (a release function was made for each) and frees the slot, so
// the job's next call takes it again rather than a slot of the pool.
func TestSlottedCallOnOwnSlot(t *testing.T) {
	budget := NewSemaphore(1)
	prov := newCallSlots(budget).forJob(fixedProvider{resp: &llm.Response{Text: "{}"}})
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		if _, err := prov.Chat(ctx, llm.Request{}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a call on the job's own slot allocated %v times, want 0", n)
	}
	s := prov.(*slotted)
	if len(s.own) != 0 || len(budget) != 0 {
		t.Errorf("after the calls: own slot %d, pool slots %d in use; want 0 and 0", len(s.own), len(budget))
	}
}

// BenchmarkDeliveryGlue is a delivery's own setup around one call: its
// logger, its provider holding the job's slot, the call on that slot.
func BenchmarkDeliveryGlue(b *testing.B) {
	w := &Worker{log: slog.New(slog.NewJSONHandler(io.Discard, nil)).With("worker", "w1")}
	slots := newCallSlots(NewSemaphore(4))
	inner := fixedProvider{resp: &llm.Response{Text: "{}"}}
	env := &jobs.Envelope{JobID: "job-1", DocumentID: "doc-1", Run: "run-1"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d := &delivery{env: env, pool: "sim", seq: 7, n: 1}
		d.log = w.deliveryLogger(d)
		if _, err := slots.forJob(inner).Chat(ctx, llm.Request{}); err != nil {
			b.Fatal(err)
		}
	}
}
