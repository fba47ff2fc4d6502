package document

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/extractq/extractq/document/internal/cidmap"
	"github.com/extractq/extractq/document/internal/pdf"
)

// glyph is one shown character (or a font's ligature, several) with its
// position in page space: baseline origin (x, y), advance w along the
// baseline, size the font's size in page space, and the baseline's
// direction in quarter turns (0: left to right, 1: bottom to top, …).
type glyph struct {
	s       string
	x, y, w float64
	size    float64
	dir     int
}

// pageImage is an image XObject drawn on a page: its name in the
// resources, the page area it covers, and the matrix that places it (the
// unit square onto the page).
type pageImage struct {
	xobj pdf.Value
	area float64
	ctm  matrix
}

type matrix [6]float64 // a b c d e f, as in PDF

var identity = matrix{1, 0, 0, 1, 0, 0}

// mul is m × n: m applied first.
func (m matrix) mul(n matrix) matrix {
	return matrix{
		m[0]*n[0] + m[1]*n[2], m[0]*n[1] + m[1]*n[3],
		m[2]*n[0] + m[3]*n[2], m[2]*n[1] + m[3]*n[3],
		m[4]*n[0] + m[5]*n[2] + n[4], m[4]*n[1] + m[5]*n[3] + n[5],
	}
}

func (m matrix) apply(x, y float64) (float64, float64) {
	return x*m[0] + y*m[2] + m[4], x*m[1] + y*m[3] + m[5]
}

// font is what the interpreter needs of a font: how to split codes, their
// Unicode text, and their advances (in glyph space: 1/1000 of text space,
// or a Type 3 font's FontMatrix).
type font struct {
	enc       pdf.TextEncoding
	cid       bool // Type0: two-byte codes
	first     int
	widths    []float64
	cidWidths map[int]float64
	dw        float64 // default width
	// type3 marks a Type 3 font (glyphs drawn by procedures): a code its
	// encoding cannot name decodes as U+FFFD and is left out, counted.
	type3 bool
	scale float64 // glyph space to text space; 0 is 1/1000
}

func loadFont(v pdf.Value) *font {
	f := &font{dw: 500}
	pf := pdf.Font{V: v}
	f.enc = pf.Encoder()
	if f.enc == nil {
		f.enc = nopEncoding{}
	}
	if v.Key("Subtype").Name() == "Type3" {
		f.type3, f.dw = true, 0
		f.enc = newType3Encoding(v, pf.ToUnicode())
		// Widths are in glyph space, which the FontMatrix maps to text
		// space (0.001 for most, 0.01 or 1 for some producers).
		if m := v.Key("FontMatrix"); m.Len() == 6 {
			if a := m.Index(0).Float64(); a > 0 && a <= 10 {
				f.scale = a
			}
		}
	}
	if v.Key("Subtype").Name() == "Type0" {
		f.cid = true
		d := v.Key("DescendantFonts").Index(0)
		f.dw = 1000
		if dw := d.Key("DW"); dw.Kind() == pdf.Integer || dw.Kind() == pdf.Real {
			f.dw = dw.Float64()
		}
		f.cidWidths = map[int]float64{}
		w := d.Key("W")
		for i := 0; i < w.Len() && len(f.cidWidths) < 1<<16; {
			c := int(w.Index(i).Int64())
			if i+1 < w.Len() && w.Index(i+1).Kind() == pdf.Array {
				a := w.Index(i + 1)
				for j := 0; j < a.Len() && j < 1<<16; j++ {
					f.cidWidths[c+j] = a.Index(j).Float64()
				}
				i += 2
				continue
			}
			if i+2 >= w.Len() {
				break
			}
			last, wd := int(w.Index(i+1).Int64()), w.Index(i+2).Float64()
			for k := c; k <= last && k-c < 1<<16; k++ {
				f.cidWidths[k] = wd
			}
			i += 3
		}
		f.enc = cidCollectionEncoding(v, d, f.enc)
		return f
	}
	if v.Key("ToUnicode").Kind() == pdf.Stream && !f.type3 {
		// A Unicode map may name only some codes (xdvipdfmx maps only
		// the accented letters of VnTeX's fonts): the others are read
		// by the font's encoding, as pdftotext reads them, not lost.
		// The font's encoding is made on the first such code: reading a
		// font program's own encoding costs its inflating. The map
		// leads whatever the /Encoding: with one of /Differences, the
		// Encoder is that, and arabi's Arabic glyphs, named "behinitial"
		// and mapped to letters, came out as control characters.
		tu := f.enc // without /Encoding, the Encoder is the map
		if v.Key("Encoding").Kind() != pdf.Null {
			if m := pf.ToUnicode(); m != nil {
				tu = m
			}
		}
		f.enc = &unicodeOrBase{tu: tu, makeBase: func() pdf.TextEncoding { return simpleEncoding(v, pf.BaseEncoder()) }}
	} else {
		f.enc = simpleEncoding(v, f.enc)
	}
	f.first = int(v.Key("FirstChar").Int64())
	ws := v.Key("Widths")
	for i := 0; i < ws.Len() && i < 256; i++ {
		f.widths = append(f.widths, ws.Index(i).Float64())
	}
	if fd := v.Key("FontDescriptor"); fd.Key("MissingWidth").Kind() != pdf.Null {
		f.dw = fd.Key("MissingWidth").Float64()
	}
	return f
}

// simpleEncoding is a simple font's encoding when its Unicode map is
// left aside: TeX's OT1 layout, the font program's own encoding or a
// symbolic standard font's table where they apply, else base.
func simpleEncoding(v pdf.Value, base pdf.TextEncoding) pdf.TextEncoding {
	if v.Key("Encoding").Kind() != pdf.Null {
		return base
	}
	if ot1Font(v) {
		return ot1Encoding{base}
	} else if m := builtinEncoding(v); m != nil {
		return mapEncoding{m, base}
	} else if t := symbolicStandard(v); t != nil {
		return t
	}
	return base
}

// cidCollectionEncoding reads the CIDs of a CJK font that is not embedded
// (pTeX's and dvipdfmx's Ryumin, GothicBBB, the Chinese and Korean
// defaults) by Adobe's map of its character collection: with Identity-H
// and no ToUnicode map its codes are only CIDs, which came out as Latin-1
// bytes ("�†�w" for "への道"). A Unicode map keeps the lead; the collection
// reads what it leaves out. enc otherwise.
func cidCollectionEncoding(v, d pdf.Value, enc pdf.TextEncoding) pdf.TextEncoding {
	si := d.Key("CIDSystemInfo")
	if si.Key("Registry").Text() != "Adobe" {
		return enc
	}
	switch v.Key("Encoding").Name() {
	case "Identity-H", "Identity-V":
	default:
		return enc
	}
	m := cidmap.For(si.Key("Ordering").Text())
	if m == nil {
		return enc
	}
	ce := cidEncoding{m}
	if v.Key("ToUnicode").Kind() == pdf.Stream {
		return &unicodeOrBase{tu: enc, makeBase: func() pdf.TextEncoding { return ce }}
	}
	return ce
}

// cidEncoding decodes two-byte CIDs by a collection's map; a CID it does
// not name is U+FFFD.
type cidEncoding struct{ m *cidmap.Map }

func (e cidEncoding) Decode(raw string) string {
	var b strings.Builder
	for i := 0; i+1 < len(raw); i += 2 {
		if s, ok := e.m.Text(int(raw[i])<<8 | int(raw[i+1])); ok {
			b.WriteString(s)
		} else {
			b.WriteRune(utf8.RuneError)
		}
	}
	return b.String()
}

// unicodeOrBase decodes a code by the font's Unicode map, and one the map
// does not name (U+FFFD) by the font's encoding, made when first needed.
// A font is read by one page's interpreter at a time.
type unicodeOrBase struct {
	tu       pdf.TextEncoding
	makeBase func() pdf.TextEncoding
	base     pdf.TextEncoding
}

func (e *unicodeOrBase) Decode(raw string) string {
	s := e.tu.Decode(raw)
	if s == "" || !strings.ContainsRune(s, utf8.RuneError) {
		return s
	}
	if e.base == nil {
		e.base = e.makeBase()
	}
	if b := e.base.Decode(raw); b != "" && !strings.ContainsRune(b, utf8.RuneError) {
		return b
	}
	return s
}

// advance is a code's advance in text space units per font size.
func (f *font) advance(code int) float64 {
	if f.scale > 0 {
		return f.width(code) * f.scale
	}
	return f.width(code) / 1000
}

func (f *font) width(code int) float64 {
	if f.cid {
		if w, ok := f.cidWidths[code]; ok {
			return w
		}
		return f.dw
	}
	if i := code - f.first; i >= 0 && i < len(f.widths) && f.widths[i] > 0 {
		return f.widths[i]
	}
	return f.dw
}

// ot1Font reports whether v is one of TeX's Computer Modern text fonts
// (CMR, CMBX, CMTI, …), which simpleEncoding asks of a font without /Encoding: its
// codes are then TeX's OT1 layout, whose low codes are ligatures (fi, fl),
// accents and letters (ß, æ) that no standard encoding names.
func ot1Font(v pdf.Value) bool {
	name := v.Key("BaseFont").Name()
	if i := strings.IndexByte(name, '+'); i >= 0 {
		name = name[i+1:]
	}
	for _, p := range []string{"CMR", "CMBX", "CMTI", "CMSL", "CMSS", "CMCSC", "CMB", "CMDUNH", "CMFIB", "CMU"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// builtinEncoding reads the encoding an embedded Type 1 font program
// carries ("dup 58 /period put"; a CFF program's Encoding and charset),
// which is the font's encoding when the PDF gives it no /Encoding and
// no Unicode map names the code, as pdftotext reads it:
// TeX's math and symbol fonts draw CMMI's period at code 58 (":" in
// ASCII, so a texinfo index's leaders came out as ": : :" and were taken
// for table columns) and CMSY's bullet at 15. nil when the program has no
// encoding of its own (StandardEncoding) or names no glyph the glyph list
// knows.
func builtinEncoding(v pdf.Value) (m map[byte]string) {
	if v.Key("Subtype").Name() != "Type1" {
		return nil
	}
	defer func() {
		if recover() != nil { // a damaged font program: the plain codes
			m = nil
		}
	}()
	if ff := v.Key("FontDescriptor").Key("FontFile3"); ff.Kind() == pdf.Stream && ff.Key("Subtype").Name() == "Type1C" {
		return cffBuiltinEncoding(ff)
	}
	ff := v.Key("FontDescriptor").Key("FontFile")
	if ff.Kind() != pdf.Stream {
		return nil
	}
	n := ff.Key("Length1").Int64() // the clear-text part, where the encoding is
	if n <= 0 || n > 1<<20 {
		n = 1 << 16
	}
	rc := ff.Reader()
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, n))
	if !bytes.Contains(b, []byte("/Encoding")) || bytes.Contains(b, []byte("StandardEncoding def")) {
		return nil
	}
	m = map[byte]string{}
	for _, d := range dupGlyph.FindAllSubmatch(b, 256) {
		c, err := strconv.Atoi(string(d[1]))
		if err != nil || c > 255 {
			continue
		}
		if t, ok := pdf.GlyphText(string(d[2])); ok {
			m[byte(c)] = t
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// cffBuiltinEncoding is builtinEncoding for a CFF program (FontFile3
// /Type1C): its Encoding and charset name each code's glyph.
func cffBuiltinEncoding(ff pdf.Value) map[byte]string {
	rc := ff.Reader()
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 4<<20))
	if err != nil && len(b) == 0 {
		return nil
	}
	names, err := cffEncoding(b)
	if err != nil || names == nil {
		return nil
	}
	m := map[byte]string{}
	for c, n := range names {
		if t, ok := pdf.GlyphText(n); ok {
			m[c] = t
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// symbolicStandard is the built-in encoding of Symbol or ZapfDingbats, the
// two standard fonts whose codes are not letters, when the PDF names one
// without /Encoding (and no Unicode map names the code) and does not embed it: ReportLab
// draws a character its Helvetica cannot encode as ZapfDingbats' black
// square ("n", code 0x6E), old producers set Greek and bullets in Symbol.
func symbolicStandard(v pdf.Value) *codeTable {
	name := v.Key("BaseFont").Name()
	if i := strings.IndexByte(name, '+'); i >= 0 {
		name = name[i+1:]
	}
	switch name {
	case "Symbol":
		return &symbolCodes
	case "ZapfDingbats":
		return &dingbatsCodes
	}
	return nil
}

// codeTable decodes one-byte codes by a table; a code it leaves 0 draws
// nothing (the font has no glyph for it).
type codeTable [256]rune

func (t *codeTable) Decode(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if r := t[raw[i]]; r != 0 {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// newCodeTable fills a table from runs of characters for consecutive codes
// from 0x20 and from high; U+FFFD marks a code without a glyph.
func newCodeTable(low string, high byte, upper string) (t codeTable) {
	fill := func(c int, s string) {
		for _, r := range s {
			if r != utf8.RuneError {
				t[c] = r
			}
			c++
		}
	}
	fill(0x20, low)
	fill(int(high), upper)
	return t
}

// The built-in encodings of Symbol and ZapfDingbats (Adobe's Symbol and
// ZapfDingbats encodings), as the glyph list maps their glyph names; the
// pieces of Symbol's tall brackets are Unicode's bracket pieces.
var (
	symbolCodes = newCodeTable(
		" !∀#∃%&∋()∗+,−./0123456789:;<=>?≅ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ[∴]⊥_\u203Eαβχδεφγηιϕκλμνοπθρστυϖωξψζ{|}∼",
		0xA0, "€ϒ′≤⁄∞ƒ♣♦♥♠↔←↑→↓°±″≥×∝∂•÷≠≡≈…⏐⎯↵ℵℑℜ℘⊗⊕∅∩∪⊃⊇⊄⊂⊆∈∉∠∇®©™∏√⋅¬∧∨⇔⇐⇑⇒⇓◊〈®©™∑⎛⎜⎝⎡⎢⎣⎧⎨⎩⎪\uFFFD〉∫⌠⎮⌡⎞⎟⎠⎤⎥⎦⎫⎬⎭")
	dingbatsCodes = newCodeTable(
		" ✁✂✃✄☎✆✇✈✉☛☞✌✍✎✏✐✑✒✓✔✕✖✗✘✙✚✛✜✝✞✟✠✡✢✣✤✥✦✧★✩✪✫✬✭✮✯✰✱✲✳✴✵✶✷✸✹✺✻✼✽✾✿❀❁❂❃❄❅❆❇❈❉❊❋●❍■❏❐❑❒▲▼◆❖◗❘❙❚❛❜❝❞",
		0x80, "❨❩❪❫❬❭❮❯❰❱❲❳❴❵\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD❡❢❣❤❥❦❧♣♦♥♠①②③④⑤⑥⑦⑧⑨⑩❶❷❸❹❺❻❼❽❾❿➀➁➂➃➄➅➆➇➈➉➊➋➌➍➎➏➐➑➒➓➔→↔↕➘➙➚➛➜➝➞➟➠➡➢➣➤➥➦➧➨➩➪➫➬➭➮➯\uFFFD➱➲➳➴➵➶➷➸➹➺➻➼➽➾")
)

// dupGlyph is one entry of a Type 1 font's encoding array.
var dupGlyph = regexp.MustCompile(`dup\s+(\d{1,3})\s*/([A-Za-z0-9._]+)\s+put`)

// mapEncoding decodes one-byte codes by a map, the others as base.
type mapEncoding struct {
	m    map[byte]string
	base pdf.TextEncoding
}

func (e mapEncoding) Decode(raw string) string {
	if len(raw) == 1 {
		if s, ok := e.m[raw[0]]; ok {
			return s
		}
	}
	return e.base.Decode(raw)
}

// ot1 maps the OT1 codes that differ from ASCII.
var ot1 = map[byte]string{
	0x00: "Γ", 0x01: "Δ", 0x02: "Θ", 0x03: "Λ", 0x04: "Ξ", 0x05: "Π", 0x06: "Σ", 0x07: "Υ",
	0x08: "Φ", 0x09: "Ψ", 0x0A: "Ω", 0x0B: "ff", 0x0C: "fi", 0x0D: "fl", 0x0E: "ffi", 0x0F: "ffl",
	0x10: "ı", 0x11: "ȷ", 0x19: "ß", 0x1A: "æ", 0x1B: "œ", 0x1C: "ø", 0x1D: "Æ", 0x1E: "Œ", 0x1F: "Ø",
	0x22: "”", 0x27: "’", 0x3C: "¡", 0x3E: "¿", 0x5C: "“", 0x60: "‘", 0x7B: "–", 0x7C: "—",
}

// ot1Encoding decodes OT1 codes, and the others as the font's encoding.
type ot1Encoding struct{ base pdf.TextEncoding }

func (e ot1Encoding) Decode(raw string) string {
	if len(raw) == 1 {
		if s, ok := ot1[raw[0]]; ok {
			return s
		}
	}
	return e.base.Decode(raw)
}

// type3Encoding decodes a Type 3 font's one-byte codes: by its ToUnicode
// map, else the glyph names of its Differences (the glyph list, uniXXXX),
// else a name that only numbers its own code (a65, g65: TeX's bitmap fonts
// keep ASCII codes) as that code; any other code is U+FFFD, unknown.
type type3Encoding struct {
	tounicode pdf.TextEncoding // nil without a ToUnicode map
	names     [256]string
}

func newType3Encoding(v pdf.Value, tounicode pdf.TextEncoding) *type3Encoding {
	e := &type3Encoding{tounicode: tounicode}
	d := v.Key("Encoding").Key("Differences")
	code := -1
	for i := 0; i < d.Len() && i < 1024; i++ {
		switch x := d.Index(i); x.Kind() {
		case pdf.Integer:
			code = int(x.Int64())
		case pdf.Name:
			if code >= 0 && code < 256 {
				e.names[code] = x.Name()
			}
			code++
		}
	}
	return e
}

func (e *type3Encoding) Decode(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if e.tounicode != nil {
			if s := e.tounicode.Decode(raw[i : i+1]); s != "" && !strings.ContainsRune(s, utf8.RuneError) {
				b.WriteString(s)
				continue
			}
		}
		if t, ok := pdf.GlyphText(e.names[c]); ok {
			b.WriteString(t)
			continue
		}
		if numberedName(e.names[c]) == int(c) && c >= 0x20 {
			b.WriteRune(rune(c))
			continue
		}
		b.WriteRune(utf8.RuneError)
	}
	return b.String()
}

// numberedName is the number a glyph name like "a65" or "g65" ends in, -1
// for any other name.
func numberedName(name string) int {
	i := strings.IndexAny(name, "0123456789")
	if i < 1 || i > 3 || len(name)-i > 3 {
		return -1
	}
	n := 0
	for _, r := range name[i:] {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int(r-'0')
	}
	return n
}

type nopEncoding struct{}

func (nopEncoding) Decode(raw string) string { return raw }

type gstate struct {
	ctm, tm, tlm        matrix
	tc, tw, th, tl, tfs float64
	trise               float64
	font                *font
	fontName            string
	resources           pdf.Value
}

// contentLimit bounds the operators one page may run (a hostile content
// stream, or forms drawing each other, stay bounded in time).
const contentLimit = 5_000_000

// interpreter walks a page's content stream and its forms, collecting the
// glyphs shown and the images drawn.
type interpreter struct {
	glyphs []glyph
	images []pageImage
	// unmapped counts Type 3 glyphs left out for want of a Unicode map;
	// segments the path segments drawn (a page of text set as outlines
	// draws thousands).
	unmapped, segments int
	// inline: the entries of the inline image being read; inlineBytes
	// the data of those kept.
	inline      []pdf.Value
	inlineBytes int
	fonts       map[string]*font // by resources object and font name, shared by the pages
	ops         int
	depth       int
	// spans are the marked-content sequences open (BMC/BDC … EMC), the
	// page's and its forms'; actual counts those with an ActualText in
	// force, so that a nested one is not (the outermost wins).
	spans  []span
	actual int
	// spansOver counts the sequences opened past maxSpans, so that
	// their EMCs close none of those kept.
	spansOver int
	// unknown counts glyphs whose code no Unicode map, encoding or glyph
	// name reads (U+FFFD), left out as pdftotext leaves them out.
	unknown int
}

// span is an open marked-content sequence: whether it has an ActualText
// in force, that text, and the index of its first glyph in glyphs.
type span struct {
	actual bool
	text   string
	start  int
}

// maxSpans bounds the marked-content sequences open at once; those past
// it are not read for ActualText.
const maxSpans = 1024

func (in *interpreter) run(strm pdf.Value, g gstate) {
	var stack []gstate
	// A stream's sequences left open are closed at its end (a form's
	// must not swallow the page's glyphs after it).
	spans := len(in.spans)
	defer func() {
		for len(in.spans) > spans {
			in.endSpan()
		}
	}()
	pdf.Interpret(strm, func(stk *pdf.Stack, op string) {
		in.ops++
		if in.ops > contentLimit {
			panic("content stream runs past the operator limit")
		}
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		num := func(i int) float64 {
			if i < len(args) {
				return args[i].Float64()
			}
			return 0
		}
		mat := func() matrix {
			var m matrix
			for i := range m {
				m[i] = num(i)
			}
			return m
		}
		switch op {
		case "q":
			if len(stack) < 1024 {
				stack = append(stack, g)
			}
		case "Q":
			if len(stack) > 0 {
				g = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
		case "cm":
			if len(args) == 6 {
				g.ctm = mat().mul(g.ctm)
			}
		case "BT":
			g.tm, g.tlm = identity, identity
		case "Tc":
			g.tc = num(0)
		case "Tw":
			g.tw = num(0)
		case "Tz":
			g.th = num(0) / 100
		case "TL":
			g.tl = num(0)
		case "Ts":
			g.trise = num(0)
		case "Tf":
			if len(args) == 2 {
				g.fontName = args[0].Name()
				g.tfs = num(1)
				g.font = in.font(g.resources, g.fontName)
			}
		case "Td", "TD":
			if len(args) == 2 {
				if op == "TD" {
					g.tl = -num(1)
				}
				g.tlm = matrix{1, 0, 0, 1, num(0), num(1)}.mul(g.tlm)
				g.tm = g.tlm
			}
		case "Tm":
			if len(args) == 6 {
				g.tm, g.tlm = mat(), mat()
			}
		case "T*":
			g.tlm = matrix{1, 0, 0, 1, 0, -g.tl}.mul(g.tlm)
			g.tm = g.tlm
		case "Tj", "'", "\"":
			if op != "Tj" {
				if op == "\"" && len(args) == 3 {
					g.tw, g.tc = num(0), num(1)
					args = args[2:]
				}
				g.tlm = matrix{1, 0, 0, 1, 0, -g.tl}.mul(g.tlm)
				g.tm = g.tlm
			}
			if len(args) == 1 {
				in.show(&g, args[0].RawString())
			}
		case "TJ":
			if len(args) != 1 {
				return
			}
			a := args[0]
			for i := 0; i < a.Len(); i++ {
				x := a.Index(i)
				if x.Kind() == pdf.String {
					in.show(&g, x.RawString())
					continue
				}
				tx := -x.Float64() / 1000 * g.tfs * g.th
				g.tm = matrix{1, 0, 0, 1, tx, 0}.mul(g.tm)
			}
		case "Do":
			if len(args) == 1 {
				in.do(g, args[0].Name())
			}
		case "ID":
			in.inline = args // an inline image's entries, its data to come with EI
		case "EI":
			if len(args) == 1 && args[0].Kind() == pdf.String && in.inline != nil {
				in.inlineImage(g, in.inline, args[0].RawString())
			}
			in.inline = nil
		case "m", "l", "c", "v", "y", "re":
			in.segments++
		case "BMC":
			in.beginSpan(pdf.Value{})
		case "BDC":
			var props pdf.Value
			if len(args) == 2 {
				props = args[1]
				if props.Kind() == pdf.Name { // by name from the resources
					props = g.resources.Key("Properties").Key(props.Name())
				}
			}
			in.beginSpan(props)
		case "EMC":
			if in.spansOver > 0 {
				in.spansOver--
			} else if len(in.spans) > spans {
				in.endSpan()
			}
		}
	})
}

// beginSpan opens a marked-content sequence with the property list props
// (a null Value for BMC). Its /ActualText (PDF 32000-1 §14.9.4) is in
// force unless an enclosing sequence's already is.
func (in *interpreter) beginSpan(props pdf.Value) {
	if len(in.spans) >= maxSpans {
		in.spansOver++
		return
	}
	sp := span{start: len(in.glyphs)}
	if at := props.Key("ActualText"); at.Kind() == pdf.String && in.actual == 0 {
		sp.actual, sp.text = true, at.Text()
		in.actual++
	}
	in.spans = append(in.spans, sp)
}

// endSpan closes the innermost sequence open. One with ActualText has its
// glyphs replaced by one glyph of that text, where the first of them (with
// text, if any) was and as long as they reach, so that layout places it as
// they were placed; as pdftotext does, a sequence without glyphs adds no
// text. An empty
// ActualText over a hyphen (Word's for a hyphen it put at a line's end)
// leaves a soft hyphen, which the layout joins the word's halves at, or
// removes; over anything else, the glyphs are left out.
func (in *interpreter) endSpan() {
	sp := in.spans[len(in.spans)-1]
	in.spans = in.spans[:len(in.spans)-1]
	if !sp.actual {
		return
	}
	in.actual--
	gs := in.glyphs[min(sp.start, len(in.glyphs)):]
	if len(gs) == 0 {
		return
	}
	// The span starts where its first glyph with text is: a glyph without
	// text only lengthens it (Chromium draws an Arabic letter's marks
	// glyph, mapped to nothing, just right of the letter).
	first := gs[0]
	if i := slices.IndexFunc(gs, func(g glyph) bool { return g.s != "" }); i > 0 {
		first = gs[i]
	}
	s := actualText(sp.text)
	if s == "" {
		hyphen := false
		for _, g := range gs {
			if strings.Trim(g.s, "-\u2010\u00ad") != "" {
				in.glyphs = in.glyphs[:sp.start]
				return
			}
			hyphen = hyphen || g.s != ""
		}
		if !hyphen { // glyphs without text, kept for a span's extent
			in.glyphs = in.glyphs[:sp.start]
			return
		}
		s = "\u00ad"
	}
	// The extent runs along the baseline from the first glyph's origin
	// to the farthest end of any of them.
	dx, dy := [4]float64{1, 0, -1, 0}[first.dir], [4]float64{0, 1, 0, -1}[first.dir]
	end := 0.0
	for _, g := range gs {
		end = max(end, (g.x-first.x)*dx+(g.y-first.y)*dy+g.w)
	}
	in.glyphs = append(in.glyphs[:sp.start], glyph{s: s, x: first.x, y: first.y, w: end, size: first.size, dir: first.dir})
}

// actualText is an ActualText string as a glyph's text: its line breaks and
// tabs spaces, other control characters and U+FFFD left out, ligatures
// spelled.
func actualText(s string) string {
	return ligatures.Replace(strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case r < 0x20 || r == 0x7F || r == utf8.RuneError:
			return -1
		}
		return r
	}, s))
}

func (in *interpreter) font(res pdf.Value, name string) *font {
	// Keyed by the resources' object and the name, so neither the font
	// dictionary nor its Unicode map is parsed again for the next Tf.
	id, gen := res.ObjectID()
	key := fmt.Sprintf("%d/%d/%s", id, gen, name)
	if f, ok := in.fonts[key]; ok {
		return f
	}
	f := loadFont(res.Key("Font").Key(name))
	if len(in.fonts) >= 1024 { // bounded: a file with endless fonts parses them again
		clear(in.fonts)
	}
	in.fonts[key] = f
	return f
}

// show places the glyphs of one string operand and advances the text
// matrix, as the PDF text-showing operators do.
func (in *interpreter) show(g *gstate, raw string) {
	f := g.font
	if f == nil {
		f = &font{enc: nopEncoding{}, dw: 500}
	}
	step := 1
	if f.cid {
		step = 2
	}
	for i := 0; i+step <= len(raw); i += step {
		code := raw[i : i+step]
		c := int(code[0])
		if step == 2 {
			c = c<<8 | int(code[1])
		}
		s := f.enc.Decode(code)
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "")
		}
		s = arabicForms(ligatures.Replace(s))
		if strings.Trim(s, "\x00") == "" {
			s = "" // mapped to U+0000: Chromium's for a glyph of two Arabic marks
		}
		if strings.ContainsRune(s, utf8.RuneError) {
			// A code nothing reads: left out, as pdftotext leaves it
			// out, not a U+FFFD per glyph (runs of them only cost the
			// model's prompt); counted, so that a page of them is
			// found unreadable.
			if s = strings.ReplaceAll(s, string(utf8.RuneError), ""); s == "" {
				if f.type3 {
					in.unmapped++
				} else {
					in.unknown++
				}
			}
		}
		w0 := f.advance(c)
		trm := matrix{g.tfs * g.th, 0, 0, g.tfs, 0, g.trise}.mul(g.tm).mul(g.ctm)
		x, y := trm[4], trm[5]
		size := math.Hypot(trm[2], trm[3])
		adv := w0 * math.Hypot(trm[0], trm[1])
		dir := quarter(trm[0], trm[1])
		tx := w0*g.tfs + g.tc
		if step == 1 && c == ' ' {
			tx += g.tw
		}
		if strings.TrimSpace(s) == "" && g.tfs != 0 {
			// A space's extent is how far it moves the pen, character
			// and word spacing included.
			adv = max(0, tx/g.tfs*math.Hypot(trm[0], trm[1]))
		}
		// A glyph without text inside an ActualText span is kept for the
		// span's extent (endSpan replaces them all): LibreOffice maps a
		// Bengali or Tamil cluster's glyphs to nothing and gives the
		// cluster's text there, the pre-base vowel sign's glyph first.
		if (s != "" || in.actual > 0) && size > 0 {
			in.glyphs = append(in.glyphs, glyph{s: s, x: x, y: y, w: adv, size: size, dir: dir})
		}
		g.tm = matrix{1, 0, 0, 1, tx * g.th, 0}.mul(g.tm)
	}
}

// ligatures spells out the Latin ligature characters (U+FB00–FB06) that
// fonts' Unicode maps give for their ligature glyphs, as pdftotext does:
// TeX's fonts map "fi" to U+FB01, so "file" came out as "ﬁle", which a
// model reads but a search for the extracted value "file" does not find.
var ligatures = strings.NewReplacer("\uFB00", "ff", "\uFB01", "fi", "\uFB02", "fl", "\uFB03", "ffi", "\uFB04", "ffl", "\uFB05", "st", "\uFB06", "st")

// quarter rounds a baseline direction to quarter turns.
func quarter(dx, dy float64) int {
	a := math.Atan2(dy, dx) / (math.Pi / 2)
	return (int(math.Round(a)) + 4) % 4
}

func (in *interpreter) do(g gstate, name string) {
	x := g.resources.Key("XObject").Key(name)
	switch x.Key("Subtype").Name() {
	case "Form":
		if in.depth >= 8 {
			return
		}
		if m := x.Key("Matrix"); m.Len() == 6 {
			var fm matrix
			for i := range fm {
				fm[i] = m.Index(i).Float64()
			}
			g.ctm = fm.mul(g.ctm)
		}
		if r := x.Key("Resources"); r.Kind() == pdf.Dict {
			g.resources = r
		}
		in.depth++
		in.run(x, g)
		in.depth--
	case "Image":
		in.image(g, x)
	}
}

// image notes an image drawn: the unit square mapped by the CTM is its
// place.
func (in *interpreter) image(g gstate, x pdf.Value) {
	x0, y0 := g.ctm.apply(0, 0)
	x1, y1 := g.ctm.apply(1, 1)
	in.images = append(in.images, pageImage{xobj: x, area: math.Abs((x1 - x0) * (y1 - y0)), ctm: g.ctm})
}

// maxInlineBytes bounds the inline images' data a page keeps.
const maxInlineBytes = 64 << 20

// inlineImage notes an inline image (BI … ID data EI) drawn, as an image
// XObject: a scan stored in the page's content, as Ghostscript writes a
// small one. A colour space named in the page's resources is put in.
func (in *interpreter) inlineImage(g gstate, entries []pdf.Value, data string) {
	if in.inlineBytes += len(data); in.inlineBytes > maxInlineBytes {
		return
	}
	entries = slices.Clone(entries)
	for i := 0; i+1 < len(entries); i += 2 {
		if k := entries[i].Name(); k != "CS" && k != "ColorSpace" {
			continue
		}
		switch entries[i+1].Name() {
		case "", "G", "RGB", "CMYK", "I", "DeviceGray", "DeviceRGB", "DeviceCMYK", "Indexed":
		default:
			if cs := g.resources.Key("ColorSpace").Key(entries[i+1].Name()); cs.Kind() != pdf.Null {
				entries[i+1] = cs
			}
		}
	}
	in.image(g, pdf.InlineImage(g.resources, entries, []byte(data)))
}
