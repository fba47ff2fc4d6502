package worker

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/extractq/extractq/internal/settings"
)

// parseLevel names the config key, as Validate's other errors do.
func parseLevel(s string) (slog.Level, error) {
	l, err := settings.ParseLevel(s)
	if err != nil {
		return 0, fmt.Errorf("log_level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// NewLogger returns the process logger (settings.NewLogger): JSON lines
// unless format is "text", or "auto" and w is a terminal.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	return settings.NewLogger(w, format, level)
}
