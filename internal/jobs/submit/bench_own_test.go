package submit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
)

// BenchmarkSubmitOwnWork submits b.N documents of the fleet benchmark's
// kind as BenchmarkSubmitDocument does, but to a JetStream stand-in that
// acks every publish at once without a server, and to an audit store
// stand-in that stores nothing: what it measures is the Go work submit
// does per document beyond the NATS client and server and the Postgres
// round trips (the read callback's checks, hashing, the job ids, the
// envelopes and messages, the pipeline, settling). Measure it with
// instruction counts (callgrind, at N and 2N); the audit store's own
// encoding is internal/audit's BenchmarkPutDocumentsEncode.
//
//	go test -c -o submit.test ./internal/jobs/submit/
//	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind ./submit.test -test.run '^$' -test.bench SubmitOwnWork -test.benchtime 20000x
func BenchmarkSubmitOwnWork(b *testing.B) {
	js := newAckingJS()
	sub := submit.New(js, nopStore{})
	job := submit.Job{Schema: jobs.SchemaRef{Name: "thing", Version: 1, Fingerprint: "0c6f3f1d7a0e9d5b4c3a2f1e0d9c8b7a6f5e4d3c2b1a09f8e7d6c5b4a3928170"},
		Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini", Pool: "openai_gpt-4o-mini", Run: "r1"}
	in := benchInput(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	sum, err := submitDocs(b.Context(), sub, job, in)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if sum.Queued != b.N {
		b.Fatalf("queued %d of %d: %+v", sum.Queued, b.N, sum.Rejected)
	}
}

// BenchmarkSubmitOwnWorkInput builds BenchmarkSubmitOwnWork's input
// alone: its instructions per document are to be subtracted from that
// benchmark's (under callgrind both count the input, made outside the
// timer).
func BenchmarkSubmitOwnWorkInput(b *testing.B) {
	if in := benchInput(b.N); len(in) != b.N {
		b.Fatal(len(in))
	}
}

// benchInput is n documents of the fleet benchmark's kind.
func benchInput(n int) []submit.Doc {
	in := make([]submit.Doc, n)
	for i := range in {
		in[i] = submit.Doc{ID: fmt.Sprintf("doc-%07d", i), Source: "bench", Text: fleettest.Document(i)}
	}
	return in
}

// nopStore is an audit store where nothing is final and storing succeeds.
type nopStore struct{ submit.Store }

func (nopStore) PutDocuments(context.Context, []audit.Document) error { return nil }

func (nopStore) LookUpSubmitted(context.Context, string, string, []string, []audit.TextKey) (map[string]audit.JobState, map[audit.TextKey]bool, error) {
	return map[string]audit.JobState{}, map[audit.TextKey]bool{}, nil
}

// ackingJS is a JetStream context whose publishes are acked at once, with
// no allocation per publish: every future is the same one, and each
// publish puts one ack into its channel for the window to take.
type ackingJS struct {
	jetstream.JetStream
	f *ackedFuture
}

type ackedFuture struct {
	ok  chan *jetstream.PubAck
	err chan error
	ack jetstream.PubAck
}

func newAckingJS() *ackingJS {
	f := &ackedFuture{ok: make(chan *jetstream.PubAck, 1<<16), err: make(chan error), ack: jetstream.PubAck{Stream: jobs.JobsStream, Sequence: 1}}
	return &ackingJS{f: f}
}

func (j *ackingJS) PublishMsgAsync(*nats.Msg, ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	j.f.ok <- &j.f.ack
	return j.f, nil
}

func (j *ackingJS) PublishAsyncPending() int { return len(j.f.ok) }

func (f *ackedFuture) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f *ackedFuture) Err() <-chan error            { return f.err }
func (f *ackedFuture) Msg() *nats.Msg               { return nil }
