package cfb

// Writing compound files: the reader's own tests and fixtures of formats
// nothing on the build machine writes (Outlook .msg), and a storage of a
// file taken out as a file of its own (an object embedded in a Word .doc,
// see Extract).

import (
	"encoding/binary"
	"slices"
	"strings"
	"unicode/utf16"
)

// Stream is one stream to write; storages are made from the path's
// directories ("__attach_version1.0_#00000000/__substg1.0_3701000D").
type Stream struct {
	Path string
	Data []byte
}

// WriteOptions shape the file Build writes.
type WriteOptions struct {
	// SectorShift is 9 (512-byte sectors, version 3) or 12 (4096,
	// version 4); 0 means 9.
	SectorShift uint
	// RootCLSID is the root storage's class id (16 bytes) or nil.
	RootCLSID []byte
}

// cutoff is the mini stream cutoff Build writes (the only one Open takes).
const cutoff = 4096

type entry struct {
	name               string
	typ                byte
	left, right, child uint32
	start              uint32
	size               int
	data               []byte
	kids               []int
	mini               bool
}

// Build writes a compound file holding the streams: streams under 4096
// bytes in the mini stream, the others in their own chains, each storage's
// children in a balanced tree in the format's order, as many FAT and DIFAT
// sectors as the size needs.
func Build(streams []Stream, opt WriteOptions) []byte {
	shift := opt.SectorShift
	if shift == 0 {
		shift = 9
	}
	ss := 1 << shift
	le := binary.LittleEndian
	ents := []*entry{{name: "Root Entry", typ: 5}}
	byPath := map[string]int{"": 0}
	var ensure func(p string) int
	ensure = func(p string) int {
		if i, ok := byPath[p]; ok {
			return i
		}
		parent, name := "", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			parent, name = p[:i], p[i+1:]
		}
		pi := ensure(parent)
		ents = append(ents, &entry{name: name, typ: 1})
		i := len(ents) - 1
		ents[pi].kids = append(ents[pi].kids, i)
		byPath[p] = i
		return i
	}
	for _, s := range streams {
		parent, name := "", s.Path
		if i := strings.LastIndexByte(s.Path, '/'); i >= 0 {
			parent, name = s.Path[:i], s.Path[i+1:]
		}
		pi := ensure(parent)
		ents = append(ents, &entry{name: name, typ: 2, data: s.Data, size: len(s.Data)})
		ents[pi].kids = append(ents[pi].kids, len(ents)-1)
	}
	for _, e := range ents {
		e.left, e.right, e.child = noStream, noStream, noStream
	}
	for _, e := range ents {
		slices.SortFunc(e.kids, func(a, b int) int {
			x, y := ents[a].name, ents[b].name
			if len(utf16.Encode([]rune(x))) != len(utf16.Encode([]rune(y))) {
				return len(utf16.Encode([]rune(x))) - len(utf16.Encode([]rune(y)))
			}
			return strings.Compare(strings.ToUpper(x), strings.ToUpper(y))
		})
		var tree func(ids []int) uint32
		tree = func(ids []int) uint32 {
			if len(ids) == 0 {
				return noStream
			}
			m := len(ids) / 2
			ents[ids[m]].left = tree(ids[:m])
			ents[ids[m]].right = tree(ids[m+1:])
			return uint32(ids[m])
		}
		e.child = tree(e.kids)
	}
	// The mini stream and its FAT.
	var mini []byte
	var miniFAT []uint32
	for _, e := range ents {
		if e.typ != 2 || e.size == 0 || e.size >= cutoff {
			continue
		}
		e.mini = true
		e.start = uint32(len(miniFAT))
		n := (e.size + 63) / 64
		for i := range n {
			next := uint32(len(miniFAT) + 1)
			if i == n-1 {
				next = endOfChain
			}
			miniFAT = append(miniFAT, next)
		}
		mini = append(mini, e.data...)
		mini = append(mini, make([]byte, n*64-e.size)...)
	}
	sectors := func(n int) int { return (n + ss - 1) / ss }
	type run struct {
		data []byte
		set  func(start uint32)
	}
	dirBytes := make([]byte, 0, len(ents)*128)
	var runs []run
	runs = append(runs, run{nil, nil}) // the directory, filled in last
	var miniFATStart uint32 = endOfChain
	if len(miniFAT) > 0 {
		b := make([]byte, 4*len(miniFAT))
		for i, v := range miniFAT {
			le.PutUint32(b[4*i:], v)
		}
		runs = append(runs, run{b, func(s uint32) { miniFATStart = s }})
	}
	ents[0].start = endOfChain
	if len(mini) > 0 {
		ents[0].size = len(mini)
		runs = append(runs, run{mini, func(s uint32) { ents[0].start = s }})
	}
	for _, e := range ents {
		if e.typ == 2 && !e.mini {
			e.start = endOfChain
			if e.size > 0 {
				runs = append(runs, run{e.data, func(s uint32) { e.start = s }})
			}
		}
	}
	nDir := sectors(len(ents) * 128)
	nData := nDir
	for _, r := range runs[1:] {
		nData += sectors(len(r.data))
	}
	per := ss / 4
	nFAT, nDIFAT := 0, 0
	for {
		total := nData + nFAT + nDIFAT
		f := (total + per - 1) / per
		d := 0
		if f > 109 {
			d = (f - 109 + per - 2) / (per - 1)
		}
		if f == nFAT && d == nDIFAT {
			break
		}
		nFAT, nDIFAT = f, d
	}
	fat := make([]uint32, nFAT*per)
	for i := range fat {
		fat[i] = freeSect
	}
	for i := range nFAT {
		fat[i] = fatSect
	}
	for i := range nDIFAT {
		fat[nFAT+i] = difSect
	}
	next := uint32(nFAT + nDIFAT)
	dirStart := next
	place := func(n int) uint32 {
		start := next
		for i := range n {
			if i == n-1 {
				fat[next] = endOfChain
			} else {
				fat[next] = next + 1
			}
			next++
		}
		return start
	}
	place(nDir)
	var body [][]byte
	for _, r := range runs[1:] {
		r.set(place(sectors(len(r.data))))
		body = append(body, r.data)
	}
	for _, e := range ents {
		b := make([]byte, 128)
		u := utf16.Encode([]rune(e.name))
		for i, c := range u {
			le.PutUint16(b[2*i:], c)
		}
		le.PutUint16(b[0x40:], uint16(2*len(u)+2))
		b[0x42], b[0x43] = e.typ, 1
		le.PutUint32(b[0x44:], e.left)
		le.PutUint32(b[0x48:], e.right)
		le.PutUint32(b[0x4C:], e.child)
		if e.typ == 5 && len(opt.RootCLSID) == 16 {
			copy(b[0x50:], opt.RootCLSID)
		}
		if e.typ != 1 {
			le.PutUint32(b[0x74:], e.start)
			le.PutUint64(b[0x78:], uint64(e.size))
		}
		dirBytes = append(dirBytes, b...)
	}
	h := make([]byte, ss)
	copy(h, []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1})
	le.PutUint16(h[0x18:], 0x3E)
	le.PutUint16(h[0x1A:], 3) // version 3: 512-byte sectors
	if shift == 12 {
		le.PutUint16(h[0x1A:], 4)
	}
	le.PutUint16(h[0x1C:], 0xFFFE)
	le.PutUint16(h[0x1E:], uint16(shift))
	le.PutUint16(h[0x20:], 6)
	if shift == 12 {
		le.PutUint32(h[0x28:], uint32(nDir))
	}
	le.PutUint32(h[0x2C:], uint32(nFAT))
	le.PutUint32(h[0x30:], dirStart)
	le.PutUint32(h[0x38:], cutoff)
	le.PutUint32(h[0x3C:], miniFATStart)
	le.PutUint32(h[0x40:], uint32(sectors(4*len(miniFAT))))
	difatStart := uint32(endOfChain)
	if nDIFAT > 0 {
		difatStart = uint32(nFAT)
	}
	le.PutUint32(h[0x44:], difatStart)
	le.PutUint32(h[0x48:], uint32(nDIFAT))
	for i := range 109 {
		v := uint32(freeSect)
		if i < nFAT {
			v = uint32(i)
		}
		le.PutUint32(h[0x4C+4*i:], v)
	}
	out := append([]byte{}, h...)
	fb := make([]byte, 4*len(fat))
	for i, v := range fat {
		le.PutUint32(fb[4*i:], v)
	}
	out = append(out, fb...)
	// DIFAT sectors: the FAT sectors past the header's 109, per-1 to a
	// sector, the last entry linking to the next DIFAT sector.
	rest := make([]uint32, 0)
	for i := 109; i < nFAT; i++ {
		rest = append(rest, uint32(i))
	}
	for d := range nDIFAT {
		b := make([]byte, ss)
		for i := range per - 1 {
			v := uint32(freeSect)
			if k := d*(per-1) + i; k < len(rest) {
				v = rest[k]
			}
			le.PutUint32(b[4*i:], v)
		}
		link := uint32(endOfChain)
		if d < nDIFAT-1 {
			link = uint32(nFAT + d + 1)
		}
		le.PutUint32(b[4*(per-1):], link)
		out = append(out, b...)
	}
	pad := func(b []byte) {
		out = append(out, b...)
		if r := len(b) % ss; r != 0 {
			out = append(out, make([]byte, ss-r)...)
		}
	}
	pad(dirBytes)
	for _, b := range body {
		pad(b)
	}
	return out
}
