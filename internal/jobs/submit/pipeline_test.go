package submit_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
)

// orderStore is the audit store, and checks at every PutDocuments that
// each job already on the stream was stored by an earlier call.
type orderStore struct {
	*audit.Store
	js     jetstream.JetStream
	mu     sync.Mutex
	stored map[string]bool
	calls  int
	errs   []error
}

func (s *orderStore) PutDocuments(ctx context.Context, docs []audit.Document) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	st, err := s.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		return err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return err
	}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		env, err := jobs.DecodeEnvelope(m.Data)
		if err != nil {
			return err
		}
		if !s.stored[env.DocumentID] {
			s.errs = append(s.errs, errors.New("job of "+env.DocumentID+" was published before its document was stored"))
		}
	}
	for _, d := range docs {
		s.stored[d.ID] = true
	}
	return s.Store.PutDocuments(ctx, docs)
}

// TestSubmitStoresEachBatchBeforePublishingIt checks the order submit
// keeps while a batch is stored as the one before it waits for its acks:
// no job is ever on the stream before its document is in the audit.
func TestSubmitStoresEachBatchBeforePublishingIt(t *testing.T) {
	e := setup(t)
	st := &orderStore{Store: e.store, js: e.js, stored: map[string]bool{}}
	sub := submit.New(e.js, st, submit.WithBatch(3))
	in := docs(10)
	sum, err := sub.Submit(t.Context(), e.job(e.v1), func(fn func(submit.Doc) error) error {
		for _, d := range in {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Queued != len(in) || len(sum.JobIDs) != len(in) {
		t.Fatalf("submit: %+v, want %d queued", sum, len(in))
	}
	if st.calls != 4 {
		t.Errorf("%d PutDocuments calls, want 4 (batches of 3)", st.calls)
	}
	for _, err := range st.errs {
		t.Error(err)
	}
	if n := e.msgs(t, jobs.JobsStream); n != uint64(len(in)) {
		t.Errorf("%d jobs on the stream, want %d", n, len(in))
	}
}

// TestSubmitCancelStopsThePipeline: cancelling the context while batches
// are on their way returns the context's error, and every batch the summary
// counts as queued is on the stream.
func TestSubmitCancelStopsThePipeline(t *testing.T) {
	e := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	in := docs(30)
	sum, err := e.sub.Submit(ctx, e.job(e.v1), func(fn func(submit.Doc) error) error {
		for i, d := range in {
			if i == 10 {
				cancel()
			}
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := e.msgs(t, jobs.JobsStream); sum.Queued > int(n) || sum.Queued > 10 {
		t.Errorf("%d counted queued, %d on the stream, 10 read before the cancel", sum.Queued, n)
	}
}

// TestWarm checks that Warm readies as many audit connections as Submit
// stages batches at once (four), and leaves a store that cannot warm
// alone.
func TestWarm(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	pool := e.store.Pool()
	pool.Reset() // only the warm-up's connections are counted below
	if err := submit.New(e.js, e.store).Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := pool.Stat().IdleConns(), min(4, pool.Config().MaxConns); got != want {
		t.Errorf("%d audit connections open after Warm, want %d", got, want)
	}
	pool.Reset()
	plain := struct{ submit.Store }{e.store} // no WarmForSubmit
	if err := submit.New(e.js, plain).Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pool.Stat().TotalConns(); got != 0 {
		t.Errorf("Warm opened %d connections of a store that cannot warm", got)
	}
}
