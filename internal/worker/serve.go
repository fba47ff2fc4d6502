package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
)

// flushTimeout bounds the final audit flush at shutdown.
const flushTimeout = 30 * time.Second

// Connect opens the NATS connection a fleet program uses: reconnecting
// forever, with its state changes logged.
func Connect(url, name string, log *slog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: we closed it
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to NATS at %s: %w (is nats-server running with JetStream? set EXTRACTQ_NATS_URL)", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("JetStream on %s: %w", url, err)
	}
	return nc, js, nil
}

// Migrate applies the audit migrations and creates the streams, buckets
// and nothing else; it is idempotent.
func Migrate(ctx context.Context, js jetstream.JetStream, store *audit.Store) error {
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	return jobs.EnsureStreams(ctx, js)
}

// Serve runs a worker process from cfg until ctx ends: connections, the
// audit writer, the rate-limit pools and their fleet membership, the probe
// endpoints and the worker itself; at the end it flushes the audit. It
// returns nil after a graceful shutdown.
func Serve(ctx context.Context, cfg Config, log *slog.Logger, engine Engine, opts ...Option) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	nc, js, err := Connect(cfg.NATSURL, "extractq-worker", log)
	if err != nil {
		return err
	}
	defer nc.Close()
	store, err := audit.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if cfg.Migrate {
		if err := Migrate(ctx, js, store); err != nil {
			return err
		}
	} else if err := store.CheckSchema(ctx); err != nil {
		return err
	}
	writer, err := store.NewWriter(ctx)
	if err != nil {
		return err
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		if err := writer.Close(fctx); err != nil {
			log.Error("audit flush at shutdown", "err", err)
		}
	}()

	rpools := make([]*ratelimit.Pool, len(cfg.Pools))
	pools := make([]Pool, len(cfg.Pools))
	for i, spec := range cfg.Pools {
		rpools[i] = ratelimit.NewPool(spec.Name, spec.Limits, ratelimit.WithLogger(log))
		pools[i] = Pool{Name: jobs.PoolFor(spec.Name), Concurrency: spec.Limits.Concurrency, Budget: rpools[i]}
	}
	all := append([]Option{
		WithPools(pools...), WithConsumerSettings(cfg.ConsumerSettings()), WithGrace(cfg.Grace), WithLogger(log),
	}, opts...)
	if cfg.WorkerID != "" {
		all = append(all, WithID(cfg.WorkerID))
	}
	if !cfg.Migrate {
		all = append(all, WithoutEnsure())
	}
	w, err := New(js, writer, engine, all...)
	if err != nil {
		return err
	}
	members, err := ratelimit.StartMembership(ctx, js, w.ID(), rpools, ratelimit.WithMembershipLogger(log))
	if err != nil {
		return err
	}
	defer members.Stop()

	if cfg.Listen != "" {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen (health endpoints) on %s: %w (choose another with --listen, or \"\" to disable)", cfg.Listen, err)
		}
		srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second}
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("health endpoints stopped", "err", err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			<-served
		}()
		log.Info("health endpoints", "addr", ln.Addr().String())
	}
	return w.Run(ctx)
}
