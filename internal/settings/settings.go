// Package settings holds what every extractq program reads the same way:
// the default addresses of NATS and the audit database, durations (with
// days), and the process logger. It imports only the standard library and
// golang.org/x/term, so the fleet packages, dev mode and the commands can
// all use it without depending on one another.
package settings

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

// The servers a program uses when neither a flag, the environment nor a
// running `extractq dev` names one: the local NATS and Postgres.
const (
	DefaultNATSURL     = "nats://127.0.0.1:4222"
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/extractq?sslmode=disable"
)

// DefaultStartWait bounds how long a program waits at start for a server
// that cannot answer yet: a JetStream cluster electing its meta leader, an
// audit database that is restarting or not up yet.
const DefaultStartWait = 30 * time.Second

// Environment variables every program reads for its servers.
const (
	EnvNATSURL     = "EXTRACTQ_NATS_URL"
	EnvDatabaseURL = "EXTRACTQ_DATABASE_URL"
)

// ErrDuration is matched by ParseDuration's errors.
var ErrDuration = errors.New("not a duration")

// ParseDuration reads a Go duration ("90s", "1h30m") that may also count
// days: "7d", "1d12h", "1.5d". Retention and look-back periods are thought
// of in days, and time.ParseDuration has no unit for them.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("%w: empty; write e.g. 30s, 15m, 24h or 7d", ErrDuration)
	}
	var days time.Duration
	rest := in
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || n < 0 || n > 100_000 {
			return 0, fmt.Errorf("%w: %q; write e.g. 30s, 15m, 24h, 7d or 1d12h", ErrDuration, s)
		}
		days = time.Duration(n * float64(24*time.Hour))
		rest = rest[i+1:]
		if rest == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil || (days > 0 && d < 0) {
		return 0, fmt.Errorf("%w: %q; write e.g. 30s, 15m, 24h, 7d or 1d12h", ErrDuration, s)
	}
	return days + d, nil
}

// FormatDuration writes d as ParseDuration reads it, with whole days as
// "Nd" so that defaults read as they were meant ("7d", not "168h0m0s").
func FormatDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// ParseLevel reads a log level: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(strings.TrimSpace(s)))); err != nil {
		return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// NewLogger returns the process logger on w: JSON lines, unless format is
// "text", or "auto" and w is a terminal. Every extractq program that logs
// builds its logger here.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	l, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: l}
	var text bool
	switch format {
	case "text":
		text = true
	case "json":
	case "auto", "":
		text = IsTerminal(w)
	default:
		return nil, fmt.Errorf("log format %q: want auto, json or text", format)
	}
	if text {
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return slog.New(slog.NewJSONHandler(w, opts)), nil
}

// IsTerminal reports whether w is a terminal (and not a file or a pipe).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
