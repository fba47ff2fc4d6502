package stack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/console"
)

// UIPath is where the web console is served on the HTTP listener.
const UIPath = "/ui"

// devConsole is the web console dev mode serves, with the connections it
// reads through (its own, so the worker's are never shared with a page).
type devConsole struct {
	store *audit.Store
	nc    *nats.Conn
	h     http.Handler
}

// startConsole connects the console to the embedded NATS server and the
// audit database. Its pages need the migrations the worker applies when it
// starts; until then they say what is missing.
func (s *Stack) startConsole(ctx context.Context) error {
	store, err := audit.Open(ctx, s.cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("web console: %w", err)
	}
	nc, err := nats.Connect(s.ns.ClientURL(), nats.Name("extractq-dev-console"), nats.MaxReconnects(-1))
	if err != nil {
		store.Close()
		return fmt.Errorf("web console: connect to the embedded NATS server: %w", err)
	}
	fail := func(err error) error {
		nc.Close()
		store.Close()
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(fmt.Errorf("web console: %w", err))
	}
	srv, err := console.New(console.Config{
		Store: store, JS: js, BasePath: UIPath, Log: s.log,
		AllowWrites: s.cfg.UIToken != "", Token: s.cfg.UIToken,
	})
	if err != nil {
		return fail(fmt.Errorf("%w: --ui-token: %w", ErrInvalidConfig, err))
	}
	s.ui = &devConsole{store: store, nc: nc, h: http.StripPrefix(UIPath, srv)}
	return nil
}

func (s *Stack) stopConsole() {
	if s.ui != nil {
		s.ui.nc.Close()
		s.ui.store.Close()
	}
}
