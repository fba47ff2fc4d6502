package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalExamples runs the bundled examples' labels through the simulator,
// which answers them from the labels (faults on top), and checks the report
// and the regression guard against a saved baseline.
func TestEvalExamples(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	invoices, schemaFile := filepath.Join("..", "..", "examples", "invoices"), filepath.Join("..", "..", "examples", "invoice.schema.json")
	html := filepath.Join(dir, "r.html")
	code, out, errOut := runRoot(t, "", "eval", "--schema", schemaFile, "--labels", invoices,
		"--provider", "sim:clean", "--provider", "sim:small-model", "--mode", "json", "--state", filepath.Join(dir, "state"), "--json", "--html", html)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if rep.Labels != 24 || len(rep.Combinations) != 2 || len(rep.Unlabelled) != 0 {
		t.Fatalf("report: %d labels, %d combinations, unlabelled %v", rep.Labels, len(rep.Combinations), rep.Unlabelled)
	}
	clean, small := rep.Combinations[0], rep.Combinations[1]
	if clean.Name != "sim:clean json" || clean.Correct != 24 || clean.Accuracy != 1 {
		t.Errorf("sim:clean answers from the labels: %d correct, accuracy %v", clean.Correct, clean.Accuracy)
	}
	if small.Correct >= clean.Correct || small.CostPerCorrect <= clean.CostPerCorrect {
		t.Errorf("sim:small-model: %d correct at $%v per correct doc; want fewer and dearer than sim:clean's %d at $%v",
			small.Correct, small.CostPerCorrect, clean.Correct, clean.CostPerCorrect)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "sim:small-model json") || !strings.Contains(string(b), "<mark>") {
		t.Errorf("HTML report lacks the combination or a marked snippet: %v", err)
	}

	// Baseline: sim:clean's report; sim:small-model against it regresses.
	base := filepath.Join(dir, "base.json")
	code, out, errOut = runRoot(t, "", "eval", "--schema", schemaFile, "--labels", invoices, "--provider", "sim:clean", "--mode", "json", "--state", filepath.Join(dir, "state"), "--json")
	if code != 0 {
		t.Fatalf("baseline run: exit %d: %s", code, errOut)
	}
	if err := os.WriteFile(base, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runRoot(t, "", "eval", "--schema", schemaFile, "--labels", invoices, "--provider", "sim:clean", "--mode", "json", "--state", filepath.Join(dir, "state"), "--baseline", base)
	if code != 0 {
		t.Errorf("same configuration against its own baseline: exit %d\n%s", code, out)
	}
	code, out, errOut = runRoot(t, "", "eval", "--schema", schemaFile, "--labels", invoices, "--provider", "sim:small-model", "--mode", "json", "--state", filepath.Join(dir, "state"), "--baseline", base, "--max-drop", "2%")
	if code != 1 || !strings.Contains(out, "regressions against") || !strings.Contains(errOut, "regression(s)") {
		t.Errorf("a worse configuration: exit %d, want 1 with the regressions listed\n%s\n%s", code, out, errOut)
	}
}

func TestEvalBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "s.json")
	os.WriteFile(schemaFile, []byte(`{"type":"object","required":["total"],"properties":{"total":{"type":"number"}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte(`{"id":"a","text":"x","expected":{"total":"ten"}}`+"\n"), 0o644)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"label does not validate", []string{"--labels", filepath.Join(dir, "bad.jsonl"), "--provider", "sim:clean"}, 2, "does not validate"},
		{"nothing to evaluate", []string{"--labels", filepath.Join(dir, "bad.jsonl")}, 2, "nothing to evaluate"},
		{"bad mode", []string{"--labels", filepath.Join(dir, "bad.jsonl"), "--provider", "sim:clean", "--mode", "fast"}, 2, `--mode "fast"`},
		{"bad max drop", []string{"--labels", filepath.Join(dir, "bad.jsonl"), "--provider", "sim:clean", "--max-drop", "lots"}, 2, "--max-drop"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runRoot(t, "", append([]string{"eval", "--schema", schemaFile}, c.args...)...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, c.code, c.want)
			}
		})
	}
}

// TestEvalLabelledPDF: a labelled PDF is read as extract reads it, so the
// simulator answers its label and the document scores correct (plain UTF-8
// reading refused it as not text).
func TestEvalLabelledPDF(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pdf, err := os.ReadFile(filepath.Join("..", "..", "examples", "documents", "invoice-07.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	label, err := os.ReadFile(filepath.Join("..", "..", "examples", "invoices", "invoice-07.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "invoice-07.pdf"), pdf, 0o644)
	os.WriteFile(filepath.Join(dir, "invoice-07.expected.json"), label, 0o644)
	code, out, errOut := runRoot(t, "", "eval", "--schema", filepath.Join("..", "..", "examples", "invoice.schema.json"), "--labels", dir,
		"--provider", "sim:clean", "--mode", "json", "--state", filepath.Join(dir, "state"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep evalReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Labels != 1 || rep.Combinations[0].Correct != 1 {
		t.Errorf("labels %d, correct %d; want the PDF labelled and correct", rep.Labels, rep.Combinations[0].Correct)
	}
}
