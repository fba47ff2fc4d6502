package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/internal/worker/workertest"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// seen is what the worker's engine got for one document: the job's options
// and, running the library on a model that never answers validly, the calls
// it made and the request settings of the first.
type seen struct {
	opts  jobs.Options
	calls int
	req   llm.Request
}

// TestSubmitOptionsReachWorker: every engine option given to submit, zero
// included, is what the worker runs the job with, and an option not given
// leaves the worker's default. "--max-reasks 0" makes exactly one call, as
// in "extractq extract", not the default's four.
func TestSubmitOptionsReachWorker(t *testing.T) {
	f := workertest.New(t)
	t.Setenv("EXTRACTQ_NATS_URL", f.NATSURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", f.DatabaseURL)
	tests := []struct {
		name  string
		flags []string
		want  jobs.Options
		calls int // the library's calls on a model that is never valid
	}{
		{name: "none", calls: 4},
		{name: "max-reasks 0", flags: []string{"--max-reasks", "0"}, want: jobs.Options{MaxReasks: new(0)}, calls: 1},
		{name: "max-reasks 1", flags: []string{"--max-reasks", "1"}, want: jobs.Options{MaxReasks: new(1)}, calls: 2},
		{name: "max-tokens 0", flags: []string{"--max-tokens", "0", "--max-reasks", "0"}, want: jobs.Options{MaxTokens: new(0), MaxReasks: new(0)}, calls: 1},
		{name: "max-tokens 77", flags: []string{"--max-tokens", "77", "--max-reasks", "0"}, want: jobs.Options{MaxTokens: new(77), MaxReasks: new(0)}, calls: 1},
		{name: "token-budget 0", flags: []string{"--token-budget", "0", "--max-reasks", "0"}, want: jobs.Options{TokenBudget: new(0), MaxReasks: new(0)}, calls: 1},
		{name: "token-budget 100000", flags: []string{"--token-budget", "100000", "--max-reasks", "0"}, want: jobs.Options{TokenBudget: new(100000), MaxReasks: new(0)}, calls: 1},
		{name: "temperature 0", flags: []string{"--temperature", "0", "--max-reasks", "0"}, want: jobs.Options{Temperature: new(0.0), MaxReasks: new(0)}, calls: 1},
		{name: "temperature 0.5", flags: []string{"--temperature", "0.5", "--max-reasks", "0"}, want: jobs.Options{Temperature: new(0.5), MaxReasks: new(0)}, calls: 1},
		{name: "mode json", flags: []string{"--mode", "json", "--max-reasks", "0"}, want: jobs.Options{Mode: "json", MaxReasks: new(0)}, calls: 1},
		{name: "repair off", flags: []string{"--repair", "off", "--max-reasks", "0"}, want: jobs.Options{RepairPolicy: "off", MaxReasks: new(0)}, calls: 1},
		{name: "chunk off", flags: []string{"--chunk", "off", "--max-reasks", "0"}, want: jobs.Options{Chunking: "off", MaxReasks: new(0)}, calls: 1},
		{name: "input auto", flags: []string{"--input", "auto", "--max-reasks", "0"}, want: jobs.Options{MaxReasks: new(0)}, calls: 1},
		{name: "input text", flags: []string{"--input", "text", "--max-reasks", "0"}, want: jobs.Options{Input: "text", MaxReasks: new(0)}, calls: 1},
		{name: "input native", flags: []string{"--input", "native", "--max-reasks", "0"}, want: jobs.Options{Input: "native", MaxReasks: new(0)}, calls: 1},
	}

	var mu sync.Mutex
	got := map[string]seen{} // by the document's first line
	// The worker's own default temperature is 0.9, so that "--temperature
	// 0" shows as an override.
	lib := worker.NewEngine(extractq.WithTemperature(0.9))
	engine := worker.EngineFunc(func(ctx context.Context, _ llm.Provider, doc string, s *schema.Schema, o jobs.Options) (*llm.Result, error) {
		p := extractqtest.New(nil, extractqtest.WithResponder(func(int, llm.Request) extractqtest.Reply {
			return extractqtest.Text(`{"currency": "YEN"}`)
		}))
		res, err := lib.Extract(ctx, p, doc, s, o)
		var first llm.Request
		if reqs := p.Requests(); len(reqs) > 0 {
			first = reqs[0]
		}
		mu.Lock()
		got[strings.SplitN(doc, "\n", 2)[0]] = seen{opts: o, calls: p.Calls(), req: first}
		mu.Unlock()
		return res, err
	})
	f.Worker(t, engine, "sim_clean", 4, func(string) (llm.Provider, error) { return extractqtest.New(nil), nil })

	schemaFile := filepath.Join(t.TempDir(), "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	for i, tc := range tests {
		doc := fleettest.Document(1000 + i)
		args := append([]string{"--schema", schemaFile, "--provider", "sim:clean", "--run", "options", "--wait", "--timeout", "30s"}, tc.flags...)
		code, out, errOut := runSubmitCmd(t, doc, append(args, "-")...)
		if code != 1 { // the model is never valid: the document fails
			t.Fatalf("%s: exit %d, want 1\n%s%s", tc.name, code, out, errOut)
		}
		mu.Lock()
		g, ok := got[strings.SplitN(doc, "\n", 2)[0]]
		mu.Unlock()
		if !ok {
			t.Fatalf("%s: the worker never ran the job", tc.name)
		}
		if !reflect.DeepEqual(g.opts, tc.want) {
			t.Errorf("%s: the worker got options %s, want %s", tc.name, show(g.opts), show(tc.want))
		}
		if g.calls != tc.calls {
			t.Errorf("%s: the library made %d calls, want %d", tc.name, g.calls, tc.calls)
		}
		if tc.want.MaxTokens != nil && *tc.want.MaxTokens > 0 && g.req.MaxTokens != *tc.want.MaxTokens {
			t.Errorf("%s: the call asked for %d tokens at most, want %d", tc.name, g.req.MaxTokens, *tc.want.MaxTokens)
		}
		wantTemp := 0.9
		if tc.want.Temperature != nil {
			wantTemp = *tc.want.Temperature
		}
		if g.req.Temperature != wantTemp {
			t.Errorf("%s: the call's temperature is %g, want %g", tc.name, g.req.Temperature, wantTemp)
		}
	}
}

// show prints options with their pointers followed.
func show(o jobs.Options) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// TestSubmitRejectsNegativeOptions: a negative number is a usage error at
// submit, not a dead letter at the worker.
func TestSubmitRejectsNegativeOptions(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--max-reasks", "--max-tokens", "--token-budget", "--temperature"} {
		code, _, errOut := runSubmitCmd(t, "text", "--schema", "s.json", "--provider", "sim:clean", flag, "-1", "-")
		if code != 2 || !strings.Contains(errOut, flag+" -1: must be 0 or more") {
			t.Errorf("%s -1: exit %d, %q; want 2 naming the flag", flag, code, errOut)
		}
	}
}
