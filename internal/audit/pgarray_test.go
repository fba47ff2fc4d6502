package audit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// encodeArray is what pgx sends for v as a parameter of type oid, in the
// binary format it uses for arrays.
func encodeArray(t testing.TB, oid uint32, v any) []byte {
	t.Helper()
	b, err := pgtype.NewMap().Encode(oid, pgtype.BinaryFormatCode, v, nil)
	if err != nil {
		t.Fatalf("encode %T as %d: %v", v, oid, err)
	}
	return b
}

// TestStrArrayEncodesLikeStrings checks that strArray, which spares an
// allocation per element, puts on the wire exactly what the []string it
// stands for does, for the array types PutDocuments and the lookups send.
func TestStrArrayEncodesLikeStrings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   []string
	}{
		{"nil is NULL", nil},
		{"empty", []string{}},
		{"one", []string{"doc-1"}},
		{"several, one empty", []string{"a", "", "ü€\U0001F600", strings.Repeat("x", 70000)}},
		{"hashes", []string{"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb", "not a hash"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			want := encodeArray(t, pgtype.TextArrayOID, c.in)
			got := encodeArray(t, pgtype.TextArrayOID, strArray(c.in))
			if !bytes.Equal(got, want) {
				t.Fatalf("strArray encodes to\n%q\nwant\n%q", got, want)
			}
			if c.in == nil && got != nil {
				t.Fatalf("a nil slice encodes to %q, want NULL", got)
			}
		})
	}
}

// FuzzStrArray compares strArray's encoding with the []string's for any
// two elements.
func FuzzStrArray(f *testing.F) {
	f.Add("doc-1", "{}")
	f.Add("", "\xff")
	f.Fuzz(func(t *testing.T, a, b string) {
		in := []string{a, b, a}
		if got, want := encodeArray(t, pgtype.TextArrayOID, strArray(in)), encodeArray(t, pgtype.TextArrayOID, in); !bytes.Equal(got, want) {
			t.Fatalf("%q, want %q", got, want)
		}
	})
}

// TestStrArrayAllocations checks the point of strArray: no allocation
// per element.
// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestStrArrayAllocations(t *testing.T) {
	in := make([]string, 500)
	for i := range in {
		in[i] = strings.Repeat("d", i%40)
	}
	m := pgtype.NewMap()
	buf := make([]byte, 0, 1<<16)
	count := func(v any) float64 {
		return testing.AllocsPerRun(20, func() {
			if _, err := m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, v, buf[:0]); err != nil {
				t.Fatal(err)
			}
		})
	}
	plain, ours := count(in), count(strArray(in))
	if ours >= 10 || ours >= plain/10 {
		t.Fatalf("strArray: %.0f allocations for 500 strings (a []string: %.0f), want a few", ours, plain)
	}
}
