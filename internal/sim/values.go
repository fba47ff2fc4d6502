package sim

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
)

// rng draws the simulator's random choices from a PCG stream whose seed
// says what the draw is about, so that choices never depend on the order in
// which requests arrive.
type rng struct{ p rand.PCG }

func newRNG(a, b uint64) *rng {
	r := &rng{}
	r.p.Seed(a, b)
	return r
}

// unit returns a float in [0, 1).
func (r *rng) unit() float64 { return float64(r.p.Uint64()>>11) / (1 << 53) }

// intn returns an int in [0, n); n must be positive.
func (r *rng) intn(n int) int { return int(r.p.Uint64() % uint64(n)) }

// mix combines two 64-bit values into a well-spread seed (splitmix64).
func mix(a, b uint64) uint64 {
	z := a ^ (b + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2))
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// textKind is what a string field looks like it should hold, judged by its
// name, so that answers read like extractions rather than noise.
type textKind uint8

const (
	kindPhrase textKind = iota
	kindEmail
	kindDate
	kindDateTime
	kindURL
	kindPhone
	kindName
	kindCurrency
	kindCode
)

func kindOf(field string) textKind {
	f := strings.ToLower(field)
	switch {
	case strings.Contains(f, "email"):
		return kindEmail
	case strings.HasSuffix(f, "_at") || strings.Contains(f, "timestamp") || strings.Contains(f, "datetime"):
		return kindDateTime
	case strings.Contains(f, "date") || strings.HasSuffix(f, "_on") || f == "dob" || strings.Contains(f, "birthday") || strings.Contains(f, "deadline"):
		return kindDate
	case strings.Contains(f, "url") || strings.Contains(f, "website") || strings.Contains(f, "link"):
		return kindURL
	case strings.Contains(f, "phone") || strings.Contains(f, "fax") || f == "tel":
		return kindPhone
	case strings.Contains(f, "name") || f == "author" || f == "vendor" || f == "customer" || f == "company":
		return kindName
	case strings.Contains(f, "currency"):
		return kindCurrency
	case f == "id" || strings.HasSuffix(f, "_id") || strings.HasSuffix(f, "number") || strings.HasSuffix(f, "code") || f == "sku":
		return kindCode
	}
	return kindPhrase
}

// docText makes a plausible string of that kind, taken from the document
// where the document has one.
func docText(k textKind, doc string, r *rng) string {
	switch k {
	case kindEmail:
		if e := firstEmail(doc); e != "" {
			return e
		}
		return strings.ToLower(asciiWord(doc, r, "contact")) + "@example.com"
	case kindDate:
		if d := firstDate(doc); d != "" {
			return d
		}
		return fmt.Sprintf("%04d-%02d-%02d", 2000+r.intn(30), 1+r.intn(12), 1+r.intn(28))
	case kindDateTime:
		d := firstDate(doc)
		if d == "" {
			d = fmt.Sprintf("%04d-%02d-%02d", 2000+r.intn(30), 1+r.intn(12), 1+r.intn(28))
		}
		return fmt.Sprintf("%sT%02d:%02d:00Z", d, r.intn(24), r.intn(60))
	case kindURL:
		return "https://" + strings.ToLower(asciiWord(doc, r, "www")) + ".example.com/"
	case kindPhone:
		return fmt.Sprintf("+1-555-%03d-%04d", r.intn(1000), r.intn(10000))
	case kindName:
		return capitalised(doc, r)
	case kindCurrency:
		return [...]string{"USD", "EUR", "GBP", "JPY", "CHF"}[r.intn(5)]
	case kindCode:
		w := strings.ToUpper(asciiWord(doc, r, "ID"))
		return codeText(w[:min(3, len(w))], r.intn(100000))
	}
	return phrase(doc, r, 6)
}

// codeText is fmt.Sprintf("%s-%05d", prefix, n) for n in [0, 99999],
// without fmt: an identifier is in most answers.
func codeText(prefix string, n int) string {
	b := make([]byte, 0, len(prefix)+6)
	b = append(b, prefix...)
	b = append(b, '-', '0'+byte(n/10000%10), '0'+byte(n/1000%10), '0'+byte(n/100%10), '0'+byte(n/10%10), '0'+byte(n%10))
	return string(b)
}

// phrase returns up to n words of the document starting at a seeded word.
func phrase(doc string, r *rng, n int) string {
	var b strings.Builder
	for _, from := range [2]int{wordStart(doc, r), 0} { // wrap to the start if the tail is blank
		k := 0
		for w := range strings.FieldsSeq(doc[from:]) {
			if k == n {
				break
			}
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			k++
		}
		if k > 0 {
			return strings.ToValidUTF8(b.String(), "")
		}
	}
	return "n/a"
}

// wordStart picks a seeded offset and moves it to the start of a word.
func wordStart(doc string, r *rng) int {
	if len(doc) == 0 {
		return 0
	}
	i := r.intn(len(doc))
	for i < len(doc) && doc[i] != ' ' && doc[i] != '\n' {
		i++
	}
	return i
}

// asciiWord returns a seeded all-letters ASCII word of the document, or def.
func asciiWord(doc string, r *rng, def string) string {
	for w := range strings.FieldsSeq(doc[wordStart(doc, r):]) {
		if len(w) >= 3 && isLetters(w) {
			return w
		}
	}
	return def
}

// capitalised returns one or two capitalised words of the document.
func capitalised(doc string, r *rng) string {
	prev := ""
	for w := range strings.FieldsSeq(doc[wordStart(doc, r):]) {
		isCap := len(w) >= 2 && w[0] >= 'A' && w[0] <= 'Z' && isLetters(w)
		switch {
		case prev != "" && isCap:
			return prev + " " + w
		case prev != "":
			return prev
		case isCap:
			prev = w
		}
	}
	if prev != "" {
		return prev
	}
	return "Jane Doe"
}

func isLetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// firstEmail returns the first well-formed address of the document (one
// any email format check accepts).
func firstEmail(doc string) string {
	for off := 0; ; {
		at := strings.IndexByte(doc[off:], '@')
		if at < 0 {
			return ""
		}
		at += off
		i, j := at, at+1
		for i > 0 && isEmailByte(doc[i-1]) {
			i--
		}
		for j < len(doc) && (isEmailByte(doc[j]) && doc[j] != '+' && doc[j] != '_') {
			j++
		}
		for j > at+1 && doc[j-1] == '.' {
			j--
		}
		if wellFormedEmail(doc[i:at], doc[at+1:j]) {
			return doc[i:j]
		}
		off = at + 1
	}
}

func isEmailByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+'
}

func wellFormedEmail(local, domain string) bool {
	if local == "" || local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return false
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
	}
	return len(labels[len(labels)-1]) >= 2 && isLetters(labels[len(labels)-1])
}

// firstDate returns the first YYYY-MM-DD of the document.
func firstDate(doc string) string {
	for i := 0; i+10 <= len(doc); i++ {
		d := doc[i : i+10]
		if digits(d[0:4]) && d[4] == '-' && digits(d[5:7]) && d[7] == '-' && digits(d[8:10]) &&
			d[5:7] >= "01" && d[5:7] <= "12" && d[8:10] >= "01" && d[8:10] <= "28" {
			return d
		}
	}
	return ""
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// vary makes a new instance of the example's shape: same keys, same types,
// values taken from the document. Short lowercase words are kept as they
// are, since they are likely enum members the answer must repeat.
func vary(v any, field string, doc string, r *rng) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = vary(e, k, doc, r)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = vary(e, field, doc, r)
		}
		return out
	case string:
		if looksLikeEnum(x) {
			return x
		}
		k := kindOf(field)
		if k == kindPhrase {
			switch {
			case firstDate(x) == x:
				k = kindDate
			case firstEmail(x) == x:
				k = kindEmail
			}
		}
		return docText(k, doc, r)
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return json.Number(fmt.Sprint(r.intn(1000)))
		}
		return json.Number(fmt.Sprintf("%d.%02d", r.intn(1000), r.intn(100)))
	case bool:
		return r.intn(2) == 1
	}
	return v
}

func looksLikeEnum(s string) bool {
	// "example" is what schema.Example writes for a free string: a
	// placeholder the answer must replace, never a member to repeat.
	if s == "" || len(s) > 20 || s == "example" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// A model that reads a provider form reads its descriptions too: the
// schema package moves what a form cannot carry (string lengths,
// uniqueItems, formats, bounds…) into a "(…; …)" note at the end of a
// description. restoreNotes puts those constraints back as keywords, so
// that the simulator's answers honour them as a careful model would.
// Notes it cannot read are left alone. raw is returned unchanged when
// nothing was restored or it is not JSON.
func restoreNotes(raw []byte) []byte {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return raw
	}
	if !restoreIn(doc) {
		return raw
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return raw
	}
	return out
}

// restoreIn restores the notes of every schema object under v.
func restoreIn(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		if d, ok := x["description"].(string); ok {
			for _, c := range splitClauses(trailingNote(d)) {
				if k, val, ok := noteKeyword(c); ok {
					if _, exists := x[k]; !exists {
						x[k] = val
						changed = true
					}
				}
			}
		}
		for _, e := range x {
			changed = restoreIn(e) || changed
		}
	case []any:
		for _, e := range x {
			changed = restoreIn(e) || changed
		}
	}
	return changed
}

// trailingNote returns the inside of a description's final "(…)" group,
// or "".
func trailingNote(d string) string {
	if !strings.HasSuffix(d, ")") {
		return ""
	}
	depth, start := 0, -1
	inStr := false
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '(':
			if depth == 0 {
				start = i
			}
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return ""
			}
		}
	}
	if depth != 0 || inStr || start < 0 {
		return ""
	}
	return d[start+1 : len(d)-1]
}

// splitClauses splits at "; " outside JSON strings, brackets and braces.
func splitClauses(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	depth, from := 0, 0
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ';' && depth == 0 && i+1 < len(s) && s[i+1] == ' ':
			out = append(out, s[from:i])
			from = i + 2
		}
	}
	return append(out, s[from:])
}

// noteKeywords are the keywords a "KEYWORD: JSON" note may restore.
var noteKeywords = map[string]bool{
	"not": true, "if": true, "then": true, "else": true, "dependentRequired": true, "dependentSchemas": true,
	"dependencies": true, "propertyNames": true, "contains": true, "minContains": true, "maxContains": true,
	"prefixItems": true, "unevaluatedItems": true, "minProperties": true, "maxProperties": true,
	"minLength": true, "maxLength": true, "minItems": true, "maxItems": true, "uniqueItems": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"pattern": true, "format": true, "const": true, "enum": true, "oneOf": true, "allOf": true,
}

// noteKeyword reads one clause of a provider form's note.
func noteKeyword(c string) (string, any, bool) {
	num := func(s string) (json.Number, bool) {
		var n json.Number
		if json.Unmarshal([]byte(s), &n) != nil {
			return "", false
		}
		return n, true
	}
	count := func(rest, word string) (json.Number, bool) {
		n, unit, ok := strings.Cut(rest, " ")
		if !ok || !strings.HasPrefix(unit, word) {
			return "", false
		}
		return num(n)
	}
	prefixed := []struct {
		prefix, key, unit string
	}{
		{"at least ", "minLength", "character"}, {"at most ", "maxLength", "character"},
		{"at least ", "minItems", "item"}, {"at most ", "maxItems", "item"},
		{"at least ", "minProperties", "propert"}, {"at most ", "maxProperties", "propert"},
		{"minimum ", "minimum", ""}, {"maximum ", "maximum", ""},
		{"greater than ", "exclusiveMinimum", ""}, {"less than ", "exclusiveMaximum", ""},
		{"a multiple of ", "multipleOf", ""},
	}
	for _, p := range prefixed {
		rest, ok := strings.CutPrefix(c, p.prefix)
		if !ok {
			continue
		}
		var n json.Number
		if p.unit != "" {
			n, ok = count(rest, p.unit)
		} else {
			n, ok = num(rest)
		}
		if ok {
			return p.key, n, true
		}
	}
	switch {
	case c == "items must be unique":
		return "uniqueItems", true, true
	case c == "non-empty": // a minLength of 1 (schema's describe)
		return "minLength", json.Number("1"), true
	case strings.HasPrefix(c, "format: "):
		return "format", strings.TrimPrefix(c, "format: "), true
	}
	for _, p := range []struct{ prefix, key string }{
		{"must match ", "pattern"}, {"one of ", "enum"}, {"exactly ", "const"}, {"items by position: ", "prefixItems"},
	} {
		if rest, ok := strings.CutPrefix(c, p.prefix); ok {
			var v any
			if decodeInto(rest, &v) == nil {
				return p.key, v, true
			}
		}
	}
	if k, rest, ok := strings.Cut(c, ": "); ok && noteKeywords[k] {
		var v any
		if decodeInto(rest, &v) == nil {
			return k, v, true
		}
	}
	return "", nil, false
}

// decodeInto decodes exactly one JSON value, numbers as json.Number.
func decodeInto(s string, v *any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing text after the value")
	}
	return nil
}

// guideLine is what a field guide says about one pointer.
type guideLine struct{ clauses []string }

// guideSection is the decoded <field-guide> of a prompt.
type guideSection struct {
	lines map[string]guideLine
	cut   bool // the guide ended with "… N more fields"
}

// parseGuide reads the lines schema.FieldGuide writes:
// "- POINTER: CLAUSE; CLAUSE — DESCRIPTION".
func parseGuide(text string) guideSection {
	g := guideSection{lines: map[string]guideLine{}}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		body, ok := strings.CutPrefix(line, "- ")
		if !ok {
			continue
		}
		if strings.HasPrefix(body, "… ") && strings.HasSuffix(body, " more fields") {
			g.cut = true
			continue
		}
		body = cutDescription(body)
		ptr, clauses, _ := strings.Cut(body, ": ")
		if ptr == "(root)" {
			ptr = ""
		}
		g.lines[ptr] = guideLine{clauses: splitClauses(clauses)}
	}
	return g
}

// cutDescription drops " — description" (outside JSON strings).
func cutDescription(s string) string {
	inStr := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && strings.HasPrefix(s[i:], " — "):
			return s[:i]
		}
	}
	return s
}

// guidedSchema infers a JSON Schema from a prompt's example and field
// guide: the example's shape (objects closed to its keys, every key
// required unless the guide says optional, arrays of its first item's
// shape, its scalar types), narrowed by every clause of the guide. A value
// the guide constrains in a way this reading does not follow, or one a cut
// guide (or no guide, for a word that looks like an enum member) may
// constrain unseen, is pinned to the example's own value, which is valid.
// Every instance of the result is therefore an instance of the schema the
// example and the guide were made from, as far as they tell it.
func guidedSchema(example any, guideText string) ([]byte, error) {
	g := parseGuide(guideText)
	noGuide := strings.TrimSpace(guideText) == ""
	s := inferNode(example, "", &g, noGuide)
	return json.Marshal(s)
}

func inferNode(v any, ptr string, g *guideSection, noGuide bool) map[string]any {
	line, has := g.lines[ptr]
	pin := map[string]any{"const": v}
	if !has && g.cut {
		_, isObj := v.(map[string]any)
		_, isArr := v.([]any)
		if !isObj && !isArr {
			return pin // a field the cut guide may have had something to say about
		}
	}
	var s map[string]any
	switch x := v.(type) {
	case map[string]any:
		props := map[string]any{}
		var required []any
		for _, k := range sortedKeys(x) {
			cp := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			props[k] = inferNode(x[k], cp, g, noGuide)
			if !slicesContains(g.lines[cp].clauses, "optional") {
				required = append(required, k)
			}
		}
		s = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
	case []any:
		if !has && g.cut {
			return pin // a count or uniqueness it may not have shown
		}
		s = map[string]any{"type": "array"}
		if len(x) == 0 {
			s["maxItems"] = 0
		} else {
			items := inferNode(x[0], ptr+"/*", g, noGuide)
			if _, pinned := items["const"]; pinned && len(items) == 1 {
				items = map[string]any{"enum": uniqueValues(x)} // any of the example's items
			}
			s["items"] = items
			if !has && noGuide { // a count it was not told
				s["minItems"], s["maxItems"] = len(x), len(x)
			}
		}
	case string:
		if noGuide && looksLikeEnum(x) {
			return pin
		}
		s = map[string]any{"type": "string"}
	case json.Number:
		s = map[string]any{"type": "number"}
		if !strings.ContainsAny(string(x), ".eE") {
			s["type"] = "integer"
		}
	case bool:
		s = map[string]any{"type": "boolean"}
	default:
		s = map[string]any{"type": "null"}
	}
	for _, c := range line.clauses {
		if !applyClause(s, c) {
			return pin
		}
	}
	return s
}

// applyClause narrows s by one field-guide clause; false means the clause
// is not understood (the caller pins the value).
func applyClause(s map[string]any, c string) bool {
	nullable := func() {
		if t, ok := s["type"].(string); ok && t != "null" {
			s["type"] = []any{t, "null"}
		}
	}
	for _, unit := range []struct{ word, lo, hi string }{
		{"character", "minLength", "maxLength"}, {"item", "minItems", "maxItems"},
	} {
		if lo, hi, ok := guideCount(c, unit.word); ok {
			if lo != "" {
				s[unit.lo] = lo
			}
			if hi != "" {
				s[unit.hi] = hi
			}
			return true
		}
	}
	switch {
	case c == "optional" || c == "other keys allowed":
		return true // handled by the parent / closed objects are narrower
	case c == "or null":
		nullable()
		return true
	case c == "unique items":
		s["uniqueItems"] = true
		return true
	case isTypeUnion(c):
		return true // the example's own type is one of them
	case strings.HasPrefix(c, "one of "):
		vals, ok := guideValues(strings.TrimPrefix(c, "one of "))
		if !ok {
			return false
		}
		if t, _ := s["type"].([]any); len(t) > 0 { // "or null" came first
			vals = append(vals, nil)
		}
		delete(s, "type")
		s["enum"] = vals
		return true
	case strings.HasPrefix(c, "exactly "):
		var v any
		if decodeInto(strings.TrimPrefix(c, "exactly "), &v) != nil {
			return false
		}
		delete(s, "type")
		s["const"] = v
		return true
	case strings.HasPrefix(c, "format "):
		name, _, _ := strings.Cut(strings.TrimPrefix(c, "format "), " ")
		s["format"] = name
		return true
	case strings.HasPrefix(c, "matches "):
		var p any
		if decodeInto(strings.TrimPrefix(c, "matches "), &p) != nil {
			return false
		}
		s["pattern"] = p
		return true
	case strings.HasPrefix(c, "multiple of "):
		n, ok := guideNumber(strings.TrimPrefix(c, "multiple of "))
		if ok {
			s["multipleOf"] = n
		}
		return ok
	}
	for _, op := range []struct{ prefix, key string }{
		{">= ", "minimum"}, {"> ", "exclusiveMinimum"}, {"<= ", "maximum"}, {"< ", "exclusiveMaximum"},
	} {
		if rest, ok := strings.CutPrefix(c, op.prefix); ok {
			n, ok := guideNumber(rest)
			if ok {
				s[op.key] = n
			}
			return ok
		}
	}
	if lo, hi, ok := strings.Cut(c, ".."); ok {
		l, lok := guideNumber(lo)
		h, hok := guideNumber(hi)
		if lok && hok {
			s["minimum"], s["maximum"] = l, h
			return true
		}
	}
	return false
}

var jsonTypeNames = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "object": true, "array": true, "null": true}

func isTypeUnion(c string) bool {
	parts := strings.Split(c, " or ")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if !jsonTypeNames[p] {
			return false
		}
	}
	return true
}

// guideValues reads `"a" (or "x", "y"), "b", … (N values)`: the values
// listed (a cut list gives a subset, which is still valid to choose from).
func guideValues(s string) ([]any, bool) {
	var out []any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	for {
		rest := strings.TrimSpace(s[dec.InputOffset():])
		if rest == "" || strings.HasPrefix(rest, "…") {
			return out, len(out) > 0
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, v)
		rest = strings.TrimLeft(s[dec.InputOffset():], " ")
		if strings.HasPrefix(rest, "(or ") { // aliases: the answer uses the value
			end := closingParen(rest)
			if end < 0 {
				return nil, false
			}
			rest = rest[end+1:]
		}
		if rest != "" {
			rest, ok := strings.CutPrefix(rest, ", ")
			if !ok {
				return nil, false
			}
			if strings.HasPrefix(rest, "…") {
				return out, true
			}
			s = rest
			dec = json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			continue
		}
		return out, true
	}
}

// closingParen finds the ")" closing the group s starts with, outside
// JSON strings.
func closingParen(s string) int {
	inStr := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && c == ')':
			return i
		}
	}
	return -1
}

// guideCount reads "1..300 characters", "at least 1 item", "at most 5
// items", "exactly 3 characters".
func guideCount(c, word string) (lo, hi json.Number, ok bool) {
	body, unit, found := strings.Cut(c, " "+word)
	if !found || (unit != "" && unit != "s") {
		return "", "", false
	}
	if rest, ok := strings.CutPrefix(body, "at least "); ok {
		n, ok := guideNumber(rest)
		return n, "", ok
	}
	if rest, ok := strings.CutPrefix(body, "at most "); ok {
		n, ok := guideNumber(rest)
		return "", n, ok
	}
	if rest, ok := strings.CutPrefix(body, "exactly "); ok {
		n, ok := guideNumber(rest)
		return n, n, ok
	}
	l, h, found := strings.Cut(body, "..")
	if !found {
		return "", "", false
	}
	ln, lok := guideNumber(l)
	hn, hok := guideNumber(h)
	return ln, hn, lok && hok
}

func guideNumber(s string) (json.Number, bool) {
	var v any
	if decodeInto(strings.TrimSpace(s), &v) != nil {
		return "", false
	}
	n, ok := v.(json.Number)
	return n, ok
}

// uniqueValues lists the distinct values of list, in order.
func uniqueValues(list []any) []any {
	var out []any
	seen := map[string]bool{}
	for _, v := range list {
		if k := canonical(v); !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func slicesContains(list []string, s string) bool { return slices.Contains(list, s) }

// distinct keeps a model's lists free of repeats: where two items of an
// array in v are equal, the later one goes back to the template's item at
// the same place (the template is a valid instance, so its arrays are as
// unique as the schema demands), and if that still repeats, the whole
// array does. Document-derived values can coincide where the template's
// did not; a careful model does not list the same keyword twice.
func distinct(v, template any) any {
	switch x := v.(type) {
	case map[string]any:
		t, _ := template.(map[string]any)
		for k, e := range x {
			x[k] = distinct(e, t[k])
		}
	case []any:
		t, _ := template.([]any)
		for i, e := range x {
			var te any
			if i < len(t) {
				te = t[i]
			}
			x[i] = distinct(e, te)
		}
		return distinctItems(x, t, template)
	}
	return v
}

// distinctItems is distinct's last step for an array x whose items have
// been made distinct themselves: t is template as an array.
func distinctItems(x, t []any, template any) any {
	if !hasRepeats(x) {
		return x
	}
	if len(t) != len(x) {
		return x // not from this template: leave it
	}
	for i := range x {
		for j := range i {
			if equalJSON(x[i], x[j]) {
				x[i] = clone(t[i])
				break
			}
		}
	}
	if hasRepeats(x) {
		return clone(template)
	}
	return x
}

// hasRepeats reports two equal items (as uniqueItems compares them). It
// runs on every answer's arrays, so it compares in place, without encoding.
func hasRepeats(list []any) bool {
	if len(list) > 64 { // long lists: by encoding, in linear time
		seen := make(map[string]bool, len(list))
		for _, e := range list {
			k := canonical(e)
			if seen[k] {
				return true
			}
			seen[k] = true
		}
		return false
	}
	for i := range list {
		for j := range i {
			if equalJSON(list[i], list[j]) {
				return true
			}
		}
	}
	return false
}

// equalJSON compares decoded JSON values as JSON Schema does (1 equals 1.0).
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		if !strings.ContainsAny(string(x)+string(y), ".eE") && x != "-0" && y != "-0" {
			return false // different integers, written as JSON writes them
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		return okx && oky && rx.Cmp(ry) == 0
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// canonical is a value's JSON with object keys sorted (encoding/json sorts
// map keys), so equal values give equal text.
func canonical(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
