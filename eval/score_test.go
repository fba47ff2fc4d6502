package eval

import (
	"encoding/json"
	"testing"

	"github.com/extractq/extractq/schema"
)

const invoiceSchema = `{
  "type": "object",
  "required": ["number", "total", "items"],
  "properties": {
    "number": {"type": "string"},
    "date": {"type": "string", "format": "date"},
    "currency": {"type": "string", "enum": ["EUR", "eur", "USD"]},
    "total": {"type": "number"},
    "tax": {"type": "number", "x-eval": {"tolerance": 0.01}},
    "note": {"type": ["string", "null"], "x-eval": {"ignore": true}},
    "tags": {"type": "array", "items": {"type": "string"}, "x-eval": {"unordered": true}},
    "codes": {"type": "array", "items": {"type": "string"}},
    "items": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "number"}}}},
    "lines": {"type": "array", "x-merge-key": "sku", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "number"}}}}
  }
}`

func mustSchema(t *testing.T, src string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func field(d *DocScore, ptr string) (FieldResult, bool) {
	for _, f := range d.Fields {
		if f.Pointer == ptr {
			return f, true
		}
	}
	return FieldResult{}, false
}

func TestScoreRules(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, invoiceSchema)
	cases := []struct {
		name          string
		expected, got string
		ptr           string
		exact, match  bool
		compared      bool
	}{
		{"same string", `{"number":"INV-7"}`, `{"number":"INV-7"}`, "/number", true, true, true},
		{"case and space folded", `{"number":"Acme  Ltd"}`, `{"number":" acme ltd"}`, "/number", false, true, true},
		{"different string", `{"number":"INV-7"}`, `{"number":"INV-8"}`, "/number", false, false, true},
		{"number by value", `{"total":12.5}`, `{"total":12.50}`, "/total", true, true, true},
		{"numeric string", `{"total":1250}`, `{"total":"1,250.00"}`, "/total", false, true, true},
		{"number off without tolerance", `{"total":12.5}`, `{"total":12.51}`, "/total", false, false, true},
		{"x-eval tolerance", `{"tax":2.5}`, `{"tax":2.509}`, "/tax", false, true, true},
		{"past the tolerance", `{"tax":2.5}`, `{"tax":2.52}`, "/tax", false, false, true},
		{"dates as dates", `{"date":"2026-03-19"}`, `{"date":"19 March 2026"}`, "/date", false, true, true},
		{"other date", `{"date":"2026-03-19"}`, `{"date":"2026-03-18"}`, "/date", false, false, true},
		{"enum exact only", `{"currency":"EUR"}`, `{"currency":"eur"}`, "/currency", false, false, true},
		{"missing in the answer", `{"number":"INV-7"}`, `{}`, "/number", false, false, true},
		{"invented by the answer", `{}`, `{"number":"INV-7"}`, "/number", false, false, true},
		{"null is absent", `{"date":null}`, `{}`, "/date", false, false, false},
		{"ignored field", `{"note":"a"}`, `{"note":"b"}`, "/note", false, false, false},
		{"unordered list", `{"tags":["a","b"]}`, `{"tags":["B","a"]}`, "/tags", false, true, true},
		{"ordered list", `{"codes":["a","b"]}`, `{"codes":["b","a"]}`, "/codes", false, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, err := Score(json.RawMessage(c.expected), json.RawMessage(c.got), s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			f, ok := field(d, c.ptr)
			if ok != c.compared {
				t.Fatalf("compared = %v, want %v (fields %+v)", ok, c.compared, d.Fields)
			}
			if !ok {
				return
			}
			if f.Exact != c.exact || f.Match != c.match {
				t.Errorf("exact, match = %v, %v; want %v, %v", f.Exact, f.Match, c.exact, c.match)
			}
			if d.Correct != allMatch(d.Fields) {
				t.Errorf("Correct = %v with fields %+v", d.Correct, d.Fields)
			}
		})
	}
}

func TestScoreItems(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, invoiceSchema)
	cases := []struct {
		name                      string
		expected, got             string
		field                     string
		wantExp, wantGot, matched int
		correct                   bool
	}{
		{"same items reordered align by best match",
			`{"items":[{"sku":"A","qty":1},{"sku":"B","qty":2}]}`,
			`{"items":[{"sku":"B","qty":2},{"sku":"A","qty":1}]}`, "/items", 2, 2, 2, true},
		{"one item wrong",
			`{"items":[{"sku":"A","qty":1},{"sku":"B","qty":2}]}`,
			`{"items":[{"sku":"A","qty":1},{"sku":"B","qty":3}]}`, "/items", 2, 2, 1, false},
		{"one item missing",
			`{"items":[{"sku":"A","qty":1},{"sku":"B","qty":2}]}`,
			`{"items":[{"sku":"B","qty":2}]}`, "/items", 2, 1, 1, false},
		{"one item invented",
			`{"items":[{"sku":"A","qty":1}]}`,
			`{"items":[{"sku":"A","qty":1},{"sku":"Z","qty":9}]}`, "/items", 1, 2, 1, false},
		{"merge key aligns even when other fields differ",
			`{"lines":[{"sku":"A","qty":1},{"sku":"B","qty":2}]}`,
			`{"lines":[{"sku":"b","qty":5},{"sku":"A","qty":1}]}`, "/lines", 2, 2, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, err := Score(json.RawMessage(c.expected), json.RawMessage(c.got), s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var it *ItemsResult
			for i := range d.Items {
				if d.Items[i].Field == c.field {
					it = &d.Items[i]
				}
			}
			if it == nil {
				t.Fatalf("no items result for %s: %+v", c.field, d.Items)
			}
			if it.Expected != c.wantExp || it.Got != c.wantGot || it.Matched != c.matched {
				t.Errorf("items = %+v, want expected %d got %d matched %d", *it, c.wantExp, c.wantGot, c.matched)
			}
			if d.Correct != c.correct {
				t.Errorf("Correct = %v, want %v", d.Correct, c.correct)
			}
		})
	}
	// With a merge key, the pair B/b is compared field by field: qty is the
	// one mismatch, at the label's index.
	d, _ := Score(json.RawMessage(`{"lines":[{"sku":"A","qty":1},{"sku":"B","qty":2}]}`), json.RawMessage(`{"lines":[{"sku":"b","qty":5},{"sku":"A","qty":1}]}`), s, Options{})
	f, ok := field(d, "/lines/1/qty")
	if !ok || f.Match || string(f.Got) != "5" {
		t.Errorf("/lines/1/qty = %+v, want a mismatch against 5", f)
	}
}

func TestScoreWithoutAnswer(t *testing.T) {
	t.Parallel()
	d, err := Score(json.RawMessage(`{"number":"A","total":1}`), nil, mustSchema(t, invoiceSchema), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Correct || len(d.Fields) != 2 || d.Matched() != 0 {
		t.Errorf("no answer: %+v", d)
	}
}

func TestScoreGlobalTolerance(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, invoiceSchema)
	d, _ := Score(json.RawMessage(`{"total":100}`), json.RawMessage(`{"total":100.4}`), s, Options{Tolerance: 0.5})
	if f, _ := field(d, "/total"); !f.Match {
		t.Errorf("tolerance 0.5: %+v", f)
	}
}

func TestSummarizeAndCompare(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, invoiceSchema)
	score := func(e, g string) *DocScore {
		d, err := Score(json.RawMessage(e), json.RawMessage(g), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	outs := []Outcome{
		{ID: "a", Valid: true, Calls: 1, CostUSD: 0.01, CostKnown: true, Score: score(`{"number":"1","total":5}`, `{"number":"1","total":5}`)},
		{ID: "b", Valid: true, Calls: 3, Reasks: 2, CostUSD: 0.03, CostKnown: true, Score: score(`{"number":"2","total":5}`, `{"number":"2","total":6}`)},
		{ID: "c", Valid: false, Calls: 4, Reasks: 3, CostUSD: 0.04, CostKnown: true, Score: score(`{"number":"3","total":5}`, ``)},
	}
	sum := Summarize("x", 4, outs)
	if sum.Valid != 2 || sum.Correct != 1 || sum.Done != 3 || sum.Docs != 4 {
		t.Fatalf("counts: %+v", sum)
	}
	if got, want := sum.CostPerCorrect, 0.08; abs(int(1e6*(got-want))) > 1 {
		t.Errorf("cost per correct = %v, want %v", got, want)
	}
	if got, want := sum.CostPerValid, 0.04; abs(int(1e6*(got-want))) > 1 {
		t.Errorf("cost per valid = %v, want %v", got, want)
	}
	if sum.Fields[0].Field != "/total" || sum.Fields[0].Matched != 1 || sum.Fields[0].Compared != 3 {
		t.Errorf("worst field first: %+v", sum.Fields[0])
	}
	if len(sum.Fields[0].Examples) != 2 {
		t.Errorf("examples of /total: %+v", sum.Fields[0].Examples)
	}
	if got := sum.ReaskRate(); got < 1.66 || got > 1.67 {
		t.Errorf("re-ask rate %v", got)
	}

	better := Summarize("base", 4, outs[:2])
	regs := Compare(better, sum, 0.02)
	if len(regs) == 0 {
		t.Fatal("a drop from 75% to 50% accuracy is no regression")
	}
	if regs := Compare(sum, sum, 0); len(regs) != 0 {
		t.Errorf("a summary regressed against itself: %v", regs)
	}
}
