// Package eval measures how correct extracted values are, not only how
// valid: it compares each document's extracted value with a label (the
// expected value) field by field, under rules a schema can tune, and sums
// the comparisons into per-field accuracy, fully correct documents and the
// cost per correct document.
//
// The rules (Score):
//
//   - A field is compared when the label or the answer holds a value for it
//     (null counts as absent: strict provider forms send null for "absent").
//   - Exact: the two values are the same JSON.
//   - Normalised: numbers by value, within a tolerance (x-eval tolerance, or
//     Options.Tolerance); dates as dates ("2026-03-19" = "19 March 2026");
//     strings with case and white space folded; enums exactly; arrays of
//     scalars element by element, in order unless x-eval unordered.
//   - Arrays of objects: items are aligned by the schema's x-merge-key (on
//     the array or its items), else by best match (the pairs that agree on
//     the most fields first); an aligned item whose fields all match is a
//     true positive, giving precision (of the answer's items) and recall (of
//     the label's). An item the answer lacks counts as a miss for each of
//     its fields; an item it invents, as a wrong value for each of its.
//   - A schema node may say `"x-eval": {"tolerance": 0.01}`,
//     `{"unordered": true}` or `{"ignore": true}`.
//
// A document is fully correct when every compared field matches
// (normalised) and every array of objects has all its items matched and
// none extra.
package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/extractq/extractq/schema"
)

// FieldResult is one field of one document compared.
type FieldResult struct {
	// Field names the field across items: array indices are "*"
	// ("/line_items/*/amount").
	Field string `json:"field"`
	// Pointer locates it in the label ("/line_items/2/amount"), or in the
	// answer for an item the label does not have.
	Pointer string `json:"pointer"`
	// Expected and Got are the two values; nil where a side has none.
	Expected json.RawMessage `json:"expected,omitempty"`
	Got      json.RawMessage `json:"got,omitempty"`
	// Exact: the same JSON. Match: equal after normalisation.
	Exact bool `json:"exact"`
	Match bool `json:"match"`
}

// ItemsResult is an array of objects compared item by item.
type ItemsResult struct {
	Field string `json:"field"`
	// Expected and Got count the items of each side; Matched the aligned
	// pairs whose every field matches.
	Expected int `json:"expected"`
	Got      int `json:"got"`
	Matched  int `json:"matched"`
}

// Precision is the share of the answer's items that are right (1 when the
// answer has none and the label has none).
func (r ItemsResult) Precision() float64 { return ratio(r.Matched, r.Got) }

// Recall is the share of the label's items the answer got right.
func (r ItemsResult) Recall() float64 { return ratio(r.Matched, r.Expected) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// DocScore is one document's comparison.
type DocScore struct {
	Fields []FieldResult `json:"fields"`
	Items  []ItemsResult `json:"items,omitempty"`
	// Correct: every field matches after normalisation and every array of
	// objects was matched item for item.
	Correct bool `json:"correct"`
	// Exact: every field matches exactly.
	Exact bool `json:"exact"`
}

// Matched counts the fields that match after normalisation.
func (d *DocScore) Matched() int {
	n := 0
	for _, f := range d.Fields {
		if f.Match {
			n++
		}
	}
	return n
}

// Options tune Score for every field; a schema's x-eval overrides them
// field by field.
type Options struct {
	// Tolerance is the largest absolute difference at which two numbers
	// still match (0: equal values only).
	Tolerance float64
}

// Score compares one document's extracted value got with its label
// expected under s (nil: compare by the values' own shapes). got may be
// nil: a document without a valid result matches nothing.
func Score(expected, got json.RawMessage, s *schema.Schema, opts Options) (*DocScore, error) {
	var e, g any
	if err := decode(expected, &e); err != nil {
		return nil, fmt.Errorf("label: %w", err)
	}
	if len(bytes.TrimSpace(got)) > 0 {
		if err := decode(got, &g); err != nil {
			return nil, fmt.Errorf("extracted value: %w", err)
		}
	} else {
		g = absent{}
	}
	sc := &scorer{opts: opts}
	if s != nil {
		if err := decode(s.JSON(), &sc.root); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	}
	d := &DocScore{}
	sc.compare(d, sc.node(sc.root), e, g, "", "")
	d.Correct, d.Exact = true, true
	for _, f := range d.Fields {
		d.Correct = d.Correct && f.Match
		d.Exact = d.Exact && f.Exact
	}
	for _, it := range d.Items {
		if it.Matched != it.Expected || it.Matched != it.Got {
			d.Correct, d.Exact = false, false
		}
	}
	return d, nil
}

// absent stands for a missing value (a key the object lacks, or no answer).
type absent struct{}

func decode(b []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

func isAbsent(v any) bool {
	_, ok := v.(absent)
	return ok || v == nil
}

type scorer struct {
	opts Options
	root any
}

// node resolves a schema node: local $refs followed, and the first object
// or array alternative of anyOf/oneOf taken, so that a nullable object
// still has its properties.
func (sc *scorer) node(n any) map[string]any {
	m, _ := n.(map[string]any)
	for range 32 {
		if m == nil {
			return nil
		}
		if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
			m = sc.resolve(ref)
			continue
		}
		for _, k := range []string{"anyOf", "oneOf"} {
			if alts, ok := m[k].([]any); ok {
				for _, a := range alts {
					am := sc.node(a)
					if t := typeOf(am); t == "object" || t == "array" {
						return merged(m, am)
					}
				}
			}
		}
		return m
	}
	return m
}

// merged keeps the outer node's x-eval and merge key on an alternative.
func merged(outer, alt map[string]any) map[string]any {
	out := maps.Clone(alt)
	for _, k := range []string{"x-eval", "x-merge-key"} {
		if v, ok := outer[k]; ok {
			out[k] = v
		}
	}
	return out
}

func (sc *scorer) resolve(ref string) map[string]any {
	var cur any = sc.root
	for _, tok := range strings.Split(strings.TrimPrefix(strings.TrimPrefix(ref, "#"), "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	m, _ := cur.(map[string]any)
	return m
}

// typeOf is a node's main type, ignoring "null".
func typeOf(n map[string]any) string {
	switch t := n["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if s, _ := x.(string); s != "" && s != "null" {
				return s
			}
		}
	}
	if _, ok := n["properties"]; ok {
		return "object"
	}
	if _, ok := n["items"]; ok {
		return "array"
	}
	return ""
}

// rule is a node's x-eval.
type rule struct {
	tolerance    float64
	hasTolerance bool
	unordered    bool
	ignore       bool
}

func ruleOf(n map[string]any) rule {
	var r rule
	x, _ := n["x-eval"].(map[string]any)
	if t, ok := x["tolerance"]; ok {
		if f, err := toFloat(t); err == nil {
			r.tolerance, r.hasTolerance = f, true
		}
	}
	r.unordered, _ = x["unordered"].(bool)
	r.ignore, _ = x["ignore"].(bool)
	return r
}

func (sc *scorer) compare(d *DocScore, n map[string]any, e, g any, field, ptr string) {
	r := ruleOf(n)
	if r.ignore || (isAbsent(e) && isAbsent(g)) {
		return
	}
	eo, eIsObj := e.(map[string]any)
	gobj, gIsObj := g.(map[string]any)
	if (typeOf(n) == "object" || eIsObj) && (eIsObj || isAbsent(e)) && (gIsObj || isAbsent(g)) && (eIsObj || gIsObj) {
		props, _ := n["properties"].(map[string]any)
		for _, k := range objectKeys(props, eo, gobj) {
			tok := escape(k)
			sc.compare(d, sc.node(props[k]), lookupKey(eo, k), lookupKey(gobj, k), field+"/"+tok, ptr+"/"+tok)
		}
		return
	}
	ea, eIsArr := e.([]any)
	ga, gIsArr := g.([]any)
	if items := sc.node(n["items"]); (eIsArr || isAbsent(e)) && (gIsArr || isAbsent(g)) && (eIsArr || gIsArr) && objectItems(items, ea, ga) {
		sc.compareItems(d, n, items, ea, ga, field, ptr)
		return
	}
	d.Fields = append(d.Fields, FieldResult{
		Field: field, Pointer: ptr,
		Expected: raw(e), Got: raw(g),
		Exact: !isAbsent(e) && !isAbsent(g) && canonical(e) == canonical(g),
		Match: !isAbsent(e) && !isAbsent(g) && sc.equal(n, r, e, g),
	})
}

// objectKeys orders an object's keys: the schema's first (sorted, since a
// decoded schema has lost its order), then keys only the values have.
func objectKeys(props, e, g map[string]any) []string {
	keys := slices.Sorted(maps.Keys(props))
	for _, m := range []map[string]any{e, g} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

func lookupKey(m map[string]any, k string) any {
	if v, ok := m[k]; ok && v != nil {
		return v
	}
	return absent{}
}

func objectItems(items map[string]any, ea, ga []any) bool {
	if typeOf(items) == "object" {
		return true
	}
	for _, list := range [][]any{ea, ga} {
		for _, it := range list {
			if _, ok := it.(map[string]any); ok {
				return true
			}
		}
	}
	return false
}

// compareItems aligns two arrays of objects and compares the pairs.
func (sc *scorer) compareItems(d *DocScore, n, items map[string]any, ea, ga []any, field, ptr string) {
	key, _ := n["x-merge-key"].(string)
	if key == "" {
		key, _ = items["x-merge-key"].(string)
	}
	pairs := sc.align(items, ea, ga, key)
	res := ItemsResult{Field: field, Expected: len(ea), Got: len(ga)}
	usedG := make([]bool, len(ga))
	for i, ev := range ea {
		j := pairs[i]
		var gv any = absent{}
		if j >= 0 {
			gv, usedG[j] = ga[j], true
		}
		sub := &DocScore{}
		sc.compare(sub, items, ev, gv, field+"/*", ptr+"/"+strconv.Itoa(i))
		if j >= 0 && allMatch(sub.Fields) && allItems(sub.Items) {
			res.Matched++
		}
		d.Fields = append(d.Fields, sub.Fields...)
		d.Items = append(d.Items, sub.Items...)
	}
	for j, gv := range ga {
		if !usedG[j] {
			sc.compare(d, items, absent{}, gv, field+"/*", fmt.Sprintf("%s/%d(extra)", ptr, j))
		}
	}
	d.Items = append(d.Items, res)
}

func allMatch(fs []FieldResult) bool {
	for _, f := range fs {
		if !f.Match {
			return false
		}
	}
	return true
}

func allItems(is []ItemsResult) bool {
	for _, it := range is {
		if it.Matched != it.Expected || it.Matched != it.Got {
			return false
		}
	}
	return true
}

// maxAlign bounds best-match alignment (pairs compared); larger arrays are
// aligned by position.
const maxAlign = 40000

// align returns, for each label item, the index of its answer item or -1.
func (sc *scorer) align(items map[string]any, ea, ga []any, key string) []int {
	pairs := make([]int, len(ea))
	for i := range pairs {
		pairs[i] = -1
	}
	if key != "" {
		byKey := map[string][]int{}
		for j, gv := range ga {
			if m, ok := gv.(map[string]any); ok && m[key] != nil {
				k := normKey(m[key])
				byKey[k] = append(byKey[k], j)
			}
		}
		for i, ev := range ea {
			if m, ok := ev.(map[string]any); ok && m[key] != nil {
				if js := byKey[normKey(m[key])]; len(js) > 0 {
					pairs[i], byKey[normKey(m[key])] = js[0], js[1:]
				}
			}
		}
		return pairs
	}
	if len(ea)*len(ga) > maxAlign {
		for i := range min(len(ea), len(ga)) {
			pairs[i] = i
		}
		return pairs
	}
	// Best match: every pair's count of matching fields, then the best
	// pairs first (ties to the earlier positions), never below one field.
	type cand struct{ i, j, score int }
	var cands []cand
	for i, ev := range ea {
		for j, gv := range ga {
			sub := &DocScore{}
			sc.compare(sub, items, ev, gv, "", "")
			if m := sub.Matched(); m > 0 {
				cands = append(cands, cand{i, j, m})
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.score != b.score {
			return b.score - a.score
		}
		if d := abs(a.i-a.j) - abs(b.i-b.j); d != 0 {
			return d
		}
		return a.i - b.i
	})
	usedG := make([]bool, len(ga))
	for _, c := range cands {
		if pairs[c.i] < 0 && !usedG[c.j] {
			pairs[c.i], usedG[c.j] = c.j, true
		}
	}
	return pairs
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func normKey(v any) string {
	if s, ok := v.(string); ok {
		return normString(s)
	}
	return canonical(v)
}

// equal compares two present values after normalisation.
func (sc *scorer) equal(n map[string]any, r rule, e, g any) bool {
	if _, isEnum := n["enum"]; isEnum {
		return canonical(e) == canonical(g)
	}
	if _, isConst := n["const"]; isConst {
		return canonical(e) == canonical(g)
	}
	tol := sc.opts.Tolerance
	if r.hasTolerance {
		tol = r.tolerance
	}
	switch ev := e.(type) {
	case json.Number:
		return numbersMatch(ev, g, tol)
	case string:
		if _, ok := g.(json.Number); ok {
			return numbersMatch(g.(json.Number), ev, tol)
		}
		gs, ok := g.(string)
		if !ok {
			return false
		}
		format, _ := n["format"].(string)
		if a, okA := parseDate(ev, format); okA {
			if b, okB := parseDate(gs, format); okB {
				return a.Equal(b)
			}
		}
		return normString(ev) == normString(gs)
	case []any:
		ga, ok := g.([]any)
		if !ok || len(ev) != len(ga) {
			return false
		}
		items := sc.node(n["items"])
		ir := ruleOf(items)
		if r.unordered {
			used := make([]bool, len(ga))
		next:
			for _, x := range ev {
				for j, y := range ga {
					if !used[j] && sc.equal(items, ir, x, y) {
						used[j] = true
						continue next
					}
				}
				return false
			}
			return true
		}
		for i := range ev {
			if !sc.equal(items, ir, ev[i], ga[i]) {
				return false
			}
		}
		return true
	}
	return canonical(e) == canonical(g)
}

// numbersMatch compares a number with a number or a numeric string ("1,250.00").
func numbersMatch(e json.Number, g any, tol float64) bool {
	a, err := toFloat(e)
	if err != nil {
		return false
	}
	b, err := toFloat(g)
	if err != nil {
		return false
	}
	// A relative epsilon absorbs binary rounding (0.1+0.2 against 0.3).
	return math.Abs(a-b) <= tol+1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case float64:
		return x, nil
	case string:
		s := strings.TrimSpace(x)
		s = strings.TrimLeft(s, "$€£¥₹")
		s = strings.ReplaceAll(strings.ReplaceAll(s, ",", ""), " ", "")
		return strconv.ParseFloat(s, 64)
	}
	return 0, fmt.Errorf("not a number")
}

// dateLayouts are the forms a label or an answer may write a date in.
var dateLayouts = []string{
	time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02",
	"2 January 2006", "January 2, 2006", "2 Jan 2006", "Jan 2, 2006", "02.01.2006", "2006/01/02",
}

func parseDate(s, format string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if format == "" && (len(s) < 8 || !strings.ContainsAny(s, "0123456789")) {
		return time.Time{}, false
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			if format == "date" || l == "2006-01-02" || !strings.Contains(l, "15") {
				y, m, d := t.Date()
				return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), true
			}
			return t, true
		}
	}
	return time.Time{}, false
}

// normString folds case and runs of white space.
func normString(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// canonical is a value's JSON with sorted keys and numbers by value.
func canonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		if f, err := x.Float64(); err == nil {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		} else {
			b.WriteString(x.String())
		}
	case absent:
	default:
		vb, _ := json.Marshal(x)
		b.Write(vb)
	}
}

func raw(v any) json.RawMessage {
	if isAbsent(v) {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
