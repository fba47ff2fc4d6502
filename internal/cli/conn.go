package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/devmode"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/redact"
	"github.com/extractq/extractq/internal/settings"
)

// Conn holds the connection flags of a command and finds its servers: the
// flag, else the environment (EXTRACTQ_NATS_URL, EXTRACTQ_DATABASE_URL),
// else a running `extractq dev` (./.extractq/dev.json), else the local
// default. Register only the flags a command uses.
type Conn struct {
	natsURL, databaseURL string
}

// AddNATSFlag registers --nats-url on cmd (persistent: its subcommands
// share it). The help shows where the value comes from, never the value of
// the environment.
func (c *Conn) AddNATSFlag(cmd *cobra.Command, persistent bool) {
	flags(cmd, persistent).StringVar(&c.natsURL, "nats-url", "",
		"NATS server `URL` (default: $"+settings.EnvNATSURL+", else a running extractq dev, else "+settings.DefaultNATSURL+")")
}

// AddDatabaseFlag registers --database-url on cmd. The help shows where the
// value comes from, never the value (it may hold a password).
func (c *Conn) AddDatabaseFlag(cmd *cobra.Command, persistent bool) {
	flags(cmd, persistent).StringVar(&c.databaseURL, "database-url", "",
		"Postgres audit database `URL` (default: $"+settings.EnvDatabaseURL+", else a running extractq dev, else "+settings.DefaultDatabaseURL+")")
}

func flags(cmd *cobra.Command, persistent bool) interface {
	StringVar(p *string, name, value, usage string)
} {
	if persistent {
		return cmd.PersistentFlags()
	}
	return cmd.Flags()
}

// NATSURL is the NATS server to use.
func (c *Conn) NATSURL() string {
	if c.natsURL != "" {
		return c.natsURL
	}
	return devmode.NATSURL()
}

// DatabaseURL is the audit database to use.
func (c *Conn) DatabaseURL() string {
	if c.databaseURL != "" {
		return c.databaseURL
	}
	return devmode.DatabaseURL()
}

// ConnectNATS connects to the NATS server as name and checks that it runs
// JetStream. An unreachable server is Unavailable (exit 3), a server
// without JetStream is a usage error.
func (c *Conn) ConnectNATS(ctx context.Context, name string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream, error) {
	return ConnectNATS(ctx, c.NATSURL(), name, opts...)
}

// ConnectNATS is Conn.ConnectNATS for a given URL.
func ConnectNATS(ctx context.Context, rawURL, name string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream, error) {
	shown := redact.URL(rawURL)
	nc, err := nats.Connect(rawURL, nats.Name(name), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, nil, NATSUnreachable(shown, err)
	}
	js, err := jetstream.New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, Usage(fmt.Errorf("JetStream on %s: %w", shown, err))
	}
	if err := waitJetStream(ctx, js, shown); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// StartWait bounds how long a program waits at start for JetStream to
// answer (unless ctx ends sooner): a cluster whose meta leader is being
// elected, as when workers start together or a node is lost, answers after
// a few seconds.
const StartWait = settings.DefaultStartWait

// waitJetStream waits for JetStream to answer (jobs.WaitJetStream) for up
// to StartWait; the error says what was tried.
func waitJetStream(ctx context.Context, js jetstream.JetStream, shown string) error {
	return natsError(shown, jobs.WaitJetStream(ctx, js, StartWait))
}

// NATSError is the error, with its exit code and what to do, for err from
// reaching the NATS server at natsURL or waiting for its JetStream
// (jobs.WaitJetStream): a server without JetStream is a usage error (exit
// 2), any other failure Unavailable (exit 3). nil stays nil.
func NATSError(natsURL string, err error) error { return natsError(redact.URL(natsURL), err) }

func natsError(shown string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jobs.ErrNoJetStream):
		return Usage(fmt.Errorf("NATS at %s has no JetStream: start nats-server with -js (or run extractq dev)", shown))
	default:
		return NATSUnreachable(shown, err)
	}
}

// NATSUnreachable is the error, exit 3, for a NATS server that cannot be
// reached, with what to do.
func NATSUnreachable(shownURL string, err error) error {
	return Unavailable(fmt.Errorf("cannot reach NATS at %s: %w; start nats-server -js (or extractq dev), or point --nats-url / %s at a running one", shownURL, err, settings.EnvNATSURL))
}

// StoreNeed says what OpenStore checks beyond reaching the database.
type StoreNeed int

const (
	// Migrated: the audit tables exist at this binary's version (every
	// command but migrate).
	Migrated StoreNeed = iota
	// Reachable: only that the database answers (audit migrate).
	Reachable
)

// OpenStore opens the audit database. Its errors say what to do: an
// unreachable server is Unavailable (exit 3); a database that does not
// exist (createdb …), refuses the login, or lacks extractq's tables
// (extractq audit migrate) is a usage error (exit 2).
func (c *Conn) OpenStore(ctx context.Context, need StoreNeed) (*audit.Store, error) {
	return OpenStore(ctx, c.DatabaseURL(), need)
}

// OpenStore is Conn.OpenStore for a given URL.
func OpenStore(ctx context.Context, databaseURL string, need StoreNeed) (*audit.Store, error) {
	where := describeDB(databaseURL)
	st, err := audit.Open(ctx, databaseURL)
	if err != nil {
		return nil, classifyDBError(err, where)
	}
	if need == Reachable {
		return st, nil
	}
	if err := st.CheckSchema(ctx); err != nil {
		st.Close()
		return nil, classifyDBError(err, where)
	}
	return st, nil
}

// dbTarget is a database URL's parts, without its password.
type dbTarget struct {
	host, user, name string
	port             uint16
	ok               bool
}

func describeDB(databaseURL string) dbTarget {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return dbTarget{}
	}
	return dbTarget{host: cfg.Host, port: cfg.Port, user: cfg.User, name: cfg.Database, ok: true}
}

func (t dbTarget) String() string {
	if !t.ok {
		return "the audit database"
	}
	return fmt.Sprintf("database %q on %s:%d", t.name, t.host, t.port)
}

// DatabaseError is the error, with its exit code and what to do, for err
// from opening or checking the audit database at databaseURL (audit.Open,
// audit.OpenWaiting, Store.CheckSchema): what OpenStore returns. A server
// that cannot be reached now (audit.Unreachable) is Unavailable (exit 3);
// a database that does not exist, refuses the login, lacks extractq's
// tables or the privileges to read them is a usage error (exit 2).
func DatabaseError(databaseURL string, err error) error {
	return classifyDBError(err, describeDB(databaseURL))
}

// Postgres error codes classifyDBError branches on (those of a server that
// cannot take a connection now are audit.Unreachable's).
const (
	pgInvalidCatalogName    = "3D000" // the database does not exist
	pgInvalidPassword       = "28P01"
	pgInvalidAuthorization  = "28000"
	pgUndefinedTable        = "42P01"
	pgInsufficientPrivilege = "42501"
)

func classifyDBError(err error, t dbTarget) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == pgInvalidCatalogName:
			create := "createdb"
			if t.ok {
				create = fmt.Sprintf("createdb -h %s -p %d -U %s %s", t.host, t.port, t.user, t.name)
			}
			return Usage(fmt.Errorf("%s does not exist: create it (%s), then run `extractq audit migrate` (extractq dev creates and migrates it by itself)", t, create))
		case pe.Code == pgInvalidPassword || pe.Code == pgInvalidAuthorization:
			return Usage(fmt.Errorf("%s refused the login: %s; check the user and password in --database-url / %s", t, pe.Message, settings.EnvDatabaseURL))
		case pe.Code == pgUndefinedTable:
			return Usage(fmt.Errorf("%s has no extractq tables: run `extractq audit migrate` (or `worker migrate`) once", t))
		case pe.Code == pgInsufficientPrivilege:
			return Usage(fmt.Errorf("%s: permission denied (%s); grant the role what it needs: extractq audit grants ROLE --for worker|submit|reader", t, pe.Message))
		case audit.Unreachable(err): // starting up, shutting down, out of connection slots
			return Unavailable(fmt.Errorf("%s is not accepting connections now: %s; try again", t, pe.Message))
		}
	}
	var sv *audit.SchemaVersionError
	if errors.As(err, &sv) {
		return Usage(fmt.Errorf("%s: %w", t, sv))
	}
	if audit.Unreachable(err) {
		return Unavailable(fmt.Errorf("cannot reach Postgres for %s: is it running? point --database-url / %s at it (%w)", t, settings.EnvDatabaseURL, err))
	}
	if strings.Contains(err.Error(), "not a valid Postgres URL") {
		return Usage(err)
	}
	return Failed(err)
}
