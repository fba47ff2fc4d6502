package worker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/extractq/extractq/internal/batchpool"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/settings"
	"github.com/extractq/extractq/llm"
)

// Defaults of the settings every extractq program shares (defined once, in
// package settings).
const (
	DefaultNATSURL     = settings.DefaultNATSURL
	DefaultDatabaseURL = settings.DefaultDatabaseURL
)

// Config is a worker process's configuration. It is read from an optional
// YAML file, then environment variables, then flags (each overriding the
// one before), and checked by Validate.
type Config struct {
	NATSURL     string `yaml:"nats_url"`     // EXTRACTQ_NATS_URL
	DatabaseURL string `yaml:"database_url"` // EXTRACTQ_DATABASE_URL
	WorkerID    string `yaml:"worker_id"`    // EXTRACTQ_WORKER_ID; default host-pid
	// Listen is the address of /healthz, /readyz and /metrics
	// (EXTRACTQ_LISTEN); empty disables the endpoints. The default ":8080"
	// is every interface, with no authentication: "127.0.0.1:8080" keeps
	// them to the machine.
	Listen    string `yaml:"listen"`
	LogFormat string `yaml:"log_format"` // auto (JSON unless a terminal), json, text; EXTRACTQ_LOG_FORMAT
	LogLevel  string `yaml:"log_level"`  // debug, info, warn, error; EXTRACTQ_LOG_LEVEL

	// Pools are the provider budgets this worker serves, e.g.
	// {name: "openai:gpt-4o-mini", limits: {rpm: 5000, tpm: 2000000, concurrency: 64}}.
	// EXTRACTQ_POOLS holds them as pool flags separated by ';'.
	Pools []ratelimit.PoolSpec `yaml:"pools"`

	AckWait    time.Duration   `yaml:"ack_wait"`    // EXTRACTQ_ACK_WAIT
	MaxDeliver int             `yaml:"max_deliver"` // EXTRACTQ_MAX_DELIVER
	BackOff    []time.Duration `yaml:"backoff"`     // EXTRACTQ_BACKOFF, comma-separated; nil: jobs.BackOffFor(AckWait, MaxDeliver), empty: AckWait each time
	Grace      time.Duration   `yaml:"grace"`       // EXTRACTQ_GRACE
	// Migrate applies the audit migrations and creates the streams at start
	// (EXTRACTQ_MIGRATE=true); otherwise run `worker migrate` once.
	Migrate bool `yaml:"migrate"`
	// StartWait is how long Serve waits at start for an audit database
	// that cannot be reached yet (not up yet beside the fleet, restarting,
	// failing over: audit.Unreachable) and for a JetStream that cannot
	// answer yet (a cluster electing its meta leader), trying again with
	// backoff (EXTRACTQ_START_WAIT, default 30s; 0 tries once). A NATS
	// server that refuses the connection, a login refused, a database
	// missing or not migrated fail at once.
	StartWait time.Duration `yaml:"start_wait"`
	// StreamReplicas is the replica count migrate gives the streams and
	// buckets, the fleet membership bucket included
	// (EXTRACTQ_STREAM_REPLICAS; 3 on a three-node JetStream cluster, so
	// losing a node loses no job). Migrate raises existing streams to it
	// and never lowers them.
	StreamReplicas int `yaml:"stream_replicas"`
	// Events publishes each job's result or dead letter on the
	// EXTRACTQ_EVENTS stream once it is durable (EXTRACTQ_EVENTS=true);
	// `worker migrate` creates the stream. See package events.
	Events bool `yaml:"events"`
	// DuplicateWindow is how long EXTRACTQ_JOBS remembers job ids, so a
	// document submitted twice within it is queued once; DLQMaxAge is how
	// long dead letters are kept. Both are applied by migrate
	// (EXTRACTQ_DUPLICATE_WINDOW, EXTRACTQ_DLQ_MAX_AGE).
	DuplicateWindow time.Duration `yaml:"duplicate_window"`
	DLQMaxAge       time.Duration `yaml:"dlq_max_age"`
	// RequeueDelay is the delay of jobs handed back at shutdown
	// (EXTRACTQ_REQUEUE_DELAY): short, so another worker picks them up.
	RequeueDelay time.Duration `yaml:"requeue_delay"`
	// MaxPause caps any pause a provider asks for with Retry-After or a
	// reset time (EXTRACTQ_MAX_PAUSE); DefaultMaxTokens is the answer size
	// the rate limiter assumes for a request that sets none
	// (EXTRACTQ_DEFAULT_MAX_TOKENS).
	MaxPause         time.Duration `yaml:"max_pause"`
	DefaultMaxTokens int           `yaml:"default_max_tokens"`
	// AuditLinger is how long the audit writer waits, after the first
	// finished job of a transaction, for others to join it
	// (EXTRACTQ_AUDIT_LINGER; 0: none). Every transaction has a fixed cost
	// in Postgres (the COPY statements' and the counters' trigger's start,
	// the commit): at a few thousand documents a second, 5 ms gathers
	// about twice as many jobs a transaction as flushing whenever the
	// flusher is free and cuts Postgres's CPU per document by about a
	// sixth, for up to 5 ms more before each job is acked: nothing beside
	// a model's call of a second or more.
	AuditLinger time.Duration `yaml:"audit_linger"`
	// A pool's circuit opens after CircuitFailures consecutive transport
	// failures (EXTRACTQ_CIRCUIT_FAILURES) and stops pulling for
	// CircuitOpen (EXTRACTQ_CIRCUIT_OPEN), doubling after each failed probe
	// up to CircuitMaxOpen (EXTRACTQ_CIRCUIT_MAX_OPEN).
	CircuitFailures int           `yaml:"circuit_failures"`
	CircuitOpen     time.Duration `yaml:"circuit_open"`
	CircuitMaxOpen  time.Duration `yaml:"circuit_max_open"`
	// A batch pool polls each running batch at most every BatchPoll
	// (EXTRACTQ_BATCH_POLL, default 1m; the first polls come sooner), and a
	// poll holds the batch for BatchLease (EXTRACTQ_BATCH_LEASE, default
	// 3m): another worker takes a batch over once its lease has run out,
	// so BatchLease is how long a dead worker's batches go unpolled.
	BatchPoll  time.Duration `yaml:"batch_poll"`
	BatchLease time.Duration `yaml:"batch_lease"`
}

// DefaultAuditLinger is the default of Config.AuditLinger.
const DefaultAuditLinger = 5 * time.Millisecond

// maxAuditLinger bounds Config.AuditLinger: a job waits for its
// transaction before it is acked, and every job of a worker waits for the
// same ones; a linger past this gains nothing (transactions of a few
// hundred jobs already cost Postgres little more per job than larger ones).
const maxAuditLinger = time.Second

// DefaultConfig is the configuration before file, environment and flags.
func DefaultConfig() Config {
	cs := jobs.DefaultConsumerSettings()
	return Config{
		NATSURL: DefaultNATSURL, DatabaseURL: DefaultDatabaseURL,
		Listen: ":8080", LogFormat: "auto", LogLevel: "info",
		AckWait: cs.AckWait, MaxDeliver: cs.MaxDeliver, Grace: 30 * time.Second, // BackOff nil: follows AckWait
		StartWait: settings.DefaultStartWait, StreamReplicas: 1, DuplicateWindow: 24 * time.Hour, DLQMaxAge: 30 * 24 * time.Hour,
		RequeueDelay: time.Second, MaxPause: ratelimit.DefaultMaxPause, DefaultMaxTokens: ratelimit.DefaultMaxTokens,
		AuditLinger:     DefaultAuditLinger,
		CircuitFailures: ratelimit.DefaultCircuitFailures, CircuitOpen: ratelimit.DefaultCircuitOpen, CircuitMaxOpen: ratelimit.DefaultCircuitMaxOpen,
		BatchPoll: batchpool.DefaultSettings().PollMax, BatchLease: batchpool.DefaultSettings().Lease,
	}
}

// LoadConfigFile overlays the YAML file at path on c. Unknown keys are
// errors, so a misspelt setting is not silently ignored.
func (c *Config) LoadConfigFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	if err := yaml.UnmarshalWithOptions(data, c, yaml.Strict(), yaml.CustomUnmarshaler(unmarshalDuration)); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return nil
}

// unmarshalDuration reads a duration in the config file as everywhere
// else: a Go duration or days ("30s", "7d").
func unmarshalDuration(d *time.Duration, b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := settings.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// LoadEnv overlays the EXTRACTQ_* environment variables on c.
func (c *Config) LoadEnv(getenv func(string) string) error {
	var errs []error
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	str("EXTRACTQ_NATS_URL", &c.NATSURL)
	str("EXTRACTQ_DATABASE_URL", &c.DatabaseURL)
	str("EXTRACTQ_WORKER_ID", &c.WorkerID)
	str("EXTRACTQ_LISTEN", &c.Listen)
	str("EXTRACTQ_LOG_FORMAT", &c.LogFormat)
	str("EXTRACTQ_LOG_LEVEL", &c.LogLevel)
	dur := func(name string, dst *time.Duration) {
		if v := getenv(name); v != "" {
			d, err := settings.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			*dst = d
		}
	}
	dur("EXTRACTQ_ACK_WAIT", &c.AckWait)
	dur("EXTRACTQ_GRACE", &c.Grace)
	dur("EXTRACTQ_START_WAIT", &c.StartWait)
	dur("EXTRACTQ_DUPLICATE_WINDOW", &c.DuplicateWindow)
	dur("EXTRACTQ_DLQ_MAX_AGE", &c.DLQMaxAge)
	dur("EXTRACTQ_REQUEUE_DELAY", &c.RequeueDelay)
	dur("EXTRACTQ_MAX_PAUSE", &c.MaxPause)
	dur("EXTRACTQ_AUDIT_LINGER", &c.AuditLinger)
	dur("EXTRACTQ_CIRCUIT_OPEN", &c.CircuitOpen)
	dur("EXTRACTQ_CIRCUIT_MAX_OPEN", &c.CircuitMaxOpen)
	dur("EXTRACTQ_BATCH_POLL", &c.BatchPoll)
	dur("EXTRACTQ_BATCH_LEASE", &c.BatchLease)
	num := func(name string, dst *int) {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: not a whole number", name, v))
			}
			*dst = n
		}
	}
	num("EXTRACTQ_STREAM_REPLICAS", &c.StreamReplicas)
	num("EXTRACTQ_MAX_DELIVER", &c.MaxDeliver)
	num("EXTRACTQ_DEFAULT_MAX_TOKENS", &c.DefaultMaxTokens)
	num("EXTRACTQ_CIRCUIT_FAILURES", &c.CircuitFailures)
	if v := getenv("EXTRACTQ_BACKOFF"); v != "" {
		b, err := ParseBackOff(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("EXTRACTQ_BACKOFF: %w", err))
		}
		c.BackOff = b
	}
	if v := getenv("EXTRACTQ_MIGRATE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("EXTRACTQ_MIGRATE=%q: want true or false", v))
		}
		c.Migrate = b
	}
	if v := getenv("EXTRACTQ_EVENTS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("EXTRACTQ_EVENTS=%q: want true or false", v))
		}
		c.Events = b
	}
	if v := getenv("EXTRACTQ_POOLS"); v != "" {
		specs, err := ratelimit.ParsePoolSpecs(strings.Split(v, ";"))
		if err != nil {
			errs = append(errs, fmt.Errorf("EXTRACTQ_POOLS: %w", err))
		}
		c.Pools = specs
	}
	return errors.Join(errs...)
}

// ParseBackOff reads a comma-separated list of durations; "" is none (an
// empty, non-nil list: the ack wait each time).
func ParseBackOff(s string) ([]time.Duration, error) {
	out := []time.Duration{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := settings.ParseDuration(f)
		if err != nil {
			return nil, fmt.Errorf("%q: not a duration (e.g. 30s,1m,5m)", f)
		}
		out = append(out, d)
	}
	return out, nil
}

// StreamOptions are the stream settings migrate applies.
func (c *Config) StreamOptions() []jobs.StreamOption {
	return []jobs.StreamOption{jobs.WithReplicas(c.StreamReplicas), jobs.WithDuplicateWindow(c.DuplicateWindow), jobs.WithDLQMaxAge(c.DLQMaxAge)}
}

// Circuit are the circuit breaker settings c describes.
func (c *Config) Circuit() ratelimit.BreakerSettings {
	return ratelimit.BreakerSettings{Failures: c.CircuitFailures, Open: c.CircuitOpen, MaxOpen: c.CircuitMaxOpen}
}

// BatchSettings are the settings of batch pool spec.
func (c *Config) BatchSettings(spec ratelimit.PoolSpec) *batchpool.Settings {
	return &batchpool.Settings{
		MaxRequests: spec.Batch.MaxRequests, MaxWait: spec.Batch.MaxWait,
		PollMin: min(batchpool.DefaultSettings().PollMin, c.BatchPoll), PollMax: c.BatchPoll, Lease: c.BatchLease,
	}
}

// ConsumerSettings are the consumer settings c describes. With no
// back-off set, it follows the ack wait (jobs.BackOffFor): `--ack-wait 5s`
// alone gives 5s, 10s, 20s, 50s, not the default's 30 s first step, which
// JetStream would take as the ack wait.
func (c *Config) ConsumerSettings() jobs.ConsumerSettings {
	s := jobs.DefaultConsumerSettings()
	s.AckWait, s.MaxDeliver, s.BackOff = c.AckWait, c.MaxDeliver, c.BackOff
	if c.BackOff == nil {
		s.BackOff = jobs.BackOffFor(c.AckWait, c.MaxDeliver)
	}
	return s
}

// Validate checks every setting and names each bad one.
func (c *Config) Validate() error {
	var errs []error
	if !strings.HasPrefix(c.NATSURL, "nats://") && !strings.HasPrefix(c.NATSURL, "tls://") && !strings.HasPrefix(c.NATSURL, "ws://") && !strings.HasPrefix(c.NATSURL, "wss://") {
		errs = append(errs, fmt.Errorf("nats_url %q: want nats://host:port (EXTRACTQ_NATS_URL or --nats-url)", c.NATSURL))
	}
	if !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		errs = append(errs, errors.New("database_url: want postgres://user@host:port/db (EXTRACTQ_DATABASE_URL or --database-url)"))
	}
	switch c.LogFormat {
	case "auto", "json", "text":
	default:
		errs = append(errs, fmt.Errorf("log_format %q: want auto, json or text", c.LogFormat))
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if len(c.Pools) == 0 {
		errs = append(errs, errors.New("pools: none configured; add --pool family:model=concurrency:N (e.g. openai:gpt-4o-mini=rpm:5000,concurrency:16)"))
	} else if err := ratelimit.Validate(c.Pools); err != nil {
		errs = append(errs, fmt.Errorf("pools: %w", err))
	}
	if err := c.ConsumerSettings().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("grace %s: must not be negative", c.Grace))
	}
	if c.StartWait < 0 {
		errs = append(errs, fmt.Errorf("start_wait %s: must not be negative (0 tries once; EXTRACTQ_START_WAIT)", c.StartWait))
	}
	if err := CheckStreamReplicas(c.StreamReplicas); err != nil {
		errs = append(errs, err)
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s %s: must be positive", name, d))
		}
	}
	positive("duplicate_window", c.DuplicateWindow)
	positive("dlq_max_age", c.DLQMaxAge)
	positive("requeue_delay", c.RequeueDelay)
	positive("max_pause", c.MaxPause)
	if c.AuditLinger < 0 || c.AuditLinger > maxAuditLinger {
		errs = append(errs, fmt.Errorf("audit_linger %s: must be between 0 and %s (EXTRACTQ_AUDIT_LINGER; 0 flushes as soon as the writer is free)", c.AuditLinger, maxAuditLinger))
	}
	positive("circuit_open", c.CircuitOpen)
	if c.CircuitMaxOpen < c.CircuitOpen {
		errs = append(errs, fmt.Errorf("circuit_max_open %s: must be at least circuit_open (%s)", c.CircuitMaxOpen, c.CircuitOpen))
	}
	if c.CircuitFailures < 1 {
		errs = append(errs, fmt.Errorf("circuit_failures %d: must be at least 1", c.CircuitFailures))
	}
	if c.DefaultMaxTokens < 1 {
		errs = append(errs, fmt.Errorf("default_max_tokens %d: must be at least 1", c.DefaultMaxTokens))
	}
	positive("batch_poll", c.BatchPoll)
	if c.BatchLease <= c.BatchPoll {
		errs = append(errs, fmt.Errorf("batch_lease %s: must be longer than batch_poll (%s), or a live worker's batches are taken over (EXTRACTQ_BATCH_LEASE)", c.BatchLease, c.BatchPoll))
	}
	return errors.Join(errs...)
}

// CheckStreamReplicas allows what JetStream allows: 1 to 5 replicas.
func CheckStreamReplicas(n int) error {
	if n < 1 || n > 5 {
		return fmt.Errorf("stream_replicas %d: want 1 to 5, at most the cluster's size (EXTRACTQ_STREAM_REPLICAS or --stream-replicas)", n)
	}
	return nil
}

// ErrPoolProvider is matched by CheckProviders' errors: a pool whose
// provider cannot be built (a missing API key, an unknown simulator
// profile).
var ErrPoolProvider = errors.New("pool provider cannot be built")

// CheckProviders builds the provider of every pool with build
// (providers.New when nil) and names each pool whose provider cannot be
// built, with what to set. A worker runs it before it starts: a pool that
// cannot work must stop the start, not dead-letter every job it pulls.
func CheckProviders(pools []ratelimit.PoolSpec, build func(spec string) (llm.Provider, error)) error {
	if build == nil {
		build = func(spec string) (llm.Provider, error) { return providers.New(spec) }
	}
	var errs []error
	for _, p := range pools {
		if _, err := build(p.Name); err != nil {
			errs = append(errs, fmt.Errorf("%w: pool %s: %w", ErrPoolProvider, p.Name, err))
		}
	}
	return errors.Join(errs...)
}
