package audit

import (
	"context"
	"testing"

	"github.com/extractq/extractq/internal/testenv"
)

// newTestStore opens a migrated store on a fresh database.
func newTestStore(t testing.TB) *Store {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, testenv.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}
