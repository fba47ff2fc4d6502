// Package fleet runs extractq's fleet from your own program: a worker
// process with your providers, validators and observers (Serve), and a
// client that queues documents, follows their jobs, resubmits and reads
// the audit (Dial or NewClient, Client.Submit, Client.Follow,
// Client.Resubmit, Client.Results).
//
// The shipped `worker` and `submit` commands are this package with the
// built-in provider families. A binary of your own serves the same
// streams, pools and audit database, so it can replace them or run beside
// them:
//
//	func main() {
//		// "myco:small-1" now works in a pool and in Job.Provider.
//		extractq.RegisterProvider("myco", myco.New)
//		cfg, err := fleet.LoadConfig(os.Getenv("EXTRACTQ_CONFIG"))
//		...
//		err = fleet.Serve(ctx, cfg, fleet.WithExtractOptions(
//			extractq.WithValidator(totalsAddUp), extractq.WithObserver(logAttempt)))
//	}
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/settings"
	"github.com/extractq/extractq/internal/worker"
)

// ErrConfig is matched by every error Serve returns before it starts for a
// configuration that cannot work (a bad pool, a provider that cannot be
// built): fix the configuration, restarting will not help.
var ErrConfig = errors.New("bad worker configuration")

// Config is a worker's settings. LoadConfig fills it from the YAML file
// and the EXTRACTQ_* environment the shipped worker reads (see
// cmd/worker/worker.example.yaml), DefaultConfig from neither; set fields
// afterwards to override them. In a Config literal, zero fields take the
// defaults, and Listen "" disables the endpoints.
// Settings without a field here (circuits, batch pools, pauses) come from
// the file and the environment only.
type Config struct {
	NATSURL     string // EXTRACTQ_NATS_URL
	DatabaseURL string // EXTRACTQ_DATABASE_URL
	// WorkerID names the worker in logs, the audit and dead letters;
	// empty: host name and process id.
	WorkerID string
	// Listen is the address of /healthz, /readyz and /metrics; empty
	// disables them. The default ":8080" is every interface with no
	// authentication: "127.0.0.1:8080" keeps them to the machine.
	Listen string
	// Pools, when set, replace the pools of the file and environment:
	// "family:model=rpm:N,tpm:N,concurrency:N", e.g.
	// "myco:small-1=concurrency:8". A family is built in or registered
	// with extractq.RegisterProvider before Serve.
	Pools []string
	// AckWait and MaxDeliver are the pools' consumer settings: how long a
	// job may go without an ack or a progress signal, and its deliveries
	// before it is dead-lettered.
	AckWait    time.Duration
	MaxDeliver int
	// BackOff are the redelivery delays after a worker crash (fewer than
	// MaxDeliver). nil follows AckWait: it, then 2, 4 and 10 times it (as
	// many as MaxDeliver allows); an empty, non-nil list redelivers after
	// AckWait each time.
	BackOff []time.Duration
	// Grace is how long running jobs get to finish at shutdown.
	Grace time.Duration
	// StartWait is how long Serve waits at start for an audit database
	// that cannot be reached yet (Postgres not up yet beside the fleet in
	// compose or Kubernetes, restarting, failing over) and for a JetStream
	// that cannot answer yet (a cluster electing its meta leader), trying
	// again with backoff and logging each try (EXTRACTQ_START_WAIT; default
	// 30s; negative: try once). A NATS server that refuses the connection,
	// a login refused, a database missing or not migrated fail at once.
	StartWait time.Duration
	// Migrate applies the audit migrations and creates the streams and the
	// pools' consumers at start, with StreamReplicas copies (3 on a
	// three-node cluster); otherwise `worker migrate` does it once.
	Migrate        bool
	StreamReplicas int
	// LogFormat (auto, json, text) and LogLevel (debug, info, warn, error)
	// make the logger unless WithLogger gives one.
	LogFormat, LogLevel string

	base worker.Config // what the file and the environment set
}

// DefaultConfig is the configuration with no file and no environment.
func DefaultConfig() Config { return fromWorker(worker.DefaultConfig()) }

// LoadConfig reads the YAML file at path (none when path is "") and then
// the EXTRACTQ_* environment variables, as `worker run` does.
func LoadConfig(path string) (Config, error) {
	wc := worker.DefaultConfig()
	if path != "" {
		if err := wc.LoadConfigFile(path); err != nil {
			return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if err := wc.LoadEnv(os.Getenv); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return fromWorker(wc), nil
}

func fromWorker(wc worker.Config) Config {
	return Config{
		NATSURL: wc.NATSURL, DatabaseURL: wc.DatabaseURL, WorkerID: wc.WorkerID, Listen: wc.Listen,
		AckWait: wc.AckWait, MaxDeliver: wc.MaxDeliver, BackOff: wc.BackOff, Grace: wc.Grace, StartWait: wc.StartWait,
		Migrate: wc.Migrate, StreamReplicas: wc.StreamReplicas, LogFormat: wc.LogFormat, LogLevel: wc.LogLevel,
		base: wc,
	}
}

// orDefaults fills the zero fields of a Config literal from d.
func (c Config) orDefaults(d Config) Config {
	pick := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	pick(&c.NATSURL, d.NATSURL)
	pick(&c.DatabaseURL, d.DatabaseURL)
	pick(&c.LogFormat, d.LogFormat)
	pick(&c.LogLevel, d.LogLevel)
	if c.AckWait == 0 {
		c.AckWait = d.AckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = d.MaxDeliver
	}
	if c.Grace == 0 {
		c.Grace = d.Grace
	}
	if c.StartWait == 0 {
		c.StartWait = d.StartWait
	}
	if c.StreamReplicas == 0 {
		c.StreamReplicas = d.StreamReplicas
	}
	return c
}

// Check reports what in c cannot work (a bad or missing pool, a pool
// whose provider cannot be built, a setting out of range) as an error
// matching ErrConfig, without connecting to anything: what Serve checks
// before it starts.
func (c Config) Check() error {
	_, err := c.worker()
	return err
}

// worker is the internal configuration c describes, checked.
func (c Config) worker() (worker.Config, error) {
	wc, err := c.settings()
	if err != nil {
		return wc, err
	}
	if err := wc.Validate(); err != nil {
		return wc, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// A pool whose provider cannot be built (no API key, a family never
	// registered) would dead-letter every job it pulls.
	if err := worker.CheckProviders(wc.Pools, nil); err != nil {
		return wc, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return wc, nil
}

// settings is the internal configuration c describes, unchecked.
func (c Config) settings() (worker.Config, error) {
	wc := c.base
	if wc.MaxDeliver == 0 { // a literal, not from DefaultConfig or LoadConfig
		wc = worker.DefaultConfig()
		c = c.orDefaults(fromWorker(wc))
	}
	wc.NATSURL, wc.DatabaseURL, wc.WorkerID, wc.Listen = c.NATSURL, c.DatabaseURL, c.WorkerID, c.Listen
	wc.AckWait, wc.MaxDeliver, wc.BackOff, wc.Grace = c.AckWait, c.MaxDeliver, c.BackOff, c.Grace
	wc.StartWait = max(c.StartWait, 0) // negative: try once
	wc.Migrate, wc.StreamReplicas, wc.LogFormat, wc.LogLevel = c.Migrate, c.StreamReplicas, c.LogFormat, c.LogLevel
	if len(c.Pools) > 0 {
		specs, err := ratelimit.ParsePoolSpecs(c.Pools)
		if err != nil {
			return wc, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		wc.Pools = specs
	}
	return wc, nil
}

// Migrate brings the audit database's tables up to date and creates or
// updates the JetStream streams and buckets (with Config.StreamReplicas
// copies) and the durable consumer of each of Config.Pools, with the
// consumer settings of cfg: what `worker migrate` does. Running it again
// changes nothing. It waits out a cluster electing a leader.
func Migrate(ctx context.Context, cfg Config) error {
	wc, err := cfg.settings()
	if err != nil {
		return err
	}
	if err := worker.CheckStreamReplicas(wc.StreamReplicas); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	nc, js, err := worker.Connect(wc.NATSURL, "extractq-migrate", slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer nc.Close()
	store, err := audit.Open(ctx, wc.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := worker.Migrate(ctx, js, store, wc.StreamReplicas, wc.StreamOptions()...); err != nil {
		return err
	}
	return worker.MigrateConsumers(ctx, js, wc)
}

// Option adjusts Serve.
type Option func(*options)

type options struct {
	extract  []extractq.Option
	log      *slog.Logger
	listener net.Listener
	ready    func()
}

// WithExtractOptions are the library options every job runs with, before
// the job's own (its re-asks, mode, token budget…): your validators
// (extractq.WithValidator), observers (extractq.WithObserver), transport
// policy, prompts.
func WithExtractOptions(o ...extractq.Option) Option {
	return func(s *options) { s.extract = append(s.extract, o...) }
}

// WithLogger sets the worker's logger (default: one from Config.LogFormat
// and LogLevel on stderr).
func WithLogger(l *slog.Logger) Option { return func(s *options) { s.log = l } }

// WithListener serves /healthz, /readyz and /metrics on ln instead of
// listening on Config.Listen; Serve closes it.
func WithListener(ln net.Listener) Option { return func(s *options) { s.listener = ln } }

// WithReady calls f once, when the worker pulls jobs and its endpoints are
// served; f runs on the worker's goroutine, so it should be quick.
func WithReady(f func()) Option { return func(s *options) { s.ready = f } }

// Serve runs a worker from cfg until ctx ends, then shuts down gracefully
// (running jobs get Config.Grace, the audit is flushed) and returns nil.
// Each job runs through extractq with the options of WithExtractOptions,
// then the job's own, on the provider its pool names.
//
// At start it waits up to Config.StartWait for an audit database that
// cannot be reached yet and for a JetStream that cannot answer yet (a
// fleet started beside its servers, a database restarting), logging what
// it waits for. It returns an error matching ErrConfig for a configuration
// that cannot work, ErrUnreachable when NATS cannot be reached or the
// database did not answer within the wait (restarting may help),
// ErrNotMigrated when the audit tables are missing or outdated, and the
// cause when a server fails otherwise (a login refused, a database that
// does not exist: fix the settings). Each names the server, never its
// password, and what to do.
func Serve(ctx context.Context, cfg Config, opts ...Option) error {
	var o options
	for _, f := range opts {
		f(&o)
	}
	wc, err := cfg.worker()
	if err != nil {
		if o.listener != nil {
			o.listener.Close()
		}
		return err
	}
	log := o.log
	if log == nil {
		if log, err = settings.NewLogger(os.Stderr, wc.LogFormat, wc.LogLevel); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	var so []worker.ServeOption
	if o.listener != nil {
		so = append(so, worker.WithListener(o.listener))
	}
	if o.ready != nil {
		so = append(so, worker.WithReady(o.ready))
	}
	return serveError(worker.Serve(ctx, wc, log, worker.NewEngine(o.extract...), so...))
}

// serveError makes a start-up error of a server (worker.ServerError) match
// ErrUnreachable or ErrNotMigrated, as Dial's do.
func serveError(err error) error {
	var se *worker.ServerError
	if !errors.As(err, &se) {
		return err
	}
	var sv *audit.SchemaVersionError
	var pe *pgconn.PgError
	switch {
	case se.Server == worker.ServerNATS && !errors.Is(err, jobs.ErrNoJetStream), se.Server == worker.ServerAudit && audit.Unreachable(err):
		return &kindError{ErrUnreachable, err}
	case errors.As(err, &sv), errors.As(err, &pe) && pe.Code == pgUndefinedTable:
		return &kindError{ErrNotMigrated, err}
	}
	return err
}

// pgUndefinedTable is Postgres's error for a table that does not exist: an
// audit database never migrated.
const pgUndefinedTable = "42P01"
