package retry

import (
	"maps"
	"testing"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/schema"
)

// TestSchemaCacheKeepsSchemasApart checks that what the engine keeps per
// schema is the schema's own: schemas compiled one after the other (and
// the same text compiled twice) each get what computing it afresh gives.
func TestSchemaCacheKeepsSchemasApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema string
		scalars      jsonx.ScalarKinds
		pinned       []string
	}{
		{"object", `{"type":"object","properties":{"c":{"enum":["EUR","USD"]}}}`, 0, []string{"EUR", "USD"}},
		{"number", `{"type":"number"}`, jsonx.ScalarNumber, nil},
		{"string const", `{"const":"yes"}`, jsonx.ScalarString, []string{"yes"}},
		{"object again", `{"type":"object","properties":{"c":{"enum":["EUR","USD"]}}}`, 0, []string{"EUR", "USD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := schema.Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // computed, then cached
				if got := scalarCache.get(s); got != tc.scalars || got != rootScalarKinds(s) {
					t.Errorf("scalar kinds %v, want %v", got, tc.scalars)
				}
				want := map[string]bool{}
				for _, p := range tc.pinned {
					want[p] = true
				}
				if got := pinnedCache.get(s); !maps.Equal(got, want) {
					t.Errorf("pinned strings %v, want %v", got, want)
				}
			}
		})
	}
}
