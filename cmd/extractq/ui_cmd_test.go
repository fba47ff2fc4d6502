package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/cli"
)

func TestUIRefusesWritesWithoutAToken(t *testing.T) {
	t.Setenv("EXTRACTQ_UI_TOKEN", "")
	natsURL, dbURL := statusFleet(t)
	for _, args := range [][]string{
		{"--allow-writes"},
		{"--allow-writes", "--token", "short"},
	} {
		root := newRootCmd()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs(append([]string{"ui", "--listen", "127.0.0.1:0", "--nats-url", natsURL, "--database-url", dbURL}, args...))
		err := root.ExecuteContext(t.Context())
		if cli.Code(err) != cli.ExitUsage || !strings.Contains(err.Error(), "token") {
			t.Errorf("ui %v: %v, want a usage error about the token", args, err)
		}
	}
}

// TestUIServes starts `extractq ui` as a person would and reads the
// overview from the address it prints; cancelling stops it cleanly.
func TestUIServes(t *testing.T) {
	t.Parallel()
	natsURL, dbURL := statusFleet(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetOut(pw)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"ui", "--listen", "127.0.0.1:0", "--nats-url", natsURL, "--database-url", dbURL})
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(ctx)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no address printed: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/ \(read-only\)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("printed %q, want the loopback address and read-only", line)
	}
	resp, err := http.Get("http://" + m[1] + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `data-run="nightly"`) || !strings.Contains(string(body), `data-pool="openai_gpt-4o-mini"`) {
		t.Errorf("overview: %d, want the run and the pool:\n%.500s", resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ui after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ui did not stop")
	}
}
