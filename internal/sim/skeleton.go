package sim

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/extractq/extractq/internal/jsonx"
)

// An answer's text without the answer. A schema's answer is one of its
// templates with plausible strings and numbers in place of some of its
// leaves (value), encoded (encodeJSON). Cloning the template's maps,
// filling them and encoding them again cost most of an answer; a
// skeleton is the template encoded once, with holes where the filled
// leaves go, so that an answer is the plausible values drawn in the same
// order as value draws them, spliced between the template's bytes.
//
// What value does beyond filling is kept: an array whose filled items
// repeat (distinct) sends the answer back to value, and what readText
// reads from the document replaces, adds or removes top-level keys in
// their sorted places. Anything else (an answer key's label, a semantic
// fault, a template that is not an object) takes value's path.
// TestSkeletonMatchesValue holds the two to the same bytes.

// skeleton is a template, an object, encoded with holes.
type skeleton struct {
	// keys are the template's top-level keys, sorted; entries[i] is key
	// i's value in ops, from ops[entries[i]] to ops[entries[i+1]], and
	// heads[i] what comes before it (`{"key":` or `,"key":`).
	keys    []string
	heads   []string
	entries []int
	ops     []skelOp
	// lit holds the template's bytes between the holes; qlit and qheads
	// are lit and heads quoted as the inside of a JSON string (what the
	// OpenAI reply holds the answer as: see answer.quoted).
	lit    []byte
	qlit   []byte
	qheads []string
	// holes are the filled leaves in the order value fills them.
	holes []skelHole
	// arrays are the arrays whose items hold holes (two items or more),
	// innermost first, by the marks their items start at.
	arrays []skelArray
	nmarks int
}

// skelOp is one step of writing a skeleton: lit[from:to], or hole
// number hole (≥ 0), or mark number mark (the output's length at that
// point, ≥ 0, for an array's items).
type skelOp struct {
	from, to   int32
	qfrom, qto int32 // lit[from:to] quoted, in qlit
	hole, mark int32
}

type skelHole struct {
	text   *textField
	number *numberField
	old    string // the template's string, kept where a text does not fit
}

// skelArray is an array's items: item i starts at mark start+i, and the
// array's closing bracket at mark start+n.
type skelArray struct{ start, n int }

// maxSkelArray is the longest array a skeleton checks for repeats as
// hasRepeats does pairwise; a longer one with holes has no skeleton.
const maxSkelArray = 64

// skeletonOf builds t's skeleton for sh's fields; nil when the template is
// not an object or holds what a skeleton does not handle.
func (sh *shape) skeletonOf(v any) *skeleton {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	sk := &skeleton{}
	// The holes, in value's order: every text field's leaves, then every
	// number field's, each field's in the order filler.at visits them.
	at := map[string]int{} // a leaf's path (leafKey) → hole
	for i := range sh.texts {
		f := &sh.texts[i]
		leaves(v, f.path, "", func(leaf any, key string) {
			if s, ok := leaf.(string); ok {
				at[key] = len(sk.holes)
				sk.holes = append(sk.holes, skelHole{text: f, old: s})
			}
		})
	}
	for i := range sh.numbers {
		f := &sh.numbers[i]
		leaves(v, f.path, "", func(leaf any, key string) {
			if _, ok := leaf.(json.Number); ok {
				at[key] = len(sk.holes)
				sk.holes = append(sk.holes, skelHole{number: f})
			}
		})
	}
	b := &skelBuilder{sk: sk, at: at}
	sk.keys = sortedKeys(m)
	for i, k := range sk.keys {
		head := []byte{','}
		if i == 0 {
			head[0] = '{'
		}
		sk.heads = append(sk.heads, string(append(appendString(head, k), ':')))
		sk.entries = append(sk.entries, len(sk.ops))
		if !b.value(m[k], leafKey("", k)) {
			return nil
		}
		b.flush()
	}
	sk.entries = append(sk.entries, len(sk.ops))
	for i := range sk.ops {
		if o := &sk.ops[i]; o.hole < 0 && o.mark < 0 {
			o.qfrom = int32(len(sk.qlit))
			sk.qlit = appendQuoted(sk.qlit, sk.lit[o.from:o.to])
			o.qto = int32(len(sk.qlit))
		}
	}
	for _, h := range sk.heads {
		sk.qheads = append(sk.qheads, string(appendQuoted(nil, []byte(h))))
	}
	return sk
}

// plainText reports whether s is printable ASCII without a quote or a
// backslash: as it is in a JSON string, and in one quoted again.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendQuoted appends s as jsonx.AppendString quotes it, without the
// quotes around it. Quoting the pieces of a text one by one gives the
// text quoted whole where no piece ends inside a UTF-8 sequence: a
// skeleton's pieces begin and end with ASCII (a quote, a bracket, a
// comma, a colon or a number's digit).
func appendQuoted(b, s []byte) []byte {
	n := len(b)
	b = jsonx.AppendString(b, string(s), false)
	return append(b[:n], b[n+1:len(b)-1]...)
}

// leafKey names the step into key k (or, for an array, its index) after
// the path so far, unambiguously.
func leafKey(path, k string) string {
	return path + strconv.Itoa(len(k)) + ":" + k
}

// leaves calls f with every leaf at path in v, as filler.at reaches them.
func leaves(v any, path []pathSeg, key string, f func(any, string)) {
	if len(path) == 0 {
		f(v, key)
		return
	}
	seg := path[0]
	if seg.each {
		if arr, ok := v.([]any); ok {
			for i := range arr {
				leaves(arr[i], path[1:], leafKey(key, "#"+strconv.Itoa(i)), f)
			}
		}
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if old, ok := m[seg.key]; ok {
		leaves(old, path[1:], leafKey(key, seg.key), f)
	}
}

type skelBuilder struct {
	sk   *skeleton
	at   map[string]int
	from int // start of the literal not yet in an op
}

func (b *skelBuilder) flush() {
	if n := len(b.sk.lit); n > b.from {
		b.sk.ops = append(b.sk.ops, skelOp{from: int32(b.from), to: int32(n), hole: -1, mark: -1})
		b.from = n
	}
}

// value encodes v as appendJSON does, leaving holes; it reports whether v
// fits a skeleton.
func (b *skelBuilder) value(v any, key string) bool {
	sk := b.sk
	if h, ok := b.at[key]; ok {
		b.flush()
		sk.ops = append(sk.ops, skelOp{hole: int32(h), mark: -1})
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		sk.lit = append(sk.lit, '{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				sk.lit = append(sk.lit, ',')
			}
			sk.lit = append(appendString(sk.lit, k), ':')
			if !b.value(x[k], leafKey(key, k)) {
				return false
			}
		}
		sk.lit = append(sk.lit, '}')
		return true
	case []any:
		opStart := len(sk.ops)
		mark := sk.nmarks
		check := len(x) >= 2
		if check {
			sk.nmarks += len(x) + 1
		}
		sk.lit = append(sk.lit, '[')
		for i, e := range x {
			if i > 0 {
				sk.lit = append(sk.lit, ',')
			}
			if check {
				b.flush()
				sk.ops = append(sk.ops, skelOp{hole: -1, mark: int32(mark + i)})
			}
			if !b.value(e, leafKey(key, "#"+strconv.Itoa(i))) {
				return false
			}
		}
		if check {
			b.flush()
			sk.ops = append(sk.ops, skelOp{hole: -1, mark: int32(mark + len(x))})
			if slices.ContainsFunc(sk.ops[opStart:], func(o skelOp) bool { return o.hole >= 0 }) {
				if len(x) > maxSkelArray {
					return false
				}
				sk.arrays = append(sk.arrays, skelArray{start: mark, n: len(x)})
			} else { // nothing to check: the marks go, the bytes join
				sk.ops = joinLiterals(sk.ops, opStart)
			}
		}
		sk.lit = append(sk.lit, ']')
		return true
	}
	var err error
	sk.lit, err = appendJSON(sk.lit, v)
	return err == nil
}

// joinLiterals drops the marks of ops[from:] (which holds no hole) and
// joins the literals they separated.
func joinLiterals(ops []skelOp, from int) []skelOp {
	out := ops[:from]
	for _, o := range ops[from:] {
		if o.mark >= 0 {
			continue
		}
		if n := len(out); n > from && out[n-1].to == o.from {
			out[n-1].to = o.to
			continue
		}
		out = append(out, o)
	}
	return out
}

// skelState is one answer's scratch: the holes' values and the marks.
type skelState struct {
	vals  []string
	marks []int
	out   []byte
	q     []byte
	reads []readOverride
}

var skelPool = sync.Pool{New: func() any { return new(skelState) }}

// readOverride is what readText does to a top-level key: set it to val
// (encoded), or delete it.
type readOverride struct {
	key    string
	val    []byte
	delete bool
}

// text is encodeJSON(value(seed, docHash, doc)) for a schema's answer, by
// its template's skeleton; ok is false where the answer takes value's
// path instead (see skeleton). quoted, unless empty, is text quoted as
// the inside of a JSON string (appendQuoted).
func (sh *shape) text(seed, docHash uint64, doc string) (text, quoted string, ok bool, err error) {
	t, err := sh.template(seed, mix(seed, docHash)%numTemplates)
	if err != nil {
		return "", "", false, err
	}
	sk := t.skeleton(sh)
	if sk == nil {
		return "", "", false, nil
	}
	var r rng
	r.p.Seed(mix(seed, docHash), 0x5eed)
	st := skelPool.Get().(*skelState)
	defer skelPool.Put(st)
	st.vals = st.vals[:0]
	for i := range sk.holes {
		h := &sk.holes[i]
		if h.number != nil {
			st.vals = append(st.vals, string(h.number.plausible(&r)))
			continue
		}
		s := docText(h.text.kind, doc, &r)
		if !h.text.fits(s) {
			s = h.old
		}
		st.vals = append(st.vals, s)
	}
	st.marks = slices.Grow(st.marks[:0], sk.nmarks)[:sk.nmarks]
	b, q := st.out[:0], st.q[:0]
	if len(sk.keys) == 0 {
		b, q = append(b, '{'), append(q, '{')
	}
	for i := range sk.keys {
		b, q = append(b, sk.heads[i]...), append(q, sk.qheads[i]...)
		b, q = sk.writeBoth(b, q, sk.entries[i], sk.entries[i+1], st)
	}
	b, q = append(b, '}'), append(q, '}')
	st.out, st.q = b, q
	for _, a := range sk.arrays {
		if st.repeats(b, a) {
			return "", "", false, nil // distinct puts the template back: value's path
		}
	}
	if len(sh.reads) > 0 {
		st.reads = sh.readOverrides(st.reads[:0], doc)
		if len(st.reads) > 0 {
			return sh.applyReads(sk, st), "", true, nil
		}
	}
	n := len(b)
	st.out = append(b, q...) // one string for both
	both := string(st.out)
	return both[:n], both[n:], true, nil
}

// writeBoth appends ops[from:to] to b as write does and, quoted
// (appendQuoted), to q.
func (sk *skeleton) writeBoth(b, q []byte, from, to int, st *skelState) ([]byte, []byte) {
	ops := sk.ops[from:to]
	for i := range ops {
		op := &ops[i]
		switch {
		case op.hole >= 0:
			v := st.vals[op.hole]
			switch {
			case sk.holes[op.hole].number != nil: // digits, '.', '-', 'e', '+'
				b, q = append(b, v...), append(q, v...)
			case plainText(v): // as appendString and appendQuoted write it
				b = append(b, '"')
				b = append(b, v...)
				b = append(b, '"')
				q = append(q, '\\', '"')
				q = append(q, v...)
				q = append(q, '\\', '"')
			default:
				n := len(b)
				b = appendString(b, v)
				q = appendQuoted(q, b[n:])
			}
		case op.mark >= 0:
			st.marks[op.mark] = len(b)
		default:
			b = append(b, sk.lit[op.from:op.to]...)
			q = append(q, sk.qlit[op.qfrom:op.qto]...)
		}
	}
	return b, q
}

// write appends ops[from:to], recording the marks' offsets.
func (sk *skeleton) write(b []byte, from, to int, st *skelState) []byte {
	ops := sk.ops[from:to]
	for i := range ops {
		op := &ops[i]
		switch {
		case op.hole >= 0:
			h := &sk.holes[op.hole]
			if h.number != nil {
				b = append(b, st.vals[op.hole]...)
			} else {
				b = appendString(b, st.vals[op.hole])
			}
		case op.mark >= 0:
			st.marks[op.mark] = len(b)
		default:
			b = append(b, sk.lit[op.from:op.to]...)
		}
	}
	return b
}

// repeats reports whether two items of array a, as written in b, are
// equal as hasRepeats compares them.
func (st *skelState) repeats(b []byte, a skelArray) bool {
	item := func(i int) []byte {
		end := st.marks[a.start+i+1]
		if i+1 < a.n {
			end-- // the comma
		}
		return b[st.marks[a.start+i]:end]
	}
	for i := range a.n {
		for j := range i {
			if equalEncoded(item(i), item(j)) {
				return true
			}
		}
	}
	return false
}

// equalEncoded is equalJSON for two values as appendJSON writes them
// (keys sorted, strings escaped one way only): they are equal where their
// bytes are, numbers compared as equalJSON compares them.
func equalEncoded(a, b []byte) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		c, d := a[i], b[j]
		switch {
		case c == '"':
			if d != '"' {
				return false
			}
			ea, eb := stringEnd(a, i), stringEnd(b, j)
			if string(a[i:ea]) != string(b[j:eb]) {
				return false
			}
			i, j = ea, eb
		case c == '-' || '0' <= c && c <= '9':
			if d != '-' && (d < '0' || '9' < d) {
				return false
			}
			ea, eb := numberEnd(a, i), numberEnd(b, j)
			if !equalJSON(json.Number(a[i:ea]), json.Number(b[j:eb])) {
				return false
			}
			i, j = ea, eb
		default:
			if c != d {
				return false
			}
			i, j = i+1, j+1
		}
	}
	return i == len(a) && j == len(b)
}

// stringEnd is the offset just past the string that starts at s[i].
func stringEnd(s []byte, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(s)
}

// numberEnd is the offset just past the number that starts at s[i].
func numberEnd(s []byte, i int) int {
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		default:
			return i
		}
	}
	return i
}

// applyReads writes the answer with readText's changes to its top-level
// keys, in their sorted places.
func (sh *shape) applyReads(sk *skeleton, st *skelState) string {
	reads := st.reads
	slices.SortFunc(reads, func(x, y readOverride) int {
		switch {
		case x.key < y.key:
			return -1
		case x.key > y.key:
			return 1
		}
		return 0
	})
	out := make([]byte, 0, len(st.out)+64)
	out = append(out, '{')
	first := true
	entry := func(k string, val []byte) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(appendString(out, k), ':')
		out = append(out, val...)
	}
	// The template's values, as written, between the keys' marks: the
	// writing is done again into a scratch buffer per key.
	var scratch []byte
	ri := 0
	for i, k := range sk.keys {
		for ri < len(reads) && reads[ri].key < k {
			if !reads[ri].delete {
				entry(reads[ri].key, reads[ri].val)
			}
			ri++
		}
		if ri < len(reads) && reads[ri].key == k {
			if !reads[ri].delete {
				entry(k, reads[ri].val)
			}
			ri++
			continue
		}
		scratch = sk.write(scratch[:0], sk.entries[i], sk.entries[i+1], st)
		entry(k, scratch)
	}
	for ; ri < len(reads); ri++ {
		if !reads[ri].delete {
			entry(reads[ri].key, reads[ri].val)
		}
	}
	out = append(out, '}')
	return string(out)
}

// readOverrides appends what readText would do to a top-level object.
func (sh *shape) readOverrides(dst []readOverride, doc string) []readOverride {
	var (
		buf  [32]string
		lbuf [16]lineLabel
		nbuf [256]byte
		dl   docLines
	)
	newDocLines(&dl, doc, buf[:0], lbuf[:0], nbuf[:0])
	for _, f := range sh.reads {
		switch got, act := sh.readOne(f, &dl); act {
		case readSet:
			enc, _ := appendJSON(nil, got)
			dst = append(dst, readOverride{key: f.key, val: enc})
		case readDelete:
			dst = append(dst, readOverride{key: f.key, delete: true})
		}
	}
	return dst
}
