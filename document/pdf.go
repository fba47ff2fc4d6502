package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/extractq/extractq/document/internal/pdf"
)

// The PDF reader: internal/pdf (a patched copy of github.com/ledongthuc/pdf)
// parses the file (objects,
// streams, fonts' Unicode maps, RC4/AES-128 decryption); the content
// interpreter (pdf_content.go) places every glyph, and the layout layer
// (pdf_layout.go) makes reading order, tables and pages of them.
// doc/documents-pdf.md says why this parser, by measurement.

func init() {
	Register(Format{
		Name:       "pdf",
		MediaType:  "application/pdf",
		Extensions: []string{".pdf"},
		Version:    "16", // 3: tight word spaces, ligatures spelled out, odd-length Unicode maps; 4: right-to-left text in logical order, Arabic presentation forms spelled, marks kept with their letters; 5: producers' sweep: table rows between a title and a paragraph, superscripts, chance gaps across two columns, Symbol and ZapfDingbats; 6: a table row whose cells wrap onto lines above and below it read as one row; 7: attached files (EmbeddedFiles, FileAttachment annotations) read as attachments; 8: filled-in form fields and annotations' text (widget and FreeText appearances, values of fields without an appearance) join the page's text, and scans are read by OCR at their own resolution (Limits.MaxOCRPixels); 9: page images in palettes, CMYK, Lab, 2/4/16-bit samples, with Decode arrays, LZW, RunLength, ASCIIHex and filter chains, and pages cut into bands drawn into one picture, JBIG2 page images (generic regions, arithmetic or MMR; symbol dictionaries and text regions, arithmetic or Huffman; refinement; halftones); 10: JPEG 2000 (JPXDecode) page images; 11: codes a partial Unicode map leaves out read by the font's encoding, CFF (Type1C) programs' own encodings, CJK fonts not embedded (Identity-H, no Unicode map) by Adobe's maps of their collections, uniXXXX names in /Differences; 12: content streams, forms and fonts stored with LZW, RunLength or ASCIIHex, or Flate with any predictor, read (they were rejected as pages without text); 13: right-to-left lines: neutrals inside a word of one direction keep to it (\ref{eq:1} in a Persian line), word spaces from 0.09 of the font size beside RTL letters, a ToUnicode map read before /Differences, glyph names with suffixes and ligatures (afii57444.ini, f_f_i); 14: marked content's ActualText stands for its glyphs (ligatures, Word's hyphens, shaped scripts, Chromium's clusters of marks), codes nothing reads left out instead of U+FFFD, UTF-8 text strings (PDF 2.0); 15: spacing accents drawn over a letter (TeX's \accent) read as the accented letter (NFC); 16: an ActualText span reaches over its glyphs without text (LibreOffice's Bengali and Tamil clusters), word spaces from 0.09 of the font size beside Indic letters
		Match:      matchPDF,
		Priority:   100,
		Decoder:    DecoderFunc(decodePDF),
	})
}

// matchPDF takes "%PDF-" at the start, or within the first KiB (after
// junk some mail gateways prepend) when the file also ends like a PDF: a
// text about PDFs quoting a header is not one.
func matchPDF(head []byte, r io.ReaderAt, size int64) bool {
	if bytes.HasPrefix(head, []byte("%PDF-")) {
		return true
	}
	if !bytes.Contains(head[:min(len(head), 1024)], []byte("%PDF-")) {
		return false
	}
	tail := make([]byte, min(size, 1024))
	n, _ := r.ReadAt(tail, size-int64(len(tail)))
	return bytes.Contains(tail[:n], []byte("%%EOF"))
}

// pdfPage is one page read, its offsets relative to its own text, before
// the pages are joined and running headers and footers judged.
type pdfPage struct {
	text          string
	blocks        []Block
	header        Span // the first block, when it sits at the top
	footer        Span // the last block, when it sits at the bottom
	hkey, fkey    string
	width, height float64
	image         *Image
	unreadable    string // Page.Unreadable
}

func decodePDF(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (doc *Document, err error) {
	defer func() {
		// The parser reports malformed input by panicking; none may escape.
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("%w: the PDF parser failed: %v (at %s)", ErrCorrupt, p, firstFrame(debug.Stack()))
		}
	}()
	rd, recovered, locked, err := openPDF(r, size, opts.Password)
	if err != nil {
		return nil, err
	}
	doc = &Document{Locked: locked}
	if recovered {
		doc.Warnings = append(doc.Warnings, "the cross-reference table is broken: objects were found by scanning the file")
	}
	doc.Meta = pdfMeta(rd)

	var pages []pdfPage
	files := embeddedFiles(rd.Trailer().Key("Root"))
	fonts := map[string]*font{} // shared by the pages: a font's Unicode map is parsed once
	form := readPDFForm(rd.Trailer().Key("Root"))
	n, textLen := 0, 0
	walkErr := walkPages(rd.Trailer().Key("Root").Key("Pages"), func(warn string) {
		doc.Warnings = append(doc.Warnings, warn)
	}, func(p pdf.Page, attrs pageAttrs) error {
		n++
		if n > opts.Limits.MaxPages {
			return fmt.Errorf("%w: more than %d pages (raise Limits.MaxPages, or split the document)", ErrTooLarge, opts.Limits.MaxPages)
		}
		if err := context.Cause(ctx); err != nil {
			return err
		}
		files = append(files, annotationFiles(p.V)...)
		pg, warn := readPDFPage(ctx, p, attrs, fonts, form, n, opts)
		if warn != "" {
			doc.Warnings = append(doc.Warnings, warn)
		}
		pages = append(pages, pg)
		if textLen += len(pg.text); int64(textLen) > opts.Limits.MaxText {
			return fmt.Errorf("%w: more than %d bytes of text by page %d (raise Limits.MaxText, or split the document)", ErrTooLarge, opts.Limits.MaxText, n)
		}
		return nil
	})
	if walkErr != nil {
		return nil, walkErr
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("%w: no pages found", ErrCorrupt)
	}
	if doc.Attachments, err = readPDFFiles(ctx, files, opts); err != nil {
		return nil, err
	}
	assemblePDF(doc, pages, opts.DropRunning)
	if labels := readPageLabels(rd.Trailer().Key("Root")); len(labels.starts) > 0 {
		for i := range doc.Pages {
			doc.Pages[i].Label = labels.label(i)
		}
	}
	// A page marked unreadable is the caller's to decide (a model that
	// reads PDFs reads it); a document with no text, no picture and no
	// such page is blank.
	if strings.TrimSpace(doc.Text) == "" && len(doc.Scanned()) == 0 && len(doc.Unreadable()) == 0 {
		return nil, fmt.Errorf("%w: none of its %d pages has text or a page image this reader decodes (text drawn as vector outlines, or JBIG2 and JPEG 2000 scans of kinds not decoded): render it to images for OCR or a model that reads images", ErrNoText, len(pages))
	}
	return doc, nil
}

// firstFrame picks the parser's own frame out of a panic's stack, so an
// error names where the parser gave up.
func firstFrame(stack []byte) string {
	for _, ln := range strings.Split(string(stack), "\n") {
		if strings.Contains(ln, "document/internal/pdf/") && strings.Contains(ln, ".go:") {
			return strings.TrimSpace(ln[strings.LastIndex(ln, "/")+1:])
		}
	}
	return "unknown"
}

// openPDF opens the file, with the empty password and then opts' one; a
// file whose cross-reference table does not load is opened again over
// objects found by scanning it.
func openPDF(r io.ReaderAt, size int64, password string) (rd *pdf.Reader, recovered, locked bool, err error) {
	r = fixHeader(r)
	// The parser asks for the password only once the empty user password
	// failed: a file that opens after that is locked.
	open := func(r io.ReaderAt, size int64) (*pdf.Reader, error) {
		locked = false
		return pdf.NewReaderEncrypted(r, size, func() string {
			if locked {
				return ""
			}
			locked = true
			return password
		})
	}
	rd, err = open(r, size)
	if err == nil {
		if _, err = checkOpen(rd); err == nil {
			return rd, false, locked, nil
		}
	}
	if encErr := encryptionError(err, password); encErr != nil {
		return nil, false, false, encErr
	}
	fixed, fixedSize, ok := rebuildXref(r, size)
	if !ok {
		return nil, false, false, fmt.Errorf("%w: %v; no objects could be recovered from it", ErrCorrupt, err)
	}
	rd2, err2 := open(fixed, fixedSize)
	if err2 == nil {
		_, err2 = checkOpen(rd2)
	}
	if err2 != nil {
		if encErr := encryptionError(err2, password); encErr != nil {
			return nil, false, false, encErr
		}
		return nil, false, false, fmt.Errorf("%w: %v; recovery by scanning for objects failed too: %v", ErrCorrupt, err, err2)
	}
	return rd2, true, locked, nil
}

// checkOpen makes sure the document's catalog and page tree resolve.
func checkOpen(rd *pdf.Reader) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	pages := rd.Trailer().Key("Root").Key("Pages")
	if pages.Kind() != pdf.Dict {
		return 0, errors.New("no page tree")
	}
	return int(pages.Key("Count").Int64()), nil
}

func encryptionError(err error, password string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pdf.ErrInvalidPassword):
		if password != "" {
			return fmt.Errorf("%w: the password given does not open it", ErrEncrypted)
		}
		return fmt.Errorf("%w: it does not open with the empty user password; pass its password (Options.Password)", ErrEncrypted)
	case strings.Contains(err.Error(), "encryption"):
		return fmt.Errorf("%w: %v (decrypt it first, e.g. qpdf --decrypt)", ErrEncrypted, err)
	}
	return nil
}

// fixHeader presents a header the parser accepts ("%PDF-1.x" and an end of
// line) over files whose header says 2.0, carries junk, or ends in a space:
// the header is a comment, so the rest reads the same.
func fixHeader(r io.ReaderAt) io.ReaderAt {
	head := make([]byte, 9)
	r.ReadAt(head, 0)
	if bytes.HasPrefix(head, []byte("%PDF-1.")) && head[7] >= '0' && head[7] <= '7' && (head[8] == '\n' || head[8] == '\r') {
		return r
	}
	return &patchedReaderAt{r: r, patch: []byte("%PDF-1.7\n")}
}

// patchedReaderAt reads r with its first bytes replaced by patch.
type patchedReaderAt struct {
	r     io.ReaderAt
	patch []byte
}

func (p *patchedReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n, err := p.r.ReadAt(b, off)
	for i := 0; i < n && off+int64(i) < int64(len(p.patch)); i++ {
		b[i] = p.patch[off+int64(i)]
	}
	return n, err
}

var objRE = regexp.MustCompile(`(?:^|[\r\n\s])(\d{1,10})\s+(\d{1,5})\s+obj\b`)

// rebuildXref scans the file for "N G obj" and appends a fresh
// cross-reference table and trailer naming the catalog it found, the way
// viewers repair a broken or truncated file. The last definition of an
// object wins, as with incremental updates.
func rebuildXref(r io.ReaderAt, size int64) (io.ReaderAt, int64, bool) {
	const chunk, overlap = 1 << 20, 64
	offsets := map[int]int64{}
	var root, info int
	buf := make([]byte, chunk+overlap)
	for base := int64(0); base < size; base += chunk {
		n, _ := r.ReadAt(buf[:min(int64(len(buf)), size-base)], base)
		b := buf[:n]
		for _, m := range objRE.FindAllSubmatchIndex(b, -1) {
			if m[0] >= chunk { // found again in the next chunk
				continue
			}
			id, _ := strconv.Atoi(string(b[m[2]:m[3]]))
			if id <= 0 || id > 10_000_000 {
				continue
			}
			off := base + int64(m[2])
			offsets[id] = off
			tail := b[m[1]:min(len(b), m[1]+512)]
			if end := bytes.Index(tail, []byte("endobj")); end >= 0 {
				tail = tail[:end]
			}
			compact := bytes.ReplaceAll(tail, []byte(" "), nil)
			switch {
			case bytes.Contains(compact, []byte("/Type/Catalog")):
				root = id
			case bytes.Contains(compact, []byte("/Producer")) || bytes.Contains(compact, []byte("/Creator")):
				if !bytes.Contains(compact, []byte("stream")) {
					info = id
				}
			}
		}
	}
	if root == 0 {
		return nil, 0, false
	}
	maxID := 0
	for id := range offsets {
		maxID = max(maxID, id)
	}
	var x bytes.Buffer
	x.WriteString("\nxref\n")
	fmt.Fprintf(&x, "0 %d\n0000000000 65535 f\r\n", maxID+1)
	for id := 1; id <= maxID; id++ {
		if off, ok := offsets[id]; ok {
			fmt.Fprintf(&x, "%010d 00000 n\r\n", off)
		} else {
			x.WriteString("0000000000 00000 f\r\n")
		}
	}
	fmt.Fprintf(&x, "trailer\n<< /Size %d /Root %d 0 R", maxID+1, root)
	if info != 0 {
		fmt.Fprintf(&x, " /Info %d 0 R", info)
	}
	fmt.Fprintf(&x, " >>\nstartxref\n%d\n%%%%EOF\n", size+1)
	return &appendedReaderAt{r: r, size: size, tail: x.Bytes()}, size + int64(x.Len()), true
}

// appendedReaderAt reads r followed by tail.
type appendedReaderAt struct {
	r    io.ReaderAt
	size int64
	tail []byte
}

func (a *appendedReaderAt) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	if off < a.size {
		m, err := a.r.ReadAt(b[:min(int64(len(b)), a.size-off)], off)
		n = m
		if err != nil && !errors.Is(err, io.EOF) {
			return n, err
		}
		if m < len(b) && off+int64(m) < a.size {
			return n, io.ErrUnexpectedEOF
		}
	}
	if n < len(b) {
		t := off + int64(n) - a.size
		if t >= int64(len(a.tail)) {
			return n, io.EOF
		}
		n += copy(b[n:], a.tail[t:])
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// pageAttrs are the attributes a page inherits from the nodes above it in
// the page tree. They are carried down the walk: looking them up through
// /Parent would parse the (possibly huge) parent node again for every page.
type pageAttrs struct {
	resources, mediaBox, cropBox pdf.Value
}

func (a pageAttrs) under(v pdf.Value) pageAttrs {
	for key, slot := range map[string]*pdf.Value{"Resources": &a.resources, "MediaBox": &a.mediaBox, "CropBox": &a.cropBox} {
		if x := v.Key(key); !x.IsNull() {
			*slot = x
		}
	}
	return a
}

// walkPages calls fn for every page of the tree in order, one at a time (a
// 10,000-page file never holds more than its path in the tree), guarding
// against cycles and absurd depth.
// A node that cannot be parsed is skipped with a warning: the other pages
// are still read.
func walkPages(node pdf.Value, warn func(string), fn func(pdf.Page, pageAttrs) error) error {
	seen := map[string]bool{}
	var walk func(v pdf.Value, attrs pageAttrs, depth int) error
	walk = func(v pdf.Value, attrs pageAttrs, depth int) error {
		if depth > 64 {
			return fmt.Errorf("%w: the page tree is nested deeper than 64", ErrCorrupt)
		}
		attrs = attrs.under(v)
		kids := v.Key("Kids")
		if v.Key("Type").Name() == "Page" || (kids.Kind() != pdf.Array && v.Key("Contents").Kind() != pdf.Null) {
			return fn(pdf.Page{V: v}, attrs)
		}
		for i := 0; i < kids.Len(); i++ {
			k, err := func() (k pdf.Value, err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("%v", p)
					}
				}()
				return kids.Index(i), nil
			}()
			if err != nil {
				warn(fmt.Sprintf("a node of the page tree is unreadable and skipped: %v", err))
				continue
			}
			if k.Kind() != pdf.Dict {
				continue
			}
			if k.Key("Type").Name() != "Page" {
				// Intermediate nodes are few: remember them to break cycles.
				id := k.String()
				if seen[id] {
					return fmt.Errorf("%w: the page tree loops", ErrCorrupt)
				}
				seen[id] = true
			}
			if err := walk(k, attrs, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(node, pageAttrs{}, 0)
}

func pdfMeta(rd *pdf.Reader) (m Metadata) {
	defer func() { recover() }() // metadata is optional: a broken Info dict loses only it
	info := rd.Trailer().Key("Info")
	m.Title = strings.TrimSpace(info.Key("Title").Text())
	m.Author = strings.TrimSpace(info.Key("Author").Text())
	m.Subject = strings.TrimSpace(info.Key("Subject").Text())
	for _, k := range []string{"Producer", "Creator", "Keywords"} {
		if v := strings.TrimSpace(info.Key(k).Text()); v != "" {
			if m.Other == nil {
				m.Other = map[string]string{}
			}
			m.Other[k] = v
		}
	}
	return m
}

// pageBox is the page's visible box (CropBox, else MediaBox), default
// US Letter.
func pageBox(attrs pageAttrs) (x0, y0, x1, y1 float64) {
	b := attrs.cropBox
	if b.Len() != 4 {
		b = attrs.mediaBox
	}
	if b.Len() != 4 {
		return 0, 0, 612, 792
	}
	x0, y0, x1, y1 = b.Index(0).Float64(), b.Index(1).Float64(), b.Index(2).Float64(), b.Index(3).Float64()
	return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)
}

// vectorPageSegments is the fewest path segments that make a page without
// text or images a drawing of text (outlines), not an empty page with rules.
const vectorPageSegments = 200

// readPDFPage reads one page: its glyphs laid out, or, when it has no text
// layer, its page image (and the OCR's text when opts.OCR is set).
func readPDFPage(ctx context.Context, p pdf.Page, attrs pageAttrs, fonts map[string]*font, form pdfForm, num int, opts *Options) (pg pdfPage, warn string) {
	bx0, by0, bx1, by1 := pageBox(attrs)
	pg.width, pg.height = bx1-bx0, by1-by0
	in := &interpreter{fonts: fonts}
	func() {
		defer func() {
			if r := recover(); r != nil {
				warn = fmt.Sprintf("page %d: its content is partly unreadable (%v): the text before the fault is kept", num, r)
			}
		}()
		in.run(p.V.Key("Contents"), gstate{ctm: identity, th: 1, resources: attrs.resources})
	}()
	addWarn := func(w string) {
		if warn != "" && w != "" {
			warn += "; "
		}
		warn += w
	}
	// Form fields' values and annotations' text are drawn over the page,
	// not in its content: their glyphs join the page's. Whether the page
	// is a scan is the content's to say, before them.
	content, contentImages, segments, unmapped, unknown := len(in.glyphs), len(in.images), in.segments, in.unmapped, in.unknown
	addWarn(in.annotations(p.V, form, num))
	if content == 0 {
		noText := pageImageOf(ctx, &pg, in.images[:contentImages], num, opts)
		// Text set as outlines: thousands of path segments and nothing
		// else. A few rules or a frame on an empty page are not.
		if pg.image == nil && pg.unreadable == "" && segments >= vectorPageSegments {
			pg.unreadable = fmt.Sprintf("drawn with vector outlines only (%d path segments, no text layer)", segments)
		}
		if pg.unreadable == "" && pg.image == nil && unmapped > 0 {
			pg.unreadable = fmt.Sprintf("its text is set in a Type 3 font without a Unicode map (%d glyphs unknown)", unmapped)
		}
		if pg.unreadable == "" && pg.image == nil && unknown > 0 {
			pg.unreadable = fmt.Sprintf("its fonts read none of its glyphs as text (%d glyphs unknown)", unknown)
		}
		if len(in.glyphs) == 0 || pg.image != nil || pg.unreadable != "" {
			addWarn(noText)
			if len(in.glyphs) > 0 {
				// Fields filled in over a scanned form: the page stays a
				// scan (its image kept, or read by OCR), their values
				// follow its text.
				var fields pdfPage
				fields.width, fields.height = pg.width, pg.height
				layoutPage(&fields, in.glyphs, bx0, by1)
				appendPageText(&pg, fields)
			}
			return pg, warn
		}
		// No content text and no page image: the annotations' text is
		// the page's.
	}
	layoutPage(&pg, in.glyphs, bx0, by1)
	switch {
	case in.unmapped > len(in.glyphs):
		pg.unreadable = fmt.Sprintf("most of its text is set in a Type 3 font without a Unicode map (%d glyphs unknown, %d read)", in.unmapped, len(in.glyphs))
	case in.unmapped > 0:
		addWarn(fmt.Sprintf("page %d: %d glyphs of a Type 3 font without a Unicode map were left out", num, in.unmapped))
	case in.unknown > len(in.glyphs):
		pg.unreadable = fmt.Sprintf("most of its glyphs are read as text by none of its fonts (%d glyphs unknown, %d read)", in.unknown, len(in.glyphs))
	}
	return pg, warn
}

// appendPageText appends more's text and blocks to pg's, a blank line
// between them.
func appendPageText(pg *pdfPage, more pdfPage) {
	if more.text == "" {
		return
	}
	if pg.text != "" {
		pg.text += "\n\n"
	}
	start := len(pg.text)
	pg.text += more.text
	for _, b := range more.blocks {
		pg.blocks = append(pg.blocks, Block{Start: b.Start + start, End: b.End + start, Box: b.Box})
	}
}

// layoutPage turns the page's glyphs into its text, blocks and running
// header and footer candidates. Glyphs of each baseline direction are laid
// out apart, the page's main direction first, so a rotated page (or
// rotated content) reads like an upright one: the page's /Rotate, which
// only turns the page for display, does not matter. Boxes are in the
// unrotated page's space.
func layoutPage(pg *pdfPage, gs []glyph, bx0, by1 float64) {
	var count [4]int
	for i := range gs {
		gs[i].x -= bx0
		gs[i].y -= by1 - pg.height // origin at the box's bottom left
		count[gs[i].dir] += len(gs[i].s)
	}
	dirs := []int{0, 1, 2, 3}
	slices.SortStableFunc(dirs, func(a, b int) int { return count[b] - count[a] })
	var b strings.Builder
	for di, dir := range dirs {
		if count[dir] == 0 {
			continue
		}
		var sub []glyph
		for _, g := range gs {
			if g.dir == dir {
				sub = append(sub, g)
			}
		}
		runs := buildRuns(sub, dir, pg.height)
		leaves := cut(runs, false, nil, 0)
		cols, pooled := tableColumns(leaves)
		for li, l := range leaves {
			t := l.text(cols[li], pooled != nil && pooled[li])
			if t == "" {
				continue
			}
			if b.Len() > 0 {
				prev := leaves[max(li-1, 0)]
				if li == 0 || l.column || l.y0-prev.y1 > 0.8*l.size || l.x0 >= prev.x1 {
					b.WriteString("\n\n")
				} else {
					b.WriteByte('\n')
				}
			}
			start := b.Len()
			b.WriteString(t)
			pg.blocks = append(pg.blocks, Block{Start: start, End: b.Len(), Box: l.box})
			if di != 0 {
				continue
			}
			// Running header and footer candidates: the first and last
			// block of the main direction, near the page's top or bottom
			// edge (in reading space, so rotated pages count too).
			_, top := toReading(0, pg.height, dir)
			_, bottom := toReading(pg.width, 0, dir)
			if dir == 1 || dir == 3 {
				_, top = toReading(pg.width, pg.height, dir)
				_, bottom = toReading(0, 0, dir)
			}
			lo, hi := min(top, bottom), max(top, bottom)
			margin := 0.12 * (hi - lo)
			if li == 0 && l.y1 < lo+margin && len(leaves) > 1 {
				pg.header = Span{start, b.Len()}
				pg.hkey = runningKey(t)
			}
			if li == len(leaves)-1 && l.y0 > hi-margin && len(leaves) > 1 {
				pg.footer = Span{start, b.Len()}
				pg.fkey = runningKey(t)
			}
		}
	}
	pg.text = b.String()
}

// tableColumns finds the tables among a page's leaves: within a leaf, or
// across a run of leaves of one size, short or with cells (a table whose
// rows are set apart by padding is cut into one leaf a row, and a row
// whose cell wraps has more lines). pooled marks the leaves whose columns
// came from such a run: each is one row (nil when none did).
func tableColumns(leaves []leaf) (cols []columns, pooled []bool) {
	cols = make([]columns, len(leaves))
	for i := range leaves {
		cols[i] = findColumns(leaves[i].lines, leaves[i].size)
	}
	for i := 0; i < len(leaves); {
		j := i
		for j < len(leaves) && (len(leaves[j].lines) <= 2 || wideGap(leaves[j])) && cols[j].empty() && (j == i || !leaves[j].column && sameSize(leaves[j-1], leaves[j])) {
			j++
		}
		// A title above the table and a paragraph below it are short
		// leaves too, but no row: they would dilute the share of lines an
		// edge needs (and a title's size would set the gaps), so the run
		// is trimmed to the leaves with a wide gap at its ends.
		lo, hi := i, j
		for lo < hi && !wideGap(leaves[lo]) {
			lo++
		}
		for hi > lo && !wideGap(leaves[hi-1]) {
			hi--
		}
		if hi-lo >= 2 {
			var lines [][]run
			for k := lo; k < hi; k++ {
				lines = append(lines, rowLines(leaves[k])...)
			}
			if g := findColumns(lines, leaves[lo].size); !g.empty() {
				if pooled == nil {
					pooled = make([]bool, len(leaves)) // only pages with such a table need it
				}
				for k := lo; k < hi; k++ {
					cols[k], pooled[k] = g, true
				}
			}
		}
		i = max(j, i+1)
	}
	return cols, pooled
}

// rowLines are the lines of a leaf that count for a table's column edges:
// in a row of three cells or more (words a font size apart, not a
// justified line) whose cells wrap, its lines within one of those cells
// (a wrapped description) have no edges and would dilute the share of
// lines an edge needs; they do not count. Other lines (a block of code
// with a comment beside its first line, a paragraph across the row) count.
func rowLines(l leaf) [][]run {
	// Only a leaf with both a line of three cells or more and a line
	// without a wide gap loses lines: the cells are built for it alone
	// (not for a row on one line, most), after counting each line's gaps.
	var ws []word // one line's words at a time
	rowLine, plain := false, false
	for _, ln := range l.lines {
		ws = appendLineWords(ws[:0], ln)
		switch n := gaps(ws, l.size); {
		case n == 0:
			plain = true
		case n >= 2 && !l.justified(ws):
			rowLine = true
		}
	}
	if !rowLine || !plain {
		return l.lines
	}
	var rows [][][2]float64 // the x-ranges of the cells of each such row
	for _, ln := range l.lines {
		ws = appendLineWords(ws[:0], ln)
		n := gaps(ws, l.size)
		if n < 2 || l.justified(ws) {
			continue
		}
		cells := make([][2]float64, 1, n+1)
		cells[0] = [2]float64{ws[0].x0, ws[0].x1}
		for j := 1; j < len(ws); j++ {
			if ws[j].x0-ws[j-1].x1 >= l.size {
				cells = append(cells, [2]float64{ws[j].x0, ws[j].x1})
			} else {
				cells[len(cells)-1][1] = ws[j].x1
			}
		}
		rows = append(rows, cells)
	}
	var out [][]run
	for _, ln := range l.lines {
		ws = appendLineWords(ws[:0], ln)
		x0, x1 := ws[0].x0, ws[len(ws)-1].x1
		within := gaps(ws, l.size) == 0 && !slices.ContainsFunc(rows, func(cells [][2]float64) bool {
			n := 0
			for _, c := range cells {
				if x0 < c[1] && x1 > c[0] {
					n++
				}
			}
			return n > 1
		})
		if !within {
			out = append(out, ln)
		}
	}
	return out
}

// gaps counts the gaps of size or more between a line's words ws.
func gaps(ws []word, size float64) int {
	n := 0
	for j := 1; j < len(ws); j++ {
		if ws[j].x0-ws[j-1].x1 >= size {
			n++
		}
	}
	return n
}

// sameSize reports whether two leaves are set in one size: a heading
// between two tables (larger) ends the first.
func sameSize(a, b leaf) bool {
	return math.Abs(a.size-b.size) <= 0.1*max(a.size, b.size)
}

// wideGap reports whether a line of l has words a font size apart or more,
// as a table's cells are.
func wideGap(l leaf) bool {
	var ws []word // one line's words at a time
	for _, ln := range l.lines {
		if ws = appendLineWords(ws[:0], ln); gaps(ws, l.size) > 0 {
			return true
		}
	}
	return false
}

// runningKey normalises a header or footer so that the same line on every
// page matches: page numbers and case do not count.
func runningKey(s string) string {
	f := strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return '#'
		}
		return unicode.ToLower(r)
	}, s))
	return strings.Join(f, " ")
}

// assemblePDF joins the pages into doc.Text, marks running headers and
// footers (those on at least half the pages, and two), and drops them when
// asked.
func assemblePDF(doc *Document, pages []pdfPage, drop bool) {
	hcount, fcount := map[string]int{}, map[string]int{}
	for _, p := range pages {
		if p.hkey != "" {
			hcount[p.hkey]++
		}
		if p.fkey != "" {
			fcount[p.fkey]++
		}
	}
	need := max(2, (len(pages)+1)/2)
	var b strings.Builder
	for i, p := range pages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		text, blocks := p.text, p.blocks
		var header, footer Span
		if p.hkey != "" && hcount[p.hkey] >= need {
			header = p.header
		}
		if p.fkey != "" && fcount[p.fkey] >= need && p.footer != p.header {
			footer = p.footer
		}
		if drop && (!header.Empty() || !footer.Empty()) {
			lo, hi := 0, len(text)
			if !header.Empty() {
				lo = header.End
			}
			if !footer.Empty() {
				hi = footer.Start
			}
			hi = max(lo, hi)
			inner := strings.TrimSpace(text[lo:hi])
			shift := lo + strings.Index(text[lo:hi], inner)
			var kept []Block
			for _, bl := range blocks {
				if bl.Start >= shift && bl.End <= shift+len(inner) {
					kept = append(kept, Block{Start: bl.Start - shift, End: bl.End - shift, Box: bl.Box})
				}
			}
			text, blocks, header, footer = inner, kept, Span{}, Span{}
		}
		start := b.Len()
		b.WriteString(text)
		page := Page{Number: i + 1, Start: start, End: b.Len(), Width: p.width, Height: p.height, Image: p.image, Unreadable: p.unreadable}
		for _, bl := range blocks {
			page.Blocks = append(page.Blocks, Block{Start: bl.Start + start, End: bl.End + start, Box: bl.Box})
		}
		if !header.Empty() {
			page.Header = Span{header.Start + start, header.End + start}
		}
		if !footer.Empty() {
			page.Footer = Span{footer.Start + start, footer.End + start}
		}
		doc.Pages = append(doc.Pages, page)
	}
	doc.Text = b.String()
}
