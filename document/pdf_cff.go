package document

import (
	"encoding/binary"
	"errors"
)

// errCFF: a CFF font program too short or inconsistent to read.
var errCFF = errors.New("damaged CFF font program")

// cffEncoding reads the built-in encoding of a CFF font program (the
// FontFile3 of a /Type1C font): code → glyph name, through the program's
// Encoding (code → glyph index) and charset (glyph index → string ID →
// name). Ghostscript's ps2pdf and xdvipdfmx embed TeX's fonts this way,
// without /Encoding or a Unicode map (VnTeX's Vietnamese fonts, Cyrillic
// LH fonts): the codes are then not ASCII, and only the program says what
// they draw. nil, nil when the program has the standard encoding (the
// caller's own default then holds) or is CID-keyed (no one-byte codes).
func cffEncoding(b []byte) (map[byte]string, error) {
	if len(b) < 4 || b[0] != 1 {
		return nil, errCFF
	}
	off := int(b[2])                // header size
	_, off, err := cffIndex(b, off) // Name INDEX
	if err != nil {
		return nil, err
	}
	tops, off, err := cffIndex(b, off) // Top DICT INDEX
	if err != nil || len(tops) == 0 {
		return nil, errCFF
	}
	strs, _, err := cffIndex(b, off) // String INDEX
	if err != nil {
		return nil, err
	}
	top, err := cffDict(tops[0])
	if err != nil {
		return nil, err
	}
	if _, ok := top[12<<8|30]; ok { // ROS: CID-keyed
		return nil, nil
	}
	encOff, charsetOff, csOff := top[16], top[15], top[17]
	if encOff == 0 || encOff == 1 || csOff <= 0 { // Standard or Expert encoding
		return nil, nil
	}
	chars, _, err := cffIndex(b, csOff)
	if err != nil {
		return nil, err
	}
	sids, err := cffCharset(b, charsetOff, len(chars))
	if err != nil {
		return nil, err
	}
	name := func(sid int) string {
		switch {
		case sid < len(cffStandardStrings):
			return cffStandardStrings[sid]
		case sid-len(cffStandardStrings) < len(strs):
			return string(strs[sid-len(cffStandardStrings)])
		}
		return ""
	}
	m := map[byte]string{}
	set := func(code byte, gid int) {
		if gid > 0 && gid < len(sids) {
			if n := name(sids[gid]); n != "" && n != ".notdef" {
				m[code] = n
			}
		}
	}
	p := encOff
	if p < 0 || p >= len(b) {
		return nil, errCFF
	}
	format := b[p]
	p++
	switch format & 0x7f {
	case 0:
		if p >= len(b) {
			return nil, errCFF
		}
		n := int(b[p])
		p++
		if p+n > len(b) {
			return nil, errCFF
		}
		for i := range n {
			set(b[p+i], i+1)
		}
		p += n
	case 1:
		if p >= len(b) {
			return nil, errCFF
		}
		n := int(b[p])
		p++
		if p+2*n > len(b) {
			return nil, errCFF
		}
		gid := 1
		for i := range n {
			first, left := int(b[p+2*i]), int(b[p+2*i+1])
			for c := first; c <= first+left && c < 256; c++ {
				set(byte(c), gid)
				gid++
			}
		}
		p += 2 * n
	default:
		return nil, errCFF
	}
	if format&0x80 != 0 { // supplements: more codes for named glyphs
		if p >= len(b) {
			return nil, errCFF
		}
		n := int(b[p])
		p++
		if p+3*n > len(b) {
			return nil, errCFF
		}
		for i := range n {
			q := p + 3*i
			if s := name(int(binary.BigEndian.Uint16(b[q+1:]))); s != "" && s != ".notdef" {
				m[b[q]] = s
			}
		}
	}
	return m, nil
}

// cffCharset reads the string ID of each of n glyphs (glyph 0 is
// .notdef). Offset 0 is the ISOAdobe charset (glyph i is string i); the
// two Expert charsets name no text letters and are not read.
func cffCharset(b []byte, off, n int) ([]int, error) {
	sids := make([]int, 1, max(n, 1))
	if off == 0 {
		for i := 1; i < n && i <= 228; i++ {
			sids = append(sids, i)
		}
		return sids, nil
	}
	if off < 3 || off >= len(b) {
		return nil, errCFF
	}
	p := off + 1
	u16 := func() (int, bool) {
		if p+2 > len(b) {
			return 0, false
		}
		v := int(binary.BigEndian.Uint16(b[p:]))
		p += 2
		return v, true
	}
	switch b[off] {
	case 0:
		for len(sids) < n {
			v, ok := u16()
			if !ok {
				return nil, errCFF
			}
			sids = append(sids, v)
		}
	case 1, 2:
		for len(sids) < n {
			first, ok := u16()
			if !ok {
				return nil, errCFF
			}
			var left int
			if b[off] == 1 {
				if p >= len(b) {
					return nil, errCFF
				}
				left = int(b[p])
				p++
			} else if left, ok = u16(); !ok {
				return nil, errCFF
			}
			for s := first; s <= first+left && len(sids) < n; s++ {
				sids = append(sids, s)
			}
		}
	default:
		return nil, errCFF
	}
	return sids, nil
}

// cffIndex reads the INDEX at off: its items and the offset past it.
func cffIndex(b []byte, off int) ([][]byte, int, error) {
	if off < 0 || off+2 > len(b) {
		return nil, 0, errCFF
	}
	count := int(binary.BigEndian.Uint16(b[off:]))
	if count == 0 {
		return nil, off + 2, nil
	}
	if off+3 > len(b) {
		return nil, 0, errCFF
	}
	size := int(b[off+2])
	if size < 1 || size > 4 {
		return nil, 0, errCFF
	}
	start := off + 3
	if start+(count+1)*size > len(b) {
		return nil, 0, errCFF
	}
	at := func(i int) int {
		v := 0
		for _, c := range b[start+i*size : start+(i+1)*size] {
			v = v<<8 | int(c)
		}
		return v
	}
	data := start + (count+1)*size - 1 // offsets count from 1
	items := make([][]byte, count)
	for i := range count {
		s, e := at(i), at(i+1)
		if s < 1 || e < s || data+e > len(b) {
			return nil, 0, errCFF
		}
		items[i] = b[data+s : data+e]
	}
	return items, data + at(count), nil
}

// cffDict reads a DICT's operators with their last operand (the offsets
// and IDs wanted here are single integers); two-byte operators are
// 12<<8|b1. A real operand counts as 0.
func cffDict(d []byte) (map[int]int, error) {
	m := map[int]int{}
	var last int
	for i := 0; i < len(d); {
		b0 := int(d[i])
		switch {
		case b0 <= 21:
			op := b0
			i++
			if b0 == 12 {
				if i >= len(d) {
					return nil, errCFF
				}
				op = 12<<8 | int(d[i])
				i++
			}
			m[op] = last
		case b0 == 28:
			if i+3 > len(d) {
				return nil, errCFF
			}
			last = int(int16(binary.BigEndian.Uint16(d[i+1:])))
			i += 3
		case b0 == 29:
			if i+5 > len(d) {
				return nil, errCFF
			}
			last = int(int32(binary.BigEndian.Uint32(d[i+1:])))
			i += 5
		case b0 == 30:
			i++
			for i < len(d) && d[i]&0x0f != 0x0f && d[i]>>4 != 0x0f {
				i++
			}
			i++
			last = 0
		case b0 >= 32 && b0 <= 246:
			last = b0 - 139
			i++
		case b0 >= 247 && b0 <= 250:
			if i+2 > len(d) {
				return nil, errCFF
			}
			last = (b0-247)*256 + int(d[i+1]) + 108
			i += 2
		case b0 >= 251 && b0 <= 254:
			if i+2 > len(d) {
				return nil, errCFF
			}
			last = -(b0-251)*256 - int(d[i+1]) - 108
			i += 2
		default:
			return nil, errCFF
		}
	}
	return m, nil
}
