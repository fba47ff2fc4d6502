package document

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/extractq/extractq/document/internal/pdf"
)

// Filled-in forms and annotations. A form's values are not in the page's
// content stream: each field's widget annotation draws its value with an
// appearance stream (/AP /N, a Form XObject placed at the annotation's
// /Rect), and a form filled by a tool that leaves the drawing to the
// viewer (pdftk without flatten, pypdf, web tools: /NeedAppearances true,
// or no /AP at all) has only the field's value (/V). Both are read here
// into the page's glyphs, so a value is laid out with the page's text, on
// its label's line when the form puts it there. doc/documents-pdf.md
// ("Filled-in forms and annotations") says what is shown and why.

// maxAnnotations bounds the annotations read on one page: past it, the
// rest are left out with a warning.
const maxAnnotations = 10_000

// maxFieldValue bounds the characters of one field's value drawn.
const maxFieldValue = 10_000

// checkedMark stands for a checked checkbox or radio button whose
// appearance draws no character (a vector check mark, or no appearance
// at all): U+2611 BALLOT BOX WITH CHECK. An unchecked one shows nothing.
const checkedMark = "☑"

// Annotation flags (ISO 32000 12.5.3) and field flags (12.7.3.1, 12.7.4).
const (
	annotHidden = 1 << 1 // bit 2
	annotNoView = 1 << 5 // bit 6

	fieldMultiline  = 1 << 12 // bit 13, text fields
	fieldPassword   = 1 << 13 // bit 14, text fields
	fieldRadio      = 1 << 15 // bit 16, button fields
	fieldPushButton = 1 << 16 // bit 17, button fields
)

// pdfForm is what the annotations of every page need of the document's
// interactive form (the catalog's /AcroForm).
type pdfForm struct {
	// needAppearances: the viewer is asked to draw the fields from their
	// values, so an appearance that does not show the value is stale.
	needAppearances bool
	dr              pdf.Value // default resources, for appearances without their own
	da              string    // default appearance, for fields without their own
}

// readPDFForm reads the catalog's /AcroForm; a damaged one is no form.
func readPDFForm(root pdf.Value) (f pdfForm) {
	defer func() {
		if recover() != nil {
			f = pdfForm{}
		}
	}()
	af := root.Key("AcroForm")
	return pdfForm{needAppearances: af.Key("NeedAppearances").Bool(), dr: af.Key("DR"), da: af.Key("DA").RawString()}
}

// drawnSubtypes are the annotation subtypes whose appearance is read:
// fields (Widget) and the markup annotations that may draw text. Links,
// pop-ups, sticky-note icons, file attachments and text markup draw none.
var drawnSubtypes = map[string]bool{
	"Widget": true, "FreeText": true, "Stamp": true, "Square": true, "Circle": true,
	"Line": true, "Polygon": true, "PolyLine": true, "Caret": true, "Ink": true,
}

// annotations draws the visible annotations of page into in's glyphs: each
// annotation's normal appearance, or a field's value when it has no
// appearance showing it. A damaged annotation loses only itself; the
// warning says how many were lost.
func (in *interpreter) annotations(page pdf.Value, form pdfForm, num int) (warn string) {
	annots := page.Key("Annots")
	n := annots.Len()
	if n == 0 {
		return ""
	}
	var notes []string
	if n > maxAnnotations {
		notes = append(notes, fmt.Sprintf("page %d: only the first %d of its %d annotations were read", num, maxAnnotations, n))
		n = maxAnnotations
	}
	failed, first := 0, ""
	var labels *labelIndex // the page's own glyphs, made when a first annotation draws
	for i := range n {
		mark := len(in.glyphs)
		rect, err := in.annotation(annots, i, form)
		if err != nil {
			if failed++; failed == 1 {
				first = err.Error()
			}
			continue
		}
		if len(in.glyphs) > mark {
			if labels == nil {
				labels = newLabelIndex(in.glyphs[:mark])
			}
			labels.snap(in.glyphs[mark:], rect)
		}
	}
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("page %d: %d annotations (form fields, comments) are unreadable and left out (first: %s)", num, failed, first))
	}
	return strings.Join(notes, "; ")
}

// annotation draws annots[i] and returns its rectangle; a panic of the
// parser or the interpreter takes back the glyphs it had drawn and is
// returned.
func (in *interpreter) annotation(annots pdf.Value, i int, form pdfForm) (rect [4]float64, err error) {
	mark := len(in.glyphs)
	defer func() {
		if p := recover(); p != nil {
			in.glyphs = in.glyphs[:mark]
			err = fmt.Errorf("%v", p)
		}
	}()
	a := annots.Index(i)
	if a.Kind() != pdf.Dict || !drawnSubtypes[a.Key("Subtype").Name()] {
		return rect, nil
	}
	if a.Key("F").Int64()&(annotHidden|annotNoView) != 0 {
		return rect, nil
	}
	rect, ok := annotRect(a)
	if !ok {
		return rect, nil
	}
	if a.Key("Subtype").Name() != "Widget" {
		if !in.appearance(a, rect, "", form) && a.Key("Subtype").Name() == "FreeText" {
			// A FreeText annotation the viewer is to draw from its text.
			in.synthesize(strings.ReplaceAll(a.Key("Contents").Text(), "\r", "\n"), rect, daSize(a.Key("DA").RawString()), true, 0)
		}
		return rect, nil
	}
	fld := widgetField(a)
	ff := fld.inherited("Ff").Int64()
	switch fld.inherited("FT").Name() {
	case "Tx":
		if ff&fieldPassword != 0 {
			return rect, nil // a password is never shown, neither its value nor its dots
		}
		in.valueOrAppearance(a, fld, rect, fld.inherited("V").Text(), ff&fieldMultiline != 0, form)
	case "Ch":
		in.valueOrAppearance(a, fld, rect, choiceValue(fld), false, form)
	case "Btn":
		if ff&fieldPushButton != 0 {
			in.appearance(a, rect, "", form) // its caption
			return rect, nil
		}
		state := a.Key("AS").Name()
		if state == "" {
			// No appearance state: the field's value names it. A radio
			// button's value is its group's, so a button without states
			// of its own cannot tell whether it is the one chosen.
			if ff&fieldRadio != 0 && a.Key("AP").Key("N").Kind() != pdf.Dict {
				return rect, nil
			}
			state = fld.inherited("V").Name()
		}
		on := state != "" && state != "Off"
		if drew := in.appearance(a, rect, state, form); !drew && on {
			in.synthesize(checkedMark, rect, 0, false, 0)
		}
	default: // a signature, or a widget of no field: what it draws
		in.appearance(a, rect, "", form)
	}
	return rect, nil
}

// labelIndex holds a page's upright glyphs by their middle's height (a
// baseline and a quarter em up), to find the label beside an annotation.
type labelIndex struct {
	gs []glyph
	// budget bounds the glyphs looked at over the page's annotations: a
	// hostile page of many annotations on one long line stays linear.
	budget int
}

func newLabelIndex(page []glyph) *labelIndex {
	l := &labelIndex{budget: 20_000_000}
	for _, g := range page {
		if g.dir == 0 {
			l.gs = append(l.gs, g)
		}
	}
	slices.SortFunc(l.gs, func(a, b glyph) int { return cmp.Compare(a.y+0.25*a.size, b.y+0.25*b.size) })
	return l
}

// snap moves one line of an annotation's glyphs gs onto the baseline of
// the page's text nearest beside its rectangle (a label left of a text
// field, a caption right of a checkbox), when that text's middle lies
// within the rectangle: the reader sees them on one line, while a field's
// box often sits a few points off its label's baseline (LibreOffice draws
// a 15-point box 2 points above a 12-point label), which would read the
// value as a line of its own, above or below its label.
func (l *labelIndex) snap(gs []glyph, rect [4]float64) {
	if len(gs) == 0 {
		return
	}
	y := gs[0].y
	for _, g := range gs {
		if g.dir != 0 || math.Abs(g.y-y) > 0.1*g.size {
			return // rotated, or more than one line: left where drawn
		}
	}
	best, label := math.Inf(1), math.NaN()
	i, _ := slices.BinarySearchFunc(l.gs, rect[1], func(g glyph, y float64) int { return cmp.Compare(g.y+0.25*g.size, y) })
	for ; i < len(l.gs) && l.gs[i].y+0.25*l.gs[i].size <= rect[3] && l.budget > 0; i++ {
		l.budget--
		g := l.gs[i]
		d := math.Inf(1)
		switch {
		case g.x+g.w <= rect[0]+0.5*g.size:
			d = rect[0] - (g.x + g.w)
		case g.x >= rect[2]-0.5*g.size:
			d = g.x - rect[2]
		}
		if d < best && d < 20*g.size {
			best, label = d, g.y
		}
	}
	if math.IsNaN(label) {
		return
	}
	for i := range gs {
		gs[i].y = label
	}
}

// valueOrAppearance draws a text or choice field: its appearance, unless
// it shows nothing while the field has a value, or the viewer is asked to
// redraw it (NeedAppearances) and it does not show the value (an
// appearance left from before the form was filled again). Then the value
// is drawn instead, never both.
func (in *interpreter) valueOrAppearance(a pdf.Value, fld field, rect [4]float64, value string, multiline bool, form pdfForm) {
	mark := len(in.glyphs)
	drew := in.appearance(a, rect, "", form)
	if strings.TrimSpace(value) == "" {
		return
	}
	if drew && !(form.needAppearances && !showsValue(in.glyphs[mark:], value)) {
		return
	}
	in.glyphs = in.glyphs[:mark]
	da := fld.inherited("DA").RawString()
	if da == "" {
		da = form.da
	}
	in.synthesize(value, rect, daSize(da), multiline || strings.ContainsAny(value, "\r\n"), fld.inherited("Q").Int64())
}

// showsValue reports whether glyphs spell value, spaces aside.
func showsValue(gs []glyph, value string) bool {
	var b strings.Builder
	for _, g := range gs {
		b.WriteString(g.s)
	}
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return strings.Contains(squeeze(b.String()), squeeze(value))
}

// appearance runs the annotation's normal appearance (for a dictionary of
// states, the one named state, else /AS) mapped to its rectangle, and
// reports whether it drew any glyph.
func (in *interpreter) appearance(a pdf.Value, rect [4]float64, state string, form pdfForm) bool {
	ap := a.Key("AP").Key("N")
	if ap.Kind() == pdf.Dict {
		if state == "" {
			state = a.Key("AS").Name()
		}
		ap = ap.Key(state)
	}
	if ap.Kind() != pdf.Stream || in.depth >= 8 {
		return false
	}
	// ISO 32000 12.5.5: the form's bounding box, transformed by its
	// matrix, is fitted to the annotation's rectangle by scaling and
	// translating (matrix A); the appearance draws with Matrix × A.
	fm := identity
	if m := ap.Key("Matrix"); m.Len() == 6 {
		for i := range fm {
			fm[i] = m.Index(i).Float64()
		}
	}
	bb := ap.Key("BBox")
	if bb.Len() != 4 {
		return false
	}
	bx0, by0, bx1, by1 := bb.Index(0).Float64(), bb.Index(1).Float64(), bb.Index(2).Float64(), bb.Index(3).Float64()
	tx0, ty0, tx1, ty1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, c := range [4][2]float64{{bx0, by0}, {bx1, by0}, {bx0, by1}, {bx1, by1}} {
		x, y := fm.apply(c[0], c[1])
		tx0, ty0, tx1, ty1 = min(tx0, x), min(ty0, y), max(tx1, x), max(ty1, y)
	}
	if tx1-tx0 < 1e-6 || ty1-ty0 < 1e-6 {
		return false
	}
	sx, sy := (rect[2]-rect[0])/(tx1-tx0), (rect[3]-rect[1])/(ty1-ty0)
	fit := matrix{sx, 0, 0, sy, rect[0] - tx0*sx, rect[1] - ty0*sy}
	res := ap.Key("Resources")
	if res.Kind() != pdf.Dict {
		res = form.dr // sloppy producers leave the fonts to the form's defaults
	}
	mark := len(in.glyphs)
	in.depth++
	defer func() { in.depth-- }()
	in.run(ap, gstate{ctm: fm.mul(fit), th: 1, resources: res})
	return len(in.glyphs) > mark
}

// synthesize places text as glyphs in rect, the way a viewer draws a
// field's value: size from its default appearance (0: fitted to the
// rectangle's height), one line centred vertically or, multiline, lines
// from the top; aligned by quadding q (0 left, 1 centre, 2 right). Every
// character is taken half an em wide.
func (in *interpreter) synthesize(text string, rect [4]float64, size float64, multiline bool, q int64) {
	text = strings.ToValidUTF8(text, "")
	if utf8.RuneCountInString(text) > maxFieldValue {
		text = string([]rune(text)[:maxFieldValue])
	}
	h := rect[3] - rect[1]
	if size <= 0 || size > 1000 {
		size = max(1, min(12, 0.7*h))
		if multiline {
			size = 10
		}
	}
	var ls []string
	if multiline {
		ls = strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	} else {
		ls = []string{strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(text)}
	}
	y := rect[1] + (h-0.925*size)/2 + 0.207*size // Helvetica's ascent and descent, centred
	if multiline {
		y = rect[3] - 2 - 0.9*size
	}
	w := 0.5 * size
	for _, ln := range ls {
		n := float64(utf8.RuneCountInString(ln))
		x := rect[0] + 2
		switch q {
		case 1:
			x = (rect[0]+rect[2])/2 - n*w/2
		case 2:
			x = rect[2] - 2 - n*w
		}
		for _, r := range ln {
			if r != ' ' && r >= 0x20 {
				in.glyphs = append(in.glyphs, glyph{s: string(r), x: x, y: y, w: w, size: size})
			}
			x += w
		}
		y -= 1.15 * size
	}
}

// annotRect is an annotation's /Rect, normalised; false when it is not a
// rectangle with an area.
func annotRect(a pdf.Value) ([4]float64, bool) {
	r := a.Key("Rect")
	if r.Len() != 4 {
		return [4]float64{}, false
	}
	x0, y0, x1, y1 := r.Index(0).Float64(), r.Index(1).Float64(), r.Index(2).Float64(), r.Index(3).Float64()
	out := [4]float64{min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)}
	if out[2]-out[0] <= 0 || out[3]-out[1] <= 0 || math.IsInf(out[2]-out[0], 0) || math.IsNaN(out[2]-out[0]) || math.IsNaN(out[3]-out[1]) {
		return out, false
	}
	return out, true
}

var daTf = regexp.MustCompile(`(-?[0-9]*\.?[0-9]+)\s+Tf\b`)

// daSize is the font size of a default appearance string ("/Helv 10 Tf
// 0 g"); 0 (auto) when it has none.
func daSize(da string) float64 {
	m := daTf.FindAllStringSubmatch(da, -1)
	if len(m) == 0 {
		return 0
	}
	f, _ := strconv.ParseFloat(m[len(m)-1][1], 64)
	return f
}

// field is a widget's field: the widget itself (merged with its field, as
// most are) and the nodes above it, whose attributes it inherits.
type field struct{ nodes []pdf.Value }

// widgetField walks /Parent up from a widget, at most 32 levels (a loop
// ends there).
func widgetField(a pdf.Value) field {
	f := field{nodes: []pdf.Value{a}}
	for p := a.Key("Parent"); p.Kind() == pdf.Dict && len(f.nodes) < 32; p = p.Key("Parent") {
		f.nodes = append(f.nodes, p)
	}
	return f
}

// inherited is the nearest node's value of an inheritable key (ISO 32000
// 12.7.3.1: FT, Ff, V, DV; DA and Q 12.7.3.3).
func (f field) inherited(key string) pdf.Value {
	for _, n := range f.nodes {
		if v := n.Key(key); !v.IsNull() {
			return v
		}
	}
	return pdf.Value{}
}

// choiceValue is a choice field's value as shown: its selected options'
// display texts (an /Opt entry [export display] shows display), joined.
func choiceValue(f field) string {
	v := f.inherited("V")
	opts := f.inherited("Opt")
	display := func(x pdf.Value) string {
		s := x.Text()
		for i := 0; i < opts.Len() && i < 10_000; i++ {
			if o := opts.Index(i); o.Kind() == pdf.Array && o.Len() == 2 && o.Index(0).Text() == s {
				return o.Index(1).Text()
			}
		}
		return s
	}
	if v.Kind() == pdf.Array {
		var parts []string
		for i := 0; i < v.Len() && i < 1000; i++ {
			if s := display(v.Index(i)); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	}
	return display(v)
}
