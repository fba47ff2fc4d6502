// Package testenv gives tests the real environment they run against: a
// throwaway PostgreSQL database per test, and the shared test data that sits
// beside the repository (../shared/testdata, locally and in CI). Tests that
// need either fail with a clear message when it is missing; they never skip.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresAdminURL is the maintenance database used to create and drop test
// databases: EXTRACTQ_TEST_PG_ADMIN_URL, else the local server.
func PostgresAdminURL() string {
	if u := os.Getenv("EXTRACTQ_TEST_PG_ADMIN_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// CleanEnv is this process's environment without EXTRACTQ_* variables,
// for the programs a test or a benchmark starts: they then find their
// servers and settings only as the caller means them to.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "EXTRACTQ_") {
			env = append(env, kv)
		}
	}
	return env
}

// TempDatabase creates an empty database and returns its URL and a function
// that drops it. drop retries for a while, because a test may have restarted
// the server.
func TempDatabase(ctx context.Context) (dbURL string, drop func() error, err error) {
	admin, err := pgx.Connect(ctx, PostgresAdminURL())
	if err != nil {
		return "", nil, fmt.Errorf("tests need PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) or EXTRACTQ_TEST_PG_ADMIN_URL: %w", err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	name := "extractq_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create test database %s: %w", name, err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var last error
		for range 20 {
			admin, err := pgx.Connect(ctx, PostgresAdminURL())
			if err == nil {
				_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
				admin.Close(ctx)
			}
			if err == nil {
				return nil
			}
			last = err
			time.Sleep(500 * time.Millisecond)
		}
		return fmt.Errorf("drop test database %s: %w", name, last)
	}
	u, err := url.Parse(PostgresAdminURL())
	if err != nil {
		return "", nil, fmt.Errorf("EXTRACTQ_TEST_PG_ADMIN_URL: %w", err)
	}
	u.Path = "/" + name // the admin's server, user and options: only the database differs
	return u.String(), drop, nil
}

// Database creates an empty database for one test and drops it when the test
// ends; it fails the test when Postgres is unreachable.
func Database(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url, drop, err := TempDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return url
}

// RepoRoot is the nearest directory above the working directory that holds
// a go.mod and has the shared folder beside it: the repository's root, also
// from a nested module such as deploy/.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "..", "shared", "testdata")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no directory above the working directory holds a go.mod with ../shared/testdata beside it: the shared folder must sit beside the repository")
		}
		dir = parent
	}
}

// SharedTestdata returns the path of elem under ../shared/testdata, failing
// the test when it does not exist.
func SharedTestdata(t testing.TB, elem ...string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(append([]string{root, "..", "shared", "testdata"}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared test data missing at %s: %v", p, err)
	}
	return p
}
