package retry

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/jsonx"
)

// decodeCorpus holds values of the kinds models answer with, and unusual
// ones decodeFast may leave to encoding/json.
var decodeCorpus = []string{
	`{"invoice_number":"INV-000042","vendor":"Vendor 42 GmbH","total":12.5,"currency":"EUR","paid":true,"items":[{"name":"widget","qty":3},{"name":"gadget","qty":0}]}`,
	`{ "a" : [ 1 , -2.5e+3 , 0 , -0 , 1E2 ] , "b" : null , "c" : false , "d" : {} , "e" : [] }`,
	`{"s":"ünïcödé 😀 \u00fc \ud83d\ude00 \n\t\"\\\/ \u2028"}`,
	`{"a":1,"a":2}`,
	`[{"x":[[[]]]}]`,
	`"just a string"`,
	`12345678901234567890123456789`,
	`true`, `false`, `null`,
	`{"größe":1}`,
	`{"k\u0065y":1}`,
	`{"s":"\ud800 lone"}`,
	"{\"s\":\"bad \xff\"}",
	`{"a":1}}`,
	`{"a":1} x`,
	`{"a":01}`,
	`{"a":tru}`,
	`[1,]`,
	`{"a" 1}`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	``,
	` `,
}

// TestDecodeFastMatchesJSON checks decodeFast against encoding/json on the
// corpus, and that it takes the usual answer.
func TestDecodeFastMatchesJSON(t *testing.T) {
	for i, doc := range decodeCorpus {
		d := jsonx.Scanner{B: []byte(doc)}
		_, ok := decodeFast(&d, 0)
		if i < 3 && !ok {
			t.Errorf("%d: decodeFast left a usual value to encoding/json: %s", i, doc)
		}
		checkDecode(t, []byte(doc))
	}
}

func checkDecode(t *testing.T, doc []byte) {
	t.Helper()
	got, err := decode(doc)
	want, wantErr := decodeJSON(doc)
	if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode(%q) = %#v, %v; encoding/json %#v, %v", doc, got, err, want, wantErr)
	}
}

// FuzzDecode checks decode (decodeFast first) against encoding/json's
// Decoder on any bytes.
func FuzzDecode(f *testing.F) {
	for _, doc := range decodeCorpus {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) { checkDecode(t, doc) })
}

// BenchmarkDecode decodes the usual answer: by decode (decodeFast) and by
// encoding/json's Decoder.
func BenchmarkDecode(b *testing.B) {
	doc := []byte(decodeCorpus[0])
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decode(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeJSON(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeBoxesStrings checks that the usual answer's strings and
// numbers share their headers' allocations (boxes): decoding it took 17
// allocations with one per string and number, 11 with them in a slab.
func TestDecodeBoxesStrings(t *testing.T) {
	doc := []byte(decodeCorpus[0])
	if n := testing.AllocsPerRun(100, func() { _, _ = decode(doc) }); n > 11 {
		t.Errorf("decoding the usual answer took %v allocations, want at most 11", n)
	}
}

// TestDecodeBoxesSurviveGC decodes values with more strings and numbers
// than one slab holds, collects garbage while only the values hold their
// slabs, and checks them against encoding/json's.
func TestDecodeBoxesSurviveGC(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"list":[`)
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"s":"v%d","n":%d.5,"e":"","k":[%d,"x\u00e9%d"]}`, i, i, -i, i)
	}
	b.WriteString(`]}`)
	doc := []byte(b.String())
	var got []any
	for range 4 {
		v, err := decode(bytes.Clone(doc))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
		runtime.GC()
	}
	runtime.GC()
	want, err := decodeJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("value %d differs from encoding/json's after GC", i)
		}
	}
}

// TestCandidateText checks that a candidate's text is its JSON, taken
// from the answer without a copy when the finder copied it unchanged.
func TestCandidateText(t *testing.T) {
	text := `The invoice: ` + decodeCorpus[0] + ` and {'a': 1,}`
	found := jsonx.FindWith(text, jsonx.FindOptions{Policy: jsonx.PolicyCoerce})
	if len(found) != 2 {
		t.Fatalf("found %d candidates, want 2", len(found))
	}
	for i, f := range found {
		got := candidateText(f, text)
		if got != string(f.JSON) {
			t.Errorf("candidate %d: text %q, JSON %s", i, got, f.JSON)
		}
		if n := testing.AllocsPerRun(10, func() { got = candidateText(f, text) }); (n == 0) != (i == 0) {
			t.Errorf("candidate %d: %v allocations; only the repaired one is copied", i, n)
		}
	}
	if got := candidateText(jsonx.Candidate{JSON: []byte(`[1]`), Start: 5, End: 2}, text); got != "[1]" {
		t.Errorf("a candidate with a bad span: text %q", got)
	}
}
