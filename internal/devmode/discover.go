// Package devmode lets every extractq program find a running `extractq dev`
// without flags: dev mode publishes its endpoints in ./.extractq/dev.json
// while it runs, and the resolvers here read them after the flag and the
// environment and before the built-in defaults.
//
// It is deliberately small (standard library only) so that submit and the
// toolbox can use it without linking the embedded NATS server; the dev-mode
// process itself is assembled by package devmode/stack.
package devmode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

const (
	// DefaultDir is dev mode's data folder, relative to the working
	// directory; the resolvers look for FileName in it.
	DefaultDir = ".extractq"
	// FileName is the discovery file dev mode writes in its data folder.
	FileName = "dev.json"

	// DefaultNATSURL and DefaultDatabaseURL apply when neither a flag, the
	// environment nor a running dev mode names a server.
	DefaultNATSURL     = "nats://127.0.0.1:4222"
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/extractq?sslmode=disable"
)

// Endpoints are what a running dev mode serves.
type Endpoints struct {
	NATSURL     string `json:"nats_url"`
	DatabaseURL string `json:"database_url"`
	MetricsURL  string `json:"metrics_url"`
	// SimURL is the simulator's base URL ("" without --sim): its APIs and
	// /stats live under it.
	SimURL string `json:"sim_url,omitempty"`
	// UIURL is the web console's address.
	UIURL string `json:"ui_url,omitempty"`
	PID   int    `json:"pid"`
}

// Discover reads the discovery file in dir. It reports false when there is
// none, it is unreadable, or the process that wrote it is gone (a dev mode
// that was killed leaves a stale file behind).
func Discover(dir string) (Endpoints, bool) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return Endpoints{}, false
	}
	var e Endpoints
	if json.Unmarshal(b, &e) != nil || e.NATSURL == "" || !alive(e.PID) {
		return Endpoints{}, false
	}
	return e, true
}

// Publish writes e as the discovery file in dir, atomically and readable by
// the owner only (the database URL may hold a password). It refuses when
// another live dev mode already published there.
func Publish(dir string, e Endpoints) error {
	if other, ok := Discover(dir); ok && other.PID != e.PID {
		return fmt.Errorf("another extractq dev (pid %d) is running with data folder %s: stop it, or pass a different --data", other.PID, dir)
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
// EXTRACTQ_NATS_URL, else a running dev mode's, else DefaultNATSURL. Use it
// as a flag's default so that the flag still wins.
func NATSURL() string {
	return resolve("EXTRACTQ_NATS_URL", func(e Endpoints) string { return e.NATSURL }, DefaultNATSURL)
}

// DatabaseURL is the audit database a program should use when no flag names
// one: EXTRACTQ_DATABASE_URL, else a running dev mode's, else
// DefaultDatabaseURL.
func DatabaseURL() string {
	return resolve("EXTRACTQ_DATABASE_URL", func(e Endpoints) string { return e.DatabaseURL }, DefaultDatabaseURL)
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
	return err == nil || errors.Is(err, syscall.EPERM)
}
