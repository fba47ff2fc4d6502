package jsonx

import "unicode/utf8"

// maxStrings is how many strings a Strings gathers; StrOnto reads any
// more as StrInto does.
const maxStrings = 24

// Strings gathers the short strings of one decode (StrOnto) in one buffer
// and gives them one allocation between them (Done) instead of one each:
// the job envelope's ids, names and options were eight allocations of a
// job's decode. Long strings (a document's text) are better read with
// StrInto: every string Done stores keeps the others' bytes alive.
type Strings struct {
	// buf[:n] holds the strings read. It is an array, never a slice kept
	// in the struct, so that a Strings on the stack stays there (a slice
	// of its own array would make the compiler move it to the heap).
	buf  [256]byte
	n    int // at most len(buf), so that strRef's offsets fit 16 bits
	refs [maxStrings]strRef
	nref int
}

// strRef is a string read: where it goes and its bytes in buf.
type strRef struct {
	dst    *string
	lo, hi uint16 // within buf
}

// StrOnto reads a string as Str does and keeps it in ss, for ss.Done to
// store in *s; n passes through, for fields. *s is left alone until then.
// A string that does not fit in what is left of ss is read by StrInto.
func (d *Scanner) StrOnto(ss *Strings, n int, s *string) (int, bool) {
	if d.I >= len(d.B) || d.B[d.I] != '"' || ss.nref == len(ss.refs) {
		return d.StrInto(n, s)
	}
	start := d.I + 1
	j, high := PlainSpan(d.B, start)
	if j >= len(d.B) {
		return n, false
	}
	lo := ss.n
	switch d.B[j] {
	case '"':
		text := d.B[start:j]
		if len(text) > len(ss.buf)-lo {
			return d.StrInto(n, s)
		}
		if high && !utf8.Valid(text) {
			return n, false
		}
		ss.n += copy(ss.buf[lo:], text)
		d.I = j + 1
	case '\\':
		k, ok := d.closingQuote(j)
		if !ok {
			return n, false
		}
		text := d.B[start:k]
		if len(text) > len(ss.buf)-lo { // unescaping only shortens
			return d.StrInto(n, s)
		}
		out, h, ok := unquoteOnto(ss.buf[lo:lo], text, j-start, true, true)
		if !ok || (high || h) && !utf8.Valid(out) {
			return n, false
		}
		ss.n += len(out)
		d.I = k + 1
	default:
		return n, false
	}
	ss.refs[ss.nref] = strRef{dst: s, lo: uint16(lo), hi: uint16(ss.n)}
	ss.nref++
	return n, true
}

// Done stores every string StrOnto read, all backed by one allocation.
func (ss *Strings) Done() {
	all := string(ss.buf[:ss.n])
	for _, r := range ss.refs[:ss.nref] {
		*r.dst = all[r.lo:r.hi]
	}
}
