package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/devmode"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/llm"
)

// openStore opens the audit database at dbURL for the test.
func openStore(t *testing.T, dbURL string) *audit.Store {
	t.Helper()
	st, err := audit.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// rowOf returns the fields of the first line of out whose field at col is
// want.
func rowOf(out string, col int, want string) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > col && f[col] == want {
			return f
		}
	}
	return nil
}

// TestBatchListShowAndStatus records three batches of batch pools beside
// the status fleet's online ones: one in flight whose jobs stand in each
// way, one in flight whose worker's lease ran out, one closed.
func TestBatchListShowAndStatus(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	natsURL, dbURL := statusFleet(t) // job j1 ended ok
	conn := []string{"--nats-url", natsURL, "--database-url", dbURL}
	db := []string{"--database-url", dbURL}

	// An online-only fleet: status shows no batch section, its JSON no key.
	if out := runStatus(t, ctx, conn...); strings.Contains(out, "BATCHES") {
		t.Errorf("status without batches shows a batch section:\n%s", out)
	}
	if out := runStatus(t, ctx, append(conn, "--json")...); strings.Contains(out, `"batches"`) {
		t.Errorf("status --json without batches has a batches key:\n%s", out)
	}
	if code, out, errOut := runRoot(t, "", append([]string{"batch", "list"}, db...)...); code != 0 || !strings.Contains(out, "no batches in flight") {
		t.Errorf("batch list with none: exit %d, %q %s", code, out, errOut)
	}

	st := openStore(t, dbURL)
	if _, err := st.Pool().Exec(ctx, `INSERT INTO jobs (job_id, document_id, schema_name, status, started_at, finished_at)
		VALUES ('jdead', 'd2', 'invoice', 'exhausted', now(), now()), ('jretry', 'd3', 'invoice', 'retrying', now(), now());
		INSERT INTO dead_letters (stream, seq, job_id, document_id) VALUES ('EXTRACTQ_DLQ', 1, 'jdead', 'd2')`); err != nil {
		t.Fatal(err)
	}
	jobIDs := []string{"j1", "jdead", "jretry"}
	for i := range 22 {
		jobIDs = append(jobIDs, fmt.Sprintf("jnew%02d", i))
	}
	now := time.Now()
	record := func(b audit.Batch, lease time.Duration) int64 {
		t.Helper()
		id, err := st.RecordBatch(ctx, b, lease)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a := record(audit.Batch{Provider: "openai:gpt-4o-mini", ProviderBatchID: "batch_a", Pool: "openai:gpt-4o-mini", Round: 1, JobIDs: jobIDs,
		Requests: len(jobIDs), Status: "in_progress", Counts: audit.BatchCounts{Succeeded: 4}, WorkerID: "w1", SubmittedAt: now.Add(-3 * time.Minute)}, time.Hour)
	c := record(audit.Batch{Provider: "anthropic:claude-haiku-4-5", ProviderBatchID: "msgbatch_c", Pool: "anthropic:claude-haiku-4-5", Round: 2,
		JobIDs: []string{"jretry"}, Requests: 1, Status: "canceling", WorkerID: "w2", SubmittedAt: now.Add(-2 * time.Minute)}, time.Millisecond)
	b := record(audit.Batch{Provider: "sim:clean", ProviderBatchID: "batch_b", Pool: "sim:clean", Round: 1, JobIDs: []string{"j1"}, Requests: 1,
		Status: "completed", WorkerID: "w1", SubmittedAt: now.Add(-time.Minute)}, time.Hour)
	if err := st.FinishBatch(ctx, b, "w1", "completed", "ended", nil, audit.BatchCounts{}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // c's lease runs out

	// list: the batches in flight, oldest first.
	code, out, errOut := runRoot(t, "", append([]string{"batch", "list"}, db...)...)
	if code != 0 {
		t.Fatalf("batch list: exit %d: %s", code, errOut)
	}
	// ID POOL PROVIDER-BATCH ROUND REQUESTS STATUS COUNTS AGE WORKER LEASE… CLOSED
	ra, rc := rowOf(out, 0, fmt.Sprint(a)), rowOf(out, 0, fmt.Sprint(c))
	if len(ra) < 11 || ra[1] != "openai_gpt-4o-mini" || ra[2] != "batch_a" || ra[3] != "1" || ra[4] != "25" || ra[5] != "in_progress" ||
		ra[6] != "4/0/0/0" || ra[8] != "w1" || !strings.Contains(strings.Join(ra, " "), "left") {
		t.Errorf("batch_a row %q in\n%s", ra, out)
	}
	if len(rc) < 11 || rc[2] != "msgbatch_c" || rc[3] != "2" || !strings.Contains(strings.Join(rc, " "), "ran out") {
		t.Errorf("msgbatch_c row %q in\n%s", rc, out)
	}
	if strings.Contains(out, "batch_b") || strings.Index(out, "batch_a") > strings.Index(out, "msgbatch_c") || !strings.Contains(out, "2 batches in flight") {
		t.Errorf("batch list: want batch_a then msgbatch_c, not the closed batch_b:\n%s", out)
	}

	// --all: newest first, the closed one with its closing time.
	_, out, _ = runRoot(t, "", append([]string{"batch", "list", "--all"}, db...)...)
	if ib, ic, ia := strings.Index(out, "batch_b"), strings.Index(out, "msgbatch_c"), strings.Index(out, "batch_a"); ib < 0 || ib > ic || ic > ia {
		t.Errorf("batch list --all: want batch_b, msgbatch_c, batch_a:\n%s", out)
	}
	if rb := rowOf(out, 0, fmt.Sprint(b)); len(rb) != 12 || rb[9] != "-" || !strings.Contains(rb[11], ":") {
		t.Errorf("closed batch_b row %q: want no lease and a closing date", rb)
	}
	_, out, _ = runRoot(t, "", append([]string{"batch", "list", "--all", "--limit", "1"}, db...)...)
	if !strings.Contains(out, "batch_b") || strings.Contains(out, "batch_a") || !strings.Contains(out, "there may be more") {
		t.Errorf("batch list --all --limit 1:\n%s", out)
	}
	_, out, _ = runRoot(t, "", append([]string{"batch", "list", "--pool", "openai_gpt-4o-mini", "--json"}, db...)...)
	var listed fleetview.Batch
	if err := json.Unmarshal([]byte(out), &listed); err != nil || listed.ID != a || listed.Requests != 25 || listed.Succeeded != 4 || listed.Worker != "w1" {
		t.Errorf("batch list --pool --json = %q (%v)", out, err)
	}

	// show, by row id and by provider batch id: where each job stands.
	for _, ref := range []string{fmt.Sprint(a), "batch_a"} {
		code, out, errOut := runRoot(t, "", append([]string{"batch", "show", ref}, db...)...)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("batch %d (provider batch batch_a)", a)) ||
			!strings.Contains(out, "jobs 25: 1 result, 1 dead letter, 23 pending") || !strings.Contains(out, "first 20 of 25 jobs; --jobs lists all") ||
			!strings.Contains(out, "recorded as openai:gpt-4o-mini") || !strings.Contains(out, "holds it") {
			t.Errorf("batch show %s: exit %d\n%s%s", ref, code, out, errOut)
		}
		if f := rowOf(out, 0, "jdead"); len(f) < 4 || f[1] != "dead" || f[3] != "exhausted" {
			t.Errorf("batch show %s: jdead row %q", ref, f)
		}
		if strings.Contains(out, "jnew21") {
			t.Errorf("batch show %s lists more than 20 jobs without --jobs", ref)
		}
	}
	_, out, _ = runRoot(t, "", append([]string{"batch", "show", "batch_a", "--jobs"}, db...)...)
	if !strings.Contains(out, "jnew21") || strings.Contains(out, "first 20") {
		t.Errorf("batch show --jobs does not list every job:\n%s", out)
	}
	_, out, _ = runRoot(t, "", append([]string{"batch", "show", "msgbatch_c", "--json"}, db...)...)
	var shown batchShow
	if err := json.Unmarshal([]byte(out), &shown); err != nil || shown.Batch.ID != c || shown.Counts[jobPending] != 1 || len(shown.Jobs) != 1 || shown.Jobs[0].Status != "retrying" {
		t.Errorf("batch show --json = %s (%v)", out, err)
	}

	// Unknown ids and a closed batch: a clear error, exit 1.
	for _, args := range [][]string{{"batch", "show", "batch_nosuch"}, {"batch", "cancel", "batch_nosuch", "--yes"}, {"batch", "show", "424242"}} {
		code, _, errOut := runRoot(t, "", append(args, db...)...)
		if code != 1 || !strings.Contains(errOut, fmt.Sprintf("no batch %q in the audit database", args[2])) || !strings.Contains(errOut, "batch list --all") {
			t.Errorf("%v: exit %d, %q; want 1 and the unknown id", args, code, errOut)
		}
	}
	if code, _, errOut := runRoot(t, "", append([]string{"batch", "cancel", "batch_b", "--yes"}, db...)...); code != 1 || !strings.Contains(errOut, "nothing to cancel") {
		t.Errorf("cancel of a closed batch: exit %d, %q", code, errOut)
	}

	// status: the batches in flight by pool, and in its JSON.
	out = runStatus(t, ctx, conn...)
	sec := out[strings.Index(out, "BATCHES IN FLIGHT")+1:]
	sec = sec[:strings.Index(sec, "RUNS")]
	// POOL BATCH PROVIDER-BATCH REQUESTS ROUND AGE STATUS
	if f := rowOf(sec, 2, "batch_a"); len(f) != 7 || f[0] != "openai_gpt-4o-mini" || f[1] != fmt.Sprint(a) || f[3] != "25" || f[4] != "1" || f[6] != "in_progress" {
		t.Errorf("status: batch_a row %q in\n%s", f, out)
	}
	if f := rowOf(sec, 2, "msgbatch_c"); len(f) != 7 || f[0] != "anthropic_claude-haiku-4-5" || f[4] != "2" || f[6] != "canceling" {
		t.Errorf("status: msgbatch_c row %q in\n%s", f, out)
	}
	if strings.Contains(sec, "batch_b") {
		t.Errorf("status shows the closed batch:\n%s", out)
	}
	var snap struct {
		Batches []fleetview.Batch `json:"batches"`
	}
	if err := json.Unmarshal([]byte(runStatus(t, ctx, append(conn, "--json")...)), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Batches) != 2 || snap.Batches[0].ProviderBatchID != "msgbatch_c" || snap.Batches[1].Requests != 25 {
		t.Errorf("status --json batches: %+v", snap.Batches)
	}
}

// batchRequests are n small requests of round 1.
func batchRequests(n int) []llm.BatchRequest {
	out := make([]llm.BatchRequest, n)
	for i := range out {
		out[i] = llm.BatchRequest{CustomID: llm.BatchCustomID(fmt.Sprintf("%032x", i), 1), Request: llm.Request{
			Messages:  []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("Invoice from Vendor %d Ltd. Total $%d.00. Answer with JSON.", i, 100+i)}},
			Mode:      llm.ModeText,
			MaxTokens: 256,
		}}
	}
	return out
}

// TestBatchCancel cancels a batch running on the simulator's OpenAI batch
// API, through the provider the worker would build from the environment,
// and a simulator batch through a running dev mode's simulator. Not
// parallel: it sets the environment and changes directory.
func TestBatchCancel(t *testing.T) {
	ctx := t.Context()
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		t.Fatal(err)
	}
	prof.Batch.Delay = time.Hour // still running when canceled
	srv := sim.New(prof, sim.WithSeed(3))
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	t.Setenv("OPENAI_BASE_URL", hs.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-test-batch-cancel-000")
	st, dbURL := audittest.Store(t)
	db := []string{"--database-url", dbURL}

	// submit submits a batch through p and records it as the worker does.
	submit := func(p llm.Provider, spec string) (int64, llm.Batcher, llm.BatchID) {
		t.Helper()
		batcher, ok := p.(llm.Batcher)
		if !ok {
			t.Fatalf("%s is not a Batcher", spec)
		}
		reqs := batchRequests(3)
		pbid, err := batcher.SubmitBatch(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		id, err := st.RecordBatch(ctx, audit.Batch{Provider: spec, ProviderBatchID: string(pbid), Pool: spec, Round: 1,
			JobIDs: []string{"ja", "jb", "jc"}, Requests: len(reqs), Status: "validating", WorkerID: "w1"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return id, batcher, pbid
	}
	status := func(b llm.Batcher, id llm.BatchID) llm.BatchStatus {
		t.Helper()
		s, err := b.BatchStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	p, err := extractq.NewProvider("openai:gpt-4o-mini")
	if err != nil {
		t.Fatal(err)
	}
	id, batcher, pbid := submit(p, "openai:gpt-4o-mini")
	ref := fmt.Sprint(id)

	// Declined at the prompt: nothing is asked of the provider.
	code, out, errOut := runRoot(t, "n\n", append([]string{"batch", "cancel", ref}, db...)...)
	if code != 1 || !strings.Contains(errOut, "[y/N]") || !strings.Contains(errOut, "not confirmed") || !strings.Contains(errOut, "sends them again in a later batch") {
		t.Fatalf("declined cancel: exit %d\n%s%s", code, out, errOut)
	}
	if s := status(batcher, pbid); s.State != llm.BatchRunning || strings.HasPrefix(s.ProviderStatus, "cancel") {
		t.Fatalf("a declined cancel reached the provider: %+v", s)
	}
	// No terminal to ask on and no --yes: refused as bad usage.
	root := newRootCmd()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { devNull.Close() })
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetIn(devNull)
	if code := cli.Run(root, append([]string{"batch", "cancel", ref}, db...), &stderr); code != 2 || !strings.Contains(stderr.String(), "pass --yes") {
		t.Fatalf("cancel with stdin not a terminal: exit %d, %q; want 2 asking for --yes", code, stderr.String())
	}
	// Without the API key the worker uses (OpenAI's own endpoint needs
	// one), the provider cannot be built.
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	if code, _, errOut := runRoot(t, "", append([]string{"batch", "cancel", ref, "--yes"}, db...)...); code != 2 || !strings.Contains(errOut, "OPENAI_API_KEY") {
		t.Fatalf("cancel without a key: exit %d, %q; want 2", code, errOut)
	}
	t.Setenv("OPENAI_API_KEY", "sk-test-batch-cancel-000")
	t.Setenv("OPENAI_BASE_URL", hs.URL+"/v1")

	// Confirmed at the prompt, by provider batch id.
	code, out, errOut = runRoot(t, "y\n", append([]string{"batch", "cancel", string(pbid)}, db...)...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("batch %d (openai:gpt-4o-mini %s): cancel requested; the provider says cancelling (running)", id, pbid)) ||
		!strings.Contains(out, "sends them again in a later batch") {
		t.Fatalf("batch cancel: exit %d\n%s%s", code, out, errOut)
	}
	if s := status(batcher, pbid); s.State != llm.BatchCanceled || s.ProviderStatus != "cancelled" {
		t.Fatalf("after cancel the provider says %+v; want cancelled", s)
	}

	// A second batch, canceled with --yes and no terminal to ask on.
	id2, batcher2, pbid2 := submit(p, "openai:gpt-4o-mini")
	code, out, errOut = runRoot(t, "", append([]string{"batch", "cancel", fmt.Sprint(id2), "--yes"}, db...)...)
	if code != 0 || !strings.Contains(out, "the provider says cancelling") || strings.Contains(errOut, "[y/N]") {
		t.Fatalf("batch cancel --yes: exit %d\n%s%s", code, out, errOut)
	}
	if s := status(batcher2, pbid2); s.State != llm.BatchCanceled {
		t.Fatalf("after cancel --yes the provider says %+v", s)
	}

	// A simulator batch: reached through the running dev mode's simulator,
	// and refused with what to do when no dev mode runs here.
	dir := t.TempDir()
	t.Chdir(dir)
	simP, err := simprovider.Remote("sim:clean", hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	id3, batcher3, pbid3 := submit(simP, "sim:clean")
	if code, _, errOut := runRoot(t, "", append([]string{"batch", "cancel", fmt.Sprint(id3), "--yes"}, db...)...); code != 2 || !strings.Contains(errOut, "extractq dev") {
		t.Fatalf("sim batch without dev mode: exit %d, %q; want 2 saying where to run it", code, errOut)
	}
	if err := os.MkdirAll(filepath.Join(dir, devmode.DefaultDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := devmode.Publish(filepath.Join(dir, devmode.DefaultDir), devmode.Endpoints{NATSURL: "nats://127.0.0.1:1", SimURL: hs.URL, PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runRoot(t, "", append([]string{"batch", "cancel", fmt.Sprint(id3), "--yes"}, db...)...)
	if code != 0 || !strings.Contains(out, "the provider says cancelling") {
		t.Fatalf("sim batch cancel through dev mode: exit %d\n%s%s", code, out, errOut)
	}
	if s := status(batcher3, pbid3); s.State != llm.BatchCanceled {
		t.Fatalf("sim batch after cancel: %+v", s)
	}
}

// TestBatchHelp: each batch command explains itself and takes the
// database flag, and cancel's help says what canceling means for the jobs.
func TestBatchHelp(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"list", "show", "cancel"} {
		code, out, errOut := runRoot(t, "", "batch", sub, "--help")
		if code != 0 || !strings.Contains(out, "--database-url URL") || !strings.Contains(out, "Example:") {
			t.Errorf("batch %s --help: exit %d\n%s%s", sub, code, out, errOut)
		}
		if sub == "cancel" && (!strings.Contains(out, "sends them again in a later batch") || !strings.Contains(out, "--yes")) {
			t.Errorf("batch cancel --help does not say what canceling means:\n%s", out)
		}
	}
	if code, _, errOut := runRoot(t, "", "batch", "show"); code != 2 || !strings.Contains(errOut, "accepts 1 arg") {
		t.Errorf("batch show without an id: exit %d, %q; want 2", code, errOut)
	}
}

// TestBatchOutputEscapesControls: ids a provider or a configuration wrote
// reach the terminal escaped in list, show and status.
func TestBatchOutputEscapesControls(t *testing.T) {
	t.Parallel()
	now := time.Now()
	b := fleetview.Batch{ID: 1, Pool: "p", Provider: "openai:" + hostile, ProviderBatchID: hostile, Round: 1, Requests: 1, Status: hostile,
		Worker: hostile, LeaseUntil: now.Add(time.Minute), SubmittedAt: now, UpdatedAt: now}
	tests := []struct {
		name  string
		print func(*bytes.Buffer)
	}{
		{"list", func(w *bytes.Buffer) { _ = printBatchList(w, []fleetview.Batch{b}, audit.BatchFilter{}, now) }},
		{"show", func(w *bytes.Buffer) {
			printBatch(w, batchShow{Batch: b, Pool: hostile, Jobs: []batchJob{{JobID: hostile, State: jobPending, Status: hostile}}, JobsTotal: 1}, now)
		}},
		{"status", func(w *bytes.Buffer) { _ = printBatchesInFlight(w, []fleetview.Batch{b}, now) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w bytes.Buffer
			tt.print(&w)
			if out := w.String(); strings.ContainsAny(out, "\x1b\x07\r\u009b\u202e") || !strings.Contains(out, `inv\x1b[2J`) {
				t.Errorf("output holds raw control characters or lacks the escaped id:\n%q", out)
			}
		})
	}
}
