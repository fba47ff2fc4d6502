package chunk

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Part is one chunk's valid answer, decoded with json.Number numbers.
type Part struct {
	Chunk int
	Value any
}

// Candidate is one value chunks gave for a field in conflict.
type Candidate struct {
	Value  any
	Chunks []int
}

// Conflict is a field to which chunks gave different values.
type Conflict struct {
	Pointer    string
	Candidates []Candidate
}

// Merged is the outcome of Merge.
type Merged struct {
	Value any
	// Origin maps the pointer of each string and number leaf of Value to
	// the chunk whose answer gave it.
	Origin map[string]int
	// Conflicts lists the fields chunks disagreed on; Value holds the
	// first chunk's candidate there until the conflict is resolved.
	Conflicts []Conflict
}

// Merge combines the parts, in chunk order, under schema node root (the
// original schema as plain JSON). Objects merge field by field; arrays are
// concatenated and de-duplicated: by the item field named in mergeKeys
// (array pointer with "*" for indices, e.g. "/items") or the schema's
// "x-merge-key", else by equality of the whole item after normalisation
// (case, whitespace, number format), which also removes the items the
// overlap between chunks repeated. Scalars that agree after normalisation
// merge; different ones become a Conflict.
func Merge(root map[string]any, parts []Part, mergeKeys map[string]string) Merged {
	m := &merger{keys: mergeKeys, out: Merged{Origin: map[string]int{}}}
	vals := make([]Part, 0, len(parts))
	for _, p := range parts {
		if p.Value != nil {
			vals = append(vals, p)
		}
	}
	m.out.Value = m.merge(root, "", "", vals)
	return m.out
}

type merger struct {
	keys map[string]string
	out  Merged
}

// merge merges the values at ptr; shape is ptr with array indices as "*".
func (m *merger) merge(node map[string]any, ptr, shape string, parts []Part) any {
	if len(parts) == 0 {
		return nil
	}
	switch parts[0].Value.(type) {
	case map[string]any:
		return m.mergeObjects(node, ptr, shape, parts)
	case []any:
		return m.mergeArrays(node, ptr, shape, parts)
	}
	// Scalars: group by normalised value, first-seen order.
	var groups []Candidate
	for _, p := range parts {
		k := norm(p.Value)
		i := slices.IndexFunc(groups, func(c Candidate) bool { return norm(c.Value) == k })
		if i < 0 {
			groups = append(groups, Candidate{Value: p.Value})
			i = len(groups) - 1
		}
		groups[i].Chunks = append(groups[i].Chunks, p.Chunk)
	}
	if len(groups) > 1 {
		m.out.Conflicts = append(m.out.Conflicts, Conflict{Pointer: ptr, Candidates: groups})
	}
	m.mark(ptr, groups[0].Value, groups[0].Chunks[0])
	return groups[0].Value
}

func (m *merger) mergeObjects(node map[string]any, ptr, shape string, parts []Part) any {
	props, _ := node["properties"].(map[string]any)
	byKey := map[string][]Part{}
	var order []string
	for _, p := range parts {
		obj, ok := p.Value.(map[string]any)
		if !ok {
			continue // a type mismatch cannot come from valid parts
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if obj[k] == nil {
				continue // a strict form's "absent"
			}
			if _, seen := byKey[k]; !seen {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], Part{Chunk: p.Chunk, Value: obj[k]})
		}
	}
	out := make(map[string]any, len(order))
	for _, k := range order {
		child, _ := props[k].(map[string]any)
		tok := escape(k)
		out[k] = m.merge(child, ptr+"/"+tok, shape+"/"+tok, byKey[k])
	}
	return out
}

func (m *merger) mergeArrays(node map[string]any, ptr, shape string, parts []Part) any {
	items, _ := node["items"].(map[string]any)
	key := m.keys[shape]
	if key == "" {
		key, _ = items["x-merge-key"].(string)
		if key == "" {
			key, _ = node["x-merge-key"].(string)
		}
	}
	out := []any{}
	index := map[string]int{}
	type keyed struct{ parts []Part }
	var groups []*keyed
	for _, p := range parts {
		arr, _ := p.Value.([]any)
		for _, it := range arr {
			id := norm(it)
			if obj, ok := it.(map[string]any); ok && key != "" && obj[key] != nil {
				id = "key:" + norm(obj[key])
			}
			if g, ok := index[id]; ok {
				groups[g].parts = append(groups[g].parts, Part{Chunk: p.Chunk, Value: it})
				continue
			}
			index[id] = len(groups)
			groups = append(groups, &keyed{parts: []Part{{Chunk: p.Chunk, Value: it}}})
		}
	}
	for i, g := range groups {
		// Items sharing a merge key merge field by field (a conflict if
		// they disagree); equal items collapse to the first.
		out = append(out, m.merge(items, ptr+"/"+strconv.Itoa(i), shape+"/*", g.parts))
	}
	return out
}

// mark records the origin of every leaf under ptr.
func (m *merger) mark(ptr string, v any, chunk int) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			m.mark(ptr+"/"+escape(k), e, chunk)
		}
	case []any:
		for i, e := range x {
			m.mark(ptr+"/"+strconv.Itoa(i), e, chunk)
		}
	case string, json.Number:
		m.out.Origin[ptr] = chunk
	}
}

// norm is a value's identity for de-duplication: canonical JSON with
// strings lower-cased and whitespace collapsed, numbers by value.
func norm(v any) string {
	var b strings.Builder
	writeNorm(&b, v)
	return b.String()
}

func writeNorm(b *strings.Builder, v any) {
	switch x := v.(type) {
	case map[string]any:
		b.WriteByte('{')
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if x[k] == nil {
				continue
			}
			fmt.Fprintf(b, "%q:", k)
			writeNorm(b, x[k])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for _, e := range x {
			writeNorm(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case string:
		fmt.Fprintf(b, "%q", normText(x))
	case json.Number:
		if f, err := x.Float64(); err == nil {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		} else {
			b.WriteString(string(x))
		}
	default:
		fmt.Fprint(b, x)
	}
}

// normText lower-cases and collapses whitespace.
func normText(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

func escape(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}
