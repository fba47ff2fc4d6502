// Package devmode lets every extractq program find a running `extractq dev`
// without flags: dev mode publishes its endpoints in ./.extractq/dev.json
// while it runs, and the resolvers here read them after the flag and the
// environment and before the built-in defaults.
//
// The same file says how far dev mode got: "starting" from the moment the
// command runs, "ready" once it takes jobs, "exited" (with the error) when
// it failed. `extractq dev status --wait` reads it to stop waiting as soon
// as the dev process has died instead of waiting out its whole timeout.
//
// It is deliberately small (the standard library and package settings) so
// that submit and the toolbox can use it without linking the embedded NATS
// server; the dev-mode process itself is assembled by package devmode/stack.
package devmode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/extractq/extractq/internal/settings"
)

const (
	// DefaultDir is dev mode's data folder, relative to the working
	// directory; the resolvers look for FileName in it.
	DefaultDir = ".extractq"
	// FileName is the discovery file dev mode writes in its data folder.
	FileName = "dev.json"
)

// State is how far a dev mode got.
type State string

// States of a dev mode, as its discovery file records them.
const (
	StateStarting State = "starting" // the command runs; nothing is served yet
	StateReady    State = "ready"    // the endpoints are served and the worker takes jobs
	StateExited   State = "exited"   // it failed; Error says why
)

// Endpoints are what a running dev mode serves.
type Endpoints struct {
	NATSURL     string `json:"nats_url,omitempty"`
	DatabaseURL string `json:"database_url,omitempty"`
	MetricsURL  string `json:"metrics_url,omitempty"`
	// SimURL is the simulator's base URL ("" without --sim): its APIs and
	// /stats live under it.
	SimURL string `json:"sim_url,omitempty"`
	PID    int    `json:"pid"`
	State  State  `json:"state,omitempty"`
	// Error is why dev mode exited (StateExited only).
	Error string `json:"error,omitempty"`
}

// Liveness is what Inspect found in a data folder.
type Liveness int

const (
	// Absent: no discovery file (no dev mode was started there, or it
	// stopped cleanly).
	Absent Liveness = iota
	// Alive: the process that wrote the file runs.
	Alive
	// Gone: the file is there but its process is not (it was killed, or it
	// failed and recorded why).
	Gone
)

// Inspect reads the discovery file in dir and says whether its process
// still runs. An unreadable or malformed file counts as Absent.
func Inspect(dir string) (Endpoints, Liveness) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return Endpoints{}, Absent
	}
	var e Endpoints
	if json.Unmarshal(b, &e) != nil || e.PID <= 0 {
		return Endpoints{}, Absent
	}
	if e.State == "" && e.NATSURL != "" { // written before states existed
		e.State = StateReady
	}
	if e.State == StateExited || !alive(e.PID) {
		return e, Gone
	}
	return e, Alive
}

// Discover reads the discovery file in dir. It reports false unless a
// live dev mode published its endpoints there: no file, an unreadable one,
// one still starting, or one whose process is gone (a dev mode that was
// killed leaves a stale file behind).
func Discover(dir string) (Endpoints, bool) {
	e, l := Inspect(dir)
	if l != Alive || e.State != StateReady || e.NATSURL == "" {
		return Endpoints{}, false
	}
	return e, true
}

// Announce records in dir that dev mode process pid is starting, so that
// `dev status --wait` can tell a dev mode that died early from one that is
// slow. It refuses when another live dev mode uses dir.
func Announce(dir string, pid int) error {
	return write(dir, Endpoints{PID: pid, State: StateStarting})
}

// Publish writes e as the discovery file in dir (state ready), atomically
// and readable by the owner only (the database URL may hold a password).
// It refuses when another live dev mode uses dir.
func Publish(dir string, e Endpoints) error {
	e.State, e.Error = StateReady, ""
	return write(dir, e)
}

// MarkExited records in dir that dev mode process pid failed with err,
// unless another dev mode took the folder over meanwhile.
func MarkExited(dir string, pid int, err error) error {
	if other, l := Inspect(dir); l == Alive && other.PID != pid {
		return nil
	}
	msg := "exited"
	if err != nil {
		msg = err.Error()
	}
	return write(dir, Endpoints{PID: pid, State: StateExited, Error: msg})
}

func write(dir string, e Endpoints) error {
	if other, l := Inspect(dir); l == Alive && other.PID != e.PID {
		return fmt.Errorf("another extractq dev (pid %d) is running with data folder %s: stop it (extractq dev stop --data %s), or pass a different --data", other.PID, dir, dir)
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, FileName+".*")
	if err != nil {
		return fmt.Errorf("write the discovery file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, FileName)); err != nil {
		return fmt.Errorf("write the discovery file in %s: %w", dir, err)
	}
	return nil
}

// Unpublish removes the discovery file in dir if process pid wrote it.
func Unpublish(dir string, pid int) error {
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove the discovery file: %w", err)
	}
	var e Endpoints
	if json.Unmarshal(b, &e) == nil && e.PID != pid {
		return nil // another dev mode took over the folder
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the discovery file: %w", err)
	}
	return nil
}

// NATSURL is the NATS server a program should use when no flag names one:
// EXTRACTQ_NATS_URL, else a running dev mode's, else
// settings.DefaultNATSURL.
func NATSURL() string {
	return resolve(settings.EnvNATSURL, func(e Endpoints) string { return e.NATSURL }, settings.DefaultNATSURL)
}

// DatabaseURL is the audit database a program should use when no flag names
// one: EXTRACTQ_DATABASE_URL, else a running dev mode's, else
// settings.DefaultDatabaseURL.
func DatabaseURL() string {
	return resolve(settings.EnvDatabaseURL, func(e Endpoints) string { return e.DatabaseURL }, settings.DefaultDatabaseURL)
}

func resolve(env string, pick func(Endpoints) string, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	if e, ok := Discover(DefaultDir); ok && pick(e) != "" {
		return pick(e)
	}
	return def
}

// alive reports whether process pid exists (signal 0 checks without
// sending anything; EPERM means it exists under another user).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// zombie reports whether pid has exited but was not reaped yet (Linux; a
// zombie still answers signal 0). Elsewhere it reports false.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold spaces or parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
