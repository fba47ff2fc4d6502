package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/testenv"
	"github.com/spf13/cobra"
)

// TestRunRefusesWhatCannotWork checks that `worker run` refuses to start,
// with the exit code and a message saying what to do, when a pool cannot
// build its provider, a server is unreachable or the audit database is not
// migrated: before, a worker without OPENAI_API_KEY started, turned ready
// and dead-lettered every job it pulled.
func TestRunRefusesWhatCannotWork(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("EXTRACTQ_POOLS", "")
	t.Setenv("EXTRACTQ_CONFIG", "")
	natsURL := jobstest.Server(t)
	empty := testenv.Database(t) // exists, never migrated
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{name: "missing API key", args: []string{"run", "--pool", "openai:gpt-4o-mini", "--pool", "sim:clean", "--nats-url", natsURL, "--database-url", empty},
			code: 2, want: []string{"pool openai:gpt-4o-mini", "OPENAI_API_KEY"}},
		{name: "two pools without keys", args: []string{"run", "--pool", "openai:gpt-4o-mini", "--pool", "anthropic:claude-haiku-4-5", "--nats-url", natsURL, "--database-url", empty},
			code: 2, want: []string{"OPENAI_API_KEY", "pool anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY"}},
		{name: "NATS unreachable", args: []string{"run", "--pool", "sim:clean", "--nats-url", "nats://127.0.0.1:1", "--database-url", empty, "--listen", ""},
			code: 3, want: []string{"cannot reach NATS at nats://127.0.0.1:1"}},
		{name: "database not migrated", args: []string{"run", "--pool", "sim:clean", "--nats-url", natsURL, "--database-url", empty, "--listen", ""},
			code: 2, want: []string{"extractq audit migrate"}},
		{name: "bad duration", args: []string{"run", "--pool", "sim:clean", "--grace", "soon"}, code: 2, want: []string{"not a duration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errb bytes.Buffer
			root := newRootCmd()
			root.SetErr(&errb)
			code := runRoot(root, tt.args, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
		})
	}
}

func TestVersionFlag(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	if code := runRoot(root, []string{"--version"}, &bytes.Buffer{}); code != 0 || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: exit %d, %q", code, out.String())
	}
}

var runRoot = cli.Run

// TestDurationsTakeDays: the worker's durations accept days in flags, the
// environment and the config file, as every extractq duration does.
func TestDurationsTakeDays(t *testing.T) {
	file := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(file, []byte("ack_wait: 1d\nbackoff: [30s, 1d]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EXTRACTQ_CONFIG", file)
	t.Setenv("EXTRACTQ_GRACE", "2d")
	t.Setenv("EXTRACTQ_POOLS", "")
	var s runFlags
	cmd := &cobra.Command{Use: "run"}
	s.register(cmd, true)
	if err := cmd.ParseFlags([]string{"--max-deliver", "3"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.load(cmd)
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	if cfg.AckWait != day || cfg.Grace != 2*day || len(cfg.BackOff) != 2 || cfg.BackOff[1] != day {
		t.Fatalf("ack wait %v, grace %v, backoff %v; want 1d, 2d and [30s 1d]", cfg.AckWait, cfg.Grace, cfg.BackOff)
	}
}

// TestStartWaitFlag: --start-wait overrides the environment, on run and
// on migrate; without it the environment's value stands.
func TestStartWaitFlag(t *testing.T) {
	t.Setenv("EXTRACTQ_CONFIG", "")
	t.Setenv("EXTRACTQ_POOLS", "")
	t.Setenv("EXTRACTQ_START_WAIT", "2m")
	for _, c := range []struct {
		name string
		full bool
		args []string
		want time.Duration
	}{
		{"run, flag", true, []string{"--start-wait", "5s"}, 5 * time.Second},
		{"migrate, flag", false, []string{"--start-wait", "0"}, 0},
		{"run, environment", true, nil, 2 * time.Minute},
	} {
		var s runFlags
		cmd := &cobra.Command{Use: "run"}
		s.register(cmd, c.full)
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		cfg, err := s.load(cmd)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cfg.StartWait != c.want {
			t.Errorf("%s: start wait %v, want %v", c.name, cfg.StartWait, c.want)
		}
	}
}
