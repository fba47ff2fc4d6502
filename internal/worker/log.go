package worker

import (
	"io"
	"log/slog"

	"github.com/extractq/extractq/internal/settings"
)

func parseLevel(s string) (slog.Level, error) { return settings.ParseLevel(s) }

// NewLogger returns the process logger (settings.NewLogger): JSON lines
// unless format is "text", or "auto" and w is a terminal.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	return settings.NewLogger(w, format, level)
}
