package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Violation is a schema violation as attempts record it (schema.Violation's
// JSON form).
type Violation struct {
	Pointer string   `json:"pointer"`
	Keyword string   `json:"keyword"`
	Message string   `json:"message"`
	Value   string   `json:"value,omitempty"`
	Want    []string `json:"want,omitempty"`
}

// Repair is a change the engine made to an answer (llm.Repair's JSON
// form): Where is a byte offset "@N" into the raw answer, or a JSON pointer
// for a schema-guided coercion.
type Repair struct {
	Kind   string `json:"kind"`
	Where  string `json:"where,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// jline is one line of a JSON value laid out for reading, with what the
// engine found at its pointer.
type jline struct {
	Indent  int
	Pointer string
	Key     string // JSON-quoted member name, "" in arrays and at the root
	Text    string // a scalar's JSON, "{" / "[" opening a container, "}" / "]" closing it
	Kind    string // str, num, bool, null, open, close, missing
	Comma   bool
	Marks   []mark
	Bad     bool // a violation is pinned here
}

// mark is a violation or a coercion pinned to a line.
type mark struct {
	Kind    string // "violation" or "repair"
	Pointer string
	Label   string // keyword or repair kind
	Text    string
}

// jsonView is a value's lines plus the violations that could not be placed
// on any line (a pointer into nothing, e.g. of a value that is not JSON).
type jsonView struct {
	Lines    []jline
	Unplaced []mark
	Invalid  bool // the value was not JSON: Lines is empty
}

// buildJSONView lays value out one member per line and pins each violation
// (and each pointer repair) next to the value at its pointer; a violation
// of a missing member gets a "missing" line inside its parent object.
func buildJSONView(value []byte, vs []Violation, rs []Repair) jsonView {
	var jv jsonView
	if len(bytes.TrimSpace(value)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(value))
		dec.UseNumber()
		err := layout(dec, &jv.Lines, "", "", 0)
		if err == nil {
			if _, more := dec.Token(); more != io.EOF {
				err = errors.New("more than one value")
			}
		}
		if err != nil {
			jv.Lines, jv.Invalid = nil, true
		}
	}
	index := map[string]int{}
	for i, l := range jv.Lines {
		if l.Kind != "close" {
			if _, seen := index[l.Pointer]; !seen {
				index[l.Pointer] = i
			}
		}
	}
	for _, r := range rs {
		if !strings.HasPrefix(r.Where, "/") && !(r.Where == "" && strings.HasPrefix(r.Kind, "coerce")) {
			continue // byte offsets ("@N") belong to the raw answer
		}
		if i, ok := index[r.Where]; ok {
			jv.Lines[i].Marks = append(jv.Lines[i].Marks, mark{Kind: "repair", Pointer: r.Where, Label: r.Kind, Text: r.Detail})
		}
	}
	for _, v := range vs {
		m := mark{Kind: "violation", Pointer: v.Pointer, Label: v.Keyword, Text: v.Message}
		if i, ok := index[v.Pointer]; ok {
			jv.Lines[i].Marks = append(jv.Lines[i].Marks, m)
			jv.Lines[i].Bad = true
			continue
		}
		parent, name, ok := splitPointer(v.Pointer)
		if i, found := index[parent]; ok && found && jv.Lines[i].Kind == "open" && jv.Lines[i].Text == "{" {
			key, _ := json.Marshal(name)
			missing := jline{Indent: jv.Lines[i].Indent + 1, Pointer: v.Pointer, Key: string(key), Kind: "missing", Text: "missing", Marks: []mark{m}, Bad: true}
			jv.Lines = append(jv.Lines[:i+1], append([]jline{missing}, jv.Lines[i+1:]...)...)
			for p, j := range index { // lines after the insertion moved down by one
				if j > i {
					index[p] = j + 1
				}
			}
			index[v.Pointer] = i + 1
			continue
		}
		jv.Unplaced = append(jv.Unplaced, m)
	}
	return jv
}

// layout appends the lines of the next JSON value in dec.
func layout(dec *json.Decoder, out *[]jline, pointer, key string, indent int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		closer, kind := "}", "{"
		if t == '[' {
			closer, kind = "]", "["
		}
		open := len(*out)
		*out = append(*out, jline{Indent: indent, Pointer: pointer, Key: key, Text: kind, Kind: "open"})
		for i := 0; dec.More(); i++ {
			if t == '{' {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				name, ok := kt.(string)
				if !ok {
					return errors.New("object key is not a string")
				}
				q := quote(name)
				if err := layout(dec, out, pointer+"/"+escapePointer(name), q, indent+1); err != nil {
					return err
				}
			} else if err := layout(dec, out, pointer+"/"+strconv.Itoa(i), "", indent+1); err != nil {
				return err
			}
			(*out)[len(*out)-1].Comma = true
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		if last := len(*out) - 1; last > open {
			(*out)[last].Comma = false
		}
		if len(*out)-1 == open { // empty container on one line
			(*out)[open].Text += closer
			(*out)[open].Kind = "empty"
			return nil
		}
		*out = append(*out, jline{Indent: indent, Pointer: pointer, Text: closer, Kind: "close"})
	case string:
		*out = append(*out, jline{Indent: indent, Pointer: pointer, Key: key, Text: quote(t), Kind: "str"})
	case json.Number:
		*out = append(*out, jline{Indent: indent, Pointer: pointer, Key: key, Text: t.String(), Kind: "num"})
	case bool:
		*out = append(*out, jline{Indent: indent, Pointer: pointer, Key: key, Text: strconv.FormatBool(t), Kind: "bool"})
	case nil:
		*out = append(*out, jline{Indent: indent, Pointer: pointer, Key: key, Text: "null", Kind: "null"})
	}
	return nil
}

// quote writes s as a JSON string without HTML escaping (the template
// escapes for HTML).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// splitPointer splits "/a/b~1c" into its parent "/a" and last member "b/c".
func splitPointer(p string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	name = strings.ReplaceAll(strings.ReplaceAll(p[i+1:], "~1", "/"), "~0", "~")
	return p[:i], name, true
}

// segment is a piece of a raw answer; a marked one carries the repairs the
// engine made at its offset (numbered as in the repair list).
type segment struct {
	Text    string
	Mark    bool
	Numbers []int  // 1-based positions in the attempt's repair list
	Title   string // the repairs, for the tooltip
}

// rawSegments splits raw at the byte offsets of its syntax repairs ("@N"),
// marking the character at each (a zero-width mark at the end of the
// text), so the page can highlight where the engine changed the answer.
func rawSegments(raw string, rs []Repair) []segment {
	type at struct {
		off  int
		nums []int
		desc []string
	}
	byOff := map[int]*at{}
	for i, r := range rs {
		off, err := strconv.Atoi(strings.TrimPrefix(r.Where, "@"))
		if !strings.HasPrefix(r.Where, "@") || err != nil || off < 0 || off > len(raw) {
			continue
		}
		for off < len(raw) && !utf8.RuneStart(raw[off]) { // inside a character: mark all of it
			off--
		}
		a := byOff[off]
		if a == nil {
			a = &at{off: off}
			byOff[off] = a
		}
		a.nums = append(a.nums, i+1)
		desc := r.Kind
		if r.Detail != "" {
			desc += ": " + r.Detail
		}
		a.desc = append(a.desc, desc)
	}
	if len(byOff) == 0 {
		if raw == "" {
			return nil
		}
		return []segment{{Text: raw}}
	}
	offs := make([]int, 0, len(byOff))
	for o := range byOff {
		offs = append(offs, o)
	}
	sort.Ints(offs)
	var out []segment
	pos := 0
	for _, o := range offs {
		if o > pos {
			out = append(out, segment{Text: raw[pos:o]})
		}
		a := byOff[o]
		end := o
		if o < len(raw) {
			_, size := utf8.DecodeRuneInString(raw[o:])
			end = o + size
		}
		out = append(out, segment{Text: raw[o:end], Mark: true, Numbers: a.nums, Title: strings.Join(a.desc, "; ")})
		pos = end
	}
	if pos < len(raw) {
		out = append(out, segment{Text: raw[pos:]})
	}
	return out
}

// inModelOrder re-encodes value (as the audit stores it: jsonb, whose
// object keys come out sorted by length) with each object's members in the
// order the model wrote them: by where the quoted key first appears in its
// raw answer. Members the answer does not name (added by a repair) keep
// their place after the others. A value that is not JSON, or no answer,
// leaves value as it is.
func inModelOrder(value []byte, raw string) []byte {
	if raw == "" || len(bytes.TrimSpace(value)) == 0 {
		return value
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := writeInOrder(dec, &buf, raw); err != nil {
		return value
	}
	return buf.Bytes()
}

// writeInOrder copies the next value of dec to buf, ordering each
// object's members by their key's first position in raw.
func writeInOrder(dec *json.Decoder, buf *bytes.Buffer, raw string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return writeScalar(buf, tok)
	}
	switch d {
	case '[':
		buf.WriteByte('[')
		for i := 0; dec.More(); i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeInOrder(dec, buf, raw); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case '{':
		type member struct {
			pos      int
			key, val []byte
		}
		var ms []member
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			var key, val bytes.Buffer
			if err := writeScalar(&key, kt); err != nil {
				return err
			}
			if err := writeInOrder(dec, &val, raw); err != nil {
				return err
			}
			pos := strings.Index(raw, key.String())
			if pos < 0 {
				pos = len(raw) + len(ms) // not in the answer: after those that are
			}
			ms = append(ms, member{pos, key.Bytes(), val.Bytes()})
		}
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].pos < ms[j].pos })
		buf.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(m.key)
			buf.WriteByte(':')
			buf.Write(m.val)
		}
		buf.WriteByte('}')
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// writeScalar writes a JSON token that is not a delimiter, keeping <, >
// and & as they are (the page escapes them).
func writeScalar(buf *bytes.Buffer, tok json.Token) error {
	if n, ok := tok.(json.Number); ok {
		buf.WriteString(n.String())
		return nil
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tok); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}
