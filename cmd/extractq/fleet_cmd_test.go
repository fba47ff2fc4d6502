package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/extractqtest"
	fleetlib "github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/internal/worker/workertest"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// fleet is a NATS server, a migrated audit database and a worker whose
// engine fails every document saying FAIL.
type fleet struct {
	natsURL, dbURL string
	stopWorker     func()
}

func startFleet(t *testing.T) *fleet {
	t.Helper()
	ctx := t.Context()
	f := workertest.New(t)
	engine := worker.EngineFunc(func(_ context.Context, _ llm.Provider, doc string, _ *schema.Schema, _ jobs.Options) (*llm.Result, error) {
		if strings.Contains(doc, "FAIL") {
			return &llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid", Attempts: []llm.Attempt{{N: 1, Raw: "{}"}}}, nil
		}
		return &llm.Result{Outcome: llm.OutcomeOK, Value: json.RawMessage(`{"ok":true}`), Attempts: []llm.Attempt{{N: 1, Raw: `{"ok":true}`}}}, nil
	})
	stop := f.Worker(t, engine, "sim_clean", 2, func(string) (llm.Provider, error) { return extractqtest.New(nil), nil })

	// Three documents, two of which fail, through the real submit path.
	c := fleetlib.NewClient(f.JS, f.Store.Pool())
	sc, err := schema.Compile([]byte(fleettest.Schema))
	if err != nil {
		t.Fatal(err)
	}
	var docs []fleetlib.Document
	for i, text := range []string{fleettest.Document(1), "FAIL " + fleettest.Document(2), "FAIL " + fleettest.Document(3)} {
		docs = append(docs, fleetlib.Document{ID: fmt.Sprintf("doc-%d", i), Source: "test", Text: text})
	}
	sum, err := c.Submit(ctx, fleetlib.Job{Schema: sc, SchemaName: "invoice", Provider: "sim:clean", Run: "r"}, slices.Values(docs))
	if err != nil || sum.Queued != 3 {
		t.Fatalf("submit: %+v, %v", sum, err)
	}
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	defer fcancel()
	if _, err := c.Follow(fctx, sum.JobIDs, 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	return &fleet{natsURL: f.NATSURL, dbURL: f.DatabaseURL, stopWorker: stop}
}

// statusDeadLetters is `extractq status --json`'s dead-letter count.
func statusDeadLetters(t *testing.T, f *fleet) (dead, results int) {
	t.Helper()
	code, out, errOut := runRoot(t, "", "status", "--json", "--database-url", f.dbURL, "--nats-url", f.natsURL)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	var status struct {
		Runs []struct {
			DeadLetters int `json:"dead_letters"`
			Results     int `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &status); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	for _, g := range status.Runs {
		dead += g.DeadLetters
		results += g.Results
	}
	return dead, results
}

// dlqListed is how many dead letters `extractq dlq list --json` shows.
func dlqListed(t *testing.T, f *fleet) (n int, firstSeq uint64) {
	t.Helper()
	code, out, errOut := runRoot(t, "", "dlq", "list", "--json", "--nats-url", f.natsURL)
	if code != 0 {
		t.Fatalf("dlq list: exit %d: %s", code, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l struct{ Seq uint64 }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			firstSeq = l.Seq
		}
		n++
	}
	return n, firstSeq
}

// TestStatusAgreesWithDLQ: after a dead letter is resubmitted, status and
// dlq list count the same dead letters (status counted it forever); and
// after audit prune, status still shows the results instead of "no jobs
// recorded yet".
func TestStatusAgreesWithDLQ(t *testing.T) {
	f := startFleet(t)
	dead, _ := statusDeadLetters(t, f)
	listed, seq := dlqListed(t, f)
	if dead != 2 || listed != 2 {
		t.Fatalf("before resubmitting: status %d dead letters, dlq list %d; want 2 and 2", dead, listed)
	}
	// The worker stops, so that the resubmitted job stays queued instead
	// of failing again into a new dead letter.
	f.stopWorker()
	if code, out, errOut := runRoot(t, "", "dlq", "resubmit", fmt.Sprint(seq), "--nats-url", f.natsURL, "--database-url", f.dbURL); code != 0 {
		t.Fatalf("dlq resubmit: exit %d: %s%s", code, out, errOut)
	}
	dead, _ = statusDeadLetters(t, f)
	listed, _ = dlqListed(t, f)
	if dead != listed || dead != 1 {
		t.Fatalf("after resubmitting one: status %d dead letters, dlq list %d; want 1 and 1", dead, listed)
	}

	time.Sleep(1100 * time.Millisecond) // everything is older than the cutoff below
	if code, out, errOut := runRoot(t, "", "audit", "prune", "--older-than", "1s", "--database-url", f.dbURL); code != 0 {
		t.Fatalf("audit prune: exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut := runRoot(t, "", "status", "--database-url", f.dbURL)
	if code != 0 || strings.Contains(out, "no jobs recorded yet") || !strings.Contains(out, "pruned") {
		t.Fatalf("status after prune: exit %d\n%s%s\nwant the results, not \"no jobs recorded yet\"", code, out, errOut)
	}
	if _, results := statusDeadLetters(t, f); results != 1 {
		t.Errorf("status after prune counts %d results, want 1", results)
	}
}

func TestSchemaRegisterAndList(t *testing.T) {
	_, dbURL := audittest.Store(t)
	natsURL := jobstest.Server(t)
	dir := writeFiles(t, map[string]string{
		"invoice.json":    fleettest.Schema,
		"invoice-v2.yaml": "vendor: string\ntotal: number\ncurrency?: string /^[A-Z]{3}$/\n",
	})
	db := []string{"--database-url", dbURL}
	both := append([]string{"--nats-url", natsURL}, db...)
	steps := []struct {
		args []string
		want string
	}{
		{append([]string{"schema", "list"}, db...), "no schemas registered yet"},
		{append([]string{"schema", "register", "--name", "invoice", filepath.Join(dir, "invoice.json")}, both...), "invoice: registered as version 1"},
		{append([]string{"schema", "register", "--name", "invoice", filepath.Join(dir, "invoice.json")}, both...), "invoice: unchanged: this schema is already version 1"},
		{append([]string{"schema", "register", "--name", "invoice", filepath.Join(dir, "invoice-v2.yaml")}, both...), "invoice: registered as version 2"},
		{append([]string{"schema", "list"}, db...), "invoice  2        2"},
	}
	for _, s := range steps {
		code, out, errOut := runRoot(t, "", s.args...)
		if code != 0 || !strings.Contains(out, s.want) {
			t.Fatalf("%v: exit %d, %q %s; want %q", s.args, code, out, errOut, s.want)
		}
	}
	// The workers read the schema from the bucket: version 2 is there.
	_, js := jobstest.Connect(t, natsURL)
	v2, err := schema.CompileFile(filepath.Join(dir, "invoice-v2.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if body, err := jobs.NewSchemas(js).Get(t.Context(), v2.Fingerprint()); err != nil || body.Version != 2 {
		t.Errorf("version 2 is not in the workers' schema bucket: %+v, %v", body, err)
	}
}

// TestConnectionErrors checks that every command reports an unreachable
// server with exit 3 and a database that is missing or not migrated with
// exit 2 and what to run.
func TestConnectionErrors(t *testing.T) {
	empty := testenv.Database(t)
	missing := strings.Replace(empty, "extractq_test_", "extractq_nosuch_", 1)
	down := "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"dlq", "list", "--nats-url", "nats://127.0.0.1:1"}, 3, "cannot reach NATS"},
		{[]string{"dlq", "show", "1", "--nats-url", "nats://127.0.0.1:1"}, 3, "cannot reach NATS"},
		{[]string{"status", "--database-url", down}, 3, "cannot reach Postgres"},
		{[]string{"status", "--database-url", empty}, 2, "run `extractq audit migrate`"},
		{[]string{"history", "doc", "--database-url", missing}, 2, "createdb"},
		{[]string{"status", "--since", "7d", "--database-url", empty}, 2, "audit migrate"}, // 7d parses
		{[]string{"status", "--since", "a week"}, 2, "not a duration"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[:2], " "), func(t *testing.T) {
			code, _, errOut := runRoot(t, "", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, %q; want %d mentioning %q", code, errOut, tt.code, tt.want)
			}
		})
	}
}

// TestHelpShowsNoSecrets: --help shows where a connection comes from,
// never the value of EXTRACTQ_DATABASE_URL (which may hold a password),
// and the connection flags appear only on the commands that use them.
func TestHelpShowsNoSecrets(t *testing.T) {
	t.Setenv("EXTRACTQ_DATABASE_URL", "postgres://app:s3cret-pw@db.internal:5432/extractq")
	t.Setenv("EXTRACTQ_NATS_URL", "nats://robot:n4ts-pw@nats.internal:4222")
	for _, args := range [][]string{{"--help"}, {"status", "--help"}, {"dlq", "list", "--help"}, {"audit", "migrate", "--help"}, {"dev", "--help"}, {"schema", "register", "--help"}} {
		_, out, errOut := runRoot(t, "", args...)
		if strings.Contains(out+errOut, "s3cret") || strings.Contains(out+errOut, "n4ts-pw") {
			t.Errorf("%v prints a password from the environment:\n%s", args, out)
		}
	}
	_, out, _ := runRoot(t, "", "status", "--help")
	if !strings.Contains(out, "--database-url URL") || !strings.Contains(out, "$EXTRACTQ_DATABASE_URL") {
		t.Errorf("status --help lacks the placeholder and the variable:\n%s", out)
	}
	for _, args := range [][]string{{"--help"}, {"schema", "check", "--help"}, {"extract", "--help"}, {"repair", "--help"}} {
		_, out, _ := runRoot(t, "", args...)
		if strings.Contains(out, "--database-url") || strings.Contains(out, "--nats-url") {
			t.Errorf("%v shows connection flags it does not use:\n%s", args, out)
		}
	}
	_, out, _ = runRoot(t, "", "--version")
	if !strings.Contains(out, "go1.") {
		t.Errorf("--version = %q, want the Go version", out)
	}
}
