package sim

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// cloneReference is clone as it was first written (a fresh map filled key
// by key): the reference clone is compared with.
func cloneReference(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneReference(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = cloneReference(e)
		}
		return a
	}
	return v
}

// mutate changes every container reachable from v in place.
func mutate(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			mutate(e)
			x[k] = "changed"
		}
		x["added"] = true
	case []any:
		for i, e := range x {
			mutate(e)
			x[i] = "changed"
		}
	}
}

// TestCloneMatchesReference checks clone against the reference on the
// templates of the fleet's schema and of the invoice schema, and that
// changing a clone leaves the template as it was.
func TestCloneMatchesReference(t *testing.T) {
	t.Parallel()
	_, invoice := invoiceSchema(t)
	for name, raw := range map[string][]byte{"fleet": []byte(fleetSchema), "invoice": invoice} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sh := newShapeCache().get(srcNative, raw)
			if sh.schema == nil {
				t.Fatalf("schema did not compile: %v", sh.err)
			}
			for slot := range uint64(numTemplates) {
				tpl, err := sh.template(7, slot)
				if err != nil {
					t.Fatal(err)
				}
				want := cloneReference(tpl.v)
				got := clone(tpl.v)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("slot %d: clone %v, reference %v", slot, got, want)
				}
				mutate(got)
				if !reflect.DeepEqual(tpl.v, want) {
					t.Fatalf("slot %d: changing the clone changed the template: %v", slot, tpl.v)
				}
			}
		})
	}
	for i, v := range []any{nil, "s", map[string]any{}, []any{}, map[string]any{"a": []any{map[string]any{"b": []any{1.0}}}}} {
		if got := clone(v); !reflect.DeepEqual(got, cloneReference(v)) {
			t.Errorf("value %d: clone %s", i, fmt.Sprint(got))
		}
	}
}

// fleetDocument is the document of fleetRequest(i), as readPrompt finds it.
func fleetDocument(tb testing.TB, i int) string {
	tb.Helper()
	req, err := parseOpenAI(fleetRequest(i), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return readPrompt(req.messages).document
}

// BenchmarkShapeValue measures the clean answer to the fleet's documents
// for the fleet's schema (what compose starts from), templates built.
func BenchmarkShapeValue(b *testing.B) {
	sh := newShapeCache().get(srcNative, []byte(fleetSchema))
	docs := make([]string, 1024)
	for i := range docs {
		docs[i] = fleetDocument(b, i)
	}
	for i := range docs {
		if _, err := sh.value(0, fnv64a(docs[i]), docs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		doc := docs[i%len(docs)]
		if _, err := sh.value(0, fnv64a(doc), doc); err != nil {
			b.Fatal(err)
		}
	}
}

// valueReference is shape.value as it was before templates had plans:
// a whole clone, the fields filled, distinct over every key, the lines
// split by strings.Split.
func valueReference(sh *shape, seed, docHash uint64, doc string) (any, error) {
	return referenceFilled(sh, seed, docHash, doc, true)
}

// valueWithoutDistinct is valueReference without distinct.
func valueWithoutDistinct(sh *shape, seed, docHash uint64, doc string) (any, error) {
	return referenceFilled(sh, seed, docHash, doc, false)
}

func referenceFilled(sh *shape, seed, docHash uint64, doc string, withDistinct bool) (any, error) {
	r := newRNG(mix(seed, docHash), 0x5eed)
	t, err := sh.template(seed, mix(seed, docHash)%numTemplates)
	if err != nil {
		return nil, err
	}
	v := cloneReference(t.v)
	for i := range sh.texts {
		f := filler{text: &sh.texts[i], doc: doc, r: r}
		v = f.at(v, f.text.path)
	}
	for i := range sh.numbers {
		f := filler{number: &sh.numbers[i], r: r}
		v = f.at(v, f.number.path)
	}
	if withDistinct {
		v = distinct(v, t.v)
	}
	return sh.readText(v, doc), nil
}

// TestValueMatchesReference checks that answers built through a
// template's plan are those built the first way, byte for byte, for
// schemas with nested objects, arrays of objects and of unique strings,
// and that building one leaves the template as it was.
func TestValueMatchesReference(t *testing.T) {
	t.Parallel()
	_, invoice := invoiceSchema(t)
	schemas := map[string]string{
		"fleet":   fleetSchema,
		"invoice": string(invoice),
		"unique": `{"type":"object","properties":{
			"tags":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":6,"uniqueItems":true},
			"keywords":{"type":"array","items":{"type":"string","maxLength":6},"minItems":3,"uniqueItems":true},
			"nested":{"type":"object","properties":{"rows":{"type":"array","items":{"type":"array","items":{"type":"number"},"minItems":2}},"name":{"type":"string"}},"required":["rows","name"]},
			"counts":{"type":"array","items":{"type":"integer"},"minItems":40,"maxItems":60,"uniqueItems":true},
			"many":{"type":"array","items":{"type":"integer"},"minItems":70,"maxItems":80,"uniqueItems":true},
			"people":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"email":{"type":"string","format":"email"}},"required":["name","email"]},"minItems":2,"uniqueItems":true}},
			"required":["tags","keywords","nested","counts","many","people"]}`,
	}
	docs := []string{testDoc, "", "a\nb\n\nc:d\n", "Name: Jane\nEmail: jane@example.com\nTags: a, b\n"}
	for i := range 300 {
		docs = append(docs, fleetDocument(t, i))
	}
	for name, raw := range schemas {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sh := newShapeCache().get(srcNative, []byte(raw))
			if sh.schema == nil {
				t.Fatalf("schema did not compile: %v", sh.err)
			}
			if len(sh.texts)+len(sh.numbers) == 0 {
				t.Fatal("no plausible values: nothing is filled in, nothing to compare")
			}
			repeats := 0 // answers whose arrays distinct had to change
			for _, seed := range []uint64{0, 1, 42} {
				for _, doc := range docs {
					h := fnv64a(doc)
					tpl, err := sh.template(seed, mix(seed, h)%numTemplates)
					if err != nil {
						t.Fatal(err)
					}
					before := jsonOf(tpl.v)
					got, err := sh.value(seed, h, doc)
					if err != nil {
						t.Fatal(err)
					}
					want, err := valueReference(sh, seed, h, doc)
					if err != nil {
						t.Fatal(err)
					}
					g, _ := encodeJSON(got)
					w, _ := encodeJSON(want)
					if g != w {
						t.Fatalf("seed %d, document %q:\n got %s\nwant %s", seed, doc, g, w)
					}
					if after := jsonOf(tpl.v); after != before {
						t.Fatalf("the answer changed its template:\n%s\n%s", before, after)
					}
					if undistinct, _ := valueWithoutDistinct(sh, seed, h, doc); jsonOf(undistinct) != jsonOf(want) {
						repeats++
					}
				}
			}
			t.Logf("%d answers had repeats", repeats)
			if name == "unique" && repeats == 0 {
				t.Error("no answer had repeats: distinct's work is not compared")
			}
		})
	}
}

func TestSplitLines(t *testing.T) {
	t.Parallel()
	var buf [2]string
	for _, doc := range []string{"", "\n", "a", "a\n", "\na", "a\nb\nc", "a\r\nb\n\n\nc\n", testDoc} {
		if got, want := splitLines(buf[:0], doc), strings.Split(doc, "\n"); !slices.Equal(got, want) {
			t.Errorf("splitLines(%q) = %q, want %q", doc, got, want)
		}
	}
}

func TestCodeTextMatchesSprintf(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "ID", "INV", "ÄB"} {
		for n := range 100000 {
			if got, want := codeText(prefix, n), fmt.Sprintf("%s-%05d", prefix, n); got != want {
				t.Fatalf("codeText(%q, %d) = %q, want %q", prefix, n, got, want)
			}
		}
	}
}
