package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/settings"
)

// Postgres error codes dev mode branches on.
const (
	pgInvalidCatalogName = "3D000" // the database does not exist
	pgDuplicateDatabase  = "42P04" // created meanwhile by someone else
)

// ensureDatabase creates the audit database when the server answers that
// it does not exist (trying extractq should not start with createdb); the
// worker then migrates it. A server that cannot be reached yet (dev mode
// started beside its Postgres) is waited for as the worker waits for it
// (worker.Config.StartWait), each try logged.
func ensureDatabase(ctx context.Context, databaseURL string, log *slog.Logger) error {
	store, err := audit.OpenWaiting(ctx, databaseURL, settings.DefaultStartWait, log)
	if err == nil {
		store.Close()
		return nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgInvalidCatalogName {
		return err
	}
	name, err := createDatabase(ctx, databaseURL)
	if err != nil {
		return err
	}
	log.Info("created the audit database", "database", name)
	return nil
}

// createDatabase creates the database databaseURL names, connecting to the
// same server's "postgres" database to do so.
func createDatabase(ctx context.Context, databaseURL string) (string, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		// pgx's parse errors may quote the URL, password included: do not wrap.
		return "", errors.New("EXTRACTQ_DATABASE_URL is not a valid Postgres URL: use postgres://user@host:5432/db?sslmode=...")
	}
	name := cfg.Database
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("database %q does not exist and dev mode cannot create it (connecting to the server's postgres database failed: %w); create it yourself: createdb %s", name, err, name)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == pgDuplicateDatabase) {
		return "", fmt.Errorf("create database %q: %w (create it yourself: createdb %s)", name, err, name)
	}
	return name, nil
}
