package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/llm"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/schema"
)

const pool = "sim_test"

// memAudit is an audit.Writer and worker.AuditReader in memory that can
// be told to fail.
type memAudit struct {
	mu     sync.Mutex
	recs   []audit.Record
	fail   atomic.Int32 // number of writes to fail
	lost   atomic.Int32 // number of writes stored but reported failed (a commit whose reply was lost)
	down   atomic.Bool  // every write and read fails while set
	writes atomic.Int64 // write calls, failed or not
	// gate, when set, holds every write until it is closed (a slow group
	// commit).
	gate atomic.Pointer[chan struct{}]
}

var _ worker.AuditReader = (*memAudit)(nil)

var errDBDown = errors.New("database down: connection refused")

func (m *memAudit) Write(ctx context.Context, rec *audit.Record) error {
	m.writes.Add(1)
	if g := m.gate.Load(); g != nil {
		select {
		case <-*g:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if rec.JobID == "" || rec.DocumentID == "" { // as the real store refuses
		return errors.New("record needs a JobID and a DocumentID")
	}
	if m.down.Load() {
		return errDBDown
	}
	if m.fail.Load() > 0 {
		m.fail.Add(-1)
		return errDBDown
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, *rec)
	if m.lost.Load() > 0 {
		m.lost.Add(-1)
		return errors.New("commit outcome unknown: connection reset")
	}
	return nil
}

// JobStates answers as the real store does: the last delivery's status,
// and whether the job's document has a result for its schema and model.
func (m *memAudit) JobStates(_ context.Context, ids []string) (map[string]audit.JobState, error) {
	if m.down.Load() {
		return nil, errDBDown
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]audit.JobState{}
	for _, id := range ids {
		for _, r := range m.recs {
			if r.JobID != id {
				continue
			}
			st := out[id]
			st.Status = audit.StatusRetrying
			if r.Final {
				st.Status = string(r.Outcome)
			}
			if r.DeadLetter != nil && !st.DeadLettered {
				st.DeadLettered, st.DeadLetterSeq, st.DeadLetterReason = true, r.DeadLetter.Seq, r.DeadLetter.Reason
			}
			for _, o := range m.recs {
				if o.Final && o.Outcome == llm.OutcomeOK && o.DocumentID == r.DocumentID && o.SchemaFingerprint == r.SchemaFingerprint && o.Model == r.Model {
					st.HasResult = true
				}
			}
			out[id] = st
		}
	}
	return out, nil
}

// SetDeadLetterSeq sets the sequence of the job's letter recorded at 0,
// as the real store does (a set sequence is kept).
func (m *memAudit) SetDeadLetterSeq(_ context.Context, jobID string, seq uint64) error {
	if m.down.Load() {
		return errDBDown
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range m.recs {
		if r.JobID == jobID && r.DeadLetter != nil && r.DeadLetter.Seq == 0 {
			d := *r.DeadLetter
			d.Seq = seq
			m.recs[i].DeadLetter = &d
		}
	}
	return nil
}

// put stores rec as if an earlier process had written it.
func (m *memAudit) put(rec audit.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, rec)
}

func (m *memAudit) records(doc string) []audit.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Record
	for _, r := range m.recs {
		if r.DocumentID == doc {
			out = append(out, r)
		}
	}
	return out
}

// scripted is an engine whose outcome per document and delivery is given
// by the test.
type scripted struct {
	mu    sync.Mutex
	calls map[string]int
	plan  func(doc string, call int, ctx context.Context) *llm.Result
}

func (s *scripted) Extract(ctx context.Context, _ llm.Provider, document string, _ *schema.Schema, _ jobs.Options) (*llm.Result, error) {
	s.mu.Lock()
	s.calls[document]++
	n := s.calls[document]
	s.mu.Unlock()
	return s.plan(document, n, ctx), nil
}

func (s *scripted) count(doc string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[doc]
}

func ok() *llm.Result {
	return &llm.Result{Outcome: llm.OutcomeOK, Value: json.RawMessage(`{"a":1}`), Attempts: []llm.Attempt{{N: 1, Raw: `{"a":1}`}}}
}

type fixture struct {
	js     jetstream.JetStream
	audit  *memAudit
	engine *scripted
	pub    *jobs.Publisher
	cancel context.CancelFunc
	done   chan error
	w      *worker.Worker
}

// fastCircuit opens after 3 failures for 100ms, doubling up to 400ms.
var fastCircuit = ratelimit.BreakerSettings{Failures: 3, Open: 100 * time.Millisecond, MaxOpen: 400 * time.Millisecond}

// start runs a worker of one pool on an embedded server with a scripted
// engine.
func start(t *testing.T, plan func(doc string, call int, ctx context.Context) *llm.Result, cs jobs.ConsumerSettings, opts ...worker.Option) *fixture {
	t.Helper()
	e := &scripted{calls: map[string]int{}, plan: plan}
	f := startEngine(t, e, cs, opts...)
	f.engine = e
	return f
}

// startEngine runs a worker of one pool with engine e on an embedded
// server.
func startEngine(t *testing.T, e worker.Engine, cs jobs.ConsumerSettings, opts ...worker.Option) *fixture {
	t.Helper()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	ctx := context.Background()
	if err := jobs.EnsureStreams(ctx, js, jobs.WithMemoryStorage()); err != nil {
		t.Fatal(err)
	}
	sch, err := schema.Compile([]byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := jobs.NewSchemas(js).Put(ctx, jobs.SchemaBody{Name: "s", Version: 1, Fingerprint: sch.Fingerprint(), Body: sch.JSON()}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{js: js, audit: &memAudit{}, pub: jobs.NewPublisher(js)}
	all := append([]worker.Option{
		worker.WithID("w-test"), worker.WithPools(worker.Pool{Name: pool, Concurrency: 2}),
		worker.WithConsumerSettings(cs), worker.WithPullWait(200 * time.Millisecond),
		worker.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))),
		worker.WithProviders(func(spec string) (llm.Provider, error) { return extractqtest.New(nil), nil }),
		worker.WithCircuit(fastCircuit),
	}, opts...)
	f.w, err = worker.New(js, f.audit, e, all...)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	f.cancel, f.done = cancel, make(chan error, 1)
	go func() { f.done <- f.w.Run(rctx) }()
	t.Cleanup(func() { f.stop(t) })
	waitFor(t, "worker ready", f.w.Ready)
	return f
}

func (f *fixture) stop(t *testing.T) {
	if f.cancel == nil {
		return
	}
	f.cancel()
	f.cancel = nil
	select {
	case err := <-f.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("worker did not stop within 20s")
	}
}

func (f *fixture) submit(t *testing.T, doc string) {
	t.Helper()
	f.submitText(t, doc, doc)
}

// submitText queues doc with text (above the inline limit it goes to the
// object store).
func (f *fixture) submitText(t *testing.T, doc, text string) {
	t.Helper()
	sch, _ := schema.Compile([]byte(`{"type":"object"}`))
	env := &jobs.Envelope{DocumentID: doc, Provider: "fake:m", Model: "m", Pool: pool, Run: "r",
		Schema: jobs.SchemaRef{Name: "s", Version: 1, Fingerprint: sch.Fingerprint()}, SubmittedAt: time.Now()}
	if _, err := f.pub.Publish(context.Background(), env, text); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) streamMsgs(t *testing.T, name string) uint64 {
	s, err := f.js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func (f *fixture) letters(t *testing.T) []*jobs.Letter {
	var out []*jobs.Letter
	if err := jobs.NewDLQ(f.js).List(context.Background(), jobs.ListFilter{}, func(l *jobs.Letter) error {
		out = append(out, l)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 15*time.Second, what, cond)
}

func waitForWithin(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fastSettings(maxDeliver int) jobs.ConsumerSettings {
	return jobs.ConsumerSettings{AckWait: time.Second, MaxDeliver: maxDeliver, MaxAckPending: 100}
}

func TestOutcomes(t *testing.T) {
	transport := func() *llm.Result {
		return &llm.Result{Outcome: llm.OutcomeTransport, Reason: "HTTP 503", RetryAfter: 100 * time.Millisecond,
			Attempts: []llm.Attempt{{N: 1, Error: "503", Class: "server_error"}}}
	}
	tests := []struct {
		name        string
		plan        func(call int) *llm.Result
		maxDeliver  int
		wantCalls   int
		wantRecords []bool // Final of each audit record, in order
		wantDead    bool
		wantOutcome llm.Outcome
	}{
		{"ok", func(int) *llm.Result { return ok() }, 3, 1, []bool{true}, false, llm.OutcomeOK},
		{"exhausted", func(int) *llm.Result {
			return &llm.Result{Outcome: llm.OutcomeExhausted, Reason: "3 answers, still invalid",
				Attempts: []llm.Attempt{{N: 1, Raw: "{", Class: "schema"}, {N: 2, Raw: "{}", Class: "schema"}}}
		}, 3, 1, []bool{true}, true, llm.OutcomeExhausted},
		{"transport then ok", func(call int) *llm.Result {
			if call == 1 {
				return transport()
			}
			return ok()
		}, 3, 2, []bool{false, true}, false, llm.OutcomeOK},
		{"transport until the last delivery", func(int) *llm.Result { return transport() }, 2, 2, []bool{false, true}, true, llm.OutcomeTransport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, func(_ string, call int, _ context.Context) *llm.Result { return tc.plan(call) }, fastSettings(tc.maxDeliver))
			f.submit(t, "doc")
			waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
			f.stop(t)
			if got := f.engine.count("doc"); got != tc.wantCalls {
				t.Errorf("engine calls = %d, want %d", got, tc.wantCalls)
			}
			recs := f.audit.records("doc")
			if len(recs) != len(tc.wantRecords) {
				t.Fatalf("audit records = %d, want %d", len(recs), len(tc.wantRecords))
			}
			for i, final := range tc.wantRecords {
				if recs[i].Final != final || recs[i].Delivery != i+1 {
					t.Errorf("record %d: final %v delivery %d, want final %v delivery %d", i, recs[i].Final, recs[i].Delivery, final, i+1)
				}
			}
			last := recs[len(recs)-1]
			if last.Outcome != tc.wantOutcome {
				t.Errorf("outcome = %s, want %s", last.Outcome, tc.wantOutcome)
			}
			letters := f.letters(t)
			if tc.wantDead {
				if len(letters) != 1 || last.DeadLetter == nil || last.DeadLetter.Seq != letters[0].Seq {
					t.Fatalf("dead letters = %d, audit dead letter = %+v; want one, referenced by the audit", len(letters), last.DeadLetter)
				}
				l := letters[0]
				if l.Job.DocumentID != "doc" || l.Reason == "" || len(l.Attempts) == 0 || l.WorkerID != "w-test" || l.Deliveries != tc.wantCalls {
					t.Errorf("dead letter lacks diagnostics: %+v", l.DeadLetter)
				}
			} else if len(letters) != 0 || last.DeadLetter != nil {
				t.Errorf("unexpected dead letter")
			}
		})
	}
}

func TestInProgressKeepsLongJobs(t *testing.T) {
	f := start(t, func(_ string, _ int, ctx context.Context) *llm.Result {
		time.Sleep(2500 * time.Millisecond) // 2.5 ack waits
		return ok()
	}, fastSettings(5))
	f.submit(t, "slow")
	waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	if got := f.engine.count("slow"); got != 1 {
		t.Errorf("engine calls = %d, want 1: the job was redelivered while it ran", got)
	}
}

func TestNoPrefetchBeyondBudget(t *testing.T) {
	release := make(chan struct{})
	var running, peak atomic.Int32
	f := start(t, func(string, int, context.Context) *llm.Result {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		running.Add(-1)
		return ok()
	}, fastSettings(5))
	for i := range 6 {
		f.submit(t, "doc"+string(rune('a'+i)))
	}
	waitFor(t, "two jobs running", func() bool { return running.Load() == 2 })
	time.Sleep(300 * time.Millisecond) // let any wrongful extra pull land
	c, err := f.js.Consumer(context.Background(), jobs.JobsStream, jobs.ConsumerName(pool))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 2 || info.NumPending != 4 {
		t.Errorf("ack pending %d, pending %d; want 2 out (the pool's concurrency) and 4 waiting on the server", info.NumAckPending, info.NumPending)
	}
	close(release)
	waitFor(t, "all jobs done", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	if peak.Load() != 2 {
		t.Errorf("peak concurrency %d, want 2", peak.Load())
	}
}

// TestSettlingHoldsNoSlot: a job gives its budget slot back when its calls
// are over, so the pool's next jobs call the provider while the finished
// ones wait for the audit's commit; the calls in flight stay within the
// pool's concurrency (2) and the jobs in hand within four times it
// (runnersPer).
func TestSettlingHoldsNoSlot(t *testing.T) {
	var running, peak, calls atomic.Int32
	f := start(t, func(string, int, context.Context) *llm.Result {
		calls.Add(1)
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return ok()
	}, fastSettings(5))
	gate := make(chan struct{})
	f.audit.gate.Store(&gate)
	for i := range 10 {
		f.submit(t, "doc"+string(rune('a'+i)))
	}
	// Before, the first two jobs kept their slots while their audit
	// writes waited, and no third call was ever made; at two runners per
	// slot, four jobs were the most a pool of 2 held.
	waitFor(t, "eight jobs extracted while the audit holds every write", func() bool { return calls.Load() == 8 })
	time.Sleep(300 * time.Millisecond) // let any wrongful extra pull land
	c, err := f.js.Consumer(t.Context(), jobs.JobsStream, jobs.ConsumerName(pool))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 8 || info.NumPending != 2 || calls.Load() != 8 {
		t.Errorf("ack pending %d, pending %d, calls %d; want 8 jobs in hand (four times the concurrency), 2 waiting on the server, 8 calls",
			info.NumAckPending, info.NumPending, calls.Load())
	}
	close(gate)
	waitFor(t, "all jobs done", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	if p := peak.Load(); p > 2 {
		t.Errorf("peak calls in flight %d, want at most the pool's concurrency, 2", p)
	}
	if got := calls.Load(); got != 10 {
		t.Errorf("calls = %d, want 10: one per job", got)
	}
}

// TestTailRunnersBounded: a pool of large concurrency starts its
// concurrency's runners and at most 4,096 more for the jobs waiting for
// their commit and ack, not three times its concurrency (36,000
// goroutines at 12,000 would hold 70–290 MiB of stacks).
func TestTailRunnersBounded(t *testing.T) {
	const concurrency = 12000
	before := runtime.NumGoroutine()
	startEngine(t, &scripted{calls: map[string]int{}, plan: func(string, int, context.Context) *llm.Result { return ok() }},
		fastSettings(5), worker.WithPools(worker.Pool{Name: pool, Concurrency: concurrency}))
	// The runners start once the pool's loops do, shortly after Ready:
	// wait until the count holds still.
	last := -1
	waitFor(t, "the pool's runners started", func() bool {
		n := runtime.NumGoroutine()
		steady := n == last && n-before >= concurrency
		last = n
		if !steady {
			time.Sleep(50 * time.Millisecond)
		}
		return steady
	})
	// The embedded server, the connection and the worker's own loops
	// add a few dozen goroutines.
	if got, most := last-before, concurrency+4096+300; got > most {
		t.Errorf("%d goroutines after the worker started, want at most %d (runners %d + 4,096 + the rest)", got, most, concurrency)
	}
}

func TestShutdown(t *testing.T) {
	tests := []struct {
		name      string
		work      time.Duration
		grace     time.Duration
		wantAcked bool
	}{
		{"finishes within grace", 300 * time.Millisecond, 5 * time.Second, true},
		{"canceled after grace", 10 * time.Second, 200 * time.Millisecond, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			f := start(t, func(_ string, _ int, ctx context.Context) *llm.Result {
				started <- struct{}{}
				select {
				case <-time.After(tc.work):
					return ok()
				case <-ctx.Done():
					return &llm.Result{Outcome: llm.OutcomeCanceled, Reason: "canceled", Attempts: []llm.Attempt{{N: 1, Error: "canceled"}}}
				}
			}, fastSettings(5), worker.WithGrace(tc.grace))
			f.submit(t, "doc")
			<-started
			f.stop(t)
			left := f.streamMsgs(t, jobs.JobsStream)
			if (left == 0) != tc.wantAcked {
				t.Fatalf("jobs left in the stream = %d, want acked %v", left, tc.wantAcked)
			}
			recs := f.audit.records("doc")
			if len(recs) != 1 || recs[0].Final != tc.wantAcked {
				t.Errorf("records = %d (final %v); want one, final %v", len(recs), len(recs) > 0 && recs[0].Final, tc.wantAcked)
			}
			if c := f.w.Counts(); tc.wantAcked && c.Done != 1 || !tc.wantAcked && c.Requeued != 1 {
				t.Errorf("counts = %+v", c)
			}
		})
	}
}

func TestMaxDeliveriesAdvisory(t *testing.T) {
	// A worker of the pool takes the job's only delivery and dies; no
	// worker runs when the advisory fires. The next worker to start moves
	// the job to the DLQ.
	f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(1))
	f.stop(t)
	ctx := context.Background()
	f.submit(t, "orphan")
	c, err := f.js.Consumer(ctx, jobs.JobsStream, jobs.ConsumerName(pool))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range b.Messages() { // taken and never acked: the holder "died"
		got++
	}
	if got != 1 {
		t.Fatalf("fetched %d jobs, want 1", got)
	}
	s, err := f.js.Stream(ctx, jobs.AdvisoryStream)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the advisory to be captured", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 1
	})
	if n := len(f.letters(t)); n != 0 {
		t.Fatalf("%d dead letters before any worker ran", n)
	}

	next, err := worker.New(f.js, f.audit, f.engine, worker.WithID("w-next"), worker.WithPools(worker.Pool{Name: "other", Concurrency: 1}),
		worker.WithConsumerSettings(fastSettings(1)), worker.WithPullWait(200*time.Millisecond),
		worker.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- next.Run(rctx) }()
	defer func() { cancel(); <-done }()

	waitFor(t, "the advisory to dead-letter the job", func() bool { return len(f.letters(t)) == 1 })
	l := f.letters(t)[0]
	if l.Source != "advisory" || l.Job.DocumentID != "orphan" || !strings.Contains(l.Reason, "max deliveries") {
		t.Errorf("letter = %+v", l.DeadLetter)
	}
	waitFor(t, "the job and the advisory to leave their streams", func() bool {
		info, err := s.Info(ctx)
		return f.streamMsgs(t, jobs.JobsStream) == 0 && err == nil && info.State.Msgs == 0
	})
	recs := f.audit.records("orphan")
	if len(recs) != 1 || recs[0].DeadLetter == nil || recs[0].DeadLetter.Seq != l.Seq {
		t.Errorf("audit records = %+v, want one dead letter at seq %d", recs, l.Seq)
	}
}

func TestUnreadableJobIsDeadLettered(t *testing.T) {
	f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(5))
	if _, err := f.js.Publish(context.Background(), jobs.JobSubject(pool), []byte(`{"v":99}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	letters := f.letters(t)
	if len(letters) != 1 || letters[0].Source != "decode" || !strings.Contains(letters[0].Reason, "newer than this worker") {
		t.Fatalf("letters = %+v", letters)
	}
	recs := f.audit.records(letters[0].Job.DocumentID)
	if len(recs) != 1 || !strings.HasPrefix(recs[0].DocumentID, "unreadable:seq-") || recs[0].DeadLetter == nil {
		t.Errorf("audit records = %+v, want one dead letter naming the unreadable job", recs)
	}
}

func TestDeadLetterRedactsKeys(t *testing.T) {
	const key = "sk-proj-THISisAfakeKEY1234567890"
	f := start(t, func(string, int, context.Context) *llm.Result {
		return &llm.Result{Outcome: llm.OutcomeFatal, Reason: "HTTP 401 for key " + key,
			Attempts: []llm.Attempt{{N: 1, Raw: `{"error":"bad key ` + key + `"}`, Error: "auth: Authorization: Bearer " + key[3:], Class: "auth"}}}
	}, fastSettings(3))
	f.submit(t, "doc")
	waitFor(t, "the dead letter", func() bool { return len(f.letters(t)) == 1 })
	s, err := f.js.Stream(context.Background(), jobs.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(context.Background(), f.letters(t)[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(m.Data), "THISisAfakeKEY") {
		t.Errorf("the dead letter carries the API key: %s", m.Data)
	}
	if !strings.Contains(string(m.Data), "REDACTED") {
		t.Errorf("nothing was redacted: %s", m.Data)
	}
}

func TestHealthEndpoints(t *testing.T) {
	f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(3))
	srv := httptest.NewServer(f.w.Handler())
	defer srv.Close()
	status := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name          string
		before        func()
		health, ready int
	}{
		{"running", func() {}, 200, 200},
		{"stopped", func() { f.stop(t) }, 200, 503},
	}
	for _, tc := range tests {
		tc.before()
		if h, r := status("/healthz"), status("/readyz"); h != tc.health || r != tc.ready {
			t.Errorf("%s: /healthz %d /readyz %d, want %d %d", tc.name, h, r, tc.health, tc.ready)
		}
	}
}

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestJobLogsNameTheJob: every log line about a job (retried, then
// dead-lettered) carries its job id, document id, run and attempt.
func TestJobLogsNameTheJob(t *testing.T) {
	var logs syncBuffer
	f := start(t, func(_ string, call int, _ context.Context) *llm.Result {
		if call == 1 {
			return &llm.Result{Outcome: llm.OutcomeTransport, Reason: "HTTP 503", RetryAfter: 50 * time.Millisecond}
		}
		return &llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid"}
	}, fastSettings(3), worker.WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	f.submit(t, "doc-logs")
	waitFor(t, "the dead letter", func() bool { return f.streamMsgs(t, jobs.DLQStream) == 1 })
	f.stop(t)

	about := 0
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if _, ok := rec["stream_seq"]; !ok {
			continue // about the worker, not a delivery of a job
		}
		about++
		for _, key := range []string{"job_id", "document_id", "run", "attempt"} {
			if _, ok := rec[key]; !ok {
				t.Errorf("log line about a job lacks %s: %s", key, line)
			}
		}
		if rec["document_id"] != "doc-logs" || rec["run"] != "r" {
			t.Errorf("log line names another job: %s", line)
		}
	}
	if about < 2 {
		t.Errorf("%d log lines about the job, want at least the retry and the dead letter:\n%s", about, logs.String())
	}
}

// TestShutdownSendsPendingAcks holds every ack in the acker (it lingers
// an hour) and shuts down: the jobs' results are durable and their acks
// pending, and a clean shutdown must send them all, so that no job is
// left on the stream to run again.
func TestShutdownSendsPendingAcks(t *testing.T) {
	t.Parallel()
	const n = 5
	f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(5),
		worker.WithAckLinger(time.Hour))
	docs := make([]string, n)
	for i := range docs {
		docs[i] = fmt.Sprintf("doc-%d", i)
		f.submit(t, docs[i])
	}
	waitFor(t, "jobs done", func() bool { return f.w.Counts().Done == n })
	if left := f.streamMsgs(t, jobs.JobsStream); left != n {
		t.Fatalf("before shutdown: jobs on the stream = %d, want %d (their acks still in the acker)", left, n)
	}
	f.stop(t)
	// The server applies acks just after reading them: a moment, not the
	// ack wait (1s) after which the jobs would be redelivered.
	waitForWithin(t, 500*time.Millisecond, "every pending ack applied after a clean shutdown",
		func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	for _, d := range docs {
		if recs := f.audit.records(d); len(recs) != 1 || !recs[0].Final {
			t.Errorf("%s: %d records, want one final", d, len(recs))
		}
	}
}
