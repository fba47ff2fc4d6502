// Package audittest gives tests outside the audit package a migrated audit
// store on a throwaway database.
package audittest

import (
	"context"
	"testing"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/testenv"
)

// Store opens a migrated store on a fresh database, closed and dropped when
// the test ends, and returns it with the database's URL.
func Store(t testing.TB) (*audit.Store, string) {
	t.Helper()
	ctx := context.Background()
	url := testenv.Database(t)
	st, err := audit.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st, url
}
