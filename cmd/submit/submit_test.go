package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
)

func TestSubmitCommand(t *testing.T) {
	_, dbURL := audittest.Store(t)
	natsURL := jobstest.Server(t)
	t.Setenv("EXTRACTQ_NATS_URL", natsURL)
	t.Setenv("EXTRACTQ_DATABASE_URL", dbURL)

	// Only `worker migrate` creates streams: before it, submit says so.
	var errb bytes.Buffer
	cmd := newSubmitCmd()
	cmd.SetArgs([]string{"--schema", "invoice", "--provider", "openai:gpt-4o-mini", "-"})
	cmd.SetErr(&errb)
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "worker migrate") {
		t.Fatalf("submit before migrate: %v, want an error naming worker migrate", err)
	}
	_, js := jobstest.Connect(t, natsURL)
	must(t, jobs.EnsureStreams(t.Context(), js))

	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "invoice.json")
	must(t, os.WriteFile(schemaFile, []byte(fleettest.Schema), 0o644))
	bad := filepath.Join(dir, "bad.json")
	must(t, os.WriteFile(bad, []byte(`{"type": 12}`), 0o644))
	docs := filepath.Join(dir, "docs")
	must(t, os.MkdirAll(docs, 0o755))
	must(t, os.WriteFile(filepath.Join(docs, "a.txt"), []byte(fleettest.Document(1)), 0o644))
	must(t, os.WriteFile(filepath.Join(docs, "b.txt"), []byte(fleettest.Document(2)), 0o644))
	mixed := filepath.Join(dir, "mixed")
	must(t, os.MkdirAll(mixed, 0o755))
	must(t, os.WriteFile(filepath.Join(mixed, "c.txt"), []byte(fleettest.Document(3)), 0o644))
	must(t, os.WriteFile(filepath.Join(mixed, "empty.txt"), nil, 0o644))

	tests := []struct {
		name     string
		args     []string
		code     int
		queued   int
		dups     int
		rejected int
		stderr   string
	}{
		{name: "queued", args: []string{"--schema", schemaFile, "--provider", "openai:gpt-4o-mini", "--json", docs}, code: 0, queued: 2},
		{name: "same again: duplicates", args: []string{"--schema", schemaFile, "--provider", "openai:gpt-4o-mini", "--json", docs}, code: 0, dups: 2},
		{name: "by registered name", args: []string{"--schema", "invoice", "--provider", "openai:gpt-4o-mini", "--json", mixed}, code: 1, queued: 1, rejected: 1},
		{name: "unknown provider", args: []string{"--schema", schemaFile, "--provider", "nope:x", docs}, code: 2, stderr: "unknown provider"},
		{name: "invalid schema", args: []string{"--schema", bad, "--provider", "openai:gpt-4o-mini", docs}, code: 2, stderr: "bad.json"},
		{name: "unknown schema name", args: []string{"--schema", "nosuch", "--provider", "openai:gpt-4o-mini", docs}, code: 2, stderr: "neither a file nor a registered schema"},
		{name: "bad flag", args: []string{"--schema", schemaFile, "--provider", "openai:m", "--max-pending", "x", docs}, code: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cmd := newSubmitCmd()
			cmd.SetArgs(tc.args)
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			err := cmd.Execute()
			if got := cli.Code(err); got != tc.code {
				t.Fatalf("exit %d (%v), want %d\nstdout: %s\nstderr: %s", got, err, tc.code, out.String(), errb.String())
			}
			if tc.stderr != "" && (err == nil || !strings.Contains(err.Error(), tc.stderr)) {
				t.Errorf("error %v, want one mentioning %q", err, tc.stderr)
			}
			if tc.code == 2 {
				return
			}
			var sum struct {
				Queued, Duplicates int
				Rejected           []struct{ Reason string }
			}
			if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
				t.Fatalf("summary is not JSON: %v\n%s", err, out.String())
			}
			if sum.Queued != tc.queued || sum.Duplicates != tc.dups || len(sum.Rejected) != tc.rejected {
				t.Errorf("summary %+v, want %d queued, %d duplicates, %d rejected", sum, tc.queued, tc.dups, tc.rejected)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
