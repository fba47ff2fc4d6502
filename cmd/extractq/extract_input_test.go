package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/testenv"
)

// TestExtractAppliesTheInputRules: empty, binary, non-UTF-8 and oversized
// documents never reach the model (extract used to send all of them, and
// an empty file got an invented invoice); they get a bad_input line with
// the reason submit gives.
func TestExtractAppliesTheInputRules(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"schema.json":   extractSchema,
		"docs/a.txt":    "ACME invoice",
		"docs/e.txt":    "  \n",
		"docs/bin.txt":  "%PDF-1.7\x00\x01\x02",
		"docs/l1.txt":   "Caf\xe9 Roma invoice",
		"docs/.hid.txt": "never read",
	})
	// A 70 MB file, sparse: it is rejected by its size, never read.
	huge, err := os.Create(filepath.Join(dir, "docs", "huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := huge.Truncate(70 << 20); err != nil {
		t.Fatal(err)
	}
	huge.Close()
	p := extractqtest.New(nil, extractqtest.WithResponder(model))
	r := runExtractCmd(t, p, nil, "", "--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m", filepath.Join(dir, "docs"))
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (bad inputs count as failed)\n%s", r.code, r.stderr)
	}
	reasons := map[string]string{}
	for _, l := range r.lines {
		id := filepath.Base(l["id"].(string))
		if l["outcome"] == outcomeBadInput {
			reasons[id], _ = l["error"].(string)
		}
	}
	for id, want := range map[string]string{"e.txt": "empty document", "bin.txt": "read as pdf: corrupt document", "l1.txt": "not UTF-8", "huge.txt": "document too large: 73400320 bytes"} {
		if !strings.Contains(reasons[id], want) {
			t.Errorf("%s: %q, want a bad_input line saying %q", id, reasons[id], want)
		}
	}
	if len(r.lines) != 5 || p.Calls() != 1 {
		t.Errorf("%d lines and %d model calls, want 5 lines and 1 call (only a.txt goes to the model)", len(r.lines), p.Calls())
	}

	// --transcode reads Windows-1252; --max-document raises the limit.
	p = extractqtest.New(nil, extractqtest.WithResponder(model))
	r = runExtractCmd(t, p, nil, "", "--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m", "--transcode", filepath.Join(dir, "docs", "l1.txt"))
	if r.code != 0 || p.Calls() != 1 {
		t.Errorf("--transcode: exit %d, %d calls; want 0 and 1\n%s", r.code, p.Calls(), r.stderr)
	}

	// An input with no document at all is bad usage, as in submit.
	empty := filepath.Join(dir, "none")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	r = runExtractCmd(t, extractqtest.New(nil), nil, "", "--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m", empty)
	if r.code != 2 || !strings.Contains(r.stderr, "no documents") {
		t.Errorf("empty folder: exit %d %q, want 2 and no documents", r.code, r.stderr)
	}
	r = runExtractCmd(t, extractqtest.New(nil), nil, "", "--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m", "-")
	if r.code != 2 {
		t.Errorf("empty stdin: exit %d, want 2", r.code)
	}
}

// TestExtractResume: --resume keeps the final lines of an earlier run,
// drops a torn last line and the lines of documents worth trying again,
// and extracts only what is missing.
func TestExtractResume(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"schema.json": extractSchema,
		"docs/a.txt":  "A invoice", "docs/b.txt": "B invoice", "docs/c.txt": "C invoice", "docs/d.txt": "D invoice",
	})
	id := func(n string) string { return filepath.Join(dir, "docs", n) }
	line := func(n, outcome string) string {
		b, _ := json.Marshal(map[string]any{"id": id(n), "outcome": outcome})
		return string(b) + "\n"
	}
	out := filepath.Join(dir, "out.jsonl")
	// a is done, b failed for a passing reason (transport), c was being
	// written when the run was killed.
	torn := line("c.txt", "ok")
	if err := os.WriteFile(out, []byte(line("a.txt", "ok")+line("b.txt", "transport")+torn[:len(torn)/2]), 0o644); err != nil {
		t.Fatal(err)
	}
	p := extractqtest.New(nil, extractqtest.WithResponder(model))
	r := runExtractCmd(t, p, nil, "", "--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m", "--out", out, "--resume", filepath.Join(dir, "docs"))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if p.Calls() != 3 || !strings.Contains(r.stderr, "1 documents skipped") {
		t.Errorf("%d calls, want 3 (b, c, d; a skipped)\n%s", p.Calls(), r.stderr)
	}
	ids := idsIn(t, out)
	if strings.Join(ids, ",") != strings.Join([]string{id("a.txt"), id("b.txt"), id("c.txt"), id("d.txt")}, ",") {
		t.Errorf("ids in the output %v, want a, b, c, d once each", ids)
	}
	if r := runExtractCmd(t, extractqtest.New(nil), nil, "", "--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m", "--resume", "-"); r.code != 2 {
		t.Errorf("--resume without --out: exit %d, want 2", r.code)
	}
}

// idsIn reads an output file's ids, checking that every line is complete
// JSON.
func idsIn(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s ends with half a line: %q", path, b[max(0, len(b)-80):])
	}
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ ID string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		ids = append(ids, l.ID)
	}
	return ids
}

// TestExtractInterrupt sends a real SIGINT to a built extractq running 40
// documents against a slow simulator: it must stop taking documents,
// finish the running ones, leave only complete lines, print the summary and
// exit 130; --resume then does exactly the rest. A second SIGINT quits at
// once, still without half a line.
func TestExtractInterrupt(t *testing.T) {
	t.Parallel()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "extractq")
	build := exec.Command("go", "build", "-o", bin, "./cmd/extractq")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	files := map[string]string{
		"schema.json": extractSchema,
		// Every answer takes about 300 ms, or 5 s.
		"slow.yaml":   "latency:\n  ttft: 300ms\n  per_token: 0s\n  jitter: 0\n",
		"slower.yaml": "latency:\n  ttft: 5s\n  per_token: 0s\n  jitter: 0\n",
	}
	for i := range 40 {
		files[filepath.Join("docs", "doc-"+string(rune('a'+i/26))+string(rune('a'+i%26))+".txt")] = "Vendor " + string(rune('A'+i%26)) + " invoice, total 12.50"
	}
	dir := writeFiles(t, files)
	out := filepath.Join(dir, "out.jsonl")
	profile := "slow.yaml"
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"extract", "--schema", filepath.Join(dir, "schema.json"), "--provider", "sim:" + filepath.Join(dir, profile),
			"--concurrency", "2", "--out", out}, args...)...)
		cmd.Env = append(os.Environ(), "EXTRACTQ_PROVIDER=")
		return cmd
	}
	waitLines := func(n int) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, _ := os.ReadFile(out)
			if bytes.Count(b, []byte("\n")) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d lines after 30s", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// One Ctrl-C.
	var stderr bytes.Buffer
	cmd := run(filepath.Join(dir, "docs"))
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitLines(2)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("after Ctrl-C: %v, want exit 130\n%s", err, stderr.String())
	}
	for _, want := range []string{"taking no more documents", "documents in", "estimated cost", "--resume"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	first := idsIn(t, out)
	if len(first) < 2 || len(first) >= 40 {
		t.Fatalf("%d lines after Ctrl-C, want some but not all 40", len(first))
	}

	// Resume: the rest, each once.
	stderr.Reset()
	cmd = run("--resume", filepath.Join(dir, "docs"))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("--resume: %v\n%s", err, stderr.String())
	}
	all := idsIn(t, out)
	seen := map[string]bool{}
	for _, id := range all {
		if seen[id] {
			t.Errorf("%s written twice", id)
		}
		seen[id] = true
	}
	if len(all) != 40 || !strings.Contains(stderr.String(), "documents skipped") {
		t.Errorf("%d distinct lines after --resume, want 40\n%s", len(seen), stderr.String())
	}

	// Two Ctrl-C while two 5 s answers run: out at once, without waiting
	// for them, and still only whole lines.
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	profile = "slower.yaml"
	stderr.Reset()
	cmd = run(filepath.Join(dir, "docs"))
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the first two documents are running
	_ = cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || time.Since(start) > 2*time.Second {
		t.Fatalf("second Ctrl-C: %v after %s, want exit 130 at once\n%s", err, time.Since(start), stderr.String())
	}
	idsIn(t, out) // whole lines only
}
