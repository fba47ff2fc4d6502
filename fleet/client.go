package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
)

// Errors a client's caller branches on. Each is matched with errors.Is;
// the error's text says what to do.
var (
	// ErrUnreachable: NATS or the audit database did not answer. Trying
	// again later may work.
	ErrUnreachable = errors.New("fleet: server unreachable")
	// ErrNotMigrated: the servers answer but the streams or the audit
	// tables are missing or outdated: run `worker migrate` (or fleet.Migrate)
	// once.
	ErrNotMigrated = errors.New("fleet: streams or audit tables missing")
	// ErrBadJob: a Job cannot be queued as given (a JobError says which
	// field); nothing was queued.
	ErrBadJob = errors.New("fleet: bad job")
	// ErrNoDocuments: Submit's documents yielded nothing.
	ErrNoDocuments = errors.New("fleet: no documents to submit")
	// ErrRunNotSealed: Submit queued its documents but could not count
	// them into the run or seal it, so no done event comes for the run
	// until a submission into it (or SealRun) succeeds.
	ErrRunNotSealed = errors.New("fleet: run not sealed")
	// ErrNotFound: a schema, or a schema version, that is not registered.
	ErrNotFound = errors.New("fleet: not found")
)

// kindError is an error that matches one of the sentinels above besides
// its own chain, with the text of its cause.
type kindError struct{ kind, err error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// Client queues documents for the fleet, follows their jobs and reads the
// audit. It is safe for concurrent use; Close it when done.
type Client struct {
	nc    *nats.Conn // nil when the caller owns the connections (NewClient)
	js    jetstream.JetStream
	store *audit.Store
	sub   *submit.Submitter
	warn  func(error)

	// What this client already made sure of, so that a caller submitting
	// in batches (a remote source: one Submit per batch) does not register
	// the schema and look up the pool's consumer again for each.
	mu       sync.Mutex
	ensured  map[string]bool              // pools whose consumer exists
	versions map[[2]string]jobs.SchemaRef // (name, fingerprint) → its registration
}

// ClientOption configures a Client.
type ClientOption func(*clientConfig)

type clientConfig struct {
	maxPending  int
	stall       time.Duration
	publish     []jobs.PublishOption
	warn        func(error)
	natsOptions []nats.Option
}

// WithMaxPending bounds the publishes awaiting the server's ack at once
// (Dial only; default 256). With NewClient, give
// jetstream.WithPublishAsyncMaxPending to jetstream.New instead.
func WithMaxPending(n int) ClientOption {
	return func(c *clientConfig) { c.maxPending = max(1, n) }
}

// WithStallTimeout sets how long Submit and Resubmit may go without a
// single publish ack from NATS before they fail (default 30 s; d <= 0
// keeps the default). Slow acks never fail them: at the pending limit
// they wait. Raise it against a server so loaded that it can pause longer.
func WithStallTimeout(d time.Duration) ClientOption {
	return func(c *clientConfig) { c.stall = d }
}

// WithInlineLimit sends documents larger than n bytes through the object
// store instead of in the job message (default 512 KiB).
func WithInlineLimit(n int) ClientOption {
	return func(c *clientConfig) { c.publish = append(c.publish, jobs.WithInlineLimit(n)) }
}

// WithMaxDocumentSize rejects documents whose text is larger than n bytes
// (a Rejection, the others are queued; default 64 MiB).
func WithMaxDocumentSize(n int64) ClientOption {
	return func(c *clientConfig) { c.publish = append(c.publish, jobs.WithMaxDocument(n)) }
}

// WithWarnings receives what does not stop the client but may need an
// operator: a stream whose settings differ from `worker migrate`'s, a
// pool consumer Submit could not create (the first worker of the pool
// creates it). Without it they are dropped.
func WithWarnings(warn func(error)) ClientOption {
	return func(c *clientConfig) { c.warn = warn }
}

// WithNATSOptions adds options to Dial's NATS connection: credentials,
// TLS, a name.
func WithNATSOptions(o ...nats.Option) ClientOption {
	return func(c *clientConfig) { c.natsOptions = append(c.natsOptions, o...) }
}

func newConfig(opts []ClientOption) clientConfig {
	c := clientConfig{maxPending: 256, stall: submit.DefaultStallTimeout, warn: func(error) {}}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Dial connects to NATS at natsURL and to the audit database at
// databaseURL, and checks that `worker migrate` (or a worker with
// Config.Migrate) has made the streams and the audit tables. Its errors
// match ErrUnreachable or ErrNotMigrated.
func Dial(ctx context.Context, natsURL, databaseURL string, opts ...ClientOption) (*Client, error) {
	cfg := newConfig(opts)
	nopts := append([]nats.Option{nats.Name("extractq-fleet-client"), nats.MaxReconnects(-1)}, cfg.natsOptions...)
	nc, err := nats.Connect(natsURL, nopts...)
	if err != nil {
		return nil, &kindError{ErrUnreachable, fmt.Errorf("fleet: connect to NATS at %s: %w (is nats-server running with JetStream?)", natsURL, err)}
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.maxPending))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("fleet: JetStream: %w", err)
	}
	warnings, err := jobs.CheckStreams(ctx, js)
	for _, w := range warnings {
		cfg.warn(errors.New(w))
	}
	if err != nil {
		nc.Close()
		return nil, &kindError{ErrNotMigrated, fmt.Errorf("fleet: %w", err)}
	}
	store, err := audit.Open(ctx, databaseURL)
	if err != nil {
		nc.Close()
		return nil, &kindError{ErrUnreachable, fmt.Errorf("fleet: %w", err)}
	}
	if err := store.CheckSchema(ctx); err != nil {
		store.Close()
		nc.Close()
		return nil, &kindError{ErrNotMigrated, fmt.Errorf("fleet: %w", err)}
	}
	c := newClient(js, store, cfg)
	c.nc = nc
	return c, nil
}

// NewClient is a client over connections its caller opened (and closes:
// the client's Close leaves them open), for a program that already holds
// a JetStream context and a pgx pool on the audit database. Unlike Dial it
// checks nothing: the streams and tables must exist (`worker migrate`).
func NewClient(js jetstream.JetStream, db *pgxpool.Pool, opts ...ClientOption) *Client {
	return newClient(js, audit.FromPool(db), newConfig(opts))
}

func newClient(js jetstream.JetStream, store *audit.Store, cfg clientConfig) *Client {
	return &Client{js: js, store: store, sub: submit.New(js, store, submit.WithPublisher(cfg.publish...), submit.WithStallTimeout(cfg.stall)), warn: cfg.warn}
}

// Warm readies the audit database's connections for Submit: as many as a
// submission uses at once are opened side by side, and each runs the
// statements a batch runs, with nothing to store. Without it a
// submission's first batches wait for those connections and for each new
// Postgres backend's first use of the tables (20–30 ms each on a small
// machine): most of what a submission of ten thousand documents spends
// before its first publish. Run it beside other start-up work, in a
// goroutine that the caller waits for before Close; Submit works without
// it and after its failure, which it returns for logging.
func (c *Client) Warm(ctx context.Context) error { return c.sub.Warm(ctx) }

// Close releases the connections Dial opened; a NewClient's are left to
// its caller.
func (c *Client) Close() {
	if c.nc == nil {
		return
	}
	c.store.Close()
	_ = c.nc.Drain()
}
