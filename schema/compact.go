package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// The compact notation is documented in doc.go.

// compactTypes maps a compact scalar name to its JSON Schema.
var compactTypes = map[string][2]string{ // name -> {type, format}
	"string":    {"string", ""},
	"integer":   {"integer", ""},
	"int":       {"integer", ""},
	"number":    {"number", ""},
	"boolean":   {"boolean", ""},
	"bool":      {"boolean", ""},
	"null":      {"null", ""},
	"date":      {"string", "date"},
	"datetime":  {"string", "date-time"},
	"date-time": {"string", "date-time"},
	"time":      {"string", "time"},
	"email":     {"string", "email"},
	"uri":       {"string", "uri"},
	"url":       {"string", "uri"},
	"uuid":      {"string", "uuid"},
}

func compactTypeNames() string {
	return "string, integer, number, boolean, null, date, datetime, time, email, uri, uuid, enum(a,b,...)"
}

// isCompactSpec reports whether v parses as a compact field spec.
func isCompactSpec(v any) bool {
	_, err := compactField(v, "", 0)
	return err == nil
}

// compactError locates a problem in compact notation.
type compactError struct {
	pointer string
	msg     string
}

func (e *compactError) Error() string { return e.msg }

func cerr(ptr, format string, args ...any) error {
	return &compactError{pointer: ptr, msg: fmt.Sprintf(format, args...)}
}

// fromCompact converts compact notation to a strict JSON Schema 2020-12.
func fromCompact(doc any) (any, error) {
	s, err := compactField(doc, "", 0)
	if err != nil {
		return nil, err
	}
	root, ok := s.(*object)
	if !ok { // cannot happen: compactField returns objects
		return nil, cerr("", "not compact notation")
	}
	out := newObject()
	out.set("$schema", "https://json-schema.org/draft/2020-12/schema")
	for _, k := range root.keys {
		out.set(k, root.vals[k])
	}
	return out, nil
}

func compactField(v any, ptr string, depth int) (any, error) {
	if depth > maxNesting {
		return nil, cerr(ptr, "nested too deeply")
	}
	switch t := v.(type) {
	case string:
		return compactScalar(t, ptr)
	case *object:
		return compactObject(t, ptr, depth)
	case []any:
		return compactArray(t, ptr, depth)
	default:
		return nil, cerr(ptr, "a field must be a type (like \"string\"), a list like [\"string\"] or an object of fields; got %s", jsonText(v, 40))
	}
}

func compactObject(o *object, ptr string, depth int) (any, error) {
	out := newObject()
	out.set("type", "object")
	props := newObject()
	var required []any
	for _, k := range o.keys {
		kp := joinPointer(ptr, k)
		if k == "--" {
			d, ok := o.vals[k].(string)
			if !ok {
				return nil, cerr(kp, "the \"--\" key holds the object's description and must be a string")
			}
			out.set("description", d)
			continue
		}
		name, optional := strings.CutSuffix(k, "?")
		if name == "" {
			return nil, cerr(kp, "empty field name")
		}
		if props.vals[name] != nil {
			return nil, cerr(kp, "field %q is defined twice", name)
		}
		fs, err := compactField(o.vals[k], kp, depth+1)
		if err != nil {
			return nil, err
		}
		props.set(name, fs)
		if !optional {
			required = append(required, name)
		}
	}
	if props.len() == 0 {
		return nil, cerr(ptr, "an object needs at least one field")
	}
	if d, ok := out.get("description"); ok { // keep description after type
		out.del("description")
		out.set("description", d)
	}
	out.set("properties", props)
	out.set("required", append([]any{}, required...))
	out.set("additionalProperties", false)
	return out, nil
}

// compactArray reads [ITEM] or [ITEM, "MIN..MAX unique -- description"].
func compactArray(arr []any, ptr string, depth int) (any, error) {
	if len(arr) < 1 || len(arr) > 2 {
		return nil, cerr(ptr, "a list is written [ITEM] or [ITEM, \"MIN..MAX unique -- description\"], got %d elements", len(arr))
	}
	items, err := compactField(arr[0], joinPointer(ptr, "0"), depth+1)
	if err != nil {
		return nil, err
	}
	out := newObject()
	out.set("type", "array")
	if len(arr) == 2 {
		mods, ok := arr[1].(string)
		if !ok {
			return nil, cerr(joinPointer(ptr, "1"), "list options must be a string like \"1..10 unique\"")
		}
		body, desc := splitDescription(mods)
		if desc != "" {
			out.set("description", desc)
		}
		for _, tok := range strings.Fields(body) {
			switch {
			case tok == "unique":
				out.set("uniqueItems", true)
			case strings.Contains(tok, "..") || strings.ContainsAny(tok[:1], "<>"):
				lo, hi, err := parseCount(tok)
				if err != nil {
					return nil, cerr(joinPointer(ptr, "1"), "%v", err)
				}
				if lo != nil {
					out.set("minItems", lo)
				}
				if hi != nil {
					out.set("maxItems", hi)
				}
			default:
				return nil, cerr(joinPointer(ptr, "1"), "unknown list option %q (use MIN..MAX, unique, -- description)", tok)
			}
		}
	}
	out.set("items", items)
	return out, nil
}

var enumRe = regexp.MustCompile(`^enum\((.*)\)$`)

// compactScalar reads "TYPE [RANGE] [/PATTERN/] [-- description]" or
// "enum(a, b, c) [-- description]".
func compactScalar(spec, ptr string) (any, error) {
	body, desc := splitDescription(spec)
	body = strings.TrimSpace(body)
	out := newObject()
	if m := enumRe.FindStringSubmatch(body); m != nil {
		vals, aliases, err := splitEnum(m[1])
		if err != nil {
			return nil, cerr(ptr, "%v", err)
		}
		out.set("type", "string")
		out.set("enum", vals)
		if aliases.len() > 0 {
			out.set(AliasesKeyword, aliases)
		}
		if desc != "" {
			out.set("description", desc)
		}
		return out, nil
	}
	name, rest, _ := strings.Cut(body, " ")
	tf, ok := compactTypes[name]
	if !ok {
		if name == "" {
			return nil, cerr(ptr, "missing type (one of %s)", compactTypeNames())
		}
		return nil, cerr(ptr, "unknown type %q (use one of %s)", name, compactTypeNames())
	}
	out.set("type", tf[0])
	if tf[1] != "" {
		out.set("format", tf[1])
	}
	rest = strings.TrimSpace(rest)
	for rest != "" {
		if rest[0] == '/' {
			end := patternEnd(rest)
			if end < 0 {
				return nil, cerr(ptr, "pattern %s is not closed with /", rest)
			}
			if tf[0] != "string" {
				return nil, cerr(ptr, "a pattern applies to strings, not %s", name)
			}
			pat := rest[1:end]
			if _, err := compileRegexp(pat); err != nil {
				return nil, cerr(ptr, "bad pattern /%s/: %v", pat, err)
			}
			out.set("pattern", pat)
			rest = strings.TrimSpace(rest[end+1:])
			continue
		}
		tok, r, _ := strings.Cut(rest, " ")
		rest = strings.TrimSpace(r)
		switch tf[0] {
		case "integer", "number":
			if err := setRange(out, tok, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", false); err != nil {
				return nil, cerr(ptr, "%v", err)
			}
		case "string":
			if tf[1] != "" {
				return nil, cerr(ptr, "unexpected %q: a %s takes no range", tok, name)
			}
			if err := setRange(out, tok, "minLength", "maxLength", "", "", true); err != nil {
				return nil, cerr(ptr, "%v (a range on a string is its length)", err)
			}
		default:
			return nil, cerr(ptr, "unexpected %q after %s", tok, name)
		}
	}
	if desc != "" {
		out.set("description", desc)
	}
	return out, nil
}

// patternEnd finds the closing slash of a /pattern/: the first unescaped
// slash followed by a space or the end of the text.
func patternEnd(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			if i+1 == len(s) || s[i+1] == ' ' {
				return i
			}
		}
	}
	return -1
}

// splitDescription splits "spec -- description" at the first " -- " that
// is not inside a /pattern/. ("#" would start a comment in YAML.)
func splitDescription(s string) (body, desc string) {
	inPattern := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && inPattern:
			i++
		case c == '/' && !inPattern && (i == 0 || s[i-1] == ' '):
			inPattern = true
		case c == '/' && inPattern && (i+1 == len(s) || s[i+1] == ' '):
			inPattern = false
		case c == '-' && !inPattern && strings.HasPrefix(s[i:], "--") && (i == 0 || s[i-1] == ' ') && (i+2 == len(s) || s[i+2] == ' '):
			return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+2:])
		}
	}
	return strings.TrimSpace(s), ""
}

// splitEnum splits `a, b "alias" "other", "c, d" "alias"` into the values
// and their aliases: each item is a value (bare, or quoted when it holds a
// comma or a quote) followed by zero or more quoted aliases.
func splitEnum(s string) ([]any, *object, error) {
	var out []any
	aliases := newObject()
	seen := map[string]bool{}
	s = strings.TrimSpace(s)
	quoted := func() (string, error) {
		var q string
		dec := json.NewDecoder(strings.NewReader(s))
		if err := dec.Decode(&q); err != nil {
			return "", fmt.Errorf("bad quoted enum value in %s", s)
		}
		s = strings.TrimSpace(s[dec.InputOffset():])
		return q, nil
	}
	for s != "" {
		var v string
		if s[0] == '"' {
			q, err := quoted()
			if err != nil {
				return nil, nil, err
			}
			v = q
		} else {
			end := strings.IndexAny(s, ",\"")
			if end < 0 {
				end = len(s)
			}
			v, s = strings.TrimSpace(s[:end]), strings.TrimSpace(s[end:])
			if v == "" {
				return nil, nil, fmt.Errorf("empty enum value (quote it as \"\" if you mean the empty string)")
			}
		}
		if seen[v] {
			return nil, nil, fmt.Errorf("enum value %q is listed twice", v)
		}
		seen[v] = true
		out = append(out, v)
		var al []any
		for s != "" && s[0] == '"' {
			a, err := quoted()
			if err != nil {
				return nil, nil, err
			}
			al = append(al, a)
		}
		if len(al) > 0 {
			aliases.set(v, al)
		}
		if s != "" && !strings.HasPrefix(s, ",") {
			return nil, nil, fmt.Errorf("expected a comma or a quoted alias after %q, got %s", v, s)
		}
		s = strings.TrimSpace(strings.TrimPrefix(s, ","))
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("enum() needs at least one value")
	}
	return out, aliases, nil
}

// setRange reads "A..B", "A..", "..B", ">A", ">=A", "<B", "<=B".
func setRange(out *object, tok, minKey, maxKey, exMinKey, exMaxKey string, count bool) error {
	parse := func(s string) (json.Number, error) {
		r, ok := new(big.Rat).SetString(s)
		if !ok || strings.ContainsAny(s, "/eE") {
			return "", fmt.Errorf("%q is not a number", s)
		}
		if count && (!r.IsInt() || r.Sign() < 0) {
			return "", fmt.Errorf("%q is not a count", s)
		}
		return json.Number(s), nil
	}
	set := func(key, s string) error {
		if key == "" {
			return fmt.Errorf("%q: use MIN..MAX for lengths", tok)
		}
		n, err := parse(s)
		if err != nil {
			return err
		}
		out.set(key, n)
		return nil
	}
	switch {
	case strings.HasPrefix(tok, ">="):
		return set(minKey, tok[2:])
	case strings.HasPrefix(tok, "<="):
		return set(maxKey, tok[2:])
	case strings.HasPrefix(tok, ">"):
		return set(exMinKey, tok[1:])
	case strings.HasPrefix(tok, "<"):
		return set(exMaxKey, tok[1:])
	}
	lo, hi, ok := strings.Cut(tok, "..")
	if !ok {
		return fmt.Errorf("unexpected %q (write a range as MIN..MAX, MIN.., ..MAX, >N or <=N)", tok)
	}
	if lo == "" && hi == "" {
		return fmt.Errorf("empty range %q", tok)
	}
	if lo != "" {
		if err := set(minKey, lo); err != nil {
			return err
		}
	}
	if hi != "" {
		if err := set(maxKey, hi); err != nil {
			return err
		}
	}
	if lo != "" && hi != "" {
		l, _ := new(big.Rat).SetString(lo)
		h, _ := new(big.Rat).SetString(hi)
		if l.Cmp(h) > 0 {
			return fmt.Errorf("range %q is empty: %s is greater than %s", tok, lo, hi)
		}
	}
	return nil
}

// parseCount reads an item-count range for lists.
func parseCount(tok string) (lo, hi any, err error) {
	o := newObject()
	if err := setRange(o, tok, "min", "max", "", "", true); err != nil {
		return nil, nil, err
	}
	lo, _ = o.get("min")
	hi, _ = o.get("max")
	return lo, hi, nil
}
