package document_test

import (
	"bytes"
	"compress/lzw"
	"compress/zlib"
	"encoding/hex"
	"fmt"
	"image"
	"maps"
	"slices"
	"strings"
)

// The tests make their PDFs here, byte by byte, so each fixture says
// exactly what it holds: text at known places, pages, rotation, images.

// show is one string drawn at (x, y) in points, baseline, y up.
type show struct {
	x, y, size float64
	s          string
	rot        int    // quarter turns of the text direction
	font       string // "F2": TeX's CMR10, with neither encoding nor Unicode map; "" Helvetica
}

// genPage is a page to generate: its text, an optional full-page JPEG
// image, and its /Rotate.
type genPage struct {
	shows  []show
	jpeg   []byte
	jw, jh int
	// flate is a gray image stored with Flate and a PNG predictor (how
	// img2pdf and many scanners store PNG scans).
	flate  *image.Gray
	rotate int
	// undecoded draws a full-page image stored with this filter
	// ("JBIG2Decode", "JPXDecode") that the reader does not decode: a
	// JBIG2 page of Huffman-coded refined symbols (jbig2HuffmanRefine), else
	// junk.
	undecoded string
	// jbig2 draws a full-page image stored with JBIG2Decode.
	jbig2 *genJBIG2
	// vector draws this many small filled squares (one "re" segment each):
	// a page drawn with outlines only.
	vector int
	// attach are files attached to the page by FileAttachment annotations:
	// name, then content, stored as given (filter: the stream's /Filter, ""
	// for none).
	attach []genFile
	// annots are annotations drawn over the page: form fields' widgets,
	// FreeText comments.
	annots []genAnnot
	// contentFilter stores the page's content stream with this filter
	// ("ASCIIHexDecode", "LZWDecode" with EarlyChange 0, "RunLengthDecode"
	// as literal runs), "" plain.
	contentFilter string
}

// genAnnot is an annotation of a generated page. Its dictionary is
// /Type /Annot, /Subtype (Widget when empty), /Rect, the entries of dict
// (e.g. "/FT /Tx /V (Ada) /DA (/Helv 10 Tf 0 g)") and, when given, /AP
// /N: ap, a stream drawing in a BBox of the rectangle's size with F1, or
// states, one such stream per appearance state. parent, when given, is
// the dictionary of a field above the widget (its /Parent).
type genAnnot struct {
	subtype string
	rect    [4]float64
	dict    string
	ap      string
	states  map[string]string
	// apDict adds entries to the appearance stream's dictionary (/Matrix,
	// a /BBox of its own, /Filter /FlateDecode over data that is not).
	apDict string
	parent string
}

// genJBIG2 is a JBIG2 image: its embedded stream, the JBIG2Globals
// stream (nil for none), its size, and more entries of its dictionary
// (e.g. "/ImageMask true /Decode [1 0]"; /ColorSpace /DeviceGray without).
type genJBIG2 struct {
	data, globals []byte
	w, h          int
	dict          string
	// flateGlobals stores the globals Flate-compressed.
	flateGlobals bool
}

// genFile is a file attached to a generated page.
type genFile struct{ name, content, filter string }

// Type 3 fonts for show.font "F3", one kind per PDF (makeType3PDF).
const (
	t3ToUnicode   = "tounicode"   // glyphs named g1, g2, … and a ToUnicode map
	t3Differences = "differences" // glyphs named by the glyph list (A, space, zero)
	t3Unnamed     = "unnamed"     // glyphs named g1, g2, …, nothing more
)

// t3Name is the glyph name of code c in a Type 3 font of kind.
func t3Name(kind string, c int) string {
	if kind == t3Differences {
		switch {
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			return string(rune(c))
		case c >= '0' && c <= '9':
			return [...]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}[c-'0']
		}
		switch c {
		case ' ':
			return "space"
		case '.':
			return "period"
		case ',':
			return "comma"
		case ':':
			return "colon"
		}
	}
	return fmt.Sprintf("g%d", c-31) // numbered apart from the code: no hint of it
}

func esc(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`)
	return r.Replace(s)
}

// makePDF writes a PDF of the pages with Helvetica (WinAnsi, every glyph
// 500 units wide so positions are easy to reason about) and a correct
// cross-reference table.
func makePDF(pages []genPage) []byte { return makePDFWith(pages, "") }

// makePDFWith adds catalog entries (e.g. "/PageLabels << … >>").
func makePDFWith(pages []genPage, catalog string) []byte { return makeType3PDF(pages, catalog, "") }

// makeType3PDF adds a Type 3 font of the kind given as F3: codes 32–126,
// each glyph a box 50 units wide in a FontMatrix of 0.01 (half an em, as
// F1's glyphs), named as t3Name says.
func makeType3PDF(pages []genPage, catalog, t3 string) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) int {
		offsets = append(offsets, b.Len())
		n := len(offsets)
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", n, body)
		return n
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	// Objects 1 (catalog) and 2 (pages) are written last but numbered
	// first: reserve them.
	offsets = append(offsets, 0, 0)
	widths := strings.TrimSpace(strings.Repeat("500 ", 224))
	font := obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding /FirstChar 32 /LastChar 255 /Widths [" + widths + "] >>")
	cmr := obj("<< /Type /Font /Subtype /Type1 /BaseFont /ABCDEF+CMR10 /FirstChar 0 /LastChar 127 /Widths [" + strings.TrimSpace(strings.Repeat("500 ", 128)) + "] >>")
	fonts := fmt.Sprintf("/F1 %d 0 R /F2 %d 0 R", font, cmr)
	if t3 != "" {
		const glyph = "50 0 d0 5 0 40 60 re f"
		proc := obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(glyph), glyph))
		var names, procs []string
		for c := 32; c <= 126; c++ {
			names = append(names, "/"+t3Name(t3, c))
			procs = append(procs, fmt.Sprintf("/%s %d 0 R", t3Name(t3, c), proc))
		}
		tounicode := ""
		if t3 == t3ToUnicode {
			const cm = "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T3 def 1 begincodespacerange <00> <FF> endcodespacerange 1 beginbfrange <20> <7E> <0020> endbfrange endcmap CMapName currentdict /CMap defineresource pop end end"
			tounicode = fmt.Sprintf(" /ToUnicode %d 0 R", obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(cm), cm)))
		}
		f3 := obj(fmt.Sprintf("<< /Type /Font /Subtype /Type3 /FontBBox [0 0 50 60] /FontMatrix [0.01 0 0 0.01 0 0] /CharProcs << %s >> /Encoding << /Type /Encoding /Differences [32 %s] >> /FirstChar 32 /LastChar 126 /Widths [%s] /Resources << >>%s >>",
			strings.Join(procs, " "), strings.Join(names, " "), strings.TrimSpace(strings.Repeat("50 ", 95)), tounicode))
		fonts += fmt.Sprintf(" /F3 %d 0 R", f3)
	}
	var kids []string
	jbig2Globals := map[string]int{}
	for _, p := range pages {
		var c strings.Builder
		for _, s := range p.shows {
			a, bb, cc, d := 1, 0, 0, 1
			switch s.rot {
			case 1:
				a, bb, cc, d = 0, 1, -1, 0
			case 2:
				a, bb, cc, d = -1, 0, 0, -1
			case 3:
				a, bb, cc, d = 0, -1, 1, 0
			}
			f := s.font
			if f == "" {
				f = "F1"
			}
			fmt.Fprintf(&c, "BT /%s %g Tf %d %d %d %d %g %g Tm (%s) Tj ET\n", f, s.size, a, bb, cc, d, s.x, s.y, esc(s.s))
		}
		res := "/Font << " + fonts + " >>"
		var xobjs []string
		if p.jpeg != nil {
			img := obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>\nstream\n%s\nendstream", p.jw, p.jh, len(p.jpeg), p.jpeg))
			xobjs = append(xobjs, fmt.Sprintf("/Im1 %d 0 R", img))
			c.WriteString("q 612 0 0 792 0 0 cm /Im1 Do Q\n")
		}
		if g := p.flate; g != nil {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			for y := range g.Rect.Dy() {
				zw.Write([]byte{1}) // the Sub filter: each byte less its left neighbour
				row := g.Pix[y*g.Stride : y*g.Stride+g.Rect.Dx()]
				for x := range row {
					left := byte(0)
					if x > 0 {
						left = row[x-1]
					}
					zw.Write([]byte{row[x] - left})
				}
			}
			zw.Close()
			img := obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /DecodeParms << /Predictor 15 /Colors 1 /BitsPerComponent 8 /Columns %d >> /Length %d >>\nstream\n%s\nendstream", g.Rect.Dx(), g.Rect.Dy(), g.Rect.Dx(), z.Len(), z.Bytes()))
			xobjs = append(xobjs, fmt.Sprintf("/Im2 %d 0 R", img))
			c.WriteString("q 612 0 0 792 0 0 cm /Im2 Do Q\n")
		}
		if p.undecoded != "" {
			junk := "not an image this reader decodes"
			if p.undecoded == "JBIG2Decode" {
				junk = jbig2HuffmanRefine
			}
			img := obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width 1275 /Height 1650 /ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /%s /Length %d >>\nstream\n%s\nendstream", p.undecoded, len(junk), junk))
			xobjs = append(xobjs, fmt.Sprintf("/Im3 %d 0 R", img))
			c.WriteString("q 612 0 0 792 0 0 cm /Im3 Do Q\n")
		}
		if j := p.jbig2; j != nil {
			parms := ""
			if j.globals != nil {
				// Pages with the same globals share one stream, as
				// OCRmyPDF writes them.
				g, ok := jbig2Globals[string(j.globals)]
				if !ok {
					data, filter := j.globals, ""
					if j.flateGlobals {
						var z bytes.Buffer
						zw := zlib.NewWriter(&z)
						zw.Write(j.globals)
						zw.Close()
						data, filter = z.Bytes(), " /Filter /FlateDecode"
					}
					g = obj(fmt.Sprintf("<<%s /Length %d >>\nstream\n%s\nendstream", filter, len(data), data))
					jbig2Globals[string(j.globals)] = g
				}
				parms = fmt.Sprintf(" /DecodeParms << /JBIG2Globals %d 0 R >>", g)
			}
			dict := j.dict
			if !strings.Contains(dict, "/ImageMask") {
				dict = "/ColorSpace /DeviceGray /BitsPerComponent 1 " + dict
			}
			img := obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d %s /Filter /JBIG2Decode%s /Length %d >>\nstream\n%s\nendstream", j.w, j.h, dict, parms, len(j.data), j.data))
			xobjs = append(xobjs, fmt.Sprintf("/Im4 %d 0 R", img))
			c.WriteString("q 612 0 0 792 0 0 cm /Im4 Do Q\n")
		}
		for i := range p.vector {
			fmt.Fprintf(&c, "%d %d 4 4 re f\n", 20+(i%100)*5, 700-(i/100)*6)
		}
		if len(xobjs) > 0 {
			res += " /XObject << " + strings.Join(xobjs, " ") + " >>"
		}
		data, filter := encodeContent([]byte(c.String()), p.contentFilter)
		content := obj(fmt.Sprintf("<<%s /Length %d >>\nstream\n%s\nendstream", filter, len(data), data))
		extra := ""
		var annots []string
		for _, f := range p.attach {
			filter := ""
			if f.filter != "" {
				filter = " /Filter /" + f.filter
			}
			ef := obj(fmt.Sprintf("<< /Type /EmbeddedFile%s /Length %d >>\nstream\n%s\nendstream", filter, len(f.content), f.content))
			annots = append(annots, fmt.Sprintf("<< /Type /Annot /Subtype /FileAttachment /Rect [10 10 30 30] /FS << /Type /Filespec /F (%s) /EF << /F %d 0 R >> >> >>", esc(f.name), ef))
		}
		for _, a := range p.annots {
			form := func(data string) string {
				bbox := fmt.Sprintf("/BBox [0 0 %g %g] ", a.rect[2]-a.rect[0], a.rect[3]-a.rect[1])
				if strings.Contains(a.apDict, "/BBox") {
					bbox = ""
				}
				return fmt.Sprintf("%d 0 R", obj(fmt.Sprintf("<< /Type /XObject /Subtype /Form %s/Resources << /Font << %s >> >> %s /Length %d >>\nstream\n%s\nendstream", bbox, fonts, a.apDict, len(data), data)))
			}
			sub := a.subtype
			if sub == "" {
				sub = "Widget"
			}
			d := fmt.Sprintf("<< /Type /Annot /Subtype /%s /Rect [%g %g %g %g] %s", sub, a.rect[0], a.rect[1], a.rect[2], a.rect[3], a.dict)
			switch {
			case a.ap != "":
				d += " /AP << /N " + form(a.ap) + " >>"
			case a.states != nil:
				var st []string
				for _, k := range slices.Sorted(maps.Keys(a.states)) {
					st = append(st, "/"+k+" "+form(a.states[k]))
				}
				d += " /AP << /N << " + strings.Join(st, " ") + " >> >>"
			}
			if a.parent != "" {
				d += fmt.Sprintf(" /Parent %d 0 R", obj("<< "+a.parent+" >>"))
			}
			annots = append(annots, d+" >>")
		}
		if len(annots) > 0 {
			extra += " /Annots [" + strings.Join(annots, " ") + "]"
		}
		if p.rotate != 0 {
			extra += fmt.Sprintf(" /Rotate %d", p.rotate)
		}
		kids = append(kids, fmt.Sprintf("%d 0 R", obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << %s >> /Contents %d 0 R%s >>", res, content, extra))))
	}
	info := obj("<< /Title (Generated by the tests) /Producer (extractq document tests) >>")
	offsets[1] = b.Len()
	fmt.Fprintf(&b, "2 0 obj\n<< /Type /Pages /Kids [%s] /Count %d >>\nendobj\n", strings.Join(kids, " "), len(pages))
	offsets[0] = b.Len()
	fmt.Fprintf(&b, "1 0 obj\n<< /Type /Catalog /Pages 2 0 R %s>>\nendobj\n", catalog)
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, info, xref)
	return b.Bytes()
}

// lines is a page of left-aligned lines from the top, 14 points apart.
func lines(x, top float64, ss ...string) []show {
	var out []show
	for i, s := range ss {
		out = append(out, show{x: x, y: top - 14*float64(i), size: 10, s: s})
	}
	return out
}

// jbig2HuffmanRefine is an embedded JBIG2 stream (PDF's JBIG2Decode) the
// reader does not decode: segment 0, page information of a 1275×1650
// page; segment 1, a symbol dictionary coded with Huffman codes and
// refinement/aggregation (SDHUFF, SDREFAGG), its data cut after its flags.
const jbig2HuffmanRefine = "\x00\x00\x00\x00\x30\x00\x01\x00\x00\x00\x13" +
	"\x00\x00\x04\xfb\x00\x00\x06\x72\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00" +
	"\x00\x00\x00\x01\x00\x00\x01\x00\x00\x00\x02" +
	"\x00\x03"

// encodeContent stores a content stream with filter, returning the bytes
// and the dictionary entries that name it.
func encodeContent(b []byte, filter string) ([]byte, string) {
	switch filter {
	case "ASCIIHexDecode":
		return []byte(hex.EncodeToString(b) + ">"), " /Filter /ASCIIHexDecode"
	case "LZWDecode":
		var z bytes.Buffer
		w := lzw.NewWriter(&z, lzw.MSB, 8)
		w.Write(b)
		w.Close()
		return z.Bytes(), " /Filter /LZWDecode /DecodeParms << /EarlyChange 0 >>"
	case "RunLengthDecode":
		var r []byte
		for len(b) > 0 {
			n := min(len(b), 128)
			r = append(r, byte(n-1))
			r = append(r, b[:n]...)
			b = b[n:]
		}
		return append(r, 128), " /Filter /RunLengthDecode"
	}
	return b, ""
}
