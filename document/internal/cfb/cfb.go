// Package cfb reads Compound File Binary files ([MS-CFB]), the container
// of the legacy Office formats (Word .doc, Excel .xls, PowerPoint .ppt)
// and of Outlook .msg messages: a small file system of storages
// (directories) and streams (files) laid out in sector chains.
//
// It reads like archive/zip: the whole directory is parsed up front and
// every structure is checked against the file before it is used. Sector
// chains that loop or leave the file, streams longer than the file, and
// reads past Limits.MaxRead fail with ErrFormat or ErrTooLarge; no input
// makes it panic or loop.
package cfb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
)

// Magic starts every compound file.
var Magic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

var (
	// ErrFormat: the file is not a well-formed compound file (a bad
	// header, a sector chain that loops or points outside the file, a
	// stream longer than the file holds).
	ErrFormat = errors.New("cfb: malformed compound file")
	// ErrTooLarge: reading would pass Limits.MaxRead.
	ErrTooLarge = errors.New("cfb: read limit reached")
	// ErrNotFound: no stream or storage of that path.
	ErrNotFound = errors.New("cfb: no such stream")
)

// Limits bound what reading a compound file may cost.
type Limits struct {
	// MaxRead is the most bytes read out of the file's streams, directory
	// and allocation tables included, over the File's life (0: no limit
	// beyond the file's size per stream).
	MaxRead int64
}

// Special sector numbers ([MS-CFB] 2.1).
const (
	maxRegSect = 0xFFFFFFFA
	difSect    = 0xFFFFFFFC
	fatSect    = 0xFFFFFFFD
	endOfChain = 0xFFFFFFFE
	freeSect   = 0xFFFFFFFF
	noStream   = 0xFFFFFFFF
)

// Entry types of a directory entry.
const (
	TypeStorage = 1
	TypeStream  = 2
	TypeRoot    = 5
)

// Entry is one directory entry: a storage or a stream.
type Entry struct {
	// Name is the entry's own name; Path joins the names of the storages
	// above it with "/" (the root storage is not part of it).
	Name, Path string
	// Type is TypeStorage, TypeStream or TypeRoot.
	Type byte
	// Size is a stream's length in bytes.
	Size int64

	start              uint32
	left, right, child uint32
	index              int
}

// File is an open compound file.
type File struct {
	r          io.ReaderAt
	size       int64
	shift      uint
	sectorSize int64
	nSectors   int64 // sectors the file holds after the header
	fat        []uint32
	miniFAT    []uint32
	miniCutoff int64
	dir        []Entry
	list       []*Entry // reachable entries in tree order
	byPath     map[string]*Entry
	children   map[string][]*Entry // lower-cased storage path → entries
	mini       []byte              // the mini stream, read on first use
	miniRead   bool
	budget     int64 // bytes left to read; <0 means unlimited
}

func corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, a...))
}

// Open parses the header, the allocation tables and the directory.
func Open(r io.ReaderAt, size int64, lim Limits) (*File, error) {
	if size < 512 {
		return nil, corrupt("%d bytes, shorter than a header", size)
	}
	h := make([]byte, 512)
	if _, err := r.ReadAt(h, 0); err != nil {
		return nil, corrupt("header: %v", err)
	}
	if !bytes.Equal(h[:8], Magic) {
		return nil, corrupt("no compound file signature")
	}
	le := binary.LittleEndian
	if le.Uint16(h[0x1C:]) != 0xFFFE {
		return nil, corrupt("byte order mark %#x", le.Uint16(h[0x1C:]))
	}
	shift := uint(le.Uint16(h[0x1E:]))
	if shift != 9 && shift != 12 {
		return nil, corrupt("sector shift %d (want 9 or 12)", shift)
	}
	if ms := le.Uint16(h[0x20:]); ms != 6 {
		return nil, corrupt("mini sector shift %d (want 6)", ms)
	}
	f := &File{r: r, size: size, shift: shift, sectorSize: 1 << shift, budget: -1}
	if lim.MaxRead > 0 {
		f.budget = lim.MaxRead
	}
	// The header occupies the first sector (512 bytes, padded to 4096 in
	// version 4); sector n starts at (n+1) << shift.
	f.nSectors = (size - f.sectorSize + f.sectorSize - 1) / f.sectorSize
	if f.nSectors < 0 {
		f.nSectors = 0
	}
	// The spec fixes the cutoff at 4096; a larger one would let every
	// stream of a crafted directory copy a large mini stream.
	if f.miniCutoff = int64(le.Uint32(h[0x38:])); f.miniCutoff != 4096 {
		return nil, corrupt("mini stream cutoff %d (want 4096)", f.miniCutoff)
	}
	nFAT := int64(le.Uint32(h[0x2C:]))
	firstDir := le.Uint32(h[0x30:])
	firstMiniFAT := le.Uint32(h[0x3C:])
	nMiniFAT := int64(le.Uint32(h[0x40:]))
	firstDIFAT := le.Uint32(h[0x44:])
	nDIFAT := int64(le.Uint32(h[0x48:]))
	if nFAT > f.nSectors || nMiniFAT > f.nSectors || nDIFAT > f.nSectors {
		return nil, corrupt("header counts %d FAT, %d mini FAT, %d DIFAT sectors in a file of %d", nFAT, nMiniFAT, nDIFAT, f.nSectors)
	}
	// DIFAT: 109 entries in the header, then a chain of DIFAT sectors
	// whose last entry links to the next.
	difat := make([]uint32, 0, nFAT)
	for i := 0; i < 109 && int64(len(difat)) < nFAT; i++ {
		difat = append(difat, le.Uint32(h[0x4C+4*i:]))
	}
	per := int(f.sectorSize/4) - 1
	sec := firstDIFAT
	seen := map[uint32]bool{}
	for int64(len(difat)) < nFAT {
		if sec > maxRegSect || int64(sec) >= f.nSectors || seen[sec] {
			return nil, corrupt("DIFAT chain broken at sector %#x with %d of %d FAT sectors found", sec, len(difat), nFAT)
		}
		seen[sec] = true
		b, err := f.sector(sec)
		if err != nil {
			return nil, err
		}
		for i := 0; i < per && int64(len(difat)) < nFAT; i++ {
			difat = append(difat, le.Uint32(b[4*i:]))
		}
		sec = le.Uint32(b[4*per:])
	}
	f.fat = make([]uint32, 0, nFAT*f.sectorSize/4)
	for _, s := range difat {
		b, err := f.sector(s)
		if err != nil {
			return nil, fmt.Errorf("FAT: %w", err)
		}
		for i := 0; i < len(b); i += 4 {
			f.fat = append(f.fat, le.Uint32(b[i:]))
		}
	}
	if nMiniFAT > 0 {
		b, err := f.chain(firstMiniFAT, -1)
		if err != nil {
			return nil, fmt.Errorf("mini FAT: %w", err)
		}
		for i := 0; i+4 <= len(b); i += 4 {
			f.miniFAT = append(f.miniFAT, le.Uint32(b[i:]))
		}
	}
	dir, err := f.chain(firstDir, -1)
	if err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	for i := 0; i+128 <= len(dir); i += 128 {
		f.dir = append(f.dir, parseEntry(dir[i:i+128], len(f.dir), shift == 9))
	}
	if len(f.dir) == 0 || f.dir[0].Type != TypeRoot {
		return nil, corrupt("no root storage")
	}
	f.walk()
	return f, nil
}

func parseEntry(b []byte, index int, v3 bool) Entry {
	le := binary.LittleEndian
	n := int(le.Uint16(b[0x40:]))
	if n > 64 {
		n = 64
	}
	u := make([]uint16, 0, n/2)
	for i := 0; i+1 < n; i += 2 {
		c := le.Uint16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	size := le.Uint64(b[0x78:])
	if v3 {
		size &= 0xFFFFFFFF // version 3 files may leave garbage in the high half
	}
	return Entry{
		Name:  string(utf16.Decode(u)),
		Type:  b[0x42],
		left:  le.Uint32(b[0x44:]),
		right: le.Uint32(b[0x48:]),
		child: le.Uint32(b[0x4C:]),
		start: le.Uint32(b[0x74:]),
		Size:  int64(min(size, 1<<62)),
		index: index,
	}
}

// walk lists the entries reachable from the root, reading each storage's
// red-black tree as a plain binary tree in order; an entry reached twice
// (a cycle) is ignored the second time.
func (f *File) walk() {
	seen := make([]bool, len(f.dir))
	seen[0] = true
	f.byPath = map[string]*Entry{}
	f.children = map[string][]*Entry{}
	var visit func(id uint32, parent string, depth int)
	visit = func(id uint32, parent string, depth int) {
		// An explicit stack would do as well; the depth bound keeps a
		// degenerate tree (a list of siblings) from exhausting the stack.
		for id != noStream && int(id) < len(f.dir) && !seen[id] && depth < 1<<12 {
			seen[id] = true
			e := &f.dir[id]
			visit(e.left, parent, depth+1)
			e.Path = e.Name
			if parent != "" {
				e.Path = parent + "/" + e.Name
			}
			if e.Type == TypeStorage || e.Type == TypeStream {
				f.list = append(f.list, e)
				key := strings.ToLower(e.Path)
				if _, dup := f.byPath[key]; !dup {
					f.byPath[key] = e
				}
				pk := strings.ToLower(parent)
				f.children[pk] = append(f.children[pk], e)
			}
			if e.Type == TypeStorage {
				visit(e.child, e.Path, depth+1)
			}
			id = e.right
		}
	}
	visit(f.dir[0].child, "", 0)
}

// Entries lists the storages and streams reachable from the root, each
// storage's children in its tree's order (by name length, then name).
func (f *File) Entries() []*Entry { return f.list }

// Root is the root storage's entry (its class, the mini stream).
func (f *File) Root() *Entry { return &f.dir[0] }

// Lookup finds the entry at path ("__attach_version1.0_#00000000/__substg1.0_3701000D");
// names compare case-insensitively, as the format's own ordering does.
func (f *File) Lookup(path string) (*Entry, bool) {
	e, ok := f.byPath[strings.ToLower(path)]
	return e, ok
}

// Children lists the entries directly under the storage at path ("" is
// the root).
func (f *File) Children(path string) []*Entry {
	return f.children[strings.ToLower(path)]
}

// ReadStream reads the whole stream at path.
func (f *File) ReadStream(path string) ([]byte, error) {
	e, ok := f.Lookup(path)
	if !ok || e.Type != TypeStream {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	return f.Read(e)
}

// Read reads a stream entry whole: from the mini stream when it is
// shorter than the cutoff, else from its own sector chain.
func (f *File) Read(e *Entry) ([]byte, error) {
	if e.Type != TypeStream {
		return nil, fmt.Errorf("%w: %s is a storage", ErrNotFound, e.Path)
	}
	if e.Size == 0 {
		return []byte{}, nil
	}
	if e.Size > f.size {
		return nil, corrupt("stream %s claims %d bytes in a file of %d", e.Path, e.Size, f.size)
	}
	if e.Size < f.miniCutoff {
		return f.readMini(e)
	}
	b, err := f.chain(e.start, e.Size)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", e.Path, err)
	}
	return b, nil
}

func (f *File) readMini(e *Entry) ([]byte, error) {
	if !f.miniRead {
		f.miniRead = true
		root := &f.dir[0]
		if root.Size > 0 {
			if root.Size > f.size {
				return nil, corrupt("mini stream claims %d bytes in a file of %d", root.Size, f.size)
			}
			m, err := f.chain(root.start, root.Size)
			if err != nil {
				return nil, fmt.Errorf("mini stream: %w", err)
			}
			f.mini = m
		}
	}
	if err := f.charge(e.Size); err != nil {
		return nil, err
	}
	out := make([]byte, 0, e.Size)
	sec := e.start
	for n := 0; int64(len(out)) < e.Size; n++ {
		if sec > maxRegSect || int(sec) >= len(f.miniFAT) || n > len(f.miniFAT) {
			return nil, corrupt("stream %s: mini chain broken at %#x after %d of %d bytes", e.Path, sec, len(out), e.Size)
		}
		off := int64(sec) * 64
		if off+64 > int64(len(f.mini)) {
			return nil, corrupt("stream %s: mini sector %d beyond the mini stream", e.Path, sec)
		}
		out = append(out, f.mini[off:off+min(64, e.Size-int64(len(out)))]...)
		sec = f.miniFAT[sec]
	}
	return out, nil
}

// chain reads a sector chain from start: want bytes of it, or the whole
// chain when want < 0. The chain may not be longer than the file (a loop)
// nor leave it.
func (f *File) chain(start uint32, want int64) ([]byte, error) {
	if want > f.size {
		return nil, corrupt("%d bytes wanted from a file of %d", want, f.size)
	}
	var out []byte
	if want > 0 {
		out = make([]byte, 0, want)
	}
	// A sector met twice is a loop, whether or not the length runs out
	// first: the bytes read would be a repeat, not the stream.
	seen := make([]uint64, (f.nSectors+63)/64)
	sec := start
	for n := int64(0); want < 0 || int64(len(out)) < want; n++ {
		if sec == endOfChain && want < 0 {
			return out, nil
		}
		if sec > maxRegSect || int(sec) >= len(f.fat) {
			return nil, corrupt("sector chain broken at %#x after %d bytes", sec, len(out))
		}
		if n >= f.nSectors || int64(sec) >= f.nSectors || seen[sec/64]&(1<<(sec%64)) != 0 {
			return nil, corrupt("sector chain loops or leaves the file at sector %#x", sec)
		}
		seen[sec/64] |= 1 << (sec % 64)
		b, err := f.sector(sec)
		if err != nil {
			return nil, err
		}
		if want >= 0 && int64(len(b)) > want-int64(len(out)) {
			b = b[:want-int64(len(out))]
		}
		out = append(out, b...)
		sec = f.fat[sec]
	}
	return out, nil
}

// sector reads one sector, charged to the read budget.
func (f *File) sector(sec uint32) ([]byte, error) {
	if sec > maxRegSect || int64(sec) >= f.nSectors {
		return nil, corrupt("sector %#x beyond the file's %d", sec, f.nSectors)
	}
	if err := f.charge(f.sectorSize); err != nil {
		return nil, err
	}
	b := make([]byte, f.sectorSize)
	off := (int64(sec) + 1) << f.shift
	n, err := f.r.ReadAt(b, off)
	if n < len(b) {
		if err == io.EOF || err == nil {
			// The last sector may be cut short by a writer that did not
			// pad the file: zeros stand for the missing bytes.
			clear(b[n:])
			return b, nil
		}
		return nil, corrupt("sector %d: %v", sec, err)
	}
	return b, nil
}

// charge takes n bytes from the read budget.
func (f *File) charge(n int64) error {
	if f.budget < 0 {
		return nil
	}
	if f.budget < n {
		return fmt.Errorf("%w: more than the limit of bytes read from the compound file", ErrTooLarge)
	}
	f.budget -= n
	return nil
}

// Extract writes the storage at dir, with every stream under it, as a
// compound file of its own (see Build): how an object embedded in a file
// (a workbook in a Word .doc's ObjectPool) becomes the file it is. The
// streams are read within Limits.MaxRead as any other.
func (f *File) Extract(dir string) ([]byte, error) {
	e, ok := f.Lookup(dir)
	if !ok || e.Type != TypeStorage {
		return nil, fmt.Errorf("%w: storage %s", ErrNotFound, dir)
	}
	prefix := strings.ToLower(e.Path) + "/"
	var streams []Stream
	for _, s := range f.list {
		if s.Type != TypeStream || !strings.HasPrefix(strings.ToLower(s.Path), prefix) {
			continue
		}
		b, err := f.Read(s)
		if err != nil {
			return nil, err
		}
		streams = append(streams, Stream{Path: s.Path[len(prefix):], Data: b})
	}
	return Build(streams, WriteOptions{}), nil
}
