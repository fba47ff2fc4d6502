package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
)

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runSubmitCmd runs the submit command as main does.
func runSubmitCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out bytes.Buffer
	var errb syncBuffer
	cmd := newSubmitCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetIn(strings.NewReader(stdin))
	code = cli.Run(cmd, args, &errb)
	return code, out.String(), errb.String()
}

// migratedServer is an embedded NATS server with the streams `worker
// migrate` creates (submit only uses them).
func migratedServer(t *testing.T) string {
	t.Helper()
	url := jobstest.Server(t)
	_, js := jobstest.Connect(t, url)
	must(t, jobs.EnsureStreams(t.Context(), js))
	return url
}

func TestSubmitUsage(t *testing.T) {
	_, dbURL := audittest.Store(t)
	natsURL := migratedServer(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	base := []string{"--schema", schemaFile, "--provider", "sim:clean"}
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stderr string
		queued int
	}{
		{name: "no path", args: base, code: 2, stderr: "no input"},
		{name: "empty stdin", args: append(base, "-"), code: 2, stderr: "no documents"},
		{name: "missing path", args: append(base, filepath.Join(dir, "nope")), code: 2, stderr: "nope: no such file"},
		{name: "plain text on stdin is one document", stdin: "Invoice 7 from ACME Ltd, total 12.50 EUR\n", args: append(base, "--json", "-"), code: 0, queued: 1},
		{name: "timeout without wait", args: append(base, "--timeout", "1m", "-"), code: 2, stderr: "--timeout bounds --wait"},
		{name: "bad duration", args: append(base, "--wait", "--timeout", "soon", "-"), code: 2, stderr: "not a duration"},
		{name: "NATS unreachable", args: append(base, "--nats-url", "nats://127.0.0.1:1", schemaFile), code: 3, stderr: "cannot reach NATS"},
		{name: "stall timeout zero", args: append(base, "--stall-timeout", "0s", schemaFile), code: 2, stderr: "--stall-timeout 0s: must be positive"},
		{name: "bad variant", args: append(base, "--variant", "a b", schemaFile), code: 2, stderr: "--variant"},
		// The same messages as `extractq extract --chunk` (cmd/extractq's TestExtractCmd).
		{name: "chunk 0", args: append(base, "--chunk", "0", "-"), code: 2,
			stderr: `--chunk: invalid extraction config: chunking "0": want auto, off, or a chunk size of at least 100 tokens`},
		{name: "negative chunk", args: append(base, "--chunk", "-5", "-"), code: 2,
			stderr: `--chunk: invalid extraction config: chunking "-5": want auto, off, or a chunk size of at least 100 tokens`},
		{name: "chunk banana", args: append(base, "--chunk", "banana", "-"), code: 2,
			stderr: `--chunk: invalid extraction config: chunking "banana": want auto, off, or a chunk size of at least 100 tokens`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runSubmitCmd(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("exit %d %q, want %d mentioning %q\nstdout: %s", code, errOut, tc.code, tc.stderr, out)
			}
			if tc.queued > 0 {
				var sum struct{ Queued int }
				if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Queued != tc.queued {
					t.Errorf("summary %s (%v), want %d queued", out, err, tc.queued)
				}
			}
		})
	}
}

// TestSubmitModelIdentity: the same documents submitted for sim:clean and
// then sim:realistic are two jobs each, not "duplicates" or "already
// done": the simulator profile is part of the model identity.
func TestSubmitModelIdentity(t *testing.T) {
	_, dbURL := audittest.Store(t)
	t.Setenv("EXTRACTQ_NATS_URL", migratedServer(t))
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	docs := filepath.Join(dir, "docs")
	must(t, os.MkdirAll(docs, 0o755))
	must(t, os.WriteFile(filepath.Join(docs, "a.txt"), []byte(fleettest.Document(1)), 0o644))
	for _, step := range []struct {
		provider, variant string
		queued, dups      int
		model             string
	}{
		{provider: "sim:clean", queued: 1, model: "sim:clean"},
		{provider: "sim:clean", dups: 1, model: "sim:clean"},
		{provider: "sim:realistic", queued: 1, model: "sim:realistic"},
		{provider: "sim:realistic", variant: "v2", queued: 1, model: "sim:realistic@v2"},
	} {
		args := []string{"--schema", schemaFile, "--provider", step.provider, "--json", docs}
		if step.variant != "" {
			args = append(args, "--variant", step.variant)
		}
		code, out, errOut := runSubmitCmd(t, "", args...)
		var sum struct {
			Queued, Duplicates int
			Model              string
		}
		if err := json.Unmarshal([]byte(out), &sum); code != 0 || err != nil {
			t.Fatalf("%s: exit %d %s%s", step.provider, code, out, errOut)
		}
		if sum.Queued != step.queued || sum.Duplicates != step.dups || sum.Model != step.model {
			t.Errorf("%s %s: %+v, want %d queued, %d duplicates, model %s", step.provider, step.variant, sum, step.queued, step.dups, step.model)
		}
	}
}

// TestSubmitWaitWithoutWorker: --wait warns at once that no live worker
// serves the pool, gives up at --timeout saying how to re-attach, and
// prints the outcome with --json; Ctrl-C stops waiting the same way.
func TestSubmitWaitWithoutWorker(t *testing.T) {
	_, dbURL := audittest.Store(t)
	t.Setenv("EXTRACTQ_NATS_URL", migratedServer(t))
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	docs := filepath.Join(dir, "docs")
	must(t, os.MkdirAll(docs, 0o755))
	must(t, os.WriteFile(filepath.Join(docs, "a.txt"), []byte(fleettest.Document(1)), 0o644))
	must(t, os.WriteFile(filepath.Join(docs, "b.txt"), []byte(fleettest.Document(2)), 0o644))

	start := time.Now()
	code, out, errOut := runSubmitCmd(t, "", "--schema", schemaFile, "--provider", "sim:clean", "--run", "nowhere", "--wait", "--timeout", "3s", "--json", docs)
	t.Logf("stderr of submit --wait --timeout 3s:\n%s", errOut)
	if code != 1 || time.Since(start) > 20*time.Second {
		t.Fatalf("exit %d after %s, want 1 soon after the 3s timeout\n%s", code, time.Since(start), errOut)
	}
	for _, want := range []string{
		"warning: no live worker serves pool sim_clean", "worker run --pool sim:clean",
		"waiting: no live worker serves pool sim_clean", "0 running · 2 queued",
		"--timeout 3s passed with 2 of 2 jobs unfinished", "Re-attach with:", "--wait", docs,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Count(errOut, "warning: no live worker") != 1 {
		t.Errorf("the warning was repeated:\n%s", errOut)
	}
	var sum struct {
		Queued, Duplicates int
		Wait               *waitResult
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Wait == nil || !sum.Wait.TimedOut || sum.Wait.Unfinished != 2 || !sum.Wait.NoWorker {
		t.Fatalf("--json: %s (%v), want one object whose wait outcome is timed out with 2 unfinished", out, err)
	}

	// Ctrl-C while waiting: a real SIGINT to this process, which the
	// command handles (it is registered while the command waits).
	var errb syncBuffer
	cmd := newSubmitCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&errb)
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(cmd, []string{"--schema", schemaFile, "--provider", "sim:clean", "--run", "nowhere", "--wait", docs}, &errb)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), "warning: no live worker") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning within 20s:\n%s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 130 || !strings.Contains(errb.String(), "Re-attach with the same command") || !strings.Contains(errb.String(), "2 jobs unfinished") {
			t.Fatalf("after Ctrl-C: exit %d\n%s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("submit --wait did not stop within 20s of Ctrl-C")
	}
}

func TestSubmitHelpShowsNoSecrets(t *testing.T) {
	t.Setenv("EXTRACTQ_DATABASE_URL", "postgres://app:s3cret-pw@db.internal:5432/extractq")
	for _, args := range [][]string{{"--help"}, {"resubmit", "--help"}} {
		code, out, errOut := runSubmitCmd(t, "", args...)
		if code != 0 || strings.Contains(out+errOut, "s3cret") || !strings.Contains(out, "--database-url URL") {
			t.Errorf("%v: exit %d; want help with a placeholder and no password:\n%s", args, code, out)
		}
	}
	if code, out, _ := runSubmitCmd(t, "", "--version"); code != 0 || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestSubmitChunkOption: --chunk reaches the workers in the job's options,
// parsed as `extractq extract` parses it; auto, the default, adds nothing,
// so such jobs are what they were before the flag existed.
func TestSubmitChunkOption(t *testing.T) {
	_, dbURL := audittest.Store(t)
	natsURL := migratedServer(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)
	_, js := jobstest.Connect(t, natsURL)
	stream, err := js.Stream(t.Context(), jobs.JobsStream)
	must(t, err)
	schemaFile := filepath.Join(t.TempDir(), "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	for i, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, ""},
		{[]string{"--chunk", "auto"}, ""},
		{[]string{"--chunk", "300"}, "300"},
		{[]string{"--chunk", " OFF "}, "off"},
	} {
		args := append([]string{"--schema", schemaFile, "--provider", "sim:clean", "--json"}, tc.flags...)
		code, out, errOut := runSubmitCmd(t, fleettest.Document(i), append(args, "-")...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s%s", tc.flags, code, out, errOut)
		}
		info, err := stream.Info(t.Context())
		must(t, err)
		msg, err := stream.GetMsg(t.Context(), info.State.LastSeq)
		must(t, err)
		env, err := jobs.DecodeEnvelope(msg.Data)
		must(t, err)
		if env.Options.Chunking != tc.want {
			t.Errorf("%v: the job carries chunking %q, want %q", tc.flags, env.Options.Chunking, tc.want)
		}
	}
}
