package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/devmode"
)

// TestDevStatusStopsWaitingForADeadDev: `dev status --wait 60s` used to
// wait the whole minute after the dev process had died. It must notice the
// dead pid, and print dev mode's own reason when it recorded one.
func TestDevStatusStopsWaitingForADeadDev(t *testing.T) {
	t.Parallel()
	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		child := exec.Command("sleep", "0.5") // stands in for a dev process that dies while starting
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = child.Wait() }() // reap it, as a shell reaps a background job
		if err := devmode.Announce(dir, child.Process.Pid); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		code, _, errOut := runRoot(t, "", "dev", "status", "--data", dir, "--wait", "60s")
		if code != 1 || !strings.Contains(errOut, "is not running: it was killed, or crashed") || time.Since(start) > 15*time.Second {
			t.Fatalf("exit %d after %s: %s; want 1 within seconds of the death", code, time.Since(start), errOut)
		}
	})
	t.Run("failed with a reason", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := devmode.MarkExited(dir, 1<<30, errors.New("--http 127.0.0.1:9464: address already in use")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		code, _, errOut := runRoot(t, "", "dev", "status", "--data", dir, "--wait", "60s")
		if code != 1 || !strings.Contains(errOut, "address already in use") || time.Since(start) > 15*time.Second {
			t.Fatalf("exit %d after %s: %s; want 1 with dev mode's reason", code, time.Since(start), errOut)
		}
	})
	t.Run("ready and no wait", func(t *testing.T) {
		// One look, no --wait: a ready dev mode is reported at once (it
		// used to be "still starting" for ever: the look had no time).
		t.Parallel()
		dir := t.TempDir()
		ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				http.NotFound(w, r)
			}
		}))
		t.Cleanup(ready.Close)
		e := devmode.Endpoints{NATSURL: "nats://127.0.0.1:4223", MetricsURL: ready.URL + "/metrics", PID: os.Getpid(), State: devmode.StateReady}
		if err := devmode.Publish(dir, e); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runRoot(t, "", "dev", "status", "--data", dir)
		if code != 0 || !strings.Contains(out, ready.URL) {
			t.Fatalf("exit %d: %s %s; want the endpoints", code, out, errOut)
		}
	})
	t.Run("nothing there and no wait", func(t *testing.T) {
		t.Parallel()
		code, _, errOut := runRoot(t, "", "dev", "status", "--data", t.TempDir())
		if code != 1 || !strings.Contains(errOut, "no extractq dev is running") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}

// TestDevRecordsWhyItFailed runs `extractq dev` with a pool that cannot
// work (no API key): it refuses to start with exit 2, and its data folder
// says why, for `dev status`.
func TestDevRecordsWhyItFailed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	dir := t.TempDir()
	code, _, errOut := runRoot(t, "", "dev", "--data", dir, "--pool", "openai:gpt-4o-mini", "--nats-addr", "127.0.0.1:0", "--http", "127.0.0.1:0")
	if code != 2 || !strings.Contains(errOut, "pool openai:gpt-4o-mini") || !strings.Contains(errOut, "OPENAI_API_KEY") {
		t.Fatalf("exit %d: %s; want 2 naming the pool and the variable", code, errOut)
	}
	code, _, errOut = runRoot(t, "", "dev", "status", "--data", dir, "--wait", "30s")
	if code != 1 || !strings.Contains(errOut, "OPENAI_API_KEY") {
		t.Fatalf("dev status: exit %d: %s; want the recorded reason", code, errOut)
	}
}
