package sim

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reading the document. Besides plausible values, the simulator takes what
// a document states plainly, so that an answer depends on the text it was
// given and a part of a document yields only what is in that part:
//
//   - a record line, "Item: sku=AB-12; description=Hex bolts; quantity=4",
//     holding at least two name=value pairs separated by ";" whose names
//     are all properties of the items of a top-level array of objects, is
//     one item of that array (in document order);
//   - a labelled line, "Invoice number: INV-7", whose label, lower-cased
//     with spaces and hyphens as underscores, names a top-level string or
//     number property, is that property's value (the first such line).
//
// Records found replace the array; labels found replace the value. When
// the request's schema requires nothing top-level (or only fields it
// allows to be null, as strict provider forms mark optional ones), the
// answer comes from the text alone: an array gets exactly the records
// found, possibly none, and a field the text does not state is left out
// (or null), as a careful model reading a part of a document answers.

// readField is one top-level property the simulator can read from text.
type readField struct {
	key      string
	typ      string            // "string", "number", "integer" or "array"
	items    map[string]string // array of objects: item property → type
	nullable bool
	required bool
}

// planReading records the top-level properties readable from text.
func (sh *shape) planReading(root map[string]any) {
	props, ok := root["properties"].(map[string]any)
	if !ok {
		return
	}
	req := stringList(root["required"])
	strictOnly := true
	for _, k := range slices.Sorted(maps.Keys(props)) {
		node, ok := props[k].(map[string]any)
		if !ok {
			continue
		}
		typ, nullable := mainType(node["type"])
		f := readField{key: k, typ: typ, nullable: nullable, required: slices.Contains(req, k)}
		if f.required && !nullable {
			strictOnly = false
		}
		switch typ {
		case "string", "number", "integer":
		case "array":
			items, _ := node["items"].(map[string]any)
			ip, _ := items["properties"].(map[string]any)
			if len(ip) == 0 {
				continue
			}
			f.items = map[string]string{}
			for name, n := range ip {
				nm, _ := n.(map[string]any)
				f.items[name], _ = mainType(nm["type"])
			}
		default:
			continue
		}
		sh.reads = append(sh.reads, f)
	}
	sh.textOnly = strictOnly && len(sh.reads) > 0
}

// mainType is a schema's non-null type and whether null is allowed too.
func mainType(t any) (string, bool) {
	switch x := t.(type) {
	case string:
		return x, false
	case []any:
		main, null := "", false
		for _, e := range x {
			if s, _ := e.(string); s == "null" {
				null = true
			} else if main == "" {
				main = s
			}
		}
		return main, null
	}
	return "", false
}

// readText applies what doc states to v, a top-level object answer.
func (sh *shape) readText(v any, doc string) any {
	obj, ok := v.(map[string]any)
	if !ok || len(sh.reads) == 0 {
		return v
	}
	var (
		buf  [32]string // most documents: no allocation for the lines
		lbuf [16]lineLabel
		nbuf [256]byte
		dl   docLines
	)
	newDocLines(&dl, doc, buf[:0], lbuf[:0], nbuf[:0])
	for _, f := range sh.reads {
		switch got, act := sh.readOne(f, &dl); act {
		case readSet:
			obj[f.key] = got
		case readDelete:
			delete(obj, f.key)
		}
	}
	return obj
}

// readAct is what reading the text does to a top-level field.
type readAct uint8

const (
	readKeep   readAct = iota
	readSet            // to the value read (nil: null)
	readDelete         // the text does not state it
)

// readOne reads field f from the document's lines.
func (sh *shape) readOne(f readField, dl *docLines) (any, readAct) {
	var got any
	found := false
	if f.items != nil {
		var recs []any
		for _, ln := range dl.lines {
			if rec, ok := record(ln, f.items); ok {
				recs = append(recs, rec)
			}
		}
		if len(recs) > 0 || sh.textOnly { // boxed only when found
			if recs == nil {
				recs = []any{}
			}
			got, found = recs, true
		}
	} else {
		got, found = dl.labelled(f)
	}
	switch {
	case found:
		return got, readSet
	case !sh.textOnly:
	case f.nullable:
		return nil, readSet
	case !f.required:
		return nil, readDelete
	}
	return nil, readKeep
}

// splitLines appends the lines of doc to dst, as strings.Split(doc, "\n")
// returns them.
func splitLines(dst []string, doc string) []string {
	for {
		i := strings.IndexByte(doc, '\n')
		if i < 0 {
			return append(dst, doc)
		}
		dst = append(dst, doc[:i])
		doc = doc[i+1:]
	}
}

// record reads one record line for items with the given property types.
func record(line string, types map[string]string) (map[string]any, bool) {
	if strings.Count(line, "=") < 2 {
		return nil, false
	}
	rest := line
	if i := strings.IndexByte(line, ':'); i >= 0 && i < strings.IndexByte(line, '=') {
		rest = line[i+1:]
	}
	rec := map[string]any{}
	for part := range strings.SplitSeq(rest, ";") {
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, false
		}
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		t, known := types[name]
		if !known {
			return nil, false
		}
		rec[name] = typed(val, t)
	}
	return rec, len(rec) >= 2
}

// labelKey turns a label into a field key; built once (a replacer per
// line cost the simulator more than answering).
var labelKey = strings.NewReplacer(" ", "_", "-", "_")

// labelled finds "Label: value" for field f.
func labelled(lines []string, f readField) (any, bool) {
	for _, ln := range lines {
		label, val, ok := strings.Cut(ln, ":")
		if !ok || len(label) > 64 {
			continue
		}
		if labelIs(label, f.key) {
			return typed(strings.TrimSpace(val), f.typ), true
		}
	}
	return nil, false
}

// docLines are a document's lines, their labels read once for all the
// fields (as labelled and labelIs read them, which cost a reading per
// line and field).
type docLines struct {
	lines  []string
	read   bool
	labels []lineLabel
	norm   []byte // the labels as keys, one after another
}

// newDocLines reads doc's lines into dl, with room for their labels in
// lbuf and nbuf (the caller's, so that dl stays on its stack).
func newDocLines(dl *docLines, doc string, buf []string, lbuf []lineLabel, nbuf []byte) {
	*dl = docLines{lines: splitLines(buf, doc), labels: lbuf, norm: nbuf}
}

// lineLabel is a labelled line: its label as a key (norm[from:to]) and
// its value.
type lineLabel struct {
	from, to int
	val      string
}

// labelled is labelled(dl.lines, f).
func (dl *docLines) labelled(f readField) (any, bool) {
	if !dl.read {
		dl.read = true
		for _, ln := range dl.lines {
			label, val, ok := strings.Cut(ln, ":")
			if !ok || len(label) > 64 {
				continue
			}
			from := len(dl.norm)
			dl.norm = appendLabelKey(dl.norm, strings.TrimSpace(label))
			dl.labels = append(dl.labels, lineLabel{from: from, to: len(dl.norm), val: val})
		}
	}
	for _, l := range dl.labels {
		if string(dl.norm[l.from:l.to]) == f.key {
			return typed(strings.TrimSpace(l.val), f.typ), true
		}
	}
	return nil, false
}

// appendLabelKey appends labelKey.Replace(strings.ToLower(label)), in
// place for an ASCII label (see labelIs).
func appendLabelKey(b []byte, label string) []byte {
	for i := 0; i < len(label); i++ {
		if label[i] >= utf8.RuneSelf {
			return append(b, labelKey.Replace(strings.ToLower(label))...)
		}
	}
	for i := 0; i < len(label); i++ {
		b = append(b, labelByte(label[i]))
	}
	return b
}

// labelByte is what labelKey makes of an ASCII byte of a lower-cased
// label: upper case lowered, a space or a hyphen an underscore.
func labelByte(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == ' ' || c == '-':
		return '_'
	}
	return c
}

// typed converts a text value to the schema's type where it reads as one;
// otherwise the text stays (and fails validation, as a model's would).
func typed(s, typ string) any {
	if typ != "number" && typ != "integer" {
		return s
	}
	n := strings.TrimLeft(strings.ReplaceAll(s, ",", ""), "$€£ ")
	if _, err := strconv.ParseFloat(n, 64); err != nil {
		return s
	}
	return json.Number(n)
}

// labelIs reports whether label, lower-cased with spaces and hyphens as
// underscores (labelKey), is key. An ASCII label is compared in place:
// building the key for every line and field cost more than the rest of
// reading the text.
func labelIs(label, key string) bool {
	label = strings.TrimSpace(label)
	for i := 0; i < len(label); i++ {
		if label[i] >= utf8.RuneSelf {
			return labelKey.Replace(strings.ToLower(label)) == key
		}
	}
	if len(label) != len(key) {
		return false
	}
	for i := 0; i < len(label); i++ {
		if labelByte(label[i]) != key[i] {
			return false
		}
	}
	return true
}
