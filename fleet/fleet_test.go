package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/fleet/fleettest"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

const totalSchema = `{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`

var totalRe = regexp.MustCompile(`total: (-?\d+)`)

// A family of this test's own: it reads "total: N" from the document.
func init() {
	err := extractq.RegisterProvider("fleettest-reader", func(model string, _ extractq.ProviderSettings) (llm.Provider, error) {
		return extractqtest.New(nil, extractqtest.WithName("fleettest-reader:"+model), extractqtest.WithResponder(func(_ int, r llm.Request) extractqtest.Reply {
			last := r.Messages[len(r.Messages)-1].Content
			if m := totalRe.FindStringSubmatch(last); m != nil {
				return extractqtest.Text(`{"total": ` + m[1] + `}`)
			}
			return extractqtest.Text(`{}`)
		})), nil
	})
	if err != nil {
		panic(err)
	}
}

// TestServeSubmitFollow runs a worker built with the fleet package, with a
// provider family registered by this test, a validator and an observer,
// against an embedded NATS server and a throwaway database; a client
// submits, follows and reads the results. The validator's rule (a positive
// total) fails one document, which with MaxReasks 0 is asked once.
func TestServeSubmitFollow(t *testing.T) {
	f := fleettest.Start(t)
	var observed atomic.Int64
	positive := func(_ context.Context, v json.RawMessage) []llm.Violation {
		var x struct{ Total float64 }
		if json.Unmarshal(v, &x) == nil && x.Total <= 0 {
			return []llm.Violation{{Pointer: "/total", Keyword: "positive", Message: "the total must be positive"}}
		}
		return nil
	}
	cfg := f.Config("fleettest-reader:v1=concurrency:2")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fleettest.Serve(t, fleet.Serve, cfg, fleet.WithListener(ln),
		fleet.WithExtractOptions(extractq.WithValidator(positive),
			extractq.WithObserver(func(context.Context, llm.Attempt) { observed.Add(1) })))

	c, err := fleet.Dial(t.Context(), f.NATSURL, f.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := schema.Compile([]byte(totalSchema))
	if err != nil {
		t.Fatal(err)
	}
	docs := []fleet.Document{{ID: "a", Text: "invoice, total: 12"}, {ID: "b", Text: "invoice, total: 30"}, {ID: "neg", Text: "credit note, total: -5"}}
	sub, err := c.Submit(t.Context(), fleet.Job{Schema: s, SchemaName: "totals", Provider: "fleettest-reader:v1", Run: "lib",
		Options: fleet.JobOptions{MaxReasks: new(0)}}, slices.Values(docs))
	if err != nil || sub.Queued != 3 || len(sub.JobIDs) != 3 {
		t.Fatalf("submit: %+v, %v", sub, err)
	}
	fctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	p, err := c.Follow(fctx, sub.JobIDs, 100*time.Millisecond, nil)
	if err != nil || p.Done != 2 || p.Failed != 1 || p.Pending != 0 {
		t.Fatalf("follow: %+v, %v; want 2 done and 1 failed", p, err)
	}
	for _, tc := range []struct {
		id, value string
	}{{"a", `{"total": 12}`}, {"b", `{"total": 30}`}, {"neg", ""}} {
		rs, err := c.Results(t.Context(), tc.id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.value == "" && len(rs) != 0:
			t.Errorf("%s: results %+v, want none (the validator refused it)", tc.id, rs)
		case tc.value != "" && (len(rs) != 1 || compact(rs[0].Value) != compact(json.RawMessage(tc.value)) || rs[0].Run != "lib" || rs[0].Model == ""):
			t.Errorf("%s: results %+v, want one with %s", tc.id, rs, tc.value)
		}
	}
	if n := observed.Load(); n != 3 {
		t.Errorf("the observer saw %d attempts, want 3 (one per document: MaxReasks 0)", n)
	}
	again, err := c.Submit(t.Context(), fleet.Job{Schema: s, SchemaName: "totals", Provider: "fleettest-reader:v1", Run: "lib"}, slices.Values(docs))
	if err != nil || again.Queued != 0 || again.AlreadyDone != 3 || again.AlreadyFailed != 1 {
		t.Errorf("submitting the same documents again: %+v, %v; want nothing queued, 3 already done (1 failed)", again, err)
	}
	// A new version of the schema: the documents with a result under the
	// first are resubmitted into a run of the default name, counted and
	// sealed there (its done event comes once they are final).
	s2, err := schema.Compile([]byte(`{"type":"object","properties":{"total":{"type":"number"},"currency":{"type":"string"}},"required":["total"]}`))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := c.RegisterSchema(t.Context(), "totals", s2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Resubmit(t.Context(), fleet.Resubmission{Schema: "totals", ToVersion: v2, Provider: "fleettest-reader:v1"})
	want := fleet.SealedRun{Run: fmt.Sprintf("resubmit-totals-v%d", v2), Queued: 2, Generation: 1}
	if err != nil || res.Queued != 2 || len(res.Runs) != 1 || res.Runs[0] != want {
		t.Errorf("resubmit under version %d: %+v, %v; want 2 queued into %+v", v2, res, err, want)
	}
}

func compact(v json.RawMessage) string {
	var b bytes.Buffer
	_ = json.Compact(&b, v)
	return b.String()
}

// TestServeRefusesBadConfig: a pool of an unknown family, or no pool,
// fails at once with ErrConfig, before connecting to anything.
func TestServeRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, pools := range [][]string{{"nosuchfamily:m=concurrency:1"}, nil} {
		cfg := fleet.Config{NATSURL: "nats://127.0.0.1:1", Pools: pools}
		err := fleet.Serve(t.Context(), cfg)
		if !errors.Is(err, fleet.ErrConfig) {
			t.Errorf("pools %v: %v, want ErrConfig", pools, err)
		}
	}
}

// Submit counts the jobs it queues into the run and seals it, so that a
// worker announces the run done without anyone waiting; KeepRunOpen leaves
// the sealing to SealRun, for a run filled by several submissions.
func TestSubmitCountsAndSealsTheRun(t *testing.T) {
	f := fleettest.Start(t)
	c, err := fleet.Dial(t.Context(), f.NATSURL, f.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := audit.Open(t.Context(), f.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := schema.Compile([]byte(totalSchema))
	if err != nil {
		t.Fatal(err)
	}
	job := func(run string) fleet.Job {
		return fleet.Job{Schema: s, SchemaName: "totals", Provider: "fleettest-reader:v1", Run: run}
	}
	docs := func(ids ...string) iter.Seq[fleet.Document] {
		return func(yield func(fleet.Document) bool) {
			for _, id := range ids {
				if !yield(fleet.Document{ID: id, Text: "total: " + id}) {
					return
				}
			}
		}
	}
	state := func(run string) audit.RunDone {
		t.Helper()
		d, ok, err := st.RunDoneState(t.Context(), run)
		if err != nil || !ok {
			t.Fatalf("run %s: %+v, %v, %v", run, d, ok, err)
		}
		return d
	}

	sub, err := c.Submit(t.Context(), job("once"), docs("1", "2", "3"))
	if err != nil || sub.Queued != 3 || sub.Generation != 1 {
		t.Fatalf("submit: %+v, %v; want 3 queued, generation 1", sub, err)
	}
	if d := state("once"); d.Jobs != 3 || d.Sealed != 1 {
		t.Errorf("after one Submit: %+v; want 3 jobs counted, sealed once", d)
	}

	for _, ids := range [][]string{{"4", "5"}, {"6"}, {"4"}} { // the last one a duplicate
		sub, err := c.Submit(t.Context(), job("pages"), docs(ids...), fleet.KeepRunOpen())
		if err != nil || sub.Generation != 0 {
			t.Fatalf("submit %v kept open: %+v, %v; want no generation", ids, sub, err)
		}
	}
	if d := state("pages"); d.Jobs != 3 || d.Sealed != 0 {
		t.Errorf("after three Submits kept open: %+v; want 3 jobs counted (the duplicate not), not sealed", d)
	}
	if gen, err := c.SealRun(t.Context(), "pages"); err != nil || gen != 1 {
		t.Errorf("SealRun: %d, %v; want generation 1", gen, err)
	}
	if d := state("pages"); d.Sealed != 1 || d.Done() {
		t.Errorf("after SealRun: %+v; want sealed, not done (no worker ran)", d)
	}
}
