package worker_test

import (
	"encoding/json"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/schema"
)

// TestEngineUsesEachJobsProvider checks the engine's reused Extractor:
// each job asks its own provider, and a job's options still apply (here
// its re-ask limit), as when every job built its own Extractor.
func TestEngineUsesEachJobsProvider(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(`{"type":"object","properties":{"vendor":{"type":"string"}},"required":["vendor"]}`))
	if err != nil {
		t.Fatal(err)
	}
	eng := worker.NewEngine(extractq.WithMaxReasks(3))
	for i, tc := range []struct {
		name      string
		opts      jobs.Options
		wantCalls int
		wantOK    bool
	}{
		{"plain", jobs.Options{}, 4, false},
		{"plain again", jobs.Options{}, 4, false},
		{"own re-asks", jobs.Options{MaxReasks: new(1)}, 2, false},
		{"plain after", jobs.Options{}, 4, false},
		{"answers", jobs.Options{}, 1, true},
	} {
		// Every job's provider answers something invalid, except the last.
		reply := extractqtest.Text(`{"other": 1}`)
		if tc.wantOK {
			reply = extractqtest.Text(`{"vendor": "Acme"}`)
		}
		p := extractqtest.New([]extractqtest.Reply{reply, reply, reply, reply, reply}, extractqtest.WithName("fake"))
		res, _ := eng.Extract(t.Context(), p, "Acme invoice "+string(rune('a'+i)), s, tc.opts)
		if res == nil {
			t.Fatalf("%s: no result", tc.name)
		}
		if p.Calls() != tc.wantCalls {
			t.Errorf("%s: the job's provider got %d calls, want %d", tc.name, p.Calls(), tc.wantCalls)
		}
		if ok := res.Outcome == "ok"; ok != tc.wantOK {
			t.Errorf("%s: outcome %s", tc.name, res.Outcome)
		}
		if tc.wantOK && !json.Valid(res.Value) {
			t.Errorf("%s: value %s", tc.name, res.Value)
		}
	}
}
