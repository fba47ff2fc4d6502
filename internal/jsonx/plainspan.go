package jsonx

import (
	"encoding/binary"
	"math/bits"
)

// SWAR masks: eight copies of a byte.
const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// PlainSpan returns the index of the first byte at or after i that a
// JSON string cannot hold as it is (a quote, a backslash or a control
// character), or len(b), and whether a byte at or above 0x80 came
// before it. It reads eight bytes per step where it can: the string
// scans of the decoders (keys, answers, job texts) went byte by byte
// with four comparisons each.
func PlainSpan(b []byte, i int) (j int, high bool) {
	var hi uint64
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ ('"' * ones8)
		s := x ^ ('\\' * ones8)
		// A zero byte of q or s, or a byte of x below 0x20, sets that
		// byte's high bit (bytes at or above 0x80 are masked by ^x). A
		// borrow can set a higher byte's too, but never the lowest's: the
		// lowest byte flagged is the first stop.
		stop := (((q - ones8) &^ q) | ((s - ones8) &^ s) | ((x - 0x20*ones8) &^ x)) & highs8
		if stop != 0 {
			n := bits.TrailingZeros64(stop) &^ 7 // the stop byte's first bit
			hi |= x & (1<<n - 1)
			return i + n/8, hi&highs8 != 0
		}
		hi |= x
	}
	for ; i < len(b); i++ {
		c := b[i]
		if !plainStringByte[c] {
			break
		}
		hi |= uint64(c)
	}
	return i, hi&highs8 != 0
}

// keySpan is PlainSpan for a key, which the fast paths take only without
// escapes and in ASCII: it returns the index of the first byte at or
// after i that is a quote, a backslash, a control character or at or
// above 0x80, or len(b). AppendString takes it on a string: the bytes
// before it need no escape.
func keySpan[T ~string | ~[]byte](b T, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := uint64(b[i]) | uint64(b[i+1])<<8 | uint64(b[i+2])<<16 | uint64(b[i+3])<<24 |
			uint64(b[i+4])<<32 | uint64(b[i+5])<<40 | uint64(b[i+6])<<48 | uint64(b[i+7])<<56
		q := x ^ ('"' * ones8)
		s := x ^ ('\\' * ones8)
		stop := (((q - ones8) &^ q) | ((s - ones8) &^ s) | (x - 0x20*ones8) | x) & highs8
		if stop != 0 {
			return i + bits.TrailingZeros64(stop)/8
		}
	}
	for ; i < len(b) && keyByte[b[i]]; i++ {
	}
	return i
}

// keyByte is true for the bytes keySpan passes over.
var keyByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
