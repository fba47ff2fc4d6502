package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/webhook"
	"github.com/extractq/extractq/llm"
)

var secret = []byte("hook-secret")

// fixture is a real audit database, an embedded NATS server with the
// events stream, and a webhook receiver that records what it was sent.
type fixture struct {
	st      *audit.Store
	dbURL   string
	natsURL string
	js      jetstream.JetStream
	writer  audit.Writer
	recv    *receiver
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	st, dbURL := audittest.Store(t)
	natsURL := jobstest.Server(t)
	_, js := jobstest.Connect(t, natsURL)
	if err := events.Ensure(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	w, err := st.NewWriter(ctx, audit.WithMaxDelay(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	recv := &receiver{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	recv.url = srv.URL
	return &fixture{st: st, dbURL: dbURL, natsURL: natsURL, js: js, writer: w, recv: recv}
}

// receiver is a webhook endpoint: it verifies each request's signature
// and keeps the verified bodies with their delivery ids.
type receiver struct {
	url        string
	mu         sync.Mutex
	deliveries []delivery
	bad        int
	// hold, if set, is called with each request's delivery id before it is
	// answered (outside mu).
	hold func(id string)
}

type delivery struct {
	id   string
	body []byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if r.hold != nil {
		r.hold(req.Header.Get(webhook.HeaderDelivery))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if webhook.Verify(secret, req.Header.Get(webhook.HeaderSignature), req.Header.Get(webhook.HeaderTimestamp), body, time.Now(), time.Minute) != nil ||
		req.URL.Query().Get("token") != "tok" {
		r.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.deliveries = append(r.deliveries, delivery{req.Header.Get(webhook.HeaderDelivery), body})
}

func (r *receiver) got() ([]delivery, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.deliveries...), r.bad
}

// submit is what a submit without --wait leaves: the webhook registered,
// n jobs counted, the run sealed.
func (f *fixture) submit(t *testing.T, run string, n int) {
	t.Helper()
	f.submitFor(t, run, n, events.KindDone)
}

// submittedJobs numbers the jobs the fixtures count into runs.
var submittedJobs atomic.Int64

// submitFor is submit with a webhook receiving kinds.
func (f *fixture) submitFor(t *testing.T, run string, n int, kinds ...string) {
	t.Helper()
	ctx := t.Context()
	sealed, err := webhook.SealURL(secret, f.recv.url+"/hook?token=tok")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.RegisterRunWebhook(ctx, audit.RunWebhook{Run: run, URLRedacted: f.recv.url + "/hook", URLSealed: sealed,
		KeyID: webhook.KeyID(secret), Events: kinds, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n) // each submission's jobs its own
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", run, submittedJobs.Add(1))
	}
	if _, err := f.st.CountRunJobs(ctx, run, ids, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.SealRun(ctx, run); err != nil {
		t.Fatal(err)
	}
}

// finish writes job's final record, as a worker does.
func (f *fixture) finish(t *testing.T, run, job string, outcome llm.Outcome) {
	t.Helper()
	now := time.Now().UTC()
	rec := &audit.Record{JobID: job, DocumentID: "doc-" + job, DocumentHash: audit.HashText(job), Run: run,
		SchemaName: "invoice", SchemaVersion: 1, SchemaFingerprint: "fp", Provider: "sim:clean", Model: "sim", Pool: "sim",
		Delivery: 1, WorkerID: "w", StartedAt: now, FinishedAt: now, Outcome: outcome, Final: true,
		Attempts: []llm.Attempt{{N: 1, Provider: "sim:clean", Model: "sim", StartedAt: now, Raw: "{}"}}}
	if outcome == llm.OutcomeOK {
		rec.Value = json.RawMessage(`{}`)
	} else {
		rec.Reason = "still invalid"
		rec.DeadLetter = &audit.DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: 1, Reason: rec.Reason}
	}
	if err := f.writer.Write(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
}

// sweep runs a sweeper with id until the test ends.
func (f *fixture) sweep(t *testing.T, id string, secret []byte) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &events.Sweeper{Store: f.st, JS: f.js, ID: id, Secret: secret, Every: 50 * time.Millisecond,
		DeadLetterLag: time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// doneEvents are the done events on the stream for run, in order.
func (f *fixture) doneEvents(t *testing.T, run string) []events.Event {
	t.Helper()
	ctx := t.Context()
	s, err := f.js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.Subject(run, events.KindDone)}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := c.FetchNoWait(100)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Event
	for m := range batch.Messages() {
		var e events.Event
		if err := json.Unmarshal(m.Data(), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// eventually waits up to 20s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A run submitted without --wait is announced once its last job is final,
// exactly once though two workers sweep, and again (generation 2, the
// run's counts then) after another submission reopened it.
func TestSweeperAnnouncesRunsDoneOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const run = "nightly.2026-11-26"
	f.submit(t, run, 3)
	f.sweep(t, "worker-a", secret)
	f.sweep(t, "worker-b", secret)
	f.finish(t, run, "j1", llm.OutcomeOK)
	f.finish(t, run, "j2", llm.OutcomeExhausted)
	// Two of three jobs final: several sweeps pass, nothing is announced.
	time.Sleep(500 * time.Millisecond)
	if evs := f.doneEvents(t, run); len(evs) != 0 {
		t.Fatalf("done events %+v with a job still open, want none", evs)
	}
	if got, _ := f.recv.got(); len(got) != 0 {
		t.Fatalf("webhook delivered %d times with a job still open", len(got))
	}
	f.finish(t, run, "j3", llm.OutcomeOK)
	eventually(t, "one webhook delivery", func() bool { got, _ := f.recv.got(); return len(got) == 1 })
	evs := f.doneEvents(t, run)
	if len(evs) != 1 || evs[0].Total != 3 || evs[0].OK != 2 || evs[0].Failed != 1 || evs[0].Generation != 1 || evs[0].Run != run {
		t.Fatalf("done events %+v, want one: run %s, 3 jobs, 2 ok, 1 failed, generation 1", evs, run)
	}

	// Another submission into the run reopens it.
	f.submit(t, run, 1)
	f.finish(t, run, "j4", llm.OutcomeOK)
	eventually(t, "a second webhook delivery", func() bool { got, _ := f.recv.got(); return len(got) == 2 })
	time.Sleep(300 * time.Millisecond) // a third, if any, would come within a few sweeps
	got, bad := f.recv.got()
	evs = f.doneEvents(t, run)
	if len(got) != 2 || bad != 0 || len(evs) != 2 {
		t.Fatalf("%d deliveries (%d refused), %d done events; want 2, 0, 2", len(got), bad, len(evs))
	}
	if e := evs[1]; e.Total != 4 || e.OK != 3 || e.Failed != 1 || e.Generation != 2 {
		t.Errorf("second done event %+v, want 4 jobs, 3 ok, 1 failed, generation 2", e)
	}
	for i, d := range got {
		var e events.Event
		if err := json.Unmarshal(d.body, &e); err != nil || e.Generation != i+1 || d.id != webhook.DoneDeliveryID(run, i+1) {
			t.Errorf("delivery %d: id %s body %s, want the done event of generation %d under its delivery id", i, d.id, d.body, i+1)
		}
	}
	tries, err := f.st.WebhookAttempts(t.Context(), run)
	if err != nil || len(tries) != 2 || tries[0].URL != f.recv.url+"/hook" || tries[0].StatusCode != 200 {
		t.Errorf("delivery log %+v (%v), want two tries answered 200, the URL without its token", tries, err)
	}
}

// A webhook that receives dead letters gets each of the run's dead
// letters once, in order, each under its own delivery id, then the run's
// done event.
func TestSweeperDeliversDeadLetters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.submitFor(t, "r", 3, events.KindDone, events.KindDeadLetter)
	f.sweep(t, "w1", secret)
	f.sweep(t, "w2", secret)
	f.finish(t, "r", "j1", llm.OutcomeExhausted)
	f.finish(t, "r", "j2", llm.OutcomeOK)
	f.finish(t, "r", "j3", llm.OutcomeExhausted)
	eventually(t, "two dead letters and the done event", func() bool { got, _ := f.recv.got(); return len(got) == 3 })
	time.Sleep(300 * time.Millisecond) // more, if any, would come within a few sweeps
	got, bad := f.recv.got()
	var kinds []string
	for _, d := range got {
		var e events.Event
		if err := json.Unmarshal(d.body, &e); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Kind+" "+e.JobID)
		want := webhook.DoneDeliveryID("r", 1)
		if e.Kind == events.KindDeadLetter {
			want = webhook.DeadLetterDeliveryID("r", e.JobID)
			if e.Reason != "still invalid" || e.DocumentID != "doc-"+e.JobID {
				t.Errorf("dead letter event %s: want its reason and document", d.body)
			}
		}
		if d.id != want {
			t.Errorf("%s delivered as %s, want %s", kinds[len(kinds)-1], d.id, want)
		}
	}
	if len(got) != 3 || bad != 0 || !slices.Contains(kinds, "dead_letter j1") || !slices.Contains(kinds, "dead_letter j3") || !slices.Contains(kinds, "done ") {
		t.Fatalf("deliveries %v (%d refused), want dead letters j1 and j3 and the done event, once each", kinds, bad)
	}
	if slices.Index(kinds, "dead_letter j1") > slices.Index(kinds, "dead_letter j3") {
		t.Errorf("dead letters delivered out of order: %v", kinds)
	}
}

// A delivery that ends while a sweep reads its pending work (the read saw
// it pending; its mark commits after) is not started again from that
// stale read: each dead letter and the done event reach the webhook once.
// The receiver holds each delivery's first request until a sweep has read
// its pending deliveries; the sweep then lets it end before starting what
// it read. Under load this interleaving came by itself: a dead letter was
// delivered twice (TestSweeperDeliversDeadLetters), and the done event of
// generation 1 (cmd/submit TestSubmitWithoutWaitIsAnnouncedOnce).
func TestSweeperDoesNotRestartADeliveryFromAStaleRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.submitFor(t, "r", 2, events.KindDone, events.KindDeadLetter)
	var (
		mu      sync.Mutex
		seen    = map[string]bool{}          // delivery ids requested
		held    = map[string]chan struct{}{} // first requests held, by delivery id
		ended   = map[string]bool{}          // kinds ended after a sweep's read
		timeout = time.After(20 * time.Second)
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for id, c := range held {
			close(c)
			delete(held, id)
		}
	})
	f.recv.hold = func(id string) {
		mu.Lock()
		if seen[id] {
			mu.Unlock()
			return
		}
		seen[id] = true
		c := make(chan struct{})
		held[id] = c
		mu.Unlock()
		<-c
	}
	ids := map[string]string{events.KindDone: webhook.DoneDeliveryID("r", 1),
		events.KindDeadLetter: webhook.DeadLetterDeliveryID("r", "j1")}
	ctx, cancel := context.WithCancel(context.Background())
	s := &events.Sweeper{Store: f.st, JS: f.js, ID: "w", Secret: secret, Every: 50 * time.Millisecond,
		DeadLetterLag: time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	events.SetAfterRead(s, func(kind string) {
		mu.Lock()
		c := held[ids[kind]]
		delete(held, ids[kind])
		mu.Unlock()
		if c == nil {
			return
		}
		close(c) // the delivery read as pending ends now, after the read
		for events.InFlight(s, kind, "r") {
			select {
			case <-timeout:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		mu.Lock()
		ended[kind] = true
		mu.Unlock()
	})
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	f.finish(t, "r", "j1", llm.OutcomeExhausted)
	f.finish(t, "r", "j2", llm.OutcomeOK)
	eventually(t, "both deliveries ended after a sweep read them as pending", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ended[events.KindDone] && ended[events.KindDeadLetter]
	})
	time.Sleep(300 * time.Millisecond) // a repeat, if any, comes within a few sweeps
	got, bad := f.recv.got()
	var kinds []string
	for _, d := range got {
		var e events.Event
		if err := json.Unmarshal(d.body, &e); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Kind+" "+e.JobID)
	}
	slices.Sort(kinds)
	if len(kinds) != 2 || bad != 0 || kinds[0] != "dead_letter j1" || kinds[1] != "done " {
		t.Fatalf("deliveries %q (%d refused), want the dead letter j1 and the done event, once each", kinds, bad)
	}
	tries, err := f.st.WebhookAttempts(t.Context(), "r")
	if err != nil || len(tries) != 2 {
		t.Errorf("delivery log %+v (%v), want one try of each", tries, err)
	}
}

// A done event claimed and not marked published (its claimer died, or
// its ack timed out, after or before the event reached the stream) is
// published by the sweeper once the claim is ClaimGrace old, and only if
// it is not on the stream already: a core NATS subscriber (`nats sub`, as
// doc/etl.md shows) sees every publish, the stream's de-duplication does
// not hide a second one from it. A younger claim is left to its claimer,
// which may be publishing it now.
func TestSweeperRepublishesAClaimOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	nc, err := nats.Connect(f.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(events.SubjectPrefix + "*." + events.KindDone)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	db, err := pgx.Connect(ctx, f.dbURL)
	must(err)
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	claim := func(run string, publish bool, age time.Duration) {
		f.submit(t, run, 1)
		f.finish(t, run, "j-"+run, llm.OutcomeOK)
		d, _, err := f.st.RunDoneState(ctx, run)
		must(err)
		body, err := json.Marshal(events.DoneEvent(d, time.Now()))
		must(err)
		if ok, err := f.st.ClaimRunDone(ctx, d, body, "submit"); err != nil || !ok {
			t.Fatalf("claim %s: %v %v", run, ok, err)
		}
		if publish {
			var e events.Event
			must(json.Unmarshal(body, &e))
			msg, err := events.Message(e)
			must(err)
			msg.Data = body
			_, err = f.js.PublishMsg(ctx, msg)
			must(err)
		}
		_, err = db.Exec(ctx, `UPDATE run_done SET announced_at = now() - $2 * interval '1 second' WHERE run = $1`, run, age.Seconds())
		must(err)
	}
	claim("landed", true, 2*events.ClaimGrace) // on the stream, not marked
	claim("lost", false, 2*events.ClaimGrace)  // never published
	claim("fresh", false, 0)                   // its claimer may be publishing now
	f.sweep(t, "w", secret)
	published := func(run string) bool {
		d, _, err := f.st.RunDoneState(ctx, run)
		return err == nil && d.Published == d.Announced
	}
	eventually(t, "landed and lost marked published", func() bool { return published("landed") && published("lost") })
	time.Sleep(300 * time.Millisecond) // more publishes, if any, come within a few sweeps
	seen := map[string]int{}
	for {
		m, err := sub.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		var e events.Event
		must(json.Unmarshal(m.Data, &e))
		seen[e.Run]++
	}
	if seen["landed"] != 1 || seen["lost"] != 1 || seen["fresh"] != 0 || published("fresh") {
		t.Fatalf("done events seen by a core subscriber %v (fresh published: %v), want landed and lost once each, fresh not yet", seen, published("fresh"))
	}
	for _, run := range []string{"landed", "lost"} {
		if evs := f.doneEvents(t, run); len(evs) != 1 {
			t.Errorf("done events of %s on the stream %+v, want one", run, evs)
		}
	}
}

// A worker that holds another secret than the submitter (or none) does
// not deliver, and says why; one with the submitter's secret does.
func TestSweeperWithoutTheSubmittersSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.submit(t, "r", 1)
	f.finish(t, "r", "j1", llm.OutcomeOK)
	ctx, cancel := context.WithCancel(t.Context())
	var logged syncBuffer
	s := &events.Sweeper{Store: f.st, JS: f.js, ID: "w", Secret: []byte("another"), Every: 50 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logged, nil))}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	eventually(t, "the done event", func() bool { return len(f.doneEvents(t, "r")) == 1 })
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	if got, bad := f.recv.got(); len(got)+bad != 0 {
		t.Fatalf("%d requests sent with the wrong secret, want none", len(got)+bad)
	}
	if out := logged.String(); !strings.Contains(out, "another EXTRACTQ_WEBHOOK_SECRET") || strings.Contains(out, "tok") {
		t.Errorf("log %q: want it to name the secret mismatch, without the URL's token", out)
	}
	f.sweep(t, "w2", secret)
	eventually(t, "delivered by a worker with the secret", func() bool { got, _ := f.recv.got(); return len(got) == 1 })
}

// TestSweeperKilledBeforeDelivering: a worker process that announced a run
// is killed (SIGKILL, no cleanup) as it starts the webhook's delivery; the
// next sweeper takes the lock the dead one held and delivers once, under
// the same delivery id.
func TestSweeperKilledBeforeDelivering(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.submit(t, "r", 2)
	f.finish(t, "r", "j1", llm.OutcomeOK)
	f.finish(t, "r", "j2", llm.OutcomeOK)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SWEEPER_HELPER=1", "SWEEPER_DB="+f.dbURL, "SWEEPER_NATS="+f.natsURL)
	out, err := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want killed by SIGKILL:\n%s", err, out)
	}
	d, _, err := f.st.RunDoneState(t.Context(), "r")
	if err != nil || d.Announced != 1 || d.Published != 1 {
		t.Fatalf("after the kill: %+v (%v), want generation 1 announced and published by the dead worker", d, err)
	}
	if got, _ := f.recv.got(); len(got) != 0 {
		t.Fatalf("the killed worker delivered %d times, want 0", len(got))
	}
	f.sweep(t, "restarted", secret)
	eventually(t, "the webhook delivered after the restart", func() bool { got, _ := f.recv.got(); return len(got) == 1 })
	time.Sleep(300 * time.Millisecond)
	got, _ := f.recv.got()
	if len(got) != 1 || got[0].id != webhook.DoneDeliveryID("r", 1) || len(f.doneEvents(t, "r")) != 1 {
		t.Fatalf("deliveries %d (id %v), done events %d; want exactly one of each", len(got), got, len(f.doneEvents(t, "r")))
	}
}

// TestMain runs the worker TestSweeperKilledBeforeDelivering kills when
// the test binary is started as that helper.
func TestMain(m *testing.M) {
	if os.Getenv("SWEEPER_HELPER") == "1" {
		sweepUntilKilled()
	}
	os.Exit(m.Run())
}

// sweepUntilKilled sweeps, and kills its own process when its webhook
// client is first called: after the run was announced, before delivery.
func sweepUntilKilled() {
	ctx := context.Background()
	st, err := audit.Open(ctx, os.Getenv("SWEEPER_DB"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	nc, err := nats.Connect(os.Getenv("SWEEPER_NATS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	die := roundTripper(func(*http.Request) (*http.Response, error) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	})
	s := &events.Sweeper{Store: st, JS: js, ID: "doomed", Secret: secret, Every: 50 * time.Millisecond, Client: &http.Client{Transport: die}}
	_ = s.Run(ctx)
	os.Exit(3) // not reached: killed
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A run a waiting submit announced is that submit's to deliver: the
// sweeper leaves its webhook alone while the submit may still be at it.
func TestSweeperLeavesSubmitsDeliveries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.submit(t, "r", 1)
	f.finish(t, "r", "j1", llm.OutcomeOK)
	d, _, err := f.st.RunDoneState(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, claimed, err := events.Announce(t.Context(), f.st, f.js, d, audit.AnnouncedBySubmit); err != nil || !claimed {
		t.Fatalf("claimed %v (%v), want the first claim to succeed", claimed, err)
	}
	if _, claimed, err := events.Announce(t.Context(), f.st, f.js, d, "other"); err != nil || claimed {
		t.Fatalf("second claim %v (%v), want it refused", claimed, err)
	}
	f.sweep(t, "w", secret)
	time.Sleep(500 * time.Millisecond)
	if got, _ := f.recv.got(); len(got) != 0 || len(f.doneEvents(t, "r")) != 1 {
		t.Fatalf("%d deliveries, %d done events; want none (the submit delivers), one", len(got), len(f.doneEvents(t, "r")))
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}
