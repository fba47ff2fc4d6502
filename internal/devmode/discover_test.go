package devmode

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/settings"
)

// deadPID is a process id that does not exist (above Linux's pid_max).
const deadPID = 1 << 30

func TestDiscover(t *testing.T) {
	live := Endpoints{NATSURL: "nats://127.0.0.1:4223", DatabaseURL: "postgres://x/db", MetricsURL: "http://127.0.0.1:9464/metrics", PID: os.Getpid(), State: StateReady}
	tests := []struct {
		name   string
		file   string // "" writes no file
		wantOK bool
	}{
		{"no file", "", false},
		{"live process", `{"nats_url":"nats://127.0.0.1:4223","database_url":"postgres://x/db","metrics_url":"http://127.0.0.1:9464/metrics","pid":` + strconv.Itoa(os.Getpid()) + `}`, true},
		{"process gone", `{"nats_url":"nats://127.0.0.1:4223","pid":` + strconv.Itoa(deadPID) + `}`, false},
		{"no pid", `{"nats_url":"nats://127.0.0.1:4223"}`, false},
		{"no NATS URL", `{"pid":` + strconv.Itoa(os.Getpid()) + `}`, false},
		{"not JSON", `nats://127.0.0.1:4223`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				if err := os.WriteFile(filepath.Join(dir, FileName), []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := Discover(dir)
			if ok != tt.wantOK {
				t.Fatalf("Discover ok = %v, want %v", ok, tt.wantOK)
			}
			if ok && got != live {
				t.Fatalf("Discover = %+v, want %+v", got, live)
			}
		})
	}
}

func TestPublishUnpublish(t *testing.T) {
	dir := t.TempDir()
	e := Endpoints{NATSURL: "nats://127.0.0.1:4223", PID: os.Getpid(), State: StateReady}
	if err := Publish(dir, e); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("discovery file mode %v, want 0600 (it may hold a database password)", perm)
	}
	if got, ok := Discover(dir); !ok || got != e {
		t.Fatalf("after Publish, Discover = %+v, %v", got, ok)
	}
	// Another live process's file is not overwritten. The test process is
	// the only live pid it can name, so it stands in for the other one.
	other := Endpoints{NATSURL: "nats://127.0.0.1:5000", PID: os.Getppid()}
	if other.PID > 1 {
		if err := Publish(dir, other); err == nil {
			t.Error("Publish over a live dev mode's file succeeded, want an error")
		}
	}
	// Unpublish by someone else leaves the file; by its owner removes it.
	if err := Unpublish(dir, deadPID); err != nil {
		t.Fatal(err)
	}
	if _, ok := Discover(dir); !ok {
		t.Fatal("Unpublish by another pid removed the file")
	}
	if err := Unpublish(dir, e.PID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); !os.IsNotExist(err) {
		t.Fatalf("discovery file still there after Unpublish (stat: %v)", err)
	}
	if err := Unpublish(dir, e.PID); err != nil {
		t.Fatalf("second Unpublish: %v", err)
	}
}

func TestResolvers(t *testing.T) {
	dev := Endpoints{NATSURL: "nats://127.0.0.1:4223", DatabaseURL: "postgres://dev/db", PID: os.Getpid()}
	tests := []struct {
		name             string
		natsEnv, dbEnv   string
		running          bool
		wantNATS, wantDB string
	}{
		{"defaults", "", "", false, settings.DefaultNATSURL, settings.DefaultDatabaseURL},
		{"dev mode", "", "", true, dev.NATSURL, dev.DatabaseURL},
		{"environment wins", "nats://env:4222", "postgres://env/db", true, "nats://env:4222", "postgres://env/db"},
		{"one variable set", "nats://env:4222", "", true, "nats://env:4222", dev.DatabaseURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			t.Setenv("EXTRACTQ_NATS_URL", tt.natsEnv)
			t.Setenv("EXTRACTQ_DATABASE_URL", tt.dbEnv)
			if tt.running {
				if err := os.Mkdir(DefaultDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := Publish(DefaultDir, dev); err != nil {
					t.Fatal(err)
				}
			}
			if got := NATSURL(); got != tt.wantNATS {
				t.Errorf("NATSURL() = %q, want %q", got, tt.wantNATS)
			}
			if got := DatabaseURL(); got != tt.wantDB {
				t.Errorf("DatabaseURL() = %q, want %q", got, tt.wantDB)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	me := os.Getpid()
	if _, l := Inspect(dir); l != Absent {
		t.Fatalf("empty folder: %v, want Absent", l)
	}
	if err := Announce(dir, me); err != nil {
		t.Fatal(err)
	}
	if e, l := Inspect(dir); l != Alive || e.State != StateStarting {
		t.Fatalf("after Announce: %+v %v, want alive and starting", e, l)
	}
	if _, ok := Discover(dir); ok {
		t.Fatal("a starting dev mode was discovered before it serves anything")
	}
	// Another live process cannot take the folder while this one runs.
	if ppid := os.Getppid(); ppid > 1 {
		if err := Announce(dir, ppid); err == nil {
			t.Error("Announce over a live dev mode's folder succeeded, want an error")
		}
	}
	if err := MarkExited(dir, me, errors.New("--sim: no such profile")); err != nil {
		t.Fatal(err)
	}
	e, l := Inspect(dir)
	if l != Gone || e.State != StateExited || !strings.Contains(e.Error, "no such profile") {
		t.Fatalf("after MarkExited: %+v %v, want gone with the error", e, l)
	}
	// A dead process's file: gone, and a new dev mode may take the folder.
	if err := Publish(dir, Endpoints{NATSURL: "nats://127.0.0.1:4223", PID: deadPID}); err != nil {
		t.Fatal(err)
	}
	if _, l := Inspect(dir); l != Gone {
		t.Fatalf("file of a dead process: %v, want Gone", l)
	}
	if err := Announce(dir, me); err != nil {
		t.Fatalf("Announce over a dead process's file: %v", err)
	}
}

// TestZombieIsGone checks that a child that exited but was not reaped yet
// (it still answers signal 0) counts as gone.
func TestZombieIsGone(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: zombie detection is Linux-only")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for !zombie(pid) {
		if time.Now().After(deadline) {
			t.Fatal("child did not become a zombie within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		t.Error("alive(zombie) = true, want false")
	}
	_ = cmd.Wait()
}
