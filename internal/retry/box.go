package retry

import (
	"encoding/json"
	"unsafe"
)

// boxes makes the interface values of a decoded candidate's strings and
// numbers with their headers in shared slabs: converting each to an any
// allocated its 16-byte header on its own, a third of decoding's
// allocations on every candidate. (Arrays, about one a candidate, gain
// nothing from a slab.)
type boxes struct {
	strs slab[string] // strings and json.Numbers
}

// str returns s as an any holding a string.
func (b *boxes) str(s string) any { return b.strs.box(stringType, s) }

// num returns s as an any holding a json.Number.
func (b *boxes) num(s string) any { return b.strs.box(numberType, s) }

// eface is the layout of an any: its dynamic type and a pointer to the
// value (a string is never stored in the interface word itself).
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// Dynamic types of the values boxes makes.
var (
	stringType = typeOf("")
	numberType = typeOf(json.Number(""))
)

// typeOf returns the dynamic type word of v.
func typeOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

// Slab sizes: the first holds an invoice's strings and numbers; each next
// one doubles, up to the last size.
const (
	firstSlab = 8
	maxSlab   = 64
)

// slab holds the values behind interfaces boxes made. It is only appended
// to, so a value never changes once an interface points at it; a slab
// lives as long as any of them.
type slab[T any] struct {
	s []T
}

// box returns an any of dynamic type typ, which must be T's own or one of
// the same layout (json.Number for string), holding v.
func (b *slab[T]) box(typ unsafe.Pointer, v T) any {
	if len(b.s) == cap(b.s) {
		b.s = make([]T, 0, min(max(2*cap(b.s), firstSlab), maxSlab))
	}
	b.s = append(b.s, v)
	e := eface{typ: typ, data: unsafe.Pointer(&b.s[len(b.s)-1])}
	return *(*any)(unsafe.Pointer(&e))
}
