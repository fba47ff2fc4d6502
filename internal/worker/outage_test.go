package worker_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
)

// outage is an HTTP transport to the in-process simulator that refuses
// connections while down, as a provider whose host is gone does.
type outage struct {
	next  http.RoundTripper
	down  atomic.Bool
	calls atomic.Int64 // calls while down
}

func (o *outage) RoundTrip(r *http.Request) (*http.Response, error) {
	if o.down.Load() {
		o.calls.Add(1)
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return o.next.RoundTrip(r)
}

// fastEngine is the library with transport retries in milliseconds.
func fastEngine() worker.Engine {
	tr := extractq.DefaultTransport()
	tr.Base, tr.Cap = time.Millisecond, 5*time.Millisecond
	return worker.NewEngine(extractq.WithTransport(tr))
}

func (f *fixture) consumerInfo(t *testing.T) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := f.js.Consumer(context.Background(), jobs.JobsStream, jobs.ConsumerName(pool))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// deliveries is the number of deliveries doc's job took: the highest
// delivery any of its audit records names.
func (f *fixture) deliveries(doc string) int {
	n := 0
	for _, r := range f.audit.records(doc) {
		n = max(n, r.Delivery)
	}
	return n
}

// final is doc's final audit record, or nil.
func (f *fixture) final(doc string) *audit.Record {
	for _, r := range f.audit.records(doc) {
		if r.Final {
			return &r
		}
	}
	return nil
}

func readyz(t *testing.T, h http.Handler) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code
}

// TestProviderOutageSpendsNoDeliveries is a ten-minute provider outage
// scaled down: a 1s ack wait and a 10s outage of refused connections (ten
// ack waits; ten minutes are twenty 30s ack waits). Before the circuit
// breaker the worker nak'd every failed job again and again and, with 3
// deliveries, dead-lettered healthy documents. Now the pool's circuit
// opens, pulling stops, the jobs the worker holds stay in progress and run
// again once a probe gets through: nothing is dead-lettered and no job
// takes more than one delivery beyond the one it was in.
func TestProviderOutageSpendsNoDeliveries(t *testing.T) {
	t.Parallel()
	const (
		docs      = 12
		conc      = 4
		ackWait   = time.Second
		outageFor = 10 * time.Second
	)
	srv := sim.New(fleettest.CleanProfile(), sim.WithSeed(1))
	defer srv.Close()
	link := &outage{next: srv.Transport()}
	prov, err := extractq.NewProvider("openai:sim-fleet", extractq.WithProviderBaseURL("http://sim.invalid/v1"),
		extractq.WithProviderHTTPClient(&http.Client{Transport: link}), extractq.WithProviderAPIKey("sk-test-not-a-key"))
	if err != nil {
		t.Fatal(err)
	}
	var opened atomic.Int64
	f := startEngine(t, fastEngine(), jobs.ConsumerSettings{AckWait: ackWait, MaxDeliver: 3, MaxAckPending: 100},
		worker.WithPools(worker.Pool{Name: pool, Concurrency: conc}),
		worker.WithProviders(func(string) (llm.Provider, error) { return prov, nil }),
		worker.WithCircuit(ratelimit.BreakerSettings{Failures: 3, Open: 200 * time.Millisecond, MaxOpen: time.Second}),
		worker.WithObserver(circuitCounter{opened: &opened}))

	// The provider goes down with documents queued: the first ones fail.
	link.down.Store(true)
	for i := range docs {
		f.submit(t, fmt.Sprintf("doc-%02d", i))
	}
	waitFor(t, "the circuit to open", func() bool { return opened.Load() > 0 })
	mid := time.Now().Add(outageFor / 2)
	time.Sleep(time.Until(mid))
	// Held jobs and the few nak'd before the circuit opened are out; the
	// rest were never pulled.
	info := f.consumerInfo(t)
	if info.NumAckPending > conc+2 || info.NumPending < docs-conc-2 {
		t.Errorf("during the outage: %d jobs out, %d waiting; want at most %d out and the rest waiting on the server",
			info.NumAckPending, info.NumPending, conc+2)
	}
	if held := f.w.Held(); held == 0 {
		t.Error("no job held in progress during the outage")
	}
	if snap := f.w.Circuits()[0]; snap.State == "closed" {
		t.Errorf("circuit %+v during the outage, want open or half-open", snap)
	}
	time.Sleep(outageFor / 2)
	refused := link.calls.Load()
	// Probes run held jobs: the second half of the outage delivered nothing.
	if later := f.consumerInfo(t); later.Delivered.Consumer != info.Delivered.Consumer {
		t.Errorf("%d deliveries during the second half of the outage, want none", later.Delivered.Consumer-info.Delivered.Consumer)
	}
	link.down.Store(false)

	waitFor(t, "every job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	f.stop(t)
	results, dead, spent, most := 0, len(f.letters(t)), 0, 0
	for i := range docs {
		doc := fmt.Sprintf("doc-%02d", i)
		if r := f.final(doc); r != nil && r.Outcome == llm.OutcomeOK {
			results++
		}
		n := f.deliveries(doc)
		spent += n
		most = max(most, n)
		if n > 2 {
			t.Errorf("%s took %d deliveries: the outage spent more than one", doc, n)
		}
	}
	if results != docs || dead != 0 {
		t.Errorf("%d results and %d dead letters of %d documents; want every document to succeed", results, dead, docs)
	}
	if snap := f.w.Circuits()[0]; snap.State != "closed" || snap.Opens == 0 {
		t.Errorf("circuit after the outage: %+v, want closed after opening", snap)
	}
	t.Logf("provider outage of %s (%d ack waits of %s): %d documents, %d results, %d dead letters, 0 duplicates, %d deliveries (at most %d per job), %d refused calls, %d naks",
		outageFor, int(outageFor/ackWait), ackWait, docs, results, dead, spent, most, refused, f.w.Counts().Retried)
}

// circuitCounter counts circuit openings (a worker.Observer).
type circuitCounter struct{ opened *atomic.Int64 }

func (circuitCounter) JobStarted(string)  {}
func (circuitCounter) JobFinished(string) {}
func (circuitCounter) Nak(string, string) {}
func (c circuitCounter) Circuit(_, _ string, s ratelimit.CircuitState) {
	if s == ratelimit.CircuitOpen {
		c.opened.Add(1)
	}
}

// TestAuditOutageHoldsFinishedAnswers: while the audit store is down, a
// finished answer is kept in memory and its job in progress (not nak'd,
// not redelivered, the provider not paid again), pulling pauses and
// /readyz answers 503; when the store is back the answers are written and
// the jobs acked on their first delivery. A job's slot goes back when its
// calls end, so the jobs pulled before the first failed write was seen
// are held too: at most twice the pool's concurrency (2).
func TestAuditOutageHoldsFinishedAnswers(t *testing.T) {
	t.Parallel()
	f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(3))
	h := f.w.Handler()
	f.audit.down.Store(true)
	docs := []string{"a", "b", "c", "d", "e", "f"}
	for _, doc := range docs {
		f.submit(t, doc)
	}
	waitFor(t, "two finished answers held", func() bool { return f.w.Held() >= 2 })
	if code := readyz(t, h); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz %d while the audit store is down, want 503", code)
	}
	time.Sleep(2500 * time.Millisecond) // 2.5 ack waits
	held := f.w.Held()
	info := f.consumerInfo(t)
	if held < 2 || held > 4 || info.NumAckPending != int(held) || info.NumPending != uint64(len(docs))-uint64(held) || info.NumRedelivered != 0 {
		t.Errorf("during the outage: %d held, %d out, %d waiting, %d redelivered; want 2 to 4 held and out, the rest not pulled, none redelivered",
			held, info.NumAckPending, info.NumPending, info.NumRedelivered)
	}
	calls := 0
	for _, doc := range docs {
		calls += f.engine.count(doc)
	}
	if calls != int(held) {
		t.Errorf("%d engine calls during the outage, want %d (one per held job): no job pulled or paid for again", calls, held)
	}
	f.audit.down.Store(false)
	waitFor(t, "every job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	for _, doc := range docs {
		r := f.final(doc)
		if got := f.engine.count(doc); got != 1 || r == nil || r.Delivery != 1 || r.Outcome != llm.OutcomeOK {
			t.Errorf("%s: %d engine calls, final record %+v; want one call and its result from delivery 1", doc, got, r)
		}
	}
	if c := f.w.Counts(); c.Retried != 0 || c.Done != int64(len(docs)) {
		t.Errorf("counts %+v, want %d done and nothing nak'd", c, len(docs))
	}
	if code := readyz(t, h); code != http.StatusOK {
		t.Errorf("/readyz %d after the audit store recovered, want 200", code)
	}
	calls, spent := 0, 0
	for _, doc := range docs {
		calls += f.engine.count(doc)
		spent += f.deliveries(doc)
	}
	t.Logf("audit outage of 2.5 ack waits: %d documents, %d held during it, %d results, %d dead letters, 0 duplicates, %d deliveries, %d extractions paid, %d failed audit writes",
		len(docs), held, f.w.Counts().Done, len(f.letters(t)), spent, calls, f.audit.writes.Load()-int64(len(docs)))
}

// TestExactlyOneFinalState reproduces how documents ended with both a
// result and a dead letter during a Postgres outage, and the other ways a
// max-deliveries advisory could dead-letter a job that has a result.
func TestExactlyOneFinalState(t *testing.T) {
	t.Parallel()
	t.Run("result committed but reported failed on the last delivery", func(t *testing.T) {
		t.Parallel()
		// The write of the result commits, but its reply is lost. The old
		// worker nak'd the last delivery; the server's advisory then made
		// a dead letter for a job whose result was in the audit.
		f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(1))
		f.audit.lost.Store(1)
		f.submit(t, "doc")
		waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
		time.Sleep(1500 * time.Millisecond) // an advisory would come after the ack wait
		if n := len(f.letters(t)); n != 0 || f.final("doc") == nil {
			t.Errorf("%d dead letters, result %v: want the result only", n, f.final("doc") != nil)
		}
		t.Logf("result whose commit reply was lost on the last delivery: 1 document, 1 result, %d dead letters, %d deliveries", len(f.letters(t)), f.deliveries("doc"))
	})
	t.Run("advisory for a job whose result is durable", func(t *testing.T) {
		t.Parallel()
		// A worker wrote the result of the job's last delivery and died
		// before its ack reached the server.
		f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(1))
		f.stop(t)
		f.submit(t, "orphan")
		env := takeAndDie(t, f)
		f.audit.put(audit.Record{JobID: env.JobID, DocumentID: "orphan", SchemaFingerprint: env.Schema.Fingerprint, Model: env.Model,
			Delivery: 1, Final: true, Outcome: llm.OutcomeOK, Value: []byte(`{"a":1}`)})
		next := restart(t, f)
		waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
		waitFor(t, "the advisory to be settled", func() bool { return f.streamMsgs(t, jobs.AdvisoryStream) == 0 })
		if n := len(f.letters(t)); n != 0 || next.Counts().DeadLettered != 0 {
			t.Errorf("%d dead letters for a job with a result, want none", n)
		}
		t.Logf("max-deliveries advisory for a job with a durable result: 1 document, 1 result, %d dead letters", len(f.letters(t)))
	})
	t.Run("dead-lettered, killed before the terminate reached the server", func(t *testing.T) {
		t.Parallel()
		// The kill test's "dead-lettered but also has a result": a worker
		// wrote a job's dead letter and died before terminating it; the
		// redelivery ran the job again and this time got a valid answer.
		f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(3))
		f.stop(t)
		f.submit(t, "twice")
		env := takeOnly(t, f)
		f.audit.put(audit.Record{JobID: env.JobID, DocumentID: "twice", SchemaFingerprint: env.Schema.Fingerprint, Model: env.Model,
			Delivery: 1, Final: true, Outcome: llm.OutcomeExhausted, DeadLetter: &audit.DeadLetter{Stream: jobs.DLQStream, Seq: 1, Reason: "still invalid"}})
		e := &scripted{calls: map[string]int{}, plan: func(string, int, context.Context) *llm.Result { return ok() }}
		next := runWorker(t, f, e, "w-again", pool, 3)
		waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
		if calls := e.calls["twice"]; calls != 0 {
			t.Errorf("the dead-lettered job ran again (%d calls)", calls)
		}
		for _, r := range f.audit.records("twice") {
			if r.Outcome == llm.OutcomeOK {
				t.Errorf("a result was written for a dead-lettered job: %+v", r)
			}
		}
		if c := next.Counts(); c.Done != 0 || c.DeadLettered != 0 {
			t.Errorf("counts %+v: the redelivery must only be settled", c)
		}
	})
	t.Run("advisory while the audit store is down", func(t *testing.T) {
		t.Parallel()
		f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(1))
		f.stop(t)
		f.submit(t, "orphan")
		takeAndDie(t, f)
		f.audit.down.Store(true)
		restart(t, f)
		time.Sleep(3 * time.Second) // the advisory is tried and put back
		if n := len(f.letters(t)); n != 0 {
			t.Fatalf("%d dead letters published while the audit store could not be asked", n)
		}
		f.audit.down.Store(false)
		waitFor(t, "the dead letter once the audit answers", func() bool { return len(f.letters(t)) == 1 })
		if r := f.final("orphan"); r == nil || r.DeadLetter == nil {
			t.Errorf("audit final record %+v, want the dead letter", r)
		}
	})
}

// TestNoLetterWithoutAuditRow: the SIGKILL test once ended with 50 letters
// on the DLQ and 49 dead-letter rows in the audit. A worker published a
// job's letter and died before recording it; the redelivery ran the job
// again (the audit knew of no letter), so the letter stayed on the DLQ
// with no row, beside a result. Now the letter is recorded first, then
// published, then its sequence recorded. The worker dies after each step;
// a fresh worker, whose engine would now succeed, takes the redelivery:
// the job does not run again, and the one letter on the DLQ is the one
// the audit records.
func TestNoLetterWithoutAuditRow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ step, source string }{
		{"recorded", "recorded"}, // not published: the redelivery publishes it
		{"published", "worker"},  // on the stream: the redelivery's publish finds it
	} {
		t.Run("killed after "+tc.step, func(t *testing.T) {
			t.Parallel()
			var died atomic.Bool
			invalid := func(string, int, context.Context) *llm.Result {
				return &llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid", Attempts: []llm.Attempt{{N: 1, Raw: "{}", Error: "missing a"}}}
			}
			f := start(t, invalid, fastSettings(3), worker.WithDeathAt(func(step string) bool {
				return step == tc.step && died.CompareAndSwap(false, true)
			}))
			f.submit(t, "doc")
			waitFor(t, "the worker to die after "+tc.step, died.Load)
			f.stop(t)
			e := &scripted{calls: map[string]int{}, plan: func(string, int, context.Context) *llm.Result { return ok() }}
			next := runWorker(t, f, e, "w-fresh", pool, 3)
			waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })

			letters := f.letters(t)
			var rows []audit.DeadLetter
			for _, r := range f.audit.records("doc") {
				if r.DeadLetter != nil {
					rows = append(rows, *r.DeadLetter)
				}
				if r.Outcome == llm.OutcomeOK {
					t.Errorf("a result was written for a dead-lettered job: %+v", r)
				}
			}
			if len(letters) != 1 || len(rows) != 1 || rows[0].Seq != letters[0].Seq {
				t.Fatalf("%d letters on the DLQ, audit rows %+v: want one letter and its row with its sequence", len(letters), rows)
			}
			if l := letters[0]; l.Source != tc.source || l.Reason != "still invalid" || l.Outcome != llm.OutcomeExhausted {
				t.Errorf("letter source %q, outcome %q, reason %q; want %s, exhausted, still invalid", l.Source, l.Outcome, l.Reason, tc.source)
			}
			if calls := e.count("doc"); calls != 0 {
				t.Errorf("the dead-lettered job ran again (%d calls)", calls)
			}
			if c := next.Counts(); c.Done != 0 {
				t.Errorf("counts %+v: the redelivery must only be settled", c)
			}
			t.Logf("killed after the letter was %s: %d letter (seq %d, source %s), %d audit row (seq %d), 0 results, %d deliveries",
				tc.step, len(letters), letters[0].Seq, letters[0].Source, len(rows), rows[0].Seq, f.deliveries("doc"))
		})
	}
}

// takeAndDie takes the only delivery of the fixture's one job and never
// settles it, as a worker killed while holding it; it waits for the
// server's max-deliveries advisory.
func takeAndDie(t *testing.T, f *fixture) *jobs.Envelope {
	t.Helper()
	env := takeOnly(t, f)
	waitFor(t, "the advisory to be captured", func() bool { return f.streamMsgs(t, jobs.AdvisoryStream) == 1 })
	return env
}

// takeOnly takes the first delivery of the fixture's one job and never
// settles it, as a worker killed while holding it.
func takeOnly(t *testing.T, f *fixture) *jobs.Envelope {
	t.Helper()
	c, err := f.js.Consumer(context.Background(), jobs.JobsStream, jobs.ConsumerName(pool))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		env, err := jobs.DecodeEnvelope(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	t.Fatal("no job fetched")
	return nil
}

// runWorker runs a new worker with engine e on f's server and audit,
// serving poolName with maxDeliver deliveries.
func runWorker(t *testing.T, f *fixture, e worker.Engine, id, poolName string, maxDeliver int, opts ...worker.Option) *worker.Worker {
	t.Helper()
	next, err := worker.New(f.js, f.audit, e, append([]worker.Option{
		worker.WithID(id), worker.WithPools(worker.Pool{Name: poolName, Concurrency: 1}),
		worker.WithConsumerSettings(fastSettings(maxDeliver)), worker.WithPullWait(200 * time.Millisecond), worker.WithCircuit(fastCircuit),
		worker.WithLogger(quiet())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- next.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return next
}

// restart runs a new worker of another pool on f's server and audit: it
// handles the advisories.
func restart(t *testing.T, f *fixture) *worker.Worker {
	t.Helper()
	e := &scripted{calls: map[string]int{}, plan: func(string, int, context.Context) *llm.Result { return ok() }}
	return runWorker(t, f, e, "w-next", "other", 1)
}

// TestUnusableAnswerIsAskedOnce: an HTTP 200 nested 100,000 levels deep was
// a transport failure, retried 5 times per delivery over 5 deliveries. It
// is a bad answer: one call, one delivery, a dead letter.
func TestUnusableAnswerIsAskedOnce(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"message":{"content":"{}","tool_calls":%s}}]}`, deep)
	}))
	defer api.Close()
	prov, err := extractq.NewProvider("vllm:m", extractq.WithProviderBaseURL(api.URL+"/v1"))
	if err != nil {
		t.Fatal(err)
	}
	f := startEngine(t, fastEngine(), fastSettings(5), worker.WithProviders(func(string) (llm.Provider, error) { return prov, nil }))
	f.submit(t, "deep")
	waitFor(t, "the dead letter", func() bool { return len(f.letters(t)) == 1 })
	if n := calls.Load(); n != 1 || f.deliveries("deep") != 1 {
		t.Errorf("%d calls over %d deliveries, want 1 call in 1 delivery", n, f.deliveries("deep"))
	}
	if l := f.letters(t)[0]; l.Outcome != llm.OutcomeFatal || !strings.Contains(l.Reason, "bad_response") {
		t.Errorf("letter outcome %s reason %q, want fatal bad_response", l.Outcome, l.Reason)
	}
	t.Logf("HTTP 200 nested 100,000 levels deep: 1 document, 0 results, %d dead letter, %d delivery, %d provider call",
		len(f.letters(t)), f.deliveries("deep"), calls.Load())
}

// TestNoJobStuckOnAHugeLetter: a dead letter over the server's max payload
// was never published, and its job never became final. Each job here
// ends in a dead letter that fits, with the full answer in the audit.
func TestNoJobStuckOnAHugeLetter(t *testing.T) {
	t.Parallel()
	answer := strings.Repeat("[", 1000) + strings.Repeat("x", 20<<20) // a 20 MB answer
	tests := []struct {
		name, doc string
		size      int
	}{
		{"20 MB answer", "answer-20mb", 10},
		{"64 MiB document", "document-64mib", 64 << 20},
	}
	f := start(t, func(doc string, _ int, _ context.Context) *llm.Result {
		return &llm.Result{Outcome: llm.OutcomeExhausted, Reason: "no valid answer after 2 attempts; the last contained no JSON",
			Attempts: []llm.Attempt{{N: 1, Raw: answer, Class: "no_json"}, {N: 2, Raw: answer, Class: "no_json"}}}
	}, jobs.ConsumerSettings{AckWait: 10 * time.Second, MaxDeliver: 3, MaxAckPending: 100}) // moving 64 MiB under -race takes seconds
	for _, tc := range tests {
		f.submitText(t, tc.doc, tc.doc+strings.Repeat("d", max(0, tc.size-len(tc.doc))))
	}
	waitForWithin(t, 3*time.Minute, "every job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	letters := map[string]*jobs.Letter{}
	for _, l := range f.letters(t) {
		letters[l.Job.DocumentID] = l
	}
	for _, tc := range tests {
		l, r := letters[tc.doc], f.final(tc.doc)
		if l == nil || r == nil || r.DeadLetter == nil || r.DeadLetter.Seq != l.Seq {
			t.Errorf("%s: letter %v, final audit record %v: want a letter the audit references", tc.name, l != nil, r)
			continue
		}
		if !strings.Contains(l.Trimmed, "2 raw answers cut") || len(l.Attempts) != 2 || len(l.Attempts[0].Raw) > jobs.LetterRawCap+200 {
			t.Errorf("%s: letter trimmed %q with %d attempts", tc.name, l.Trimmed, len(l.Attempts))
		}
		if len(r.Attempts) != 2 || r.Attempts[0].Raw != answer {
			t.Errorf("%s: the audit lost the full answer", tc.name)
		}
		if f.deliveries(tc.doc) != 1 {
			t.Errorf("%s: %d deliveries, want 1", tc.name, f.deliveries(tc.doc))
		}
		if l != nil {
			t.Logf("%s: 1 document, 0 results, 1 dead letter (trimmed: %s), %d delivery", tc.name, l.Trimmed, f.deliveries(tc.doc))
		}
	}
}

// TestRevokedKeyPausesThePool: a 401 at run time (a key revoked while the
// fleet runs) dead-lettered every job the pool pulled. It is the pool's
// configuration that failed, not the documents: the pool pauses, its jobs
// stay queued, and they complete once the key works again.
func TestRevokedKeyPausesThePool(t *testing.T) {
	t.Parallel()
	var revoked atomic.Bool
	revoked.Store(true)
	plan := func(string, int, context.Context) *llm.Result {
		if revoked.Load() {
			pe := &llm.Error{Provider: "openai:gpt-4o-mini", Class: llm.ClassAuth, Status: 401, Message: "Incorrect API key provided"}
			return &llm.Result{Outcome: llm.OutcomeFatal, Reason: pe.Error(), Cause: pe, Attempts: []llm.Attempt{{N: 1, Class: llm.AttemptClass(llm.ClassAuth), Error: pe.Error()}}}
		}
		return ok()
	}
	f := start(t, plan, fastSettings(3), worker.WithCircuit(ratelimit.BreakerSettings{Failures: 3, Open: 100 * time.Millisecond, MaxOpen: 300 * time.Millisecond}))
	for i := range 4 {
		f.submit(t, fmt.Sprintf("doc-%d", i))
	}
	waitFor(t, "the pool's circuit to open", func() bool {
		for _, c := range f.w.Circuits() {
			if c.Reason == "transport" && c.Opens > 0 {
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second) // several pauses: each probe meets the revoked key again
	if n := len(f.letters(t)); n != 0 {
		t.Fatalf("%d dead letters for a revoked key; the jobs must be kept", n)
	}
	// The pause says it is the key, with the provider's answer, not an outage.
	for _, c := range f.w.Circuits() {
		if c.Reason == "transport" && (c.PauseReason != ratelimit.PauseKey || !strings.Contains(c.Cause, "Incorrect API key")) {
			t.Errorf("circuit %+v: want paused for %q by the 401", c, ratelimit.PauseKey)
		}
	}
	revoked.Store(false)
	waitFor(t, "every job to complete once the key works", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	for i := range 4 {
		if r := f.final(fmt.Sprintf("doc-%d", i)); r == nil || r.Outcome != llm.OutcomeOK {
			t.Errorf("doc-%d: final record %+v, want a result", i, r)
		}
	}
	if n := len(f.letters(t)); n != 0 {
		t.Errorf("%d dead letters", n)
	}
	spent := 0
	for i := range 4 {
		spent += f.deliveries(fmt.Sprintf("doc-%d", i))
	}
	t.Logf("provider answering 401 for 1s, then working: 4 documents, 4 results, %d dead letters, %d deliveries", len(f.letters(t)), spent)
}

// TestTwinDeliveriesEndOnce: the chaos soak's SIGSTOP fault (bench/chaos).
// A worker stopped longer than the ack wait keeps its job; the server
// delivers it again to another worker, and both run it. When the first
// dead-letters it while the redelivery runs, and the redelivery then gets
// a valid answer, the redelivery wrote its result beside the letter: the
// document ended with both. Now a delivery that may have a twin (a
// redelivery, or one whose in-progress acks lapsed) asks the audit before
// writing its result and settles the letter instead.
func TestTwinDeliveriesEndOnce(t *testing.T) {
	t.Parallel()
	f := start(t, func(string, int, context.Context) *llm.Result { return ok() }, fastSettings(3))
	f.stop(t)
	f.submit(t, "twin")
	// Delivery 1, held by a worker that is stopped: it never acks.
	env := takeOnly(t, f)
	// Delivery 2 runs on a live worker; while it runs, the stopped one
	// wakes and dead-letters the job (recorded, its letter not yet
	// published), then the live one gets a valid answer.
	e := &scripted{calls: map[string]int{}, plan: func(string, int, context.Context) *llm.Result {
		f.audit.put(audit.Record{JobID: env.JobID, DocumentID: "twin", SchemaFingerprint: env.Schema.Fingerprint, Model: env.Model,
			Delivery: 1, Final: true, Outcome: llm.OutcomeExhausted, DeadLetter: &audit.DeadLetter{Stream: jobs.DLQStream, Reason: "still invalid"}})
		return ok()
	}}
	next := runWorker(t, f, e, "w-twin", pool, 3,
		worker.WithProviders(func(string) (llm.Provider, error) { return extractqtest.New(nil), nil }))
	waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	if calls := e.count("twin"); calls != 1 {
		t.Fatalf("the redelivery made %d calls, want 1 (the twin must run)", calls)
	}
	results := 0
	for _, r := range f.audit.records("twin") {
		if r.Outcome == llm.OutcomeOK {
			results++
		}
	}
	letters := f.letters(t)
	var seq uint64
	if r := f.final("twin"); r != nil && r.DeadLetter != nil {
		seq = r.DeadLetter.Seq
	}
	if results != 0 || len(letters) != 1 || seq != letters[0].Seq {
		t.Errorf("%d results, %d letters on the DLQ, audit letter at %d: want the letter only, on the DLQ at its audit sequence", results, len(letters), seq)
	}
	if c := next.Counts(); c.Done != 0 {
		t.Errorf("counts %+v: the twin's result must not count as done", c)
	}
	t.Logf("twin deliveries (the first dead-lettered the job while the second ran and got a valid answer): 1 document, %d results, %d dead letters (the second delivery wrote no result)",
		results, len(letters))
}

// TestRedeliveryWhileRunning: the chaos soak's seed 52 (bench/chaos). A
// worker held a finished job while PostgreSQL was down, its in-progress
// acks going on; the node leading EXTRACTQ_JOBS was killed, the acks sent
// during the election were lost, and the server delivered the job again,
// to the same worker. The second delivery got a refusal and dead-lettered
// the job, then the first wrote its result: a result beside a letter.
// Here the server's ack wait is cut below the worker's in-progress
// interval, so the job is delivered again while the worker runs it; the
// second delivery must be left to the first.
func TestRedeliveryWhileRunning(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	f := start(t, func(_ string, call int, _ context.Context) *llm.Result {
		if call == 1 {
			<-release
			return ok()
		}
		return &llm.Result{Outcome: llm.OutcomeUnextractable, Reason: "refused", Attempts: []llm.Attempt{{N: 1, Raw: "I'm sorry"}}}
	}, fastSettings(20))
	t.Cleanup(free) // before the fixture's stop, which waits for the job
	f.submit(t, "again")
	waitFor(t, "the first delivery to run", func() bool { return f.engine.count("again") >= 1 })
	ctx := context.Background()
	cfg := fastSettings(20).ConsumerConfig(pool)
	cfg.AckWait = 100 * time.Millisecond // the worker's in-progress acks come every 333 ms
	if _, err := f.js.UpdateConsumer(ctx, jobs.JobsStream, cfg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to be delivered again", func() bool {
		return f.engine.count("again") > 1 || f.consumerInfo(t).NumRedelivered > 0
	})
	if _, err := f.js.UpdateConsumer(ctx, jobs.JobsStream, fastSettings(20).ConsumerConfig(pool)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the redelivery handled (or run)
	free()
	waitFor(t, "the job to leave the stream", func() bool { return f.streamMsgs(t, jobs.JobsStream) == 0 })
	results := 0
	for _, r := range f.audit.records("again") {
		if r.Final && r.Outcome == llm.OutcomeOK {
			results++
		}
	}
	letters := len(f.letters(t))
	if calls := f.engine.count("again"); results != 1 || letters != 0 || calls != 1 {
		t.Errorf("%d results, %d letters, %d calls: want the first delivery's result only, one call", results, letters, calls)
	}
	t.Logf("delivered again while running: 1 document, %d results, %d dead letters, %d calls, %d deliveries seen by the server",
		results, letters, f.engine.count("again"), f.consumerInfo(t).Delivered.Consumer)
}
