package submit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

type env struct {
	js    jetstream.JetStream
	store *audit.Store
	sub   *submit.Submitter
	v1    jobs.SchemaRef
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, _ := audittest.Store(t)
	_, js := jobstest.Connect(t, jobstest.Server(t), jetstream.WithPublishAsyncMaxPending(4))
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatal(err)
	}
	e := &env{js: js, store: st, sub: submit.New(js, st, submit.WithBatch(3), submit.WithPublisher(jobs.WithMaxDocument(100)))}
	e.v1 = e.register(t, `{"type":"object","properties":{"a":{"type":"string"}}}`)
	return e
}

func (e *env) register(t testing.TB, body string) jobs.SchemaRef {
	sc, err := schema.Compile([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := e.sub.RegisterSchema(context.Background(), "thing", sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.NewSchemas(e.js).Get(context.Background(), ref.Fingerprint); err != nil {
		t.Fatalf("schema body not in the bucket: %v", err)
	}
	return ref
}

func (e *env) job(ref jobs.SchemaRef) submit.Job {
	return submit.Job{Schema: ref, Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini", Pool: "openai_gpt-4o-mini", Run: "r1"}
}

func (e *env) submit(t *testing.T, docs []submit.Doc) submit.Summary {
	t.Helper()
	sum, err := e.sub.Submit(context.Background(), e.job(e.v1), func(fn func(submit.Doc) error) error {
		for _, d := range docs {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func (e *env) msgs(t *testing.T, stream string) uint64 {
	s, err := e.js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func docs(n int) []submit.Doc {
	var out []submit.Doc
	for i := range n {
		out = append(out, submit.Doc{ID: fmt.Sprintf("d%d", i), Source: "test", Text: fmt.Sprintf("document %d", i)})
	}
	return out
}

func TestSubmit(t *testing.T) {
	e := setup(t)
	in := append(docs(5),
		submit.Doc{ID: "big", Source: "big.txt", Text: strings.Repeat("x", 101)},
		submit.Doc{ID: "d0", Source: "again.txt", Text: "same id, other text"},
		submit.Doc{ID: "bad", Source: "bad.txt", Err: fmt.Errorf("%w: empty document", submit.ErrBadInput)},
	)
	sum := e.submit(t, in)
	if sum.Queued != 5 || sum.Duplicates != 0 || len(sum.Rejected) != 3 {
		t.Fatalf("first submit: %+v, want 5 queued and 3 rejected", sum)
	}
	reasons := map[string]string{}
	for _, r := range sum.Rejected {
		reasons[r.Source] = r.Reason
	}
	for src, want := range map[string]string{"big.txt": "document too large", "again.txt": "appears twice", "bad.txt": "empty document"} {
		if !strings.Contains(reasons[src], want) {
			t.Errorf("%s rejected with %q, want %q", src, reasons[src], want)
		}
	}
	if n := e.msgs(t, jobs.JobsStream); n != 5 {
		t.Errorf("%d jobs on the stream, want 5", n)
	}
	d, err := e.store.Document(context.Background(), "d3")
	if err != nil || d.Text != "document 3" {
		t.Errorf("stored document d3 = %+v, %v", d, err)
	}
	if _, err := e.store.Document(context.Background(), "big"); err == nil {
		t.Error("a rejected document was stored")
	}
	sum = e.submit(t, docs(5))
	if sum.Queued != 0 || sum.Duplicates != 5 || len(sum.JobIDs) != 5 {
		t.Errorf("second submit: %+v, want 5 duplicates, still queued, so followed", sum)
	}
	if n := e.msgs(t, jobs.JobsStream); n != 5 {
		t.Errorf("%d jobs on the stream after resubmitting the same documents, want 5", n)
	}
}

// deadLetter plays a worker that gave up on a document: the letter on the
// DLQ and its reference in the audit.
func (e *env) deadLetter(t *testing.T, w *audit.GroupWriter, doc, text string) {
	t.Helper()
	env := &jobs.Envelope{DocumentID: doc, Run: "r1", Schema: e.v1, Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini", Pool: "openai_gpt-4o-mini",
		Options: jobs.Options{MaxReasks: new(1), Chunking: "300"}, SubmittedAt: time.Now()}
	env.Seal(text)
	env.Text = text
	e.letter(t, w, env, nil)
}

// letter publishes env's dead letter with attempts, and records it in the
// audit as a worker does; it returns the letter's sequence.
func (e *env) letter(t *testing.T, w *audit.GroupWriter, env *jobs.Envelope, attempts []llm.Attempt) uint64 {
	t.Helper()
	ctx := context.Background()
	seq, err := jobs.NewDLQ(e.js).Publish(ctx, &jobs.DeadLetter{Job: *env, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid", Attempts: attempts}, WorkerID: "w"})
	if err != nil {
		t.Fatal(err)
	}
	rec := record(env, llm.OutcomeExhausted, nil)
	rec.DeadLetter = &audit.DeadLetter{Stream: jobs.DLQStream, Seq: seq, Reason: "still invalid"}
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	return seq
}

func record(env *jobs.Envelope, o llm.Outcome, value json.RawMessage) *audit.Record {
	return &audit.Record{
		JobID: env.JobID, DocumentID: env.DocumentID, DocumentHash: env.DocumentHash, Run: env.Run,
		SchemaName: env.Schema.Name, SchemaVersion: env.Schema.Version, SchemaFingerprint: env.Schema.Fingerprint,
		Provider: env.Provider, Model: env.Model, Pool: env.Pool, Delivery: 1, WorkerID: "w",
		Attempts: []llm.Attempt{{N: 1, Raw: string(value)}}, Outcome: o, Value: value, Final: true,
	}
}

func TestResubmitFromDLQ(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.submit(t, docs(4))
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	e.deadLetter(t, w, "d1", "document 1")
	e.deadLetter(t, w, "d2", "document 2")
	req := submit.ResubmitRequest{FromDLQ: true, Run: "r1"}

	dry := req
	dry.DryRun = true
	if sum, err := e.sub.Resubmit(ctx, e.store, dry); err != nil || sum.Selected != 2 || sum.Queued != 0 {
		t.Fatalf("dry run: %+v, %v; want 2 selected, none queued", sum, err)
	}
	tests := []struct {
		name                     string
		queued, removed, dlqLeft int
	}{
		{"first run", 2, 2, 0},
		{"second run queues nothing", 0, 0, 0},
	}
	for _, tc := range tests {
		sum, err := e.sub.Resubmit(ctx, e.store, req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if sum.Queued != tc.queued || sum.Removed != tc.removed || len(sum.Rejected) != 0 {
			t.Errorf("%s: %+v, want %d queued and %d removed", tc.name, sum, tc.queued, tc.removed)
		}
		if n := e.msgs(t, jobs.DLQStream); n != uint64(tc.dlqLeft) {
			t.Errorf("%s: %d letters left on the DLQ, want %d", tc.name, n, tc.dlqLeft)
		}
	}
	if n := e.msgs(t, jobs.JobsStream); n != 6 {
		t.Errorf("%d jobs on the stream, want 4 submitted + 2 resubmitted", n)
	}
	// A resubmitted job is the letter's job: its options, chunking
	// included, are those it was submitted with.
	stream, err := e.js.Stream(ctx, jobs.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(5); seq <= 6; seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		env, err := jobs.DecodeEnvelope(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		if want := (jobs.Options{MaxReasks: new(1), Chunking: "300"}); env.Resubmission == "" || !reflect.DeepEqual(env.Options, want) {
			t.Errorf("resubmitted job %d: resubmission %q, options %+v, want the letter's %+v", seq, env.Resubmission, env.Options, want)
		}
	}
	dead, err := e.store.DeadLetters(ctx, audit.DeadLetterFilter{Pending: true})
	if err != nil || len(dead) != 0 {
		t.Errorf("dead letters still pending in the audit: %+v, %v", dead, err)
	}
}

func TestResubmitToNewVersion(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.submit(t, docs(3))
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	for _, d := range []string{"d0", "d1"} { // d2 has no result yet
		text := "document " + d[1:]
		env := &jobs.Envelope{DocumentID: d, Run: "r1", Schema: e.v1, Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini", Pool: "openai_gpt-4o-mini"}
		env.Seal(text)
		if err := w.Write(ctx, record(env, llm.OutcomeOK, json.RawMessage(`{"a":"x"}`))); err != nil {
			t.Fatal(err)
		}
	}
	v2 := e.register(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`)
	if v2.Version != 2 {
		t.Fatalf("new schema registered as version %d, want 2", v2.Version)
	}
	req := submit.ResubmitRequest{Schema: "thing", ToVersion: 2, Provider: "openai:gpt-4o-mini", Run: "v2"}
	dry := req
	dry.DryRun = true
	if sum, err := e.sub.Resubmit(ctx, e.store, dry); err != nil || sum.Selected != 2 {
		t.Fatalf("dry run: %+v, %v; want 2 outdated documents", sum, err)
	}
	for i, want := range []int{2, 0} {
		sum, err := e.sub.Resubmit(ctx, e.store, req)
		if err != nil || sum.Queued != want {
			t.Fatalf("run %d: %+v, %v; want %d queued", i+1, sum, err, want)
		}
	}
	// The resubmitted jobs carry version 2.
	s, _ := e.js.Stream(ctx, jobs.JobsStream)
	m, err := s.GetLastMsgForSubject(ctx, jobs.JobSubject("openai_gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := jobs.DecodeEnvelope(m.Data)
	if err != nil || env.Schema != v2 || env.Run != "v2" {
		t.Errorf("last job: %+v, %v; want schema %+v", env, err, v2)
	}
	if _, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{Schema: "thing", ToVersion: 2}); err == nil {
		t.Error("resubmission to a version without a provider was accepted")
	}
}

// TestSubmitSkipsFinalJobs is the restart case: JetStream no longer holds
// the jobs, but the audit knows which are final, so a second submit queues
// only what is not final, never follows what will not run, and following
// ends as soon as the queued jobs are final.
func TestSubmitSkipsFinalJobs(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	first := e.submit(t, docs(4))
	if first.Queued != 4 || len(first.JobIDs) != 4 {
		t.Fatalf("first submit: %+v, want 4 queued with their job ids", first)
	}
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	envFor := func(i int) *jobs.Envelope {
		env := &jobs.Envelope{DocumentID: fmt.Sprintf("d%d", i), Run: "r1", Schema: e.v1, Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini", Pool: "openai_gpt-4o-mini"}
		env.Seal(fmt.Sprintf("document %d", i))
		return env
	}
	if err := w.Write(ctx, record(envFor(0), llm.OutcomeOK, json.RawMessage(`{"a":"x"}`))); err != nil {
		t.Fatal(err)
	}
	e.deadLetter(t, w, "d1", "document 1")
	open := record(envFor(2), llm.OutcomeTransport, nil) // d2: still retrying
	open.Final = false
	if err := w.Write(ctx, open); err != nil {
		t.Fatal(err)
	}
	// The purged stream: the server still remembers the message ids of d2
	// and d3 but holds neither, and the audit has them not final: lost,
	// never followed. A new stream (a JetStream that lost its data)
	// queues them again.
	tests := []struct {
		name  string
		reset func(t *testing.T)
		lost  int
	}{
		{"stream purged", func(t *testing.T) {
			s, err := e.js.Stream(ctx, jobs.JobsStream)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Purge(ctx); err != nil {
				t.Fatal(err)
			}
		}, 2},
		{"stream recreated", func(t *testing.T) {
			if err := e.js.DeleteStream(ctx, jobs.JobsStream); err != nil {
				t.Fatal(err)
			}
			if err := jobs.EnsureStreams(ctx, e.js); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	var again submit.Summary
	for _, tc := range tests {
		tc.reset(t)
		again = e.submit(t, docs(4))
		if again.AlreadyDone != 2 || again.AlreadyFailed != 1 || again.Lost != tc.lost || again.Queued != 2-tc.lost || again.Duplicates != 0 {
			t.Errorf("%s, second submit: %+v, want 2 already done (1 failed), %d lost, %d queued", tc.name, again, tc.lost, 2-tc.lost)
		}
		if len(again.JobIDs) != again.Queued {
			t.Errorf("%s: following %d jobs, want the %d queued", tc.name, len(again.JobIDs), again.Queued)
		}
		for _, id := range again.JobIDs {
			if id == envFor(0).JobID || id == envFor(1).JobID {
				t.Errorf("%s: final job %s queued again", tc.name, id)
			}
		}
	}

	// Following the queued jobs ends once they are final, not before.
	fctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	p, err := submit.Follow(fctx, e.store, again.JobIDs, 20*time.Millisecond, nil)
	cancel()
	if len(again.JobIDs) > 0 && (err == nil || p.InFlight != len(again.JobIDs)) {
		t.Fatalf("follow before the jobs ran: %+v, %v; want it still waiting", p, err)
	}
	for _, i := range []int{2, 3} {
		if err := w.Write(ctx, record(envFor(i), llm.OutcomeOK, json.RawMessage(`{"a":"y"}`))); err != nil {
			t.Fatal(err)
		}
	}
	p, err = submit.Follow(ctx, e.store, again.JobIDs, 20*time.Millisecond, nil)
	if err != nil || p.Done != len(again.JobIDs) || p.Failed != 0 || p.InFlight != 0 {
		t.Errorf("follow after the jobs ran: %+v, %v; want all %d done", p, err, len(again.JobIDs))
	}

	third := e.submit(t, docs(4))
	if third.Queued != 0 || third.Duplicates != 0 || third.AlreadyDone != 4 || third.AlreadyFailed != 1 {
		t.Errorf("third submit: %+v, want all 4 already done, 1 of them failed", third)
	}

	// `submit resubmit` redoes d1 under a salted job id and it succeeds:
	// the document no longer counts as failed.
	redo := envFor(1)
	redo.Resubmission = "dlq:1"
	redo.Seal("document 1")
	if err := w.Write(ctx, record(redo, llm.OutcomeOK, json.RawMessage(`{"a":"z"}`))); err != nil {
		t.Fatal(err)
	}
	fourth := e.submit(t, docs(4))
	if fourth.Queued != 0 || fourth.AlreadyDone != 4 || fourth.AlreadyFailed != 0 {
		t.Errorf("submit after a successful resubmission: %+v, want all 4 already done, none failed", fourth)
	}
}

// countFails is a resubmission's store whose counting fails once: as a
// resubmission killed after the server acked a page and before its count.
type countFails struct {
	*audit.Store
	failed bool
}

func (c *countFails) CountRunJobs(ctx context.Context, run string, queued, seen []string) (int, error) {
	if !c.failed {
		c.failed = true
		return 0, errors.New("killed")
	}
	return c.Store.CountRunJobs(ctx, run, queued, seen)
}

// A resubmission whose page was acked and not counted leaves its jobs
// queued and uncounted; its rerun finds them queued into their run
// (duplicates) and counts them, once: the run is sealed with every job.
func TestResubmitRerunCountsWhatTheKilledOneQueued(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	// r1 submitted and counted as Submit counts it.
	if err := e.store.StartRunCount(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	sum := e.submit(t, docs(4))
	if _, err := e.store.CountRunJobs(ctx, "r1", sum.JobIDs, nil); err != nil {
		t.Fatal(err)
	}
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	e.deadLetter(t, w, "d1", "document 1")
	e.deadLetter(t, w, "d2", "document 2")
	req := submit.ResubmitRequest{FromDLQ: true, Run: "r1"}
	if _, err := e.sub.Resubmit(ctx, &countFails{Store: e.store}, req); err == nil {
		t.Fatal("the killed resubmission succeeded")
	}
	again, err := e.sub.Resubmit(ctx, e.store, req)
	if err != nil || again.Duplicates != 2 || len(again.Runs) != 1 || again.Runs[0].Generation != 1 {
		t.Fatalf("the rerun: %+v, %v; want 2 duplicates, r1 sealed", again, err)
	}
	if d, _, err := e.store.RunDoneState(ctx, "r1"); err != nil || d.Jobs != 6 {
		t.Fatalf("r1 after the rerun: %+v, %v; want 6 jobs (4 submitted, 2 resubmitted)", d, err)
	}
}

// TestResubmitTrimmedLetter: a letter trimmed to fit the server's max
// payload (jobs.DeadLetter.Trimmed: 600 attempts here) carries no inline
// text, and was refused as an invalid job; it is resubmitted with the
// text the audit stored at submit, and with its metadata, which a letter
// leaves out last of all (this one carries none).
func TestResubmitTrimmedLetter(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	const text = "document with metadata"
	meta := json.RawMessage(`{"customer":"ACME","batch":7}`)
	if sum := e.submit(t, []submit.Doc{{ID: "m1", Source: "test", Text: text, Metadata: meta}}); sum.Queued != 1 {
		t.Fatalf("submit: %+v", sum)
	}
	env := e.queued(t, 1)[0]
	env.Metadata = nil
	many := make([]llm.Attempt, 600) // capped at 16 KiB each: over any max payload here
	for i := range many {
		many[i] = llm.Attempt{N: i + 1, Raw: strings.Repeat("y", 64<<10)}
	}
	w, err := e.store.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	seq := e.letter(t, w, env, many)
	if l, err := jobs.NewDLQ(e.js).Get(ctx, seq); err != nil || l.Job.Text != "" || l.Trimmed == "" {
		t.Fatalf("letter %v: want one trimmed, without its text", err)
	}
	sum, err := e.sub.Resubmit(ctx, e.store, submit.ResubmitRequest{FromDLQ: true, Run: "r1"})
	if err != nil || sum.Queued != 1 || len(sum.Rejected) != 0 {
		t.Fatalf("resubmit: %+v, %v; want the document queued again", sum, err)
	}
	again := e.queued(t, 2)[1]
	if got, err := jobs.NewDocuments(e.js).Text(ctx, again); err != nil || got != text {
		t.Errorf("resubmitted text %q, %v; want %q", got, err, text)
	}
	var got, want map[string]any
	if err := json.Unmarshal(meta, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again.Metadata, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("resubmitted metadata %s (%v), want %s", again.Metadata, err, meta)
	}
}
