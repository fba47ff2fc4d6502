// Command worker runs extractq's fleet workers: it pulls extraction jobs
// from NATS JetStream within each provider pool's budget, runs the engine,
// writes every attempt and result to the Postgres audit, and dead-letters
// what cannot succeed.
//
//	worker migrate                       # create tables, streams and buckets
//	worker run --pool openai:gpt-4o-mini=rpm:5000,tpm:2000000,concurrency:64
//
// Exit codes (the same in extractq and submit, see package internal/cli):
// 0 after a clean run or a graceful shutdown (SIGTERM/SIGINT); 1 on a
// runtime failure; 2 on bad configuration, including a pool whose provider
// cannot be built (a missing API key) and an audit database that is
// missing or not migrated; 3 when NATS or Postgres cannot be reached at
// start (Postgres, and a JetStream that does not answer, within
// EXTRACTQ_START_WAIT, default 30 s).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/settings"
	"github.com/extractq/extractq/internal/worker"
)

// defaultGOGC is the worker's garbage collection target unless GOGC is
// set: its live heap is small (tens of MiB) while it allocates about 50 KB
// per document, so at Go's default of 100 the collector ran several times
// a second and took about a tenth of the worker's CPU
// (doc/performance-cpu.md). 400 trades a few tens of MiB of RSS for most
// of that.
const defaultGOGC = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGOGC)
	}
	os.Exit(cli.Run(newRootCmd(), os.Args[1:], os.Stderr))
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "worker",
		Short: "Run extractq fleet workers",
		Long:  "worker pulls extraction jobs from NATS JetStream within each provider pool's budget,\nruns the engine and records every attempt in the Postgres audit.\n\nExit codes: 0 clean shutdown, 1 runtime failure, 2 bad configuration, 3 NATS or Postgres unreachable.\n\nExample:\n  worker migrate\n  worker run --pool openai:gpt-4o-mini=rpm:5000,tpm:2000000,concurrency:64",
	}
	root.AddCommand(newRunCmd(), newMigrateCmd())
	return cli.Prepare(root)
}

// configError marks bad configuration (exit 2).
func configError(err error) error { return cli.Usage(err) }

// runFlags are the flags shared by run and migrate; a flag overrides the
// environment, which overrides the config file.
type runFlags struct {
	configFile, natsURL, databaseURL, workerID, listen, logFormat, logLevel string
	profileDir                                                              string
	pools                                                                   []string
	ackWait, grace, startWait                                               time.Duration
	maxDeliver, streamReplicas                                              int
	backoff                                                                 string
	migrate                                                                 bool
}

func (s *runFlags) register(cmd *cobra.Command, full bool) {
	f := cmd.Flags()
	f.StringVar(&s.configFile, "config", "", "YAML config file (env EXTRACTQ_CONFIG)")
	f.StringVar(&s.natsURL, "nats-url", "", "NATS server `URL` (default: $EXTRACTQ_NATS_URL, else "+settings.DefaultNATSURL+")")
	f.StringVar(&s.databaseURL, "database-url", "", "Postgres audit database `URL` (default: $EXTRACTQ_DATABASE_URL, else "+settings.DefaultDatabaseURL+")")
	f.StringVar(&s.logFormat, "log-format", "", "auto, json or text (env EXTRACTQ_LOG_FORMAT)")
	f.StringVar(&s.logLevel, "log-level", "", "debug, info, warn or error (env EXTRACTQ_LOG_LEVEL)")
	f.IntVar(&s.streamReplicas, "stream-replicas", 0, "replicas of new streams and buckets when migrating: 3 on a three-node cluster (env EXTRACTQ_STREAM_REPLICAS, default 1)")
	// migrate creates the pools' consumers with the settings the workers use.
	f.StringArrayVar(&s.pools, "pool", nil, "pool to serve (run) or whose consumer to create (migrate): family:model=rpm:N,tpm:N,concurrency:N (repeatable; env EXTRACTQ_POOLS, ';'-separated)")
	cli.DurationVar(f, &s.ackWait, "ack-wait", 0, "ack wait of the job consumers (env EXTRACTQ_ACK_WAIT, default 30s)")
	f.IntVar(&s.maxDeliver, "max-deliver", 0, "deliveries of a job before it is dead-lettered (env EXTRACTQ_MAX_DELIVER, default 5)")
	cli.DurationVar(f, &s.startWait, "start-wait", 0, "how long to wait at start for an audit database or a JetStream that cannot answer yet; 0 tries once (env EXTRACTQ_START_WAIT, default 30s)")
	f.StringVar(&s.backoff, "backoff", "", "redelivery delays after a worker crash, e.g. 30s,1m,5m; \"\" for the ack wait each time (env EXTRACTQ_BACKOFF, default the ack wait ×1, 2, 4, 10)")
	if !full {
		return
	}
	f.StringVar(&s.workerID, "id", "", "worker id in logs, audit and dead letters (env EXTRACTQ_WORKER_ID, default host-pid)")
	f.StringVar(&s.listen, "listen", "", "address of /healthz, /readyz and /metrics, \"\" to disable (env EXTRACTQ_LISTEN, default :8080: every interface, no authentication; 127.0.0.1:8080 keeps them to this machine)")
	cli.DurationVar(f, &s.grace, "grace", 0, "time in-flight jobs get to finish at shutdown (env EXTRACTQ_GRACE, default 30s)")
	f.BoolVar(&s.migrate, "migrate", false, "apply audit migrations and create streams at start (env EXTRACTQ_MIGRATE)")
	f.StringVar(&s.profileDir, "profile-dir", "", "write CPU, allocation, heap, mutex and block profiles of the run to `DIR` at exit (env "+cli.ProfileDirEnv+"; see doc/performance-cpu.md)")
}

// load builds the configuration: defaults, file, environment, flags.
func (s *runFlags) load(cmd *cobra.Command) (fleet.Config, error) {
	file := s.configFile
	if file == "" {
		file = os.Getenv("EXTRACTQ_CONFIG")
	}
	cfg, err := fleet.LoadConfig(file)
	if err != nil {
		return cfg, configError(err)
	}
	changed := cmd.Flags().Changed
	set := func(name string, dst *string, v string) {
		if changed(name) {
			*dst = v
		}
	}
	set("nats-url", &cfg.NATSURL, s.natsURL)
	set("database-url", &cfg.DatabaseURL, s.databaseURL)
	set("id", &cfg.WorkerID, s.workerID)
	set("listen", &cfg.Listen, s.listen)
	set("log-format", &cfg.LogFormat, s.logFormat)
	set("log-level", &cfg.LogLevel, s.logLevel)
	if changed("pool") {
		if _, err := ratelimit.ParsePoolSpecs(s.pools); err != nil {
			return cfg, configError(fmt.Errorf("--pool: %w", err))
		}
		cfg.Pools = s.pools
	}
	if changed("ack-wait") {
		cfg.AckWait = s.ackWait
	}
	if changed("grace") {
		cfg.Grace = s.grace
	}
	if changed("start-wait") {
		cfg.StartWait = s.startWait
	}
	if changed("max-deliver") {
		cfg.MaxDeliver = s.maxDeliver
	}
	if changed("backoff") {
		b, err := worker.ParseBackOff(s.backoff)
		if err != nil {
			return cfg, configError(fmt.Errorf("--backoff: %w", err))
		}
		cfg.BackOff = b
	}
	if changed("migrate") {
		cfg.Migrate = s.migrate
	}
	if changed("stream-replicas") {
		cfg.StreamReplicas = s.streamReplicas
	}
	return cfg, nil
}

func newRunCmd() *cobra.Command {
	var s runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Pull and run extraction jobs until SIGTERM/SIGINT",
		Long: `run serves the given provider pools: for each, it pulls a job only when the pool's budget has a free
slot, runs the engine, makes the attempts and the result durable in Postgres, then acks. Jobs that cannot
succeed go to the EXTRACTQ_DLQ stream with full diagnostics. SIGTERM or SIGINT stops pulling, lets running
jobs finish within --grace, hands the rest back, flushes the audit and exits 0.
One worker of the fleet at a time (a Postgres advisory lock) also announces the runs no waiting submit
announces (extractq.events.<run>.done) and delivers their webhooks, signed with EXTRACTQ_WEBHOOK_SECRET.

Example:
  EXTRACTQ_NATS_URL=nats://127.0.0.1:4222 worker run --migrate \
    --pool openai:gpt-4o-mini=rpm:5000,tpm:2000000,concurrency:64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := s.load(cmd)
			if err != nil {
				return err
			}
			// A pool that cannot build its provider (no API key) would
			// dead-letter every job it pulls: refuse to start instead.
			if err := cfg.Check(); err != nil {
				return configError(err)
			}
			log, err := settings.NewLogger(cmd.ErrOrStderr(), cfg.LogFormat, cfg.LogLevel)
			if err != nil {
				return configError(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			dir := s.profileDir
			if !cmd.Flags().Changed("profile-dir") {
				dir = os.Getenv(cli.ProfileDirEnv)
			}
			stopProfiles, err := cli.StartProfiles(dir)
			if err != nil {
				return configError(err)
			}
			// Serve connects once: its start-up errors (a server it could
			// not reach within cfg.StartWait, a database missing or not
			// migrated) get the exit codes and advice every extractq
			// program gives them.
			err = startError(cfg, fleet.Serve(ctx, cfg, fleet.WithLogger(log)))
			if perr := stopProfiles(); perr != nil {
				log.Error("profiles not written", "dir", dir, "err", perr)
			}
			return err
		},
	}
	s.register(cmd, true)
	return cmd
}

func newMigrateCmd() *cobra.Command {
	var s runFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply audit migrations and create the JetStream streams and buckets",
		Long: `migrate brings the Postgres audit schema up to date (under an advisory lock; forward-only) and creates
or checks EXTRACTQ_JOBS, EXTRACTQ_DLQ, the EXTRACTQ_DOCS object store and the EXTRACTQ_SCHEMAS bucket,
and creates or updates the durable consumer of every pool given (--pool, EXTRACTQ_POOLS or the config
file) with the consumer settings given: a worker started later, even while a cluster node is down, then
finds it. Running it again changes nothing.

Example:
  worker migrate --database-url postgres://postgres@127.0.0.1:5432/extractq --nats-url nats://127.0.0.1:4222`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := s.load(cmd)
			if err != nil {
				return err
			}
			if err := worker.CheckStreamReplicas(cfg.StreamReplicas); err != nil {
				return configError(err)
			}
			log, err := settings.NewLogger(cmd.ErrOrStderr(), cfg.LogFormat, cfg.LogLevel)
			if err != nil {
				return configError(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			if err := checkServers(ctx, cfg, log); err != nil {
				return err
			}
			if err := fleet.Migrate(ctx, cfg); err != nil {
				if errors.Is(err, fleet.ErrConfig) {
					return configError(err)
				}
				return err
			}
			log.Info("migrated: audit schema current, streams, buckets and consumers ready", "pools", len(cfg.Pools))
			return nil
		},
	}
	s.register(cmd, false)
	return cmd
}

// startError gives err, from fleet.Serve, the exit code and the advice of
// every extractq program when it is a start-up error of a server
// (worker.ServerError): unreachable is 3, a database that is missing or
// not migrated or a NATS without JetStream is 2 with what to run. Other
// errors are returned as they are.
func startError(cfg fleet.Config, err error) error {
	var se *worker.ServerError
	switch {
	case !errors.As(err, &se):
		return err
	case se.Server == worker.ServerNATS:
		return cli.NATSError(cfg.NATSURL, se.Err)
	default:
		return cli.DatabaseError(cfg.DatabaseURL, se.Err)
	}
}

// checkServers reaches NATS and the audit database the way every extractq
// program does before `worker migrate` runs, so that their errors (and
// exit codes) are the same everywhere: unreachable is 3, a database that
// is missing or refuses the login is 2 with what to do. An audit database
// that cannot be reached yet is tried again for up to cfg.StartWait
// (audit.OpenWaiting), as `worker run` does.
func checkServers(ctx context.Context, cfg fleet.Config, log *slog.Logger) error {
	nc, _, err := cli.ConnectNATS(ctx, cfg.NATSURL, "extractq-worker-check")
	if err != nil {
		return err
	}
	nc.Close()
	st, err := audit.OpenWaiting(ctx, cfg.DatabaseURL, max(cfg.StartWait, 0), log)
	if err != nil {
		return cli.DatabaseError(cfg.DatabaseURL, err)
	}
	st.Close()
	return nil
}
