package document

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/extractq/extractq/document/internal/cfb"
)

// PowerPoint 97-2003 record types read ([MS-PPT] 2.13.24).
const (
	pptDocument          = 0x03E8
	pptSlide             = 0x03EE
	pptSlideAtom         = 0x03EF
	pptNotes             = 0x03F0
	pptSlidePersistAtom  = 0x03F3
	pptSlideListWithText = 0x0FF0
	pptUserEditAtom      = 0x0FF5
	pptTextCharsAtom     = 0x0FA0
	pptTextBytesAtom     = 0x0FA8
	pptPersistDirectory  = 0x1772
)

// pptRecord is one record: its header's fields and its body.
type pptRecord struct {
	ver      uint16 // 0xF: a container of records
	instance uint16
	typ      uint16
	data     []byte
}

// pptAt reads the record at off of b.
func pptAt(b []byte, off int64) (pptRecord, int64, bool) {
	if off < 0 || off+8 > int64(len(b)) {
		return pptRecord{}, 0, false
	}
	le := binary.LittleEndian
	vi := le.Uint16(b[off:])
	n := int64(le.Uint32(b[off+4:]))
	if off+8+n > int64(len(b)) {
		return pptRecord{}, 0, false
	}
	return pptRecord{vi & 0xF, vi >> 4, le.Uint16(b[off+2:]), b[off+8 : off+8+n]}, off + 8 + n, true
}

// pptChildren lists a container's records.
func pptChildren(data []byte) []pptRecord {
	var out []pptRecord
	for off := int64(0); ; {
		r, next, ok := pptAt(data, off)
		if !ok {
			return out
		}
		out = append(out, r)
		off = next
	}
}

// decodePPT reads a PowerPoint 97-2003 presentation ([MS-PPT], the
// "PowerPoint Document" stream): the newest persist directory (the chain
// of user edits from "Current User") maps the slide list's references to
// the slide containers, read in the show's order; each slide's text atoms
// (its placeholders and text boxes, in drawing order) are its text, then
// its notes page's after "Notes:", as the pptx reader writes a slide: one
// page per slide, "Slide N" first. A file without a usable persist
// directory is read by walking its slide containers in stream order.
func decodePPT(ctx context.Context, f *cfb.File, opts *Options) (*Document, error) {
	if _, ok := f.Lookup("EncryptedSummary"); ok {
		return nil, fmt.Errorf("%w: a password-protected PowerPoint .ppt; open it in PowerPoint or LibreOffice with the password, save a copy without one, and submit that", ErrEncrypted)
	}
	b, err := f.ReadStream("PowerPoint Document")
	if err != nil {
		return nil, cfbErr("PowerPoint Document", err)
	}
	persist, docRef := pptPersist(f, b)
	var slides []pptRecord
	notesByID := map[uint32]uint32{} // notes id (a SlideAtom's notesIdRef) → persist id
	listed := map[int64]bool{}
	if docOff, ok := persist[docRef]; ok {
		if doc, _, ok := pptAt(b, docOff); ok && doc.typ == pptDocument {
			for _, c := range pptChildren(doc.data) {
				if c.typ != pptSlideListWithText {
					continue
				}
				for _, a := range pptChildren(c.data) {
					if a.typ != pptSlidePersistAtom || len(a.data) < 16 {
						continue
					}
					if c.instance == 2 { // the notes pages
						notesByID[binary.LittleEndian.Uint32(a.data[12:])] = binary.LittleEndian.Uint32(a.data)
						continue
					}
					if c.instance != 0 {
						continue
					}
					// A slide listed twice is read once: a real deck never
					// does it, a crafted one would multiply the work.
					if off, ok := persist[binary.LittleEndian.Uint32(a.data)]; ok && !listed[off] {
						listed[off] = true
						if s, _, ok := pptAt(b, off); ok && s.typ == pptSlide {
							slides = append(slides, s)
						}
					}
				}
			}
		}
	}
	if len(slides) == 0 {
		for off := int64(0); ; {
			r, next, ok := pptAt(b, off)
			if !ok {
				break
			}
			if r.typ == pptSlide {
				slides = append(slides, r)
			}
			off = next
		}
	}
	maxPages := opts.Limits.withDefaults().MaxPages
	if len(slides) > maxPages {
		return nil, fmt.Errorf("%w: %d slides, the limit is %d (Limits.MaxPages)", ErrTooLarge, len(slides), maxPages)
	}
	doc := &Document{}
	w := newTextWriter(opts.Limits)
	notesRead := map[int64]bool{}
	for i, s := range slides {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		w.startPage()
		w.line("Slide " + strconv.Itoa(i+1))
		w.endLines()
		pptText(s.data, w, 0)
		for _, c := range pptChildren(s.data) {
			if c.typ != pptSlideAtom || len(c.data) < 20 {
				continue
			}
			ref, ok := notesByID[binary.LittleEndian.Uint32(c.data[16:])] // notesIdRef
			if !ok {
				continue
			}
			off, ok := persist[ref]
			if !ok || notesRead[off] {
				continue // notes pages shared between slides are read once
			}
			notesRead[off] = true
			if n, _, ok := pptAt(b, off); ok && n.typ == pptNotes {
				notes := newTextWriter(opts.Limits)
				pptText(n.data, notes, 0)
				if text, _, _ := notes.text(); strings.TrimSpace(text) != "" {
					w.line("Notes:")
					w.block(text)
				}
			}
		}
		w.endPage("")
		if w.err != nil {
			return nil, w.err
		}
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	summaryInfo(f, &doc.Meta)
	if doc.Attachments, err = embedded(pptObjects(ctx, b, persist, opts)); err != nil {
		return nil, err
	}
	return doc, nil
}

// pptPersist reads the persist directory: persist id → stream offset,
// newest edit first (an older edit's entry for the same id is stale), and
// the document container's id. Damage leaves the map partial or empty.
func pptPersist(f *cfb.File, b []byte) (map[uint32]int64, uint32) {
	le := binary.LittleEndian
	persist := map[uint32]int64{}
	cu, err := f.ReadStream("Current User")
	if err != nil || len(cu) < 20 {
		return persist, 0
	}
	off := int64(le.Uint32(cu[16:])) // CurrentUserAtom: header, size, token, offsetToCurrentEdit
	var docRef uint32
	seen := map[int64]bool{}
	for edits := 0; edits < 1<<10 && !seen[off]; edits++ {
		seen[off] = true
		u, _, ok := pptAt(b, off)
		if !ok || u.typ != pptUserEditAtom || len(u.data) < 20 {
			break
		}
		if edits == 0 {
			docRef = le.Uint32(u.data[16:])
		}
		if d, _, ok := pptAt(b, int64(le.Uint32(u.data[12:]))); ok && d.typ == pptPersistDirectory {
			for i := 0; i+4 <= len(d.data); {
				v := le.Uint32(d.data[i:])
				id, n := v&0xFFFFF, int(v>>20)
				i += 4
				for k := 0; k < n && i+4 <= len(d.data); k++ {
					if _, dup := persist[id+uint32(k)]; !dup {
						persist[id+uint32(k)] = int64(le.Uint32(d.data[i:]))
					}
					i += 4
				}
			}
		}
		off = int64(le.Uint32(u.data[8:])) // offsetLastEdit
		if off == 0 {
			break
		}
	}
	return persist, docRef
}

// pptMaxDepth bounds the nesting of containers walked for text.
const pptMaxDepth = 32

// pptText writes the text atoms of a container, each a block of its
// paragraphs (ends of paragraph are \r, line breaks \v).
func pptText(data []byte, w *textWriter, depth int) {
	if depth > pptMaxDepth {
		return
	}
	for _, r := range pptChildren(data) {
		var text string
		switch {
		case r.ver == 0xF:
			pptText(r.data, w, depth+1)
			continue
		case r.typ == pptTextCharsAtom:
			u := make([]uint16, len(r.data)/2)
			for i := range u {
				u[i] = binary.LittleEndian.Uint16(r.data[2*i:])
			}
			text = string(utf16.Decode(u))
		case r.typ == pptTextBytesAtom:
			text = latin1(r.data)
		default:
			continue
		}
		text = strings.Map(func(r rune) rune {
			switch {
			case r == '\r' || r == '\v':
				return '\n'
			case r == '\t':
				return r
			case r < 0x20 || r == 0xFFFD:
				return -1 // a field's placeholder (slide number, date)
			}
			return r
		}, text)
		if strings.TrimSpace(text) == "*" {
			continue // a slide-number placeholder's stand-in
		}
		var lines []string
		for l := range strings.SplitSeq(text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		w.block(strings.Join(lines, "\n"))
	}
}
