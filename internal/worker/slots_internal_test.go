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
	prov := newCallSlots(budget).forJob(fixedProvider{resp: &llm.Response{Text: "{}"}}, new(slottedCompleter))
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
		if _, err := slots.forJob(inner, &d.calls).Chat(ctx, llm.Request{}); err != nil {
			b.Fatal(err)
		}
	}
}

// completerProvider is a fixedProvider with prefill mode (llm.Completer).
type completerProvider struct{ fixedProvider }

func (p completerProvider) Complete(context.Context, llm.CompletionRequest) (*llm.Response, error) {
	return p.resp, nil
}

// TestForJobInDelivery checks that a job's provider is made in its
// delivery: one allocation (the job's slot) where a wrapper of its own
// was three with a Completer, two without; that it keeps the Completer;
// and that a second run of the delivery gets a wrapper of its own.
func TestForJobInDelivery(t *testing.T) {
	slots := newCallSlots(NewSemaphore(1))
	for _, inner := range []llm.Provider{fixedProvider{}, completerProvider{}} {
		_, completer := inner.(llm.Completer)
		if n := testing.AllocsPerRun(100, func() {
			var d delivery
			if _, ok := slots.forJob(inner, &d.calls).(llm.Completer); ok != completer {
				t.Fatalf("%T: wrapped provider a Completer %v, want %v", inner, ok, completer)
			}
		}); n > 1 {
			t.Errorf("%T: forJob allocated %v times, want at most 1", inner, n)
		}
		var d delivery
		first, second := slots.forJob(inner, &d.calls), slots.forJob(inner, &d.calls)
		if slottedOf(first) != slottedOf(&d.calls) || slottedOf(second) == slottedOf(first) {
			t.Errorf("%T: first run's provider not the delivery's, or the second run's is the first's", inner)
		}
	}
}

// slottedOf is the slotted a provider forJob made is, or holds.
func slottedOf(p llm.Provider) *slotted {
	if sc, ok := p.(*slottedCompleter); ok {
		return &sc.slotted
	}
	return p.(*slotted)
}
