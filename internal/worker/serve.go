package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/capstore"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/metrics"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/redact"
	"github.com/extractq/extractq/internal/tracing"
)

// fleetProviders builds the providers of a fleet worker: each shares what
// its server's refusals teach (llm.Adjustment) with every worker through
// the capabilities bucket, so one refused request teaches the fleet; with
// traces on, each HTTP call is a span of its attempt.
func fleetProviders(kvm jetstream.KeyValueManager, log *slog.Logger) func(spec string) (llm.Provider, error) {
	caps := capstore.New(kvm)
	return func(spec string) (llm.Provider, error) {
		return extractq.NewProvider(spec, extractq.WithProviderCapabilityStore(caps), extractq.WithProviderLogger(log),
			extractq.WithProviderTransport(tracing.HTTPTransport()))
	}
}

// flushTimeout bounds the final audit flush at shutdown.
const flushTimeout = 30 * time.Second

// Connect opens the NATS connection a fleet program uses: reconnecting
// forever, with its state changes logged. Its error is a ServerError.
func Connect(url, name string, log *slog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	nc, js, err := connect(url, name, log)
	if err != nil {
		return nil, nil, natsStartError(url, err)
	}
	return nc, js, nil
}

// connect is Connect with the cause as it came, for ServerError.
func connect(url, name string, log *slog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1), nats.Timeout(natsConnectTimeout),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: we closed it
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "url", c.ConnectedUrlRedacted()) }),
	)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// natsConnectTimeout bounds one connection attempt to a NATS server (the
// commands' checks use the same).
const natsConnectTimeout = 5 * time.Second

// The servers a ServerError names.
const (
	ServerNATS  = "NATS"
	ServerAudit = "audit database"
)

// ServerError is an error of Serve's start, before the worker runs, from
// one of its servers: connecting to NATS or waiting for its JetStream
// (Server is ServerNATS), opening the audit database or checking its
// schema (ServerAudit). Its message names the server (never a password)
// and what to do; Err is the cause, for a program that reports these
// failures its own way (the worker command's exit codes): for the audit
// database, audit.Unreachable tells one that did not answer within
// Config.StartWait from one that refused (a login, a database missing or
// not migrated), for NATS, errors.Is(err, jobs.ErrNoJetStream) a server
// without JetStream from one that could not be reached.
type ServerError struct {
	Server string
	Err    error
	msg    string
}

func (e *ServerError) Error() string { return e.msg }

// Unwrap returns the cause.
func (e *ServerError) Unwrap() error { return e.Err }

// natsStartError is the ServerError of err from connecting to the NATS
// server at url or waiting for its JetStream.
func natsStartError(url string, err error) *ServerError {
	shown := redact.URL(url)
	msg := fmt.Sprintf("connect to NATS at %s: %v (is nats-server running with JetStream? set EXTRACTQ_NATS_URL)", shown, err)
	if errors.Is(err, jobs.ErrNoJetStream) {
		msg = fmt.Sprintf("NATS at %s has no JetStream: start nats-server with -js", shown)
	}
	return &ServerError{Server: ServerNATS, Err: err, msg: msg}
}

// connectServers connects to NATS and opens the audit database together,
// so that a start waits for the slower of the two rather than their sum.
// Each waits up to cfg.StartWait for a server that cannot answer yet: an
// audit database that cannot be reached (audit.OpenWaiting), a JetStream
// that cannot answer (jobs.WaitJetStream). The audit schema is checked
// unless cfg.Migrate (Serve migrates it). Errors are ServerErrors; a NATS
// server that cannot be reached wins over the database's error, as when
// the two were checked one after the other; a database that fails for
// good stops the wait for JetStream.
func connectServers(ctx context.Context, cfg Config, log *slog.Logger) (nc *nats.Conn, js jetstream.JetStream, store *audit.Store, err error) {
	dbCtx, cancelDB := context.WithCancel(ctx)
	defer cancelDB()
	natsCtx, stopNATS := context.WithCancel(ctx)
	defer stopNATS()
	type opened struct {
		store *audit.Store
		err   error
	}
	db := make(chan opened, 1)
	go func() {
		st, err := audit.OpenWaiting(dbCtx, cfg.DatabaseURL, cfg.StartWait, log)
		if err == nil && !cfg.Migrate {
			if err = st.CheckSchema(dbCtx); err != nil {
				st.Close()
				st = nil
			}
		}
		if err != nil {
			stopNATS()
			err = &ServerError{Server: ServerAudit, Err: err, msg: err.Error()}
		}
		db <- opened{st, err}
	}()
	nc, js, err = connect(cfg.NATSURL, "extractq-worker", log)
	if err == nil {
		if err = jobs.WaitJetStream(natsCtx, js, cfg.StartWait); err != nil {
			nc.Close()
			if natsCtx.Err() != nil && ctx.Err() == nil { // the database failed first
				d := <-db
				return nil, nil, nil, d.err
			}
		}
	}
	if err != nil {
		cancelDB()
		if d := <-db; d.store != nil {
			d.store.Close()
		}
		return nil, nil, nil, natsStartError(cfg.NATSURL, err)
	}
	d := <-db
	if d.err != nil {
		nc.Close()
		return nil, nil, nil, d.err
	}
	return nc, js, d.store, nil
}

// ServeOption adjusts Serve beyond its Config.
type ServeOption func(*serveOptions)

type serveOptions struct {
	worker   []Option
	listener net.Listener
	routes   []route
	ready    func()
}

type route struct {
	pattern string
	h       http.Handler
}

// WithWorkerOptions passes options to the worker (New).
func WithWorkerOptions(o ...Option) ServeOption {
	return func(s *serveOptions) { s.worker = append(s.worker, o...) }
}

// WithListener serves the endpoints on ln instead of listening on
// Config.Listen; Serve closes it.
func WithListener(ln net.Listener) ServeOption { return func(s *serveOptions) { s.listener = ln } }

// WithRoute adds a handler to the endpoints' mux (http.ServeMux pattern).
func WithRoute(pattern string, h http.Handler) ServeOption {
	return func(s *serveOptions) { s.routes = append(s.routes, route{pattern, h}) }
}

// WithReady calls f once, when the worker pulls jobs and its endpoints are
// served. f runs on the worker's goroutine: keep it short.
func WithReady(f func()) ServeOption { return func(s *serveOptions) { s.ready = f } }

// Serve runs a worker process from cfg until ctx ends: connections, the
// audit writer, the rate-limit pools and their fleet membership, the
// Prometheus metrics, the endpoints (/healthz, /readyz, /metrics) and the
// worker itself; at the end it flushes the audit. It returns nil after a
// graceful shutdown. `worker run` and `extractq dev` both run this.
//
// It connects to each server once. At start it waits up to cfg.StartWait
// for an audit database that cannot be reached yet and a JetStream that
// cannot answer yet, logging what it waits for; those errors, and a
// database missing or not migrated, are ServerErrors.
func Serve(ctx context.Context, cfg Config, log *slog.Logger, engine Engine, opts ...ServeOption) (err error) {
	var so serveOptions
	for _, f := range opts {
		f(&so)
	}
	if so.listener != nil {
		defer so.listener.Close() // after Shutdown this is a no-op; before it, on early errors, it frees the port
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	// Traces, when the OTEL_* variables ask for them.
	shutdownTraces, err := tracing.Setup(ctx, "extractq-worker")
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdownTraces(sctx)
	}()
	nc, js, store, err := connectServers(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer nc.Close()
	defer store.Close()
	if cfg.Migrate {
		if err := Migrate(ctx, js, store, cfg.StreamReplicas, cfg.StreamOptions()...); err != nil {
			return err
		}
		if err := MigrateConsumers(ctx, js, cfg); err != nil {
			return err
		}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg)
	// The attempt partitions are prepared while the worker sets up its
	// streams and consumers (Run's round trips to JetStream); Run waits for
	// them before it pulls the first job, so no record is written before.
	// Then the same connection is readied for the writer's first flush,
	// which would otherwise pay for the backend's first use of the audit
	// tables (audit.Store.WarmWriter); a failure there only costs time.
	prepared := make(chan error, 1)
	go func() {
		err := store.EnsurePartitions(ctx)
		if err == nil {
			if werr := store.WarmWriter(ctx); werr != nil {
				log.Warn("audit: the writer's connection was not readied; the first flush will take longer", "err", werr)
			}
		}
		prepared <- err
	}()
	partitions := sync.OnceValue(func() error { return <-prepared })
	defer partitions() // before store.Close, on every return
	writer := store.StartWriter(ctx, audit.WithMaxDelay(cfg.AuditLinger), audit.WithFlushObserver(func(f audit.FlushInfo) {
		m.ObserveFlush(f.Rows, f.Duration, f.Err)
	}))
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		if ferr := writer.Close(fctx); ferr != nil {
			log.Error("audit flush at shutdown", "err", ferr)
			err = errors.Join(err, fmt.Errorf("audit flush at shutdown: %w", ferr))
		}
	}()

	// Online pools share their rate limits across the fleet. A batch pool
	// is not paced per minute (the provider queues whole batches): it holds
	// jobs up to its concurrency, and its rate-limit pool only announces
	// the worker in the fleet's membership (status, submit --wait).
	rpools := make([]*ratelimit.Pool, len(cfg.Pools))
	var sampled []metrics.SampledPool
	pools := make([]Pool, len(cfg.Pools))
	for i, spec := range cfg.Pools {
		pools[i] = Pool{Name: jobs.PoolFor(spec.Name), Concurrency: spec.Limits.Concurrency}
		rpools[i] = ratelimit.NewPool(spec.Name, spec.Limits, ratelimit.WithLogger(log),
			ratelimit.WithMaxPause(cfg.MaxPause), ratelimit.WithDefaultMaxTokens(cfg.DefaultMaxTokens))
		if spec.IsBatch() {
			pools[i].Batch = cfg.BatchSettings(spec)
			continue
		}
		pools[i].Budget = rpools[i]
		sampled = append(sampled, metrics.SampledPool{Name: pools[i].Name, Budget: rpools[i]})
	}
	all := []Option{
		WithProviders(fleetProviders(js, log)),
		WithPools(pools...), WithConsumerSettings(cfg.ConsumerSettings()), WithGrace(cfg.Grace), WithLogger(log),
		WithObserver(m), WithAuditReader(store), WithCircuit(cfg.Circuit()), WithRequeueDelay(cfg.RequeueDelay),
		WithBatchStore(store),
	}
	// Run's gate: what must be done before the first job is pulled, done
	// meanwhile beside Run's own round trips to JetStream (streams,
	// consumers): the attempt partitions and the first heartbeat of the
	// fleet membership, which sets the pools' shares of the fleet's limits.
	var membership func() (*ratelimit.Membership, error)
	all = append(all, withStartGate(func(context.Context) error {
		if err := partitions(); err != nil {
			return err
		}
		_, err := membership()
		return err
	}))
	if so.ready != nil { // the endpoints below are served before Run makes the worker ready
		all = append(all, withOnReady(so.ready))
	}
	if cfg.WorkerID != "" {
		all = append(all, WithID(cfg.WorkerID))
	}
	var out audit.Writer = &metrics.ObservedWriter{Writer: writer, Metrics: m}
	if cfg.Events {
		if _, err := js.Stream(ctx, events.Stream); err != nil {
			return fmt.Errorf("events: stream %s: %w (run `worker migrate` once to create it)", events.Stream, err)
		}
		pub := events.NewPublisher(js, 4096, func(err error) { log.Warn("run event not published", "err", err) })
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
			defer cancel()
			if cerr := pub.Close(cctx); cerr != nil {
				log.Error("run events at shutdown", "err", cerr)
			}
		}()
		out = &events.Writer{Next: out, Pub: pub}
	}
	w, err := New(js, out, engine, append(all, so.worker...)...)
	if err != nil {
		return err
	}
	for i, p := range pools {
		// Status, heartbeats and metrics show a circuit's pause as the pool's.
		rpools[i].Guard(w.circuits[i], w.auditCircuit)
		if p.Batch != nil {
			rpools[i].Guard(w.pollCircuits[i])
			sampled = append(sampled, metrics.SampledPool{Name: p.Name, Pause: rpools[i], Batch: func() batchpool.Stats {
				st, _ := w.BatchStats(p.Name)
				return st
			}})
		}
	}
	// One worker of the fleet at a time announces the runs that no waiting
	// submit announces and delivers their webhooks, signed with the
	// submitters' EXTRACTQ_WEBHOOK_SECRET (package events, Sweeper).
	sweeper := &events.Sweeper{Store: store, JS: js, ID: w.ID(), Secret: []byte(os.Getenv("EXTRACTQ_WEBHOOK_SECRET")), Log: log}
	sweepCtx, stopSweeper := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); _ = sweeper.Run(sweepCtx) }()
	defer func() { stopSweeper(); <-swept }()
	joined := make(chan struct{})
	var members *ratelimit.Membership
	var joinErr error
	go func() {
		defer close(joined)
		members, joinErr = ratelimit.StartMembership(ctx, js, w.ID(), rpools, ratelimit.WithMembershipLogger(log))
	}()
	membership = func() (*ratelimit.Membership, error) { <-joined; return members, joinErr }
	defer func() {
		if m, _ := membership(); m != nil {
			m.Stop()
		}
	}()

	ln := so.listener
	if ln == nil && cfg.Listen != "" {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return fmt.Errorf("listen (health and metrics endpoints) on %s: %w (choose another with --listen, or \"\" to disable)", cfg.Listen, err)
		}
	}
	if ln != nil {
		mux := http.NewServeMux()
		probes := w.Handler()
		mux.Handle("GET /healthz", probes)
		mux.Handle("GET /readyz", probes)
		mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.NewSampler(m, reg, js, sampled, log), promhttp.HandlerOpts{}))
		for _, r := range so.routes {
			mux.Handle(r.pattern, r.h)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("endpoints stopped", "err", err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			<-served
		}()
		log.Info("endpoints: /healthz /readyz /metrics", "addr", ln.Addr().String())
	}
	return w.Run(ctx)
}
