package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/schema"
)

// skeletonSchemas are schemas whose answers take every turn a skeleton
// takes: nested arrays whose filled items may repeat, numbers written in
// more than one way, labels and records read from the text, fields the
// text alone decides (textOnly, nullable), lengths a plausible text may
// not fit, formats, and roots that are not objects.
var skeletonSchemas = []string{
	fleetSchema,
	`{"type":"object","properties":{"tags":{"type":"array","minItems":2,"maxItems":5,"items":{"type":"string","maxLength":4}},"name":{"type":"string"}},"required":["tags","name"]}`,
	`{"type":"object","properties":{"rows":{"type":"array","minItems":2,"maxItems":4,"items":{"type":"object","properties":{"name":{"type":"string","maxLength":3},"qty":{"type":"integer"},"price":{"type":"number","enum":[1.0,1,2.5]}},"required":["name","qty","price"]}}},"required":["rows"]}`,
	`{"type":"object","properties":{"grid":{"type":"array","minItems":2,"maxItems":3,"items":{"type":"array","minItems":2,"maxItems":3,"items":{"type":"object","properties":{"currency":{"type":"string"},"score":{"type":"number"}},"required":["currency","score"]}}}},"required":["grid"]}`,
	`{"type":"object","properties":{"invoice_number":{"type":"string"},"total":{"type":["number","null"]},"vendor":{"type":"string","minLength":3,"maxLength":12},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"description":{"type":"string"},"quantity":{"type":"integer"}}}}},"required":["invoice_number","total"]}`,
	`{"type":"object","properties":{"invoice_number":{"type":["string","null"]},"total":{"type":["number","null"]},"note":{"type":"string"},"items":{"type":["array","null"],"items":{"type":"object","properties":{"sku":{"type":"string"},"quantity":{"type":"integer"}},"required":["sku","quantity"]}}},"required":["invoice_number","total","items"],"additionalProperties":false}`,
	`{"type":"object","properties":{"email":{"type":"string","format":"email"},"issued_on":{"type":"string","format":"date"},"created_at":{"type":"string","format":"date-time"},"website":{"type":"string","format":"uri"},"phone":{"type":"string"},"year":{"type":"integer"},"summary":{"type":"string","minLength":40},"flag":{"type":"boolean"},"nothing":{"type":"null"},"odd \"key\"\n":{"type":"string"}},"required":["email","issued_on","created_at","website","phone","year","summary","flag","nothing","odd \"key\"\n"]}`,
	`{"type":"array","minItems":2,"items":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`,
	`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"customer_name":{"type":"string"},"amounts":{"type":"array","minItems":2,"items":{"type":"number"}}},"required":["customer_name","amounts"]}},"required":["b"]},"ids":{"type":"array","minItems":3,"maxItems":70,"items":{"type":"string"}}},"required":["a","ids"]}`,
	`{"type":"object","properties":{"lines":{"type":"array","minItems":2,"maxItems":6,"items":{"type":"object","properties":{"currency":{"type":"string"},"unit":{"enum":[1.0,1,1e0,2,-0,0]}},"required":["currency","unit"]}}},"required":["lines"]}`,
	`{"type":"object","properties":{"words":{"type":"array","minItems":65,"maxItems":66,"items":{"type":"string"}}},"required":["words"]}`,
}

// skeletonDocs are documents with and without what readText reads.
var skeletonDocs = []string{
	testDoc,
	"",
	"x",
	"A B",
	"Invoice number: INV-7\nTotal: 1,234.50\nVendor: Acme\nItem: sku=AB-1; description=Bolts; quantity=4\nItem: sku=AB-2; quantity=x\n",
	"Item: sku=A; quantity=1\nItem: sku=A; quantity=1\n",
	"Note: \"quoted\" \\ back\tslash\x01 and ünïcödé — ok\nnote: second",
	"INVOICE INV-000042\nFrom: Vendor 42 GmbH\nItems: 3 x widget, 0 x gadget\nTotal due: 52.42 EUR\nStatus: paid\n",
	"Same Same Same Same Same Same Same",
	"\xff\xfe broken utf8 Name Here billing@x.example 2024-01-02",
	"Line\u2028Sep Name\u2029Word \xe2\x80 Cut Off\x7f <b>&amp;</b>",
}

func skeletonShapes(t testing.TB) []*shape {
	t.Helper()
	raws := append([]string{}, skeletonSchemas...)
	if raw, err := os.ReadFile(invoiceSchemaPath); err == nil {
		raws = append(raws, string(raw))
	}
	c := schema.NewCache(shapeCacheSize)
	var out []*shape
	for i, raw := range raws {
		sh := buildShape(c, srcNative, []byte(raw))
		if sh.err != nil || sh.schema == nil {
			t.Fatalf("schema %d: %v", i, sh.err)
		}
		out = append(out, sh)
	}
	return out
}

// checkSkeleton compares sh.text with value's answer, encoded; it reports
// whether the skeleton answered.
func checkSkeleton(t testing.TB, sh *shape, seed, docHash uint64, doc string) bool {
	t.Helper()
	text, quoted, ok, err := sh.text(seed, docHash, doc)
	v, verr := sh.value(seed, docHash, doc)
	if (err == nil) != (verr == nil) {
		t.Fatalf("seed %d, doc %q: text's error %v, value's %v", seed, doc, err, verr)
	}
	if err != nil || !ok {
		return false
	}
	want, err := encodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if text != want {
		t.Fatalf("seed %d, hash %d, doc %q:\nskeleton %s\nvalue    %s", seed, docHash, doc, text, want)
	}
	if quoted != "" {
		a := answer{text: text, quoted: quoted, quotedText: text}
		if got, want := string(a.appendText(nil)), string(jsonx.AppendString(nil, text, false)); got != want {
			t.Fatalf("seed %d, hash %d, doc %q: quoted\n%s, want\n%s", seed, docHash, doc, got, want)
		}
	}
	return true
}

// TestSkeletonMatchesValue holds the skeleton's answers to value's, byte
// for byte, over many templates and documents of every kind of schema.
func TestSkeletonMatchesValue(t *testing.T) {
	shapes := skeletonShapes(t)
	for i, sh := range shapes {
		answered, fellBack := 0, 0
		for seed := range uint64(3) {
			for h := range uint64(600) {
				doc := skeletonDocs[h%uint64(len(skeletonDocs))]
				if h%7 == 0 {
					doc = fmt.Sprintf("%s\nreference %d Name%c", doc, h, 'A'+h%26)
				}
				if checkSkeleton(t, sh, seed, h*0x9e3779b97f4a7c15+seed, doc) {
					answered++
				} else {
					fellBack++
				}
			}
		}
		t.Logf("schema %d: %d by skeleton, %d by value", i, answered, fellBack)
		if answered == 0 && i != 7 && i != 10 { // 7: an array root; 10: arrays too long to check
			t.Errorf("schema %d: no answer by skeleton", i)
		}
	}
}

// TestSkeletonConcurrent answers from fresh shapes on many goroutines at
// once, so that templates and their skeletons are built while others
// answer (for -race).
func TestSkeletonConcurrent(t *testing.T) {
	shapes := skeletonShapes(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range uint64(200) {
				sh := shapes[(int(h)+g)%len(shapes)]
				doc := skeletonDocs[(int(h)+g)%len(skeletonDocs)]
				text, _, ok, err := sh.text(1, h, doc)
				v, verr := sh.value(1, h, doc)
				if err != nil || verr != nil {
					t.Errorf("errors %v, %v", err, verr)
					return
				}
				if want, _ := encodeJSON(v); ok && text != want {
					t.Errorf("hash %d: skeleton %s, value %s", h, text, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestEqualEncoded(t *testing.T) {
	vals := []any{
		json.Number("1"), json.Number("1.0"), json.Number("10e-1"), json.Number("-0"), json.Number("0"), json.Number("2"),
		"1", "a\"b", "a", "", true, false, nil,
		[]any{json.Number("1"), "x"}, []any{json.Number("1.00"), "x"}, []any{"x", json.Number("1")},
		map[string]any{"a": json.Number("1"), "b": "1"}, map[string]any{"a": json.Number("1e0"), "b": "1"},
		map[string]any{"a": json.Number("1"), "c": "1"}, map[string]any{"a": json.Number("1")},
		map[string]any{"a\"": "1"}, map[string]any{"a": "\"1"},
	}
	for _, a := range vals {
		for _, b := range vals {
			ea, _ := encodeJSON(a)
			eb, _ := encodeJSON(b)
			if got, want := equalEncoded([]byte(ea), []byte(eb)), equalJSON(a, b); got != want {
				t.Errorf("equalEncoded(%s, %s) = %v, equalJSON %v", ea, eb, got, want)
			}
		}
	}
}

// TestSkeletonAnswersAsBefore sends the same requests to servers with and
// without skeletons, in every profile, and compares the replies whole.
func TestSkeletonAnswersAsBefore(t *testing.T) {
	if !useSkeletons {
		t.Fatal("skeletons off")
	}
	defer func() { useSkeletons = true }()
	var bodies [][]byte
	for i := range 120 {
		bodies = append(bodies, fleetRequest(i))
		raw := skeletonSchemas[i%len(skeletonSchemas)]
		doc := skeletonDocs[i%len(skeletonDocs)] + fmt.Sprintf("\nref %d", i)
		req := openAIChat([]byte(raw), doc)
		bodies = append(bodies, []byte(jsonOf(req)))
		req["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "strict": true, "schema": json.RawMessage(raw)}}
		bodies = append(bodies, []byte(jsonOf(req)))
	}
	answer := func(h http.Handler, body []byte) string {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var hdr strings.Builder
		_ = w.Result().Header.Write(&hdr)
		return fmt.Sprintf("%d\n%s\n%s", w.Code, hdr.String(), w.Body)
	}
	for name, prof := range builtins {
		prof.Latency = Latency{}
		prof.Errors.Timeout, prof.Errors.Drop = 0, 0
		for seed := range uint64(2) {
			now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
			useSkeletons = false
			old := New(prof, WithSeed(seed), WithClock(now)).Handler()
			var want []string
			for _, b := range bodies {
				want = append(want, answer(old, b))
			}
			useSkeletons = true
			neu := New(prof, WithSeed(seed), WithClock(now)).Handler()
			for i, b := range bodies {
				if got := answer(neu, b); got != want[i] {
					t.Fatalf("%s, seed %d, request %d:\nnew %s\nold %s", name, seed, i, got, want[i])
				}
			}
		}
	}
}

// FuzzSkeleton compares the skeleton's answers with value's for any
// document and seed.
func FuzzSkeleton(f *testing.F) {
	shapes := skeletonShapes(f)
	for i, d := range skeletonDocs {
		f.Add(uint8(i), uint64(i), uint64(i*7919), d)
	}
	f.Fuzz(func(t *testing.T, which uint8, seed, docHash uint64, doc string) {
		checkSkeleton(t, shapes[int(which)%len(shapes)], seed, docHash, doc)
	})
}

// TestDocLinesLabelled holds docLines.labelled to labelled, which reads
// the lines again for every field.
func TestDocLinesLabelled(t *testing.T) {
	docs := append([]string{
		"Invoice number: INV-7\nINVOICE-NUMBER : x\ninvoice_number:y",
		" Total Due :  12\nTotal-due: 13\nTOTAL DUE: 14",
		"Ünïcode Label: v\nünïcode label: w\nStraße: s\nSTRASSE: t",
		strings.Repeat("x", 64) + ": long ok\n" + strings.Repeat("y", 65) + ": too long",
		"a:b:c\n:empty\nno colon\n\t vendor \t:\tAcme \n",
	}, skeletonDocs...)
	keys := []string{"invoice_number", "total_due", "total", "ünïcode_label", "straße", "strasse", strings.Repeat("x", 64), strings.Repeat("y", 65), "a", "", "vendor", "no_colon", "from", "items"}
	for _, doc := range docs {
		var buf [32]string
		lines := splitLines(buf[:0], doc)
		dl := docLines{lines: lines}
		for _, k := range keys {
			for _, typ := range []string{"string", "number"} {
				f := readField{key: k, typ: typ}
				got, gok := dl.labelled(f)
				want, wok := labelled(lines, f)
				if gok != wok || got != want {
					t.Errorf("doc %q, key %q: docLines %v %v, labelled %v %v", doc, k, got, gok, want, wok)
				}
			}
		}
	}
}

// TestDateLine holds the Date line, reused within a second, to the time
// formatted afresh.
func TestDateLine(t *testing.T) {
	base := time.Date(2026, 11, 27, 17, 59, 58, 0, time.FixedZone("X", 3600))
	for _, d := range []time.Duration{0, 1, time.Second / 2, time.Second - 1, time.Second, 3 * time.Second / 2, time.Hour, -time.Hour} {
		now := base.Add(d)
		got := string(appendDateLine([]byte("x"), now))
		if want := "xDate: " + now.UTC().Format(http.TimeFormat) + "\r\n"; got != want {
			t.Errorf("%v: %q, want %q", now, got, want)
		}
	}
}

// BenchmarkShapeAnswer measures the clean answer's text for the fleet's
// documents and schema, templates built: value then encodeJSON (what
// compose did for every answer), and the skeleton (what it does now).
func BenchmarkShapeAnswer(b *testing.B) {
	sh := newShapeCache().get(srcNative, []byte(fleetSchema))
	docs := make([]string, 1024)
	for i := range docs {
		docs[i] = fleetDocument(b, i)
		if _, _, _, err := sh.text(0, fnv64a(docs[i]), docs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("value", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			doc := docs[i%len(docs)]
			v, err := sh.value(0, fnv64a(doc), doc)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := encodeJSON(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("skeleton", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			doc := docs[i%len(docs)]
			if _, _, ok, err := sh.text(0, fnv64a(doc), doc); err != nil || !ok {
				b.Fatal(err, ok)
			}
		}
	})
}
