package schema

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// AliasesKeyword is the extension keyword that lists other ways a document
// may write an enum's values. It sits beside "enum" in the same schema
// object and maps each string value to its aliases (one string or a list):
//
//	{"enum": ["open", "closed"],
//	 "x-aliases": {"open": ["opened", "active"], "closed": "done"}}
//
// The compact notation writes the same as enum(open "opened" "active",
// closed "done"). Validation is unchanged (only the enum values are valid);
// an "enum" Violation carries the aliases (Violation.Aliases) so that a
// repair step can map "active" to "open", and provider forms that reject
// unknown keywords get them in the description instead. Every key must be
// one of the enum's strings, and an alias may not stand for two values or
// be another value of the same enum (ignoring case and surrounding space).
const AliasesKeyword = "x-aliases"

// aliasTable holds the x-aliases of a schema by the absolute location of
// the schema object that carries them ("mem:///schema.json#/properties/status"),
// which is how the validator names the schema behind a violation.
type aliasTable map[string]map[string][]string

// collectAliases checks and gathers every x-aliases in doc (plain form).
func collectAliases(doc any, docURL string, into aliasTable) error {
	var err error
	walkPlainSchemas(doc, "", func(ptr string, m map[string]any) bool {
		raw, ok := m[AliasesKeyword]
		if !ok {
			return true
		}
		at := joinPointer(ptr, AliasesKeyword)
		al, e := readAliases(raw, m["enum"])
		if e != nil {
			err = &Error{Pointer: at, Message: e.Error() + ` (write "x-aliases": {"enum value": ["alias", …]} beside "enum")`}
			return false
		}
		if len(al) > 0 {
			into[docURL+"#"+ptr] = al
		}
		return true
	})
	return err
}

// readAliases checks one x-aliases value against its enum.
func readAliases(raw, enum any) (map[string][]string, error) {
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("x-aliases must be an object, got %s", jsonText(raw, 40))
	}
	values, ok := enum.([]any)
	if !ok {
		return nil, fmt.Errorf("x-aliases needs an enum beside it")
	}
	canon := map[string]string{} // folded enum string -> the value
	for _, v := range values {
		if s, ok := v.(string); ok {
			canon[fold(s)] = s
		}
	}
	out := make(map[string][]string, len(obj))
	owner := map[string]string{} // folded alias -> the value it stands for
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if c, ok := canon[fold(k)]; !ok || c != k {
			return nil, fmt.Errorf("x-aliases names %q, which is not one of the enum's values", k)
		}
		var list []string
		switch a := obj[k].(type) {
		case string:
			list = []string{a}
		case []any:
			for _, e := range a {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("the aliases of %q must be strings, got %s", k, jsonText(e, 40))
				}
				list = append(list, s)
			}
		default:
			return nil, fmt.Errorf("the aliases of %q must be a string or a list of strings, got %s", k, jsonText(a, 40))
		}
		for _, a := range list {
			f := fold(a)
			switch {
			case f == "":
				return nil, fmt.Errorf("an alias of %q is empty", k)
			case canon[f] != "" && canon[f] != k:
				return nil, fmt.Errorf("alias %q of %q is itself the enum value %q", a, k, canon[f])
			case owner[f] != "" && owner[f] != k:
				return nil, fmt.Errorf("alias %q stands for both %q and %q", a, owner[f], k)
			}
			owner[f] = k
		}
		if len(list) > 0 {
			out[k] = list
		}
	}
	return out, nil
}

func fold(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// lookup returns the aliases of the enum at a violation's schema location
// (the validator may add the keyword to the location: ".../enum").
func (t aliasTable) lookup(schemaURL string) map[string][]string {
	if len(t) == 0 {
		return nil
	}
	if a, ok := t[schemaURL]; ok {
		return a
	}
	return t[strings.TrimSuffix(schemaURL, "/enum")]
}

// aliasNote describes x-aliases for a provider form that cannot carry the
// keyword: write "open" for "opened" or "active", "closed" for "done".
func aliasNote(raw, enum any) string {
	var parts []string
	obj, _ := raw.(*object)
	if obj == nil {
		return ""
	}
	values, _ := enum.([]any)
	for _, v := range values { // in the enum's order
		s, ok := v.(string)
		if !ok {
			continue
		}
		var list []string
		switch a := obj.vals[s].(type) {
		case string:
			list = []string{a}
		case []any:
			for _, e := range a {
				if es, ok := e.(string); ok {
					list = append(list, es)
				}
			}
		}
		if len(list) == 0 {
			continue
		}
		q := make([]string, len(list))
		for i, a := range list {
			q[i] = strconv.Quote(a)
		}
		parts = append(parts, strconv.Quote(s)+" for "+strings.Join(q, " or "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "write " + strings.Join(parts, ", ")
}

// walkPlainSchemas calls fn for every schema object of a plain document,
// following the keywords that hold subschemas; fn returns false to stop.
func walkPlainSchemas(node any, ptr string, fn func(ptr string, m map[string]any) bool) bool {
	m, ok := node.(map[string]any)
	if !ok {
		return true
	}
	if !fn(ptr, m) {
		return false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch {
		case contains(subschemaMap, k):
			sub, _ := v.(map[string]any)
			names := make([]string, 0, len(sub))
			for n := range sub {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if !walkPlainSchemas(sub[n], joinPointer(ptr, k, n), fn) {
					return false
				}
			}
		case contains(subschemaList, k) && isList(v):
			for i, e := range v.([]any) {
				if !walkPlainSchemas(e, joinPointer(ptr, k, strconv.Itoa(i)), fn) {
					return false
				}
			}
		case contains(subschemaOne, k) || k == "dependencies":
			if k == "dependencies" { // draft 7: schemas or property lists
				deps, _ := v.(map[string]any)
				names := make([]string, 0, len(deps))
				for n := range deps {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					if !walkPlainSchemas(deps[n], joinPointer(ptr, k, n), fn) {
						return false
					}
				}
				continue
			}
			if !walkPlainSchemas(v, joinPointer(ptr, k), fn) {
				return false
			}
		}
	}
	return true
}
