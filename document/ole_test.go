package document

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/extractq/extractq/document/internal/cfb/cfbtest"
)

// docReport is what report.fodt says, as the Word 97 .doc made from it
// reads: body with its footnote cited, the list with its markers (the
// heading, in an outline list numbered "none", without one), the table as
// rows, the footnote, then the header and footer story.
var docReport = []string{
	"Quarterly Invoice Report\n\nThe supplier Globex delivered widgets in March.[1] Payment is due within thirty days.",
	"- First item: invoice number INV-2041\n- Second item: total amount 1,250.00 EUR\n\nProduct | Quantity | Price\nWidget | 10 | 100.00\nGadget | 5 | 50.00\n\nSigned by the accounts department",
	"[1] Delivery dates were confirmed by the warehouse.",
	"Acme Corporation confidential header",
	"Footer line with registration number 12345",
}

// TestLegacyDOC: Word 97-2003 files, refused before, read with their
// words: 8-bit and UTF-16 pieces, a hyperlink field's result without its
// code, the document's title.
func TestLegacyDOC(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, title string
		want        []string
		not         []string // field codes, markers that Word does not show
	}{
		// The heading is in an outline list numbered "none": no marker.
		{"legacy.doc", "Quarterly Invoice Report", docReport, []string{"- Quarterly"}},
		{"ticket.doc", "Ticket 4711 summary", []string{
			"Ticket 4711 was opened by Müller about the broken pump in Zürich.",
			"See the ticket tracker entry for the full history.",
			"Ελληνικά: η αντλία αντικαταστάθηκε.",
			"Second page: the replacement pump costs 980 EUR.\n\nClosing remark on page two.",
		}, []string{"HYPERLINK", "example.com"}},
		// Empty cells: a row ends where its paragraph properties say.
		{"cells.doc", "", []string{"Invoice 17", "Item |  | Total\nWidget | 3 | 9.00\n |  | 12.50", "Thank you."}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", tc.file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Format != "ole" || d.MediaType != "application/msword" || d.Reader.String() != "ole/"+oleVersion {
				t.Errorf("format %s %s %s", d.Format, d.MediaType, d.Reader)
			}
			if d.Meta.Title != tc.title {
				t.Errorf("title %q, want %q", d.Meta.Title, tc.title)
			}
			rest := d.Text
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("missing (or out of order) %q in:\n%s", w, d.Text)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tc.not {
				if strings.Contains(d.Text, n) {
					t.Errorf("text holds %q:\n%s", n, d.Text)
				}
			}
		})
	}
}

// TestDOCStory: the special characters of a Word story: page breaks make
// pages, nested field codes go and their results stay, table cells and
// rows, line breaks, non-breaking hyphens and spaces, a surrogate pair's
// second position.
func TestDOCStory(t *testing.T) {
	t.Parallel()
	in := "Page one\x0D\x0CPage two \x13 PAGE \x13 inner \x14x\x15 \x143\x15 end\x0B" +
		"next\x1Eline\u00a0here\x0Da\x07b\x07\x07c\x07d\x07\x07after\x0D\x01\x08"
	story := []rune(in)
	story = append(story, 0x1F600, docSkip)
	w := newTextWriter(Limits{})
	docStory(story, w, true, false, func() string { return "" }, func(int) string { return "" }, func(int) bool { return false })
	text, pages, err := w.text()
	if err != nil {
		t.Fatal(err)
	}
	want := "Page one\n\nPage two 3 end\nnext-line here\n\na | b\nc | d\n\nafter\n\n\U0001F600"
	if text != want {
		t.Errorf("text\n%q\nwant\n%q", text, want)
	}
	if len(pages) != 2 || text[pages[0].Start:pages[0].End] != "Page one" || !strings.HasPrefix(text[pages[1].Start:], "Page two") {
		t.Errorf("pages %+v", pages)
	}
}

// TestDOCStoryRowEnds: with the paragraph properties read, a row ends at
// its marked end only, so empty cells (two cell marks in a row) keep
// their places.
func TestDOCStoryRowEnds(t *testing.T) {
	t.Parallel()
	story := []rune("Item\x07\x07Total\x07")
	story = append(story, docRowEnd)
	story = append(story, []rune("\x07\x0712.50\x07")...)
	story = append(story, docRowEnd)
	story = append(story, []rune("after\x0D")...)
	w := newTextWriter(Limits{})
	docStory(story, w, true, true, func() string { return "" }, func(int) string { return "" }, func(int) bool { return false })
	text, _, err := w.text()
	if err != nil {
		t.Fatal(err)
	}
	if want := "Item |  | Total\n |  | 12.50\n\nafter"; text != want {
		t.Errorf("text\n%q\nwant\n%q", text, want)
	}
}

// wordFIB is a WordDocument stream of a bare FIB with the given nFib and
// flags, for the refusals that need no text.
func wordFIB(nFib, flags uint16) []byte {
	b := make([]byte, 1024)
	le := binary.LittleEndian
	le.PutUint16(b, 0xA5EC)
	le.PutUint16(b[2:], nFib)
	le.PutUint16(b[0x0A:], flags)
	le.PutUint16(b[32:], 14)    // csw
	le.PutUint16(b[62:], 22)    // cslw
	le.PutUint16(b[152:], 0x5D) // cbRgFcLcb
	return b
}

// TestOLERefusals: what is still refused says why and what to do.
func TestOLERefusals(t *testing.T) {
	t.Parallel()
	build := func(names ...string) []byte {
		var s []cfbtest.Stream
		for _, n := range names {
			s = append(s, cfbtest.Stream{Path: n, Data: []byte("x")})
		}
		return cfbtest.Build(s, cfbtest.Options{})
	}
	doc := func(fib []byte) []byte {
		return cfbtest.Build([]cfbtest.Stream{{Path: "WordDocument", Data: fib}, {Path: "1Table", Data: make([]byte, 64)}}, cfbtest.Options{})
	}
	tests := []struct {
		name string
		in   []byte
		want error
		hint string
	}{
		{"locked.docx", build("EncryptionInfo", "EncryptedPackage"), ErrEncrypted, "remove the password"},
		{"secret.doc", doc(wordFIB(0xC1, 0x0100|0x0200)), ErrEncrypted, "without one"},
		{"xor.doc", doc(wordFIB(0xC1, 0x8000)), ErrEncrypted, "without one"},
		{"word95.doc", doc(wordFIB(0x65, 0)), ErrUnsupported, "--convert-to docx"},
		{"nopieces.doc", doc(wordFIB(0xC1, 0x0200)), ErrCorrupt, "piece table"},
		{"book.xls", build("Book"), ErrUnsupported, "--convert-to xlsx"},
		{"thing.bin", build("Contents"), ErrUnsupported, "unknown kind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadBytes(t.Context(), tc.in, Options{Name: tc.name})
			if !isErr(err, tc.want) || !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("got %v, want %v with %q", err, tc.want, tc.hint)
			}
		})
	}
}

func TestSummaryInfoFixture(t *testing.T) {
	t.Parallel()
	b := fixture(t, "legacy.doc")
	d, err := ReadBytes(t.Context(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Meta.Author != "Ada Lovelace" {
		t.Errorf("author %q", d.Meta.Author)
	}
}

// TestDOCLists: the numbered (nested), lettered (with a roman level),
// bulleted and from-4 numbered lists of a .doc keep their markers, each
// level counted on its own from its start value and reset under a new
// item above it, as the .docx reader reads the .docx the .doc was
// converted from.
func TestDOCLists(t *testing.T) {
	t.Parallel()
	want := []string{
		"1. Tools", "  1. Hammer", "  2. Pliers", "2. Food", "  1. Bread", "3. Maps",
		"a) Lock the door", "  i. front", "  ii. back", "b) Close the windows", "c) Feed the cat",
		"- Water bottle", "- Spare socks", "  - wool ones",
		"4. Rest", "5. Sleep",
	}
	texts := map[string]string{}
	for _, file := range []string{"lists.docx", "lists.doc"} {
		d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", file), Options{})
		if err != nil {
			t.Fatal(err)
		}
		texts[file] = d.Text
		lines := strings.Split(d.Text, "\n")
		for _, w := range want {
			for len(lines) > 0 && lines[0] != w {
				lines = lines[1:]
			}
			if len(lines) == 0 {
				t.Fatalf("%s: missing (or out of order) line %q in:\n%s", file, w, d.Text)
			}
		}
	}
	if texts["lists.doc"] != texts["lists.docx"] {
		t.Errorf(".doc text\n%s\ndiffers from the .docx text\n%s", texts["lists.doc"], texts["lists.docx"])
	}
}

// TestDOCStyleLists: the paragraphs of stylelists.doc are in their lists
// through their styles (LibreOffice's .doc export of styledBody, with the
// paragraphs' own sprmPIlfo taken out: see stylelists-doc.py), and read
// as the .docx reads.
func TestDOCStyleLists(t *testing.T) {
	t.Parallel()
	d, err := ReadFile(t.Context(), filepath.Join("testdata", "formats", "stylelists.doc"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Text != styledText {
		t.Errorf("text\n%s\nwant\n%s", d.Text, styledText)
	}
}

// TestDOCStyles: a .doc paragraph's list and level are its own, else its
// style's, inherited through istdBase; list 0 takes it out of its style's
// list; a cycle of styles ends; styles past a damaged one are not read.
func TestDOCStyles(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	ilfo := func(n byte) []byte { return []byte{0x0B, 0x46, n, 0} }
	ilvl := func(n byte) []byte { return []byte{0x0A, 0x26, n} }
	// lpstd is a style of type stk based on istd base, named "S", with the
	// given paragraph properties, after its length.
	lpstd := func(stk, base uint16, grpprl ...[]byte) []byte {
		b := make([]byte, 10, 64)
		le.PutUint16(b[2:], stk|base<<4)
		b = append(b, 1, 0, 'S', 0, 0, 0)
		upx := []byte{0, 0} // UpxPapx's istd
		for _, g := range grpprl {
			upx = append(upx, g...)
		}
		b = le.AppendUint16(b, uint16(len(upx)))
		b = append(b, upx...)
		if len(upx)%2 == 1 {
			b = append(b, 0)
		}
		return append(le.AppendUint16(nil, uint16(len(b))), b...)
	}
	// stsh is a stylesheet of the given STDs, in a table stream after pad
	// bytes.
	stsh := func(pad int, stds ...[]byte) ([]byte, []byte) {
		b := make([]byte, pad+2+18)
		le.PutUint16(b[pad:], 18)
		le.PutUint16(b[pad+2:], uint16(len(stds)))
		le.PutUint16(b[pad+4:], 10)
		for _, s := range stds {
			b = append(b, s...)
		}
		fcLcb := make([]byte, 2*8)
		le.PutUint32(fcLcb[8:], uint32(pad))
		le.PutUint32(fcLcb[12:], uint32(len(b)-pad))
		return b, fcLcb
	}
	const none = 0x0FFF
	table, fcLcb := stsh(3,
		lpstd(1, none),                   // 0: Normal
		lpstd(1, 0, ilvl(0), ilfo(1)),    // 1: a list
		lpstd(1, 1, ilvl(1)),             // 2: its level 1
		lpstd(1, 2),                      // 3: based on 2
		lpstd(1, 1, ilfo(0)),             // 4: out of the list
		lpstd(2, 1, ilfo(2)),             // 5: a character style
		lpstd(1, 7),                      // 6: a cycle
		lpstd(1, 6, ilvl(3)),             // 7
		[]byte{0, 0},                     // 8: an empty slot
		lpstd(1, none, ilfo(3), ilvl(2)), // 9
	)
	styles := docStyles(table, fcLcb)
	own := func(ilfo, ilvl int) docPara { return docPara{ilfo: ilfo, ilvl: ilvl} }
	tests := []struct {
		name string
		istd int
		own  docPara
		want docPara
	}{
		{"no list", 0, own(-1, -1), own(0, 0)},
		{"style's list", 1, own(-1, -1), own(1, 0)},
		{"based on", 3, own(-1, -1), own(1, 1)},
		{"own level", 1, own(-1, 4), own(1, 4)},
		{"own list", 3, own(5, -1), own(5, 1)},
		{"own list 0", 1, own(0, -1), own(0, 0)},
		{"style's list 0", 4, own(-1, -1), own(0, 0)},
		{"character style", 5, own(-1, -1), own(0, 0)},
		{"cycle", 6, own(-1, -1), own(0, 3)},
		{"past an empty slot", 9, own(-1, -1), own(3, 2)},
		{"no such style", 99, own(-1, -1), own(0, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := styledList(styles, tc.istd, tc.own); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("damaged", func(t *testing.T) {
		t.Parallel()
		cut := len(table) - 3
		if got := docStyles(table[:cut], append(fcLcb[:12:12], le.AppendUint32(nil, uint32(cut-3))...)); len(got) != 9 {
			t.Errorf("%d styles read from a stylesheet cut in its tenth style, want 9", len(got))
		}
		if got := docStyles(table, le.AppendUint32(le.AppendUint32(make([]byte, 8), 3), uint32(len(table)))); got != nil {
			t.Errorf("a stylesheet past the table stream: %v", got)
		}
	})
}

// TestDOCListTables: list tables are read by their records' sizes,
// overrides name their list by lsid and override its start values or
// whole levels; a table the FIB or its own counts put past the stream's
// end is ErrCorrupt.
func TestDOCListTables(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	// lvl is a level: numbered from start in the format nfc, its text a
	// placeholder for its own number and then suffix.
	lvl := func(start int32, nfc byte, suffix rune) []byte {
		b := make([]byte, 28, 28+6)
		le.PutUint32(b, uint32(start))
		b[4], b[6] = nfc, 1 // the placeholder is character 1
		return append(b, 2, 0, 0, 0, byte(suffix), 0)
	}
	// lst is a PlfLst of one simple list, lsid 7: lower letters, "%1)".
	lst := make([]byte, 2+28)
	le.PutUint16(lst, 1)
	le.PutUint32(lst[2:], 7)
	lst[2+26] = 1 // fSimpleList
	letters := lvl(1, 4, ')')
	// lfos is a PlfLfo: an LFO per lsid, then each one's CP and LFOLVLs.
	lfos := func(lsids []uint32, lfolvls ...[]byte) []byte {
		b := make([]byte, 4+16*len(lsids))
		le.PutUint32(b, uint32(len(lsids)))
		for i, id := range lsids {
			le.PutUint32(b[4+16*i:], id)
			if i < len(lfolvls) && lfolvls[i] != nil {
				b[4+16*i+12] = 1 // clfolvl
			}
		}
		for i := range lsids {
			b = append(b, 0xFF, 0xFF, 0xFF, 0xFF) // cp
			if i < len(lfolvls) {
				b = append(b, lfolvls[i]...)
			}
		}
		return b
	}
	lfolvl := func(start int32, flags uint32, lvl []byte) []byte {
		b := make([]byte, 8, 8+len(lvl))
		le.PutUint32(b, uint32(start))
		le.PutUint32(b[4:], flags)
		return append(b, lvl...)
	}
	build := func(lst, lvl, lfo []byte, lcbLfo int) ([]byte, []byte) {
		table := append(append(append([]byte{}, lst...), lvl...), lfo...)
		fcLcb := make([]byte, 75*8)
		le.PutUint32(fcLcb[73*8+4:], uint32(len(lst)))
		le.PutUint32(fcLcb[74*8:], uint32(len(lst)+len(lvl)))
		le.PutUint32(fcLcb[74*8+4:], uint32(lcbLfo))
		return table, fcLcb
	}
	simple := lfos([]uint32{7, 99})
	// The third LFO restarts level 0 at 5; the fourth makes it upper
	// roman numerals from 3.
	overrides := lfos([]uint32{7, 99, 7, 7}, nil, nil, lfolvl(5, 0x10, nil), lfolvl(0, 0x20, lvl(3, 1, '.')))
	lotsOfLists := append([]byte{}, lst...)
	le.PutUint16(lotsOfLists, 2)
	longLvl := append([]byte{}, letters...)
	longLvl[25] = 255 // cbGrpprlPapx
	cutLfo := append([]byte{}, simple...)
	le.PutUint32(cutLfo, 3)
	abc := numLevel{format: "lowerLetter", text: "%1)", start: 1}
	tests := []struct {
		name      string
		lst, lvls []byte
		lfo       []byte
		lcbLfo    int
		want      [][]numLevel
		err       error
	}{
		{"good", lst, letters, simple, len(simple), [][]numLevel{{abc}, nil}, nil},
		{"overrides", lst, letters, overrides, len(overrides), [][]numLevel{{abc}, nil,
			{{format: "lowerLetter", text: "%1)", start: 5}}, {{format: "upperRoman", text: "%1.", start: 3}}}, nil},
		{"lfo past the stream", lst, letters, simple, len(simple) + 1, nil, ErrCorrupt},
		{"lsts past the table", lotsOfLists, letters, simple, len(simple), nil, ErrCorrupt},
		{"levels past the table", lst, longLvl, simple, len(simple), nil, ErrCorrupt},
		{"lfos past the table", lst, letters, cutLfo, len(cutLfo), nil, ErrCorrupt},
		{"overrides cut", lst, letters, overrides, len(overrides) - 4, nil, ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table, fcLcb := build(tc.lst, tc.lvls, tc.lfo, tc.lcbLfo)
			got, err := docLists(table, fcLcb)
			if !errors.Is(err, tc.err) || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, %v; want %v, %v", got, err, tc.want, tc.err)
			}
		})
	}
	t.Run("old FIB", func(t *testing.T) {
		t.Parallel()
		if got, err := docLists(nil, make([]byte, 34*8)); got != nil || err != nil {
			t.Errorf("got %v, %v; want no lists", got, err)
		}
	})
}

// pageBreakBody is a numbered list whose items hold page breaks (§
// marks where each goes: mid-item, before the item's text, after it),
// a plain paragraph with one, and a list item that ends a section.
// pageBreakText is what the readers make of it, as Word shows it: an
// item stays one item with its marker, its break a newline (LibreOffice
// cannot keep a break inside a paragraph: it splits the item in two,
// numbered apart).
const pageBreakBody, pageBreakText = "first|before§after|§third on a new page|fourth§|=plain§paragraph|+end of section one|after the section",
	"1. first\n2. before\nafter\n3. third on a new page\n4. fourth\n\nplain\n\nparagraph\n\n5. end of section one\n6. after the section"

// pageBreakDOCX is pageBreakBody as a .docx, a "|" between paragraphs;
// "=" starts a paragraph outside the list, "+" an item that ends a
// section; the others are items of list 1. With word false the page breaks are
// left as §, for pagebreaks-doc.py to turn into Word's 0x0C after
// LibreOffice's .doc export.
func pageBreakDOCX(t testing.TB, word bool) []byte {
	var body string
	for p := range strings.SplitSeq(pageBreakBody, "|") {
		if word {
			p = strings.ReplaceAll(p, "§", `</w:t></w:r><w:r><w:br w:type="page"/></w:r><w:r><w:t>`)
		}
		switch {
		case strings.HasPrefix(p, "="):
			body += styledPara("", "", p[1:])
		case strings.HasPrefix(p, "+"):
			body += `<w:p><w:pPr><w:numPr>` + numPr("1", "0") + `</w:numPr><w:sectPr/></w:pPr><w:r><w:t>` + p[1:] + `</w:t></w:r></w:p>`
		default:
			body += styledPara("", numPr("1", "0"), p)
		}
	}
	return styledDOCX(t, "", "", "", body)
}

// TestDOCPageBreakInListItem: a page break (0x0C) inside a .doc list
// item neither splits the item nor moves its marker or numbering, as the
// .docx reader reads the same document's w:br type="page"; the page ends
// before the item when the break comes first, else after it. A break in
// a plain paragraph still ends it there, and a section break ends its
// paragraph and page, and keeps its marker when the paragraph is an item. Set EXTRACTQ_WRITE_FIXTURES=1 to write the .docx
// that pagebreaks.doc is made from.
func TestDOCPageBreakInListItem(t *testing.T) {
	t.Parallel()
	if os.Getenv("EXTRACTQ_WRITE_FIXTURES") != "" {
		if err := os.WriteFile(filepath.Join("testdata", "formats", "pagebreaks.docx"), pageBreakDOCX(t, false), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantPages := []string{"1. first\n2. before\nafter", "3. third on a new page\n4. fourth", "plain", "paragraph\n\n5. end of section one", "6. after the section"}
	tests := []struct {
		name string
		file []byte
		// pages: the .docx reader makes no page of a section break, and
		// keeps a plain paragraph whole (its break after it).
		pages []string
	}{
		{"pagebreaks.doc", fixture(t, "pagebreaks.doc"), wantPages},
		{"docx", pageBreakDOCX(t, true), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), tc.file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := pageBreakText
			if tc.pages == nil {
				want = strings.Replace(want, "plain\n\nparagraph", "plain\nparagraph", 1)
			}
			if d.Text != want {
				t.Errorf("text\n%s\nwant\n%s", d.Text, want)
			}
			if tc.pages == nil {
				return
			}
			var pages []string
			for _, p := range d.Pages {
				pages = append(pages, d.Text[p.Start:p.End])
			}
			if !slices.Equal(pages, tc.pages) {
				t.Errorf("pages %q, want %q", pages, tc.pages)
			}
		})
	}
}

// TestDOCStoryPageBreaks: where a page break (0x0C) falls in a story: in
// a list item it keeps the item whole (in the body its page ends before
// or after the item; elsewhere no page), in a table cell it keeps the row
// whole, in a plain paragraph it ends the paragraph; a section's end
// (docSectionEnd) ends its paragraph and page.
func TestDOCStoryPageBreaks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		story string // "S" stands for docSectionEnd, "R" for docRowEnd
		body  bool
		want  string
		pages []string
	}{
		{"mid-item", "a\x0Db\x0Cc\x0Dd\x0D", true, "1. a\n2. b\nc\n3. d", []string{"1. a\n2. b\nc", "3. d"}},
		{"before an item", "a\x0D\x0Cb\x0D", true, "1. a\n2. b", []string{"1. a", "2. b"}},
		{"item, then a plain paragraph", "a\x0Ce\x0Dplain\x0D", true, "1. a\ne\n\nplain", []string{"1. a\ne", "plain"}},
		{"item outside the body", "a\x0Cb\x0D", false, "1. a\nb", nil},
		{"table cell", "x\x0Cy\x07z\x07R", true, "x y | z", nil},
		{"table cell, later", "w\x07x\x0Cy\x07R", true, "w | x y", nil},
		{"plain paragraph", "x\x0Cy\x0D", true, "x\n\ny", []string{"x", "y"}},
		{"section end", "x\x0D1S2\x0D", true, "x\n\n1\n\n2", []string{"x\n\n1", "2"}},
		{"section end in an item", "aSb\x0Cc\x0Dd\x0D", true, "1. a\n2. b\nc\n3. d", []string{"1. a", "2. b\nc", "3. d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			story := []rune(tc.story)
			for i, r := range story {
				switch r {
				case 'S':
					story[i] = docSectionEnd
				case 'R':
					story[i] = docRowEnd
				}
			}
			n := 0
			// The paragraphs that end in a to e are list items.
			isItem := func(i int) bool {
				return i > 0 && (story[i] == 0x0D || story[i] == docSectionEnd) && strings.ContainsRune("abcde", story[i-1])
			}
			listMark := func(i int) string {
				if !isItem(i) {
					return ""
				}
				n++
				return strconv.Itoa(n) + "."
			}
			w := newTextWriter(Limits{})
			docStory(story, w, tc.body, true, func() string { return "" }, listMark, isItem)
			text, pages, err := w.text()
			if err != nil {
				t.Fatal(err)
			}
			if text != tc.want {
				t.Errorf("text\n%q\nwant\n%q", text, tc.want)
			}
			var got []string
			for _, p := range pages {
				got = append(got, text[p.Start:p.End])
			}
			if !slices.Equal(got, tc.pages) {
				t.Errorf("pages %q, want %q", got, tc.pages)
			}
		})
	}
}

// TestDOCSectionMarks: the 0x0C at a section's end in the PlcfSed is
// the section's mark, the others page breaks; without a readable
// PlcfSed every 0x0C is taken for a section's end.
func TestDOCSectionMarks(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	// plcfSed is a table stream with a PlcfSed of sections ending at
	// the given CPs, after a pad byte, and the FIB's fc/lcb pairs to it.
	plcfSed := func(cps ...uint32) [2][]byte {
		b := []byte{0}
		for _, cp := range append([]uint32{0}, cps...) {
			b = le.AppendUint32(b, cp)
		}
		b = append(b, make([]byte, 12*len(cps))...)
		fcLcb := make([]byte, 7*8)
		le.PutUint32(fcLcb[6*8:], 1)
		le.PutUint32(fcLcb[6*8+4:], uint32(len(b)-1))
		return [2][]byte{b, fcLcb}
	}
	tests := []struct {
		name string
		sed  [2][]byte // table stream, fcLcb
		want string    // "S" for docSectionEnd
	}{
		{"sections", plcfSed(4, 7), "a\fbS\fcS"},
		{"past the text", plcfSed(99), "a\fb\f\fc\f"},
		{"no PlcfSed", [2][]byte{nil, make([]byte, 7*8)}, "aSbSScS"},
		{"PlcfSed past the table", [2][]byte{plcfSed(4)[0][:9], plcfSed(4)[1]}, "aSbSScS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := []rune("a\fb\f\fc\f")
			docSectionMarks(body, tc.sed[0], tc.sed[1])
			var b strings.Builder
			for _, r := range body {
				if r == docSectionEnd {
					r = 'S'
				}
				b.WriteRune(r)
			}
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}
