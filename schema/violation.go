package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Violation is one way an instance fails its schema.
type Violation struct {
	// Pointer is the instance JSON pointer, "" for the root. For a missing
	// required property it points at the missing property.
	Pointer string `json:"pointer"`
	Keyword string `json:"keyword"`         // the failing keyword, e.g. "type", "required"
	Message string `json:"message"`         // short, model-readable message
	Value   string `json:"value,omitempty"` // offending value as JSON, truncated to ~80 chars
	// Want carries what the keyword wanted where it is a list: the allowed
	// types for "type", the allowed values (as JSON) for "enum"/"const",
	// the declared types of the missing property for "required" (when its
	// schema states them), the allowed property names for
	// "additionalProperties".
	Want []string `json:"want,omitempty"`
	// Aliases maps enum values (the strings themselves, not JSON) to the
	// other spellings the schema's author listed for them in x-aliases
	// (AliasesKeyword), so that a repair can turn "active" into "open". It
	// is set on an "enum" violation, and on an "anyOf"/"oneOf" one whose
	// alternatives are enums and types (an enum or null), when the enums
	// have aliases; nil otherwise.
	Aliases map[string][]string `json:"aliases,omitempty"`
}

// maxValueChars is how much of an offending value a violation quotes.
const maxValueChars = 80

// violations flattens a validation error into deduplicated, sorted
// violations. instance (may be nil) supplies the offending values; s (may
// be nil) supplies the schema for hints such as the allowed property names.
func violations(ve *jsonschema.ValidationError, instance any, s *Schema) []Violation {
	c := collector{instance: instance, schema: s}
	c.walk(ve)
	return normalize(c.out)
}

type collector struct {
	instance any
	schema   *Schema
	out      []Violation
}

func (c *collector) walk(ve *jsonschema.ValidationError) {
	switch k := ve.ErrorKind.(type) {
	case *kind.AnyOf:
		if len(ve.Causes) > 0 {
			c.alternatives(ve, "anyOf")
			return
		}
	case *kind.OneOf:
		if len(k.Subschemas) == 0 && len(ve.Causes) > 0 {
			c.alternatives(ve, "oneOf")
			return
		}
	case *kind.PropertyNames:
		c.leaf(ve) // its causes describe the name, not a location
		return
	}
	if len(ve.Causes) > 0 {
		for _, cause := range ve.Causes {
			c.walk(cause)
		}
		return
	}
	c.leaf(ve)
}

// alternatives reports a failed anyOf/oneOf without listing every branch's
// failures: when the value's type matched some branch, that branch's
// (fewest) violations are the useful ones; when it matched none, one
// violation lists the allowed types or values.
func (c *collector) alternatives(ve *jsonschema.ValidationError, kw string) {
	ptr := pointer(ve.InstanceLocation)
	var best []Violation
	var wantTypes, wantValues []string
	var aliases map[string][]string
	allShallow := true
	for _, cause := range ve.Causes {
		sub := collector{instance: c.instance, schema: c.schema}
		sub.walk(cause)
		vs := normalize(sub.out)
		shallow := len(vs) > 0
		for _, v := range vs {
			if v.Pointer != ptr || (v.Keyword != "type" && v.Keyword != "enum" && v.Keyword != "const") {
				shallow = false
			}
		}
		if shallow {
			for _, v := range vs {
				if v.Keyword == "type" {
					wantTypes = append(wantTypes, v.Want...)
				} else {
					wantValues = append(wantValues, v.Want...)
					aliases = mergeAliases(aliases, v.Aliases)
				}
			}
			continue
		}
		allShallow = false
		if best == nil || len(vs) < len(best) {
			best = vs
		}
	}
	if !allShallow && best != nil {
		c.out = append(c.out, best...)
		return
	}
	wantTypes, wantValues = uniq(wantTypes), uniq(wantValues)
	v := Violation{Pointer: ptr, Value: c.valueAt(ve.InstanceLocation)}
	switch {
	case len(wantValues) == 0 && len(wantTypes) > 0:
		v.Keyword, v.Want = "type", wantTypes
		v.Message = "must be " + orList(wantTypes) + ", not " + typeName(c.lookup(ve.InstanceLocation))
	case len(wantTypes) == 0 && len(wantValues) > 0:
		v.Keyword, v.Want, v.Aliases = "enum", wantValues, aliases
		v.Message = "must be one of " + valueList(wantValues)
	default:
		v.Keyword = kw
		v.Message = "does not match any of the allowed alternatives"
		if len(wantValues) > 0 && len(wantTypes) > 0 {
			v.Message = "must be one of " + valueList(wantValues) + ", or of type " + orList(wantTypes)
			v.Aliases = aliases
		}
	}
	c.out = append(c.out, v)
}

func (c *collector) leaf(ve *jsonschema.ValidationError) {
	loc := ve.InstanceLocation
	ptr := pointer(loc)
	v := Violation{Pointer: ptr, Value: c.valueAt(loc)}
	kw := strings.Join(ve.ErrorKind.KeywordPath(), "/")
	v.Keyword = kw
	switch k := ve.ErrorKind.(type) {
	case *kind.Type:
		v.Keyword, v.Want = "type", append([]string(nil), k.Want...)
		got := k.Got
		if c.instance != nil {
			got = typeName(c.lookup(loc))
		}
		v.Message = "must be " + orList(k.Want) + ", not " + got
	case *kind.Enum:
		v.Keyword = "enum"
		for _, w := range k.Want {
			v.Want = append(v.Want, jsonText(w, -1))
		}
		v.Message = "must be one of " + valueList(v.Want)
		if c.schema != nil {
			v.Aliases = c.schema.aliases.lookup(ve.SchemaURL)
		}
	case *kind.Const:
		v.Keyword, v.Want = "const", []string{jsonText(k.Want, -1)}
		v.Message = "must be exactly " + truncate(v.Want[0], maxValueChars)
	case *kind.Required:
		props, _ := c.propsAt(ve.SchemaURL)
		for _, m := range k.Missing {
			c.out = append(c.out, Violation{Pointer: joinPointer(ptr, m), Keyword: "required", Message: "required property is missing",
				Want: c.declaredTypes(props[m])})
		}
		return
	case *kind.AdditionalProperties:
		hint := c.allowedProps(ve.SchemaURL)
		props, _ := c.propsAt(ve.SchemaURL)
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, p := range k.Properties {
			pl := append(append([]string(nil), loc...), p)
			c.out = append(c.out, Violation{Pointer: joinPointer(ptr, p), Keyword: "additionalProperties",
				Message: "property is not allowed" + hint, Value: c.valueAt(pl), Want: names})
		}
		return
	case *kind.DependentRequired:
		v.Keyword = "dependentRequired"
		v.Message = fmt.Sprintf("%s required when %q is present", propList(k.Missing), k.Prop)
	case *kind.Dependency:
		v.Keyword = "dependencies"
		v.Message = fmt.Sprintf("%s required when %q is present", propList(k.Missing), k.Prop)
	case *kind.MinLength:
		v.Message = "must have at least " + plural(k.Want, "character") + " (has " + strconv.Itoa(k.Got) + ")"
	case *kind.MaxLength:
		v.Message = "must have at most " + plural(k.Want, "character") + " (has " + strconv.Itoa(k.Got) + ")"
	case *kind.Pattern:
		v.Message = "must match the pattern " + truncate(k.Want, 120)
	case *kind.Format:
		v.Message = "must be a valid " + k.Want + formatHint(k.Want)
	case *kind.Minimum:
		v.Message = "must be >= " + ratText(k.Want)
	case *kind.Maximum:
		v.Message = "must be <= " + ratText(k.Want)
	case *kind.ExclusiveMinimum:
		v.Message = "must be > " + ratText(k.Want)
	case *kind.ExclusiveMaximum:
		v.Message = "must be < " + ratText(k.Want)
	case *kind.MultipleOf:
		v.Message = "must be a multiple of " + ratText(k.Want)
	case *kind.MinItems:
		v.Message = "must have at least " + plural(k.Want, "item") + " (has " + strconv.Itoa(k.Got) + ")"
	case *kind.MaxItems:
		v.Message = "must have at most " + plural(k.Want, "item") + " (has " + strconv.Itoa(k.Got) + ")"
	case *kind.MinProperties:
		v.Message = "must have at least " + plural(k.Want, "property") + " (has " + strconv.Itoa(k.Got) + ")"
	case *kind.MaxProperties:
		v.Message = "must have at most " + plural(k.Want, "property") + " (has " + strconv.Itoa(k.Got) + ")"
	case *kind.UniqueItems:
		v.Message = fmt.Sprintf("items must be unique, but items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		v.Message = "must contain at least one item matching the schema"
	case *kind.MinContains:
		v.Message = fmt.Sprintf("must contain at least %d matching items (has %d)", k.Want, len(k.Got))
	case *kind.MaxContains:
		v.Message = fmt.Sprintf("must contain at most %d matching items (has %d)", k.Want, len(k.Got))
	case *kind.AdditionalItems:
		v.Message = "has " + plural(k.Count, "item") + " more than allowed"
	case *kind.PropertyNames:
		v.Pointer = joinPointer(ptr, k.Property)
		v.Value = strconv.Quote(k.Property)
		v.Message = "property name is not allowed"
	case *kind.OneOf:
		v.Message = fmt.Sprintf("must match exactly one alternative, but matches alternatives %d and %d", k.Subschemas[0], k.Subschemas[1])
	case *kind.Not:
		v.Keyword = "not"
		v.Message = "must not match the excluded schema"
	case *kind.FalseSchema:
		v.Keyword = "false"
		v.Message = "is not allowed here"
	case *kind.ContentEncoding:
		v.Message = "must be " + k.Want + " encoded"
	case *kind.ContentMediaType:
		v.Message = "must be " + k.Want + " content"
	case *kind.ContentSchema:
		v.Message = "content does not match its schema"
	default:
		v.Message = "is invalid"
		if kw != "" {
			v.Message += " (" + kw + ")"
		}
	}
	if v.Keyword == "" {
		v.Keyword = "schema"
	}
	c.out = append(c.out, v)
}

// lookup returns the instance value at loc (nil if absent).
func (c *collector) lookup(loc []string) any {
	v := c.instance
	for _, t := range loc {
		switch x := v.(type) {
		case map[string]any:
			v = x[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func (c *collector) valueAt(loc []string) string {
	if c.instance == nil {
		return ""
	}
	return jsonText(c.lookup(loc), maxValueChars)
}

// allowedProps names the properties the object at schemaURL declares, so a
// model that misspelt a field sees the right spelling.
func (c *collector) allowedProps(schemaURL string) string {
	props, ok := c.propsAt(schemaURL)
	if !ok {
		return ""
	}
	if len(props) == 0 {
		return " (no properties are allowed here)"
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 20 {
		return ""
	}
	return " (allowed: " + strings.Join(names, ", ") + ")"
}

// propsAt returns the "properties" of the object schema at schemaURL, and
// whether that schema was found.
func (c *collector) propsAt(schemaURL string) (map[string]any, bool) {
	if c.schema == nil {
		return nil, false
	}
	u, frag, _ := strings.Cut(schemaURL, "#")
	var doc any
	if u == c.schema.baseURL {
		doc = c.schema.plain
	} else if d, ok := c.schema.external[u]; ok {
		doc = d
	} else {
		return nil, false
	}
	frag = strings.TrimSuffix(frag, "/additionalProperties")
	node, ok := resolvePointer(doc, frag)
	if !ok {
		return nil, false
	}
	m, _ := node.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	return props, true
}

// declaredTypes returns the "type" a property schema states, following
// one "$ref" within the main document; nil when it states none.
func (c *collector) declaredTypes(prop any) []string {
	m, _ := prop.(map[string]any)
	if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#") && c.schema != nil {
		if target, ok := resolvePointer(c.schema.plain, ref[1:]); ok {
			m, _ = target.(map[string]any)
		}
	}
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// resolvePointer walks a JSON pointer (fragment form) through a plain document.
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, t := range strings.Split(ptr[1:], "/") {
		t = unescapeToken(t)
		switch x := doc.(type) {
		case map[string]any:
			v, ok := x[t]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			doc = x[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// mergeAliases unites the aliases of several enums (the alternatives of
// an anyOf), without changing either map.
func mergeAliases(a, b map[string][]string) map[string][]string {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make(map[string][]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = uniq(append(append([]string(nil), out[k]...), v...))
	}
	return out
}

// normalize removes duplicates and sorts by pointer (array indices
// numerically), keyword and message.
func normalize(vs []Violation) []Violation {
	if len(vs) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(vs))
	out := vs[:0:0]
	for _, v := range vs {
		key := v.Pointer + "\x00" + v.Keyword + "\x00" + v.Message
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if c := comparePointers(out[i].Pointer, out[j].Pointer); c != 0 {
			return c < 0
		}
		if out[i].Keyword != out[j].Keyword {
			return out[i].Keyword < out[j].Keyword
		}
		return out[i].Message < out[j].Message
	})
	return out
}

func comparePointers(a, b string) int {
	at, bt := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == bt[i] {
			continue
		}
		ai, aerr := strconv.Atoi(at[i])
		bi, berr := strconv.Atoi(bt[i])
		if aerr == nil && berr == nil {
			if ai < bi {
				return -1
			}
			return 1
		}
		if at[i] < bt[i] {
			return -1
		}
		return 1
	}
	return len(at) - len(bt)
}

func pointer(tokens []string) string { return joinPointer("", tokens...) }

// jsonText renders v as JSON, truncated to max characters (max < 0: whole).
func jsonText(v any, max int) string {
	b, err := marshal(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	if max < 0 {
		return string(b)
	}
	return truncate(string(b), max)
}

// truncate shortens s to at most max characters, marking the cut with "…".
func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := x.Int64(); err == nil || !strings.ContainsAny(string(x), ".eE") {
			return "integer"
		}
		return "number"
	case float64, float32:
		return "number"
	case int, int64, int32:
		return "integer"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "value"
}

func orList(ws []string) string {
	switch len(ws) {
	case 0:
		return "nothing"
	case 1:
		return ws[0]
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " or " + ws[len(ws)-1]
}

// valueList lists allowed values, shortened when there are many.
func valueList(ws []string) string {
	const show = 12
	if len(ws) <= show {
		return truncate(strings.Join(ws, ", "), 400)
	}
	return truncate(strings.Join(ws[:show], ", "), 400) + fmt.Sprintf(", … (%d allowed values)", len(ws))
}

func propList(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = strconv.Quote(p)
	}
	if len(q) == 1 {
		return "property " + q[0] + " is"
	}
	return "properties " + strings.Join(q, ", ") + " are"
}

func uniq(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// ratText prints a number exactly, as a decimal where it has one.
func ratText(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	if s := r.FloatString(12); strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		if back, ok := new(big.Rat).SetString(s); ok && back.Cmp(r) == 0 {
			return s
		}
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

var formatHints = map[string]string{
	"date-time": " (RFC 3339, e.g. 2024-01-31T09:30:00Z)",
	"date":      " (YYYY-MM-DD)",
	"time":      " (HH:MM:SS with a zone, e.g. 09:30:00Z)",
	"duration":  " (ISO 8601, e.g. P3DT4H)",
	"email":     " address",
	"uri":       " (absolute, with a scheme)",
	"uuid":      " (8-4-4-4-12 hex digits)",
	"ipv4":      " address",
	"ipv6":      " address",
	"regex":     " regular expression",
}

func formatHint(f string) string { return formatHints[f] }

// RenderFeedback turns violations into a short list a model can act on,
// one line per problem ("- /title: must be string, not integer; got 42"),
// at most maxChars long (<= 0: no limit). It names no library, URL or Go
// type, only the answer's JSON pointers and the schema's terms.
func RenderFeedback(vs []Violation, maxChars int) string {
	var b strings.Builder
	for i, v := range vs {
		line := feedbackLine(v)
		if maxChars > 0 {
			more := len(vs) - i - 1
			tail := 0
			if more > 0 {
				tail = len("\n" + moreLine(more+1))
			}
			if b.Len()+len(line)+1+tail > maxChars {
				if b.Len() == 0 { // not even one line fits: cut it
					return truncate(line, max(maxChars, 2))
				}
				rest := moreLine(len(vs) - i)
				if b.Len()+1+len(rest) <= maxChars {
					b.WriteByte('\n')
					b.WriteString(rest)
				}
				return b.String()
			}
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	return b.String()
}

// plural writes "1 item", "2 items", "3 properties".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") {
		return strconv.Itoa(n) + " " + strings.TrimSuffix(word, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func moreLine(n int) string {
	if n == 1 {
		return "- … and 1 more problem"
	}
	return fmt.Sprintf("- … and %d more problems", n)
}

func feedbackLine(v Violation) string {
	where := v.Pointer
	if where == "" {
		where = "(root)"
	}
	line := "- " + where + ": " + v.Message
	if v.Value != "" && v.Keyword != "required" && v.Keyword != "additionalProperties" {
		line += "; got " + v.Value
	}
	return line
}
