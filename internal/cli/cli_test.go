package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/testenv"
)

// tree is a command tree like the programs': a command that fails, one
// that takes exactly one argument, one with a required flag.
func tree(runErr error) *cobra.Command {
	root := &cobra.Command{Use: "prog"}
	var n int
	run := &cobra.Command{Use: "run", RunE: func(*cobra.Command, []string) error { return runErr }}
	run.Flags().IntVar(&n, "n", 0, "a number")
	one := &cobra.Command{Use: "one ARG", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { return nil }}
	req := &cobra.Command{Use: "req", RunE: func(*cobra.Command, []string) error { return nil }}
	req.Flags().String("x", "", "x")
	_ = req.MarkFlagRequired("x")
	root.AddCommand(run, one, req)
	return root
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		runErr error
		args   []string
		code   int
		stderr string
	}{
		{name: "ok", args: []string{"run"}, code: 0},
		{name: "unclassified error is a failure", runErr: errors.New("boom"), args: []string{"run"}, code: 1, stderr: "prog: boom"},
		{name: "usage", runErr: Usage(errors.New("bad")), args: []string{"run"}, code: 2, stderr: "prog: bad"},
		{name: "unavailable", runErr: Unavailable(errors.New("down")), args: []string{"run"}, code: 3},
		{name: "interrupted without message", runErr: Interrupted(nil), args: []string{"run"}, code: 130},
		{name: "bad flag value", args: []string{"run", "--n", "x"}, code: 2, stderr: "see prog run --help"},
		{name: "unknown flag", args: []string{"run", "--nope"}, code: 2},
		{name: "missing argument", args: []string{"one"}, code: 2, stderr: "accepts 1 arg"},
		{name: "missing required flag", args: []string{"req"}, code: 2, stderr: "required flag"},
		{name: "unknown command", args: []string{"nope"}, code: 2, stderr: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var errb bytes.Buffer
			root := tree(tt.runErr)
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			code := Run(root, tt.args, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, errb.String())
			}
			if !strings.Contains(errb.String(), tt.stderr) || strings.Count(errb.String(), "prog:") > 1 {
				t.Errorf("stderr %q, want one message with %q", errb.String(), tt.stderr)
			}
			if tt.code == 130 && errb.Len() != 0 {
				t.Errorf("stderr %q, want nothing for an error without a message", errb.String())
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/extractq/extractq", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}}
	got := versionOf(bi)
	for _, want := range []string{"v1.2.3", "commit 0123456789ab+dirty (2026-01-02T03:04:05Z)", "go1.26.8", "module github.com/extractq/extractq"} {
		if !strings.Contains(got, want) {
			t.Errorf("versionOf = %q, want it to contain %q", got, want)
		}
	}
	var out bytes.Buffer
	root := tree(nil)
	root.SetOut(&out)
	if code := Run(root, []string{"--version"}, &bytes.Buffer{}); code != 0 || !strings.Contains(out.String(), runtime.Version()) {
		t.Errorf("--version: exit %d, output %q; want the Go version", code, out.String())
	}
}

func TestDurationFlag(t *testing.T) {
	t.Parallel()
	var d time.Duration
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	DurationVar(cmd.Flags(), &d, "since", 7*24*time.Hour, "look back")
	if f := cmd.Flag("since"); f.DefValue != "7d" {
		t.Errorf("default shows %q, want 7d", f.DefValue)
	}
	if code := Run(cmd, []string{"--since", "1d12h"}, &bytes.Buffer{}); code != 0 || d != 36*time.Hour {
		t.Errorf("--since 1d12h: exit %d, %v", code, d)
	}
	if code := Run(cmd, []string{"--since", "soon"}, &bytes.Buffer{}); code != 2 {
		t.Errorf("--since soon: exit %d, want 2", code)
	}
}

func TestInterruptible(t *testing.T) {
	t.Parallel()
	sig := make(chan os.Signal, 2)
	firsts, seconds := make(chan struct{}, 2), make(chan struct{}, 2)
	ctx, stop := interruptible(t.Context(), sig, func() { firsts <- struct{}{} }, func() { seconds <- struct{}{} })
	defer stop()
	sig <- syscall.SIGINT
	<-firsts
	<-ctx.Done()
	if !WasInterrupted(ctx) {
		t.Fatalf("cause %v, want ErrInterrupted", context.Cause(ctx))
	}
	select {
	case <-seconds:
		t.Fatal("the first signal ran the second handler")
	default:
	}
	sig <- syscall.SIGINT
	select {
	case <-seconds:
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not run the second handler")
	}
}

func TestOpenStoreSaysWhatToDo(t *testing.T) {
	t.Parallel()
	empty := testenv.Database(t) // exists, never migrated
	missing := strings.Replace(empty, "extractq_test_", "extractq_missing_", 1)
	tests := []struct {
		name string
		url  string
		need StoreNeed
		code int
		msg  string
	}{
		{name: "missing database", url: missing, code: ExitUsage, msg: "createdb -h 127.0.0.1 -p 5432 -U postgres extractq_missing_"},
		{name: "not migrated", url: empty, code: ExitUsage, msg: "run `extractq audit migrate`"},
		{name: "migrate only needs it reachable", url: empty, need: Reachable, code: 0},
		{name: "server down", url: "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", code: ExitUnavailable, msg: "cannot reach Postgres"},
		{name: "not a URL", url: "postgres://a b:c@/", code: ExitUsage, msg: "not a valid Postgres URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, err := OpenStore(t.Context(), tt.url, tt.need)
			if st != nil {
				st.Close()
			}
			if Code(err) != tt.code || (err != nil && !strings.Contains(err.Error(), tt.msg)) {
				t.Fatalf("OpenStore: exit %d, %v; want %d mentioning %q", Code(err), err, tt.code, tt.msg)
			}
		})
	}
}

func TestConnectNATS(t *testing.T) {
	t.Parallel()
	url := jobstest.Server(t)
	nc, _, err := ConnectNATS(t.Context(), url, "test")
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	_, _, err = ConnectNATS(t.Context(), "nats://user:secret@127.0.0.1:1", "test")
	if Code(err) != ExitUnavailable || !strings.Contains(err.Error(), "cannot reach NATS") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("unreachable NATS: exit %d, %v; want 3, naming the server without its password", Code(err), err)
	}
}

// TestConnectNATSRidesOutElection: five programs starting together while
// a three-node cluster elects a new meta leader (its leader was just
// lost) all connect: only the meta leader answers the account check, and
// a single try timed out while none was elected.
func TestConnectNATSRidesOutElection(t *testing.T) {
	t.Parallel()
	c := jobstest.StartCluster(t, 3)
	for _, s := range c.Servers {
		if s.JetStreamIsLeader() {
			s.Shutdown()
			break
		}
	}
	url := c.URL()
	errs := make(chan error, 5)
	start := time.Now()
	// When the remaining nodes elect their leader is the machine's business
	// (on a loaded 2-core machine it has taken over 30 s); what is tested is
	// that every program connects once one is elected, within StartWait.
	var elected atomic.Int64 // nanoseconds after start; 0 until a leader is seen
	watch, stopWatch := context.WithCancel(t.Context())
	defer stopWatch()
	go func() {
		for watch.Err() == nil {
			for _, s := range c.Servers {
				if s.JetStreamIsLeader() {
					elected.CompareAndSwap(0, int64(time.Since(start)))
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for i := range 5 {
		go func() {
			nc, _, err := ConnectNATS(t.Context(), url, fmt.Sprintf("worker-%d", i))
			if err == nil {
				nc.Close()
			}
			errs <- err
		}()
	}
	var failed []error
	for range 5 {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	took := time.Since(start)
	at := time.Duration(elected.Load())
	switch {
	case len(failed) == 0:
	case at == 0 || at > StartWait-5*time.Second:
		t.Logf("the cluster elected no meta leader until %s, too late for a %s start-up wait; %d connections gave up, as they should: %v", at, StartWait, len(failed), failed[0])
	default:
		for _, err := range failed {
			t.Errorf("start during an election (leader elected after %s): %v", at.Round(10*time.Millisecond), err)
		}
	}
	t.Logf("5 connections during a meta-leader election: all in %s", took.Round(10*time.Millisecond))
}
