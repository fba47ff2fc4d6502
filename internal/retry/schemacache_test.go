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
		wire         string
	}{
		{"object", `{"type":"object","properties":{"c":{"enum":["EUR","USD"]}}}`, 0, []string{"EUR", "USD"}, ""},
		{"number", `{"type":"number"}`, jsonx.ScalarNumber, nil, "value"},
		{"string const", `{"const":"yes"}`, jsonx.ScalarString, []string{"yes"}, "value"},
		{"array", `{"type":"array","items":{"type":"integer"}}`, 0, nil, "items"},
		{"object again", `{"type":"object","properties":{"c":{"enum":["EUR","USD"]}}}`, 0, []string{"EUR", "USD"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := schema.Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // computed, then cached
				f := factsCache.get(s)
				if f.scalars != tc.scalars || f.scalars != rootScalarKinds(s) {
					t.Errorf("scalar kinds %v, want %v", f.scalars, tc.scalars)
				}
				if m, k := oneLevelDown(s); f.down != (levelDown{m, k}) {
					t.Errorf("one level down %+v, want %+v", f.down, levelDown{m, k})
				}
				if f.wire != tc.wire || f.wire != wireProperty(s) {
					t.Errorf("wire property %q, want %q", f.wire, tc.wire)
				}
				if f.text != string(s.JSON()) {
					t.Errorf("schema text %q, want %q", f.text, s.JSON())
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
