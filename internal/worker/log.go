package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"

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

// jobLogger is the base of a job's logger: its attributes (pool, job id,
// document id, …) are kept as they are and formatted only when a record is
// logged. A handler's own WithAttrs formats them at once (the JSON
// handler encodes them), which every job paid although a job that
// succeeds logs nothing at the default level.
func jobLogger(l *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	return slog.New(lazyHandler{base: l.Handler(), attrs: attrs})
}

type lazyHandler struct {
	base  slog.Handler
	attrs []slog.Attr
}

func (h lazyHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

func (h lazyHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.base.WithAttrs(h.attrs).Handle(ctx, r)
}

func (h lazyHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return lazyHandler{base: h.base, attrs: append(slices.Clip(h.attrs), attrs...)}
}

func (h lazyHandler) WithGroup(name string) slog.Handler {
	return h.base.WithAttrs(h.attrs).WithGroup(name)
}
