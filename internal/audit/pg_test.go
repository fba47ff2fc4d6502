package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// adminURL is the maintenance database tests use to create and drop their own.
func adminURL() string {
	if u := os.Getenv("EXTRACTQ_TEST_PG_ADMIN_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// newTestDB creates an empty database for one test and drops it when the
// test ends. It fails the test (never skips) when Postgres is unreachable.
func newTestDB(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, adminURL())
	if err != nil {
		t.Fatalf("these tests need PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) or EXTRACTQ_TEST_PG_ADMIN_URL: %v", err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "extractq_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// The server may have been restarted by a test: retry the connection.
		for i := 0; ; i++ {
			admin, err := pgx.Connect(ctx, adminURL())
			if err == nil {
				_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
				admin.Close(ctx)
			}
			if err == nil {
				return
			}
			if i == 20 {
				t.Errorf("drop test database %s: %v", name, err)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
	return "postgres://postgres@127.0.0.1:5432/" + name + "?sslmode=disable"
}

// newTestStore opens a migrated store on a fresh database.
func newTestStore(t testing.TB) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, newTestDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}
