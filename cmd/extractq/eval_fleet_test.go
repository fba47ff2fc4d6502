package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/extractq/extractq/eval"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/internal/worker/workertest"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestEvalFleet submits the labelled invoices to a real worker (embedded
// NATS, real Postgres, the simulator answering from the labels under the
// sloppy profile) with eval --fleet, then scores the same run again with
// --run: both read the audit and must agree.
func TestEvalFleet(t *testing.T) {
	t.Parallel()
	f := workertest.New(t)
	dbURL, natsURL := f.DatabaseURL, f.NATSURL
	invoices, schemaFile := filepath.Join("..", "..", "examples", "invoices"), filepath.Join("..", "..", "examples", "invoice.schema.json")
	s, err := schema.CompileFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	set, err := eval.Load(invoices, s, eval.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := sim.NewAnswerKey()
	for _, l := range set.Labels {
		key.Add(l.Text, l.Expected)
	}
	f.Worker(t, worker.NewEngine(), "sim_sloppy", 4, func(spec string) (llm.Provider, error) { return simprovider.NewWith(spec, sim.WithAnswers(key)) })

	conn := []string{"--database-url", dbURL, "--nats-url", natsURL}
	code, out, errOut := runRoot(t, "", append([]string{"eval", "--schema", schemaFile, "--labels", invoices, "--fleet",
		"--provider", "sim:sloppy", "--mode", "json", "--fleet-timeout", "2m", "--json"}, conn...)...)
	if code != 0 {
		t.Fatalf("eval --fleet: exit %d\n%s\n%s", code, out, errOut)
	}
	var fleetRep, runRep evalReport
	if err := json.Unmarshal([]byte(out), &fleetRep); err != nil {
		t.Fatal(err)
	}
	got := fleetRep.Combinations[0]
	if got.Done != 24 || got.Valid < 22 || got.Correct < 20 || got.Calls < 24 {
		t.Errorf("eval --fleet: %d done, %d valid, %d correct, %d calls; want 24 done and most correct", got.Done, got.Valid, got.Correct, got.Calls)
	}
	code, out, errOut = runRoot(t, "", append([]string{"eval", "--schema", schemaFile, "--labels", invoices, "--run", "eval-sim_sloppy-json", "--json"}, conn...)...)
	if code != 0 {
		t.Fatalf("eval --run: exit %d\n%s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &runRep); err != nil {
		t.Fatal(err)
	}
	again := runRep.Combinations[0]
	if again.Correct != got.Correct || again.Valid != got.Valid || again.Calls != got.Calls {
		t.Errorf("--run scores the same run differently: %+v vs %+v", again, got)
	}
}
