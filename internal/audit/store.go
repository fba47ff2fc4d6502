package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"github.com/extractq/extractq/internal/settings"
	"github.com/extractq/extractq/migrations"
)

// DefaultDatabaseURL is used when EXTRACTQ_DATABASE_URL is unset (defined
// once, in package settings).
const DefaultDatabaseURL = settings.DefaultDatabaseURL

// versionTable is tern's bookkeeping table.
const versionTable = "public.extractq_schema_version"

// Store is extractq's audit database: a pgx connection pool plus the
// queries on it. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// Open connects to the database at databaseURL (a postgres:// URL or a
// key=value DSN; sslmode and the other TLS settings are honoured, and so
// are pgxpool's pool_max_conns and pool_min_conns) and checks that it
// answers.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// pgx's parse errors may quote the URL, password included: do not wrap.
		return nil, errors.New("audit: EXTRACTQ_DATABASE_URL is not a valid Postgres URL or DSN: use postgres://user@host:5432/db?sslmode=...")
	}
	if cfg.MaxConns < 4 {
		cfg.MaxConns = 4
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("audit: open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("audit: cannot reach Postgres at %s:%d database %q (check that it runs and EXTRACTQ_DATABASE_URL): %w",
			cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	return &Store{pool: pool, now: time.Now}, nil
}

// Pool is the underlying pgx pool, for callers that need their own queries.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes every connection. Stop writers first.
func (s *Store) Close() { s.pool.Close() }

// ErrSchemaTooNew matches a SchemaVersionError where the database is newer
// than this binary.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

// ErrSchemaOutdated matches a SchemaVersionError where the database needs
// migrating.
var ErrSchemaOutdated = errors.New("database schema is older than this binary")

// SchemaVersionError says the database schema and the binary disagree.
type SchemaVersionError struct {
	Database int // version recorded in the database
	Binary   int // highest version this binary knows
}

func (e *SchemaVersionError) Error() string {
	if e.Database > e.Binary {
		return fmt.Sprintf("database schema is at version %d, this binary knows up to %d: upgrade extractq", e.Database, e.Binary)
	}
	return fmt.Sprintf("database schema is at version %d, this binary needs %d: run `extractq audit migrate` (or `worker migrate`)", e.Database, e.Binary)
}

// Is matches ErrSchemaTooNew or ErrSchemaOutdated.
func (e *SchemaVersionError) Is(target error) bool {
	return (target == ErrSchemaTooNew && e.Database > e.Binary) ||
		(target == ErrSchemaOutdated && e.Database < e.Binary)
}

// Migrate applies every pending migration, forward only, under tern's
// session advisory lock (so concurrent workers starting together migrate
// once). It refuses a database whose schema is newer than this binary, and
// then prepares the coming months' attempt partitions.
func (s *Store) Migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("audit: migrate: connect: %w", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return fmt.Errorf("audit: migrate: %w", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return fmt.Errorf("audit: migrate: load embedded migrations: %w", err)
	}
	known := len(m.Migrations)
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return fmt.Errorf("audit: migrate: read schema version: %w", err)
	}
	if int(cur) > known {
		return &SchemaVersionError{Database: int(cur), Binary: known}
	}
	if err := m.Migrate(ctx); err != nil {
		// Another binary may have migrated further between our check and
		// tern's locked re-check.
		var bv migrate.BadVersionError
		if errors.As(err, &bv) {
			if v, verr := m.GetCurrentVersion(ctx); verr == nil && int(v) > known {
				return &SchemaVersionError{Database: int(v), Binary: known}
			}
		}
		return fmt.Errorf("audit: migrate: %w", err)
	}
	return s.EnsurePartitions(ctx)
}

// CheckSchema reports whether the database schema is exactly the version
// this binary was built for; the error is a *SchemaVersionError otherwise.
func (s *Store) CheckSchema(ctx context.Context) error {
	known, err := KnownSchemaVersion()
	if err != nil {
		return err
	}
	var cur int
	err = s.pool.QueryRow(ctx, "SELECT version FROM "+versionTable).Scan(&cur)
	if err != nil {
		return fmt.Errorf("audit: read schema version (has `extractq audit migrate` run?): %w", err)
	}
	if cur != known {
		return &SchemaVersionError{Database: cur, Binary: known}
	}
	return nil
}

// KnownSchemaVersion is the number of migrations embedded in this binary.
func KnownSchemaVersion() (int, error) {
	paths, err := migrate.FindMigrations(migrations.FS)
	if err != nil {
		return 0, fmt.Errorf("audit: embedded migrations: %w", err)
	}
	return len(paths), nil
}

// EnsurePartitions creates the monthly attempt partitions from last month
// to three months ahead; idempotent. Migrate and NewWriter call it, so a
// fleet that restarts at least quarterly never writes into the default
// partition (which still accepts rows: nothing is ever refused).
func (s *Store) EnsurePartitions(ctx context.Context) error {
	from := s.now().UTC().AddDate(0, -1, 0)
	_, err := s.pool.Exec(ctx, "SELECT extractq_ensure_attempt_partitions($1::date, 4)", from)
	if err != nil {
		return fmt.Errorf("audit: prepare attempt partitions: %w", err)
	}
	return nil
}

// FromPool is a Store over a pool its caller opened and closes (Close
// closes it too): for a program that holds one pool for its own queries
// and the audit's.
func FromPool(pool *pgxpool.Pool) *Store { return &Store{pool: pool, now: time.Now} }
