package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/llm"
)

// store stands in for the audit writer: it fails when told to.
type store struct{ fail error }

func (s *store) Write(context.Context, *audit.Record) error { return s.fail }

func TestWriterAnnouncesFinalRecordsOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	if err := events.Ensure(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	pub := events.NewPublisher(js, 16, func(err error) { t.Error(err) })
	next := &store{}
	w := &events.Writer{Next: next, Pub: pub}
	ok := &audit.Record{JobID: "j1", DocumentID: "d1", Run: "nightly.2026-11-26", Final: true, Outcome: llm.OutcomeOK, Value: json.RawMessage(`{}`)}
	dead := &audit.Record{JobID: "j2", DocumentID: "d2", Run: "nightly.2026-11-26", Final: true, Outcome: llm.OutcomeExhausted, DeadLetter: &audit.DeadLetter{Reason: "invalid after 3 re-asks"}}
	open := &audit.Record{JobID: "j3", Run: "nightly.2026-11-26", Final: false, Outcome: llm.OutcomeTransport}
	for _, rec := range []*audit.Record{ok, dead, open, ok} { // ok twice: a redelivery
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	next.fail = errors.New("audit down")
	if err := w.Write(ctx, &audit.Record{JobID: "j4", Run: "nightly.2026-11-26", Final: true, Outcome: llm.OutcomeOK}); !errors.Is(err, next.fail) {
		t.Fatalf("a failed audit write: %v, want its error (and no event)", err)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pub.Emit(ctx, events.Event{}); !errors.Is(err, events.ErrClosed) {
		t.Errorf("Emit after Close: %v", err)
	}

	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.FetchNoWait(10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range batch.Messages() {
		var e events.Event
		if err := json.Unmarshal(m.Data(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Run != "nightly.2026-11-26" {
			t.Errorf("event run %q", e.Run)
		}
		got = append(got, m.Subject()+" "+e.JobID+" "+e.Reason)
	}
	want := []string{
		"extractq.events.nightly_2026-11-26.result j1 ",
		"extractq.events.nightly_2026-11-26.dead_letter j2 invalid after 3 re-asks",
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestSubjectEscapesReservedCharacters(t *testing.T) {
	t.Parallel()
	for run, want := range map[string]string{"march": "extractq.events.march.done", "a.b c*>": "extractq.events.a_b_c__.done", "": "extractq.events._.done"} {
		if got := events.Subject(run, events.KindDone); got != want {
			t.Errorf("Subject(%q) = %q, want %q", run, got, want)
		}
	}
}

// BenchmarkWriterHandOver is what announcing costs a worker per final
// job while the publisher keeps up: the hand-over on top of the audit
// write (a no-op here; compare BenchmarkWriterBare). The buffer holds
// every event, so the worker never waits.
func BenchmarkWriterHandOver(b *testing.B) { benchWriter(b, 1<<20) }

// BenchmarkWriterSustained is the publisher's throughput: with a small
// buffer the writer waits for the server, so ns/op is the time per event
// published and acked.
func BenchmarkWriterSustained(b *testing.B) { benchWriter(b, 256) }

func benchWriter(b *testing.B, buffer int) {
	_, js := jobstest.Connect(b, jobstest.Server(b), jetstream.WithPublishAsyncMaxPending(1024))
	if err := events.Ensure(b.Context(), js, 1); err != nil {
		b.Fatal(err)
	}
	pub := events.NewPublisher(js, buffer, nil)
	w := &events.Writer{Next: &store{}, Pub: pub}
	rec := &audit.Record{JobID: "j", DocumentID: "d", Run: "bench", Final: true, Outcome: llm.OutcomeOK, FinishedAt: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(b.Context(), rec); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := pub.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkWriterBare(b *testing.B) {
	var w audit.Writer = &store{}
	rec := &audit.Record{JobID: "j", Final: true, Outcome: llm.OutcomeOK}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Write(b.Context(), rec); err != nil {
			b.Fatal(err)
		}
	}
}
