package audit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/testenv"
)

func TestMigrateFromEmptyAndReapply(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testenv.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CheckSchema(ctx); err == nil {
		t.Fatal("CheckSchema on an empty database: want an error")
	}
	for i := range 3 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate #%d: %v", i+1, err)
		}
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema after migrate: %v", err)
	}
	for _, table := range []string{"schemas", "documents", "jobs", "attempts", "results", "dead_letters", "resubmissions", "latest_valid_results", "failure_reasons"} {
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
	var parts int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'attempts'::regclass").Scan(&parts); err != nil {
		t.Fatal(err)
	}
	if parts != 5 { // default + last month .. 2 months ahead
		t.Errorf("attempt partitions = %d, want 5", parts)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	url := testenv.Database(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := Open(ctx, url)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			errs <- s.Migrate(ctx)
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent migrate: %v", err)
		}
	}
}

func TestMigrateRefusesNewerDatabase(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	known, err := KnownSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "UPDATE "+versionTable+" SET version = $1", known+3); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(context.Context) error{"Migrate": s.Migrate, "CheckSchema": s.CheckSchema} {
		err := f(ctx)
		if !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("%s: got %v, want ErrSchemaTooNew", name, err)
		}
		if want := "upgrade extractq"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not say %q", name, err, want)
		}
	}
}

func TestOpenUnreachable(t *testing.T) {
	_, err := Open(context.Background(), "postgres://postgres:hunter2secret@127.0.0.1:1/x?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("want an error for a closed port")
	}
	if strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("error leaks the password: %v", err)
	}
	if !strings.Contains(err.Error(), "EXTRACTQ_DATABASE_URL") {
		t.Errorf("error does not name the setting to fix: %v", err)
	}
}

func TestEnsurePartitionsConcurrentlyInTheFuture(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	future := time.Now().AddDate(2, 0, 0)
	// Two years ahead, so every call must create tables, and race.
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			other := &Store{pool: s.pool, now: func() time.Time { return future }}
			errs <- other.EnsurePartitions(ctx)
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent EnsurePartitions: %v", err)
		}
	}
	var parts int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_inherits WHERE inhparent = 'attempts'::regclass").Scan(&parts); err != nil {
		t.Fatal(err)
	}
	if parts != 5+4 {
		t.Errorf("attempt partitions = %d, want 9 (5 now, 4 two years ahead)", parts)
	}
}

// TestOpenHonoursTLSMode checks that sslmode in the URL reaches the
// connection (the local server has ssl=on with a self-signed certificate).
func TestOpenHonoursTLSMode(t *testing.T) {
	ctx := context.Background()
	base := testenv.Database(t)
	tests := []struct {
		mode    string
		wantSSL bool
		wantErr bool
	}{
		{"disable", false, false},
		{"require", true, false},
		{"verify-full", false, true}, // the server's certificate is not trusted
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			url := strings.Replace(base, "sslmode=disable", "sslmode="+tt.mode, 1)
			s, err := Open(ctx, url)
			if tt.wantErr {
				if err == nil {
					s.Close()
					t.Fatal("connected although the certificate cannot be verified")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var ssl bool
			if err := s.pool.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil {
				t.Fatal(err)
			}
			if ssl != tt.wantSSL {
				t.Errorf("ssl = %v, want %v", ssl, tt.wantSSL)
			}
		})
	}
}
