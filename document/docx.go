package document

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

func init() {
	Register(Format{
		Name:       "docx",
		MediaType:  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
		Extensions: []string{".docx", ".docm", ".dotx", ".dotm"},
		// 2: lists count from their start values; 3: lists through
		// paragraph styles; 4: lists through numbering styles
		// (w:numStyleLink). 5: an imported part (w:altChunk: HTML, MHT,
		// RTF, text, a .docx) is read in place; embedded objects (an
		// Excel table pasted in) are attachments. 6: HTML chunks through
		// html/4. 7: through html/5. 8: SmartArt diagrams' text (their
		// data part), after the part, as charts; comments (after the
		// endnotes).
		Version:  "8",
		Match:    func(head []byte, r io.ReaderAt, size int64) bool { return ooxmlKind(head, r, size) == "docx" },
		Priority: 100,
		Decoder:  DecoderFunc(decodeDOCX),
	})
}

// decodeDOCX reads a Word document: headers first, then the body
// (paragraphs, list items with their markers, tables as rows), then
// footnotes and endnotes (cited in the body as [n]), comments, then
// footers.
func decodeDOCX(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	pkg, err := openOOXMLMain(ctx, r, size, opts.Limits, "docx", "word/document.xml")
	if err != nil {
		return nil, err
	}
	a, main, rels := pkg.a, pkg.main, pkg.rels
	dr := &docxReader{ctx: ctx, a: a, main: main, w: newTextWriter(opts.Limits), counters: listCounters{}, notes: map[string]int{},
		opts: opts, rels: map[string][]rel{main: rels}}
	// The styles first: a list defined through a numbering style
	// (w:numStyleLink) may need the style's own numId to find its levels.
	var numStyles map[string]string
	if r, ok := relOfType(rels, "/styles"); ok && a.has(r.Target) {
		b, err := a.read(ctx, r.Target)
		if err != nil {
			return nil, err
		}
		dr.styles, dr.defStyle, numStyles = readStyles(b)
	}
	if r, ok := relOfType(rels, "/numbering"); ok && a.has(r.Target) {
		b, err := a.read(ctx, r.Target)
		if err != nil {
			return nil, err
		}
		dr.numbering = readNumbering(b, numStyles)
	}
	doc := &Document{}
	ooxmlMeta(ctx, a, &doc.Meta)
	if err := dr.parts(rels, "/header"); err != nil {
		return nil, err
	}
	if err := dr.part(main); err != nil {
		return nil, err
	}
	// Comments after the notes, as the .doc reader writes them: a
	// reviewer's remarks are the document's text too.
	for _, kind := range []string{"/footnotes", "/endnotes", "/comments", "/footer"} {
		if err := dr.parts(rels, kind); err != nil {
			return nil, err
		}
	}
	if doc.Text, doc.Pages, err = dr.w.text(); err != nil {
		return nil, err
	}
	doc.Warnings = dr.warnings
	// The embedded objects of the body, headers and footers, after the
	// documents the chunks brought.
	all := [][]rel{rels}
	for _, r := range rels {
		if (strings.HasSuffix(r.Type, "/header") || strings.HasSuffix(r.Type, "/footer")) && !r.External && a.has(r.Target) {
			rs, err := readRels(ctx, a, r.Target)
			if err != nil {
				return nil, err
			}
			all = append(all, rs)
		}
	}
	objects, err := embedded(readEmbedded(ctx, a, embeddedParts(a, all...), opts))
	if err != nil {
		return nil, err
	}
	doc.Attachments = append(dr.attachments, objects...)
	return doc, nil
}

// docxReader walks WordprocessingML parts into one text.
type docxReader struct {
	ctx       context.Context
	a         *archive
	w         *textWriter
	numbering map[string][]numLevel // numId → levels
	styles    map[string]docxStyle  // paragraph styles by styleId
	defStyle  string                // the style of paragraphs that name none
	main      string                // the body part, where page breaks count
	counters  listCounters          // by numId
	notes     map[string]int        // "footnote 2" → the number shown, in order of citation

	opts        *Options
	rels        map[string][]rel // by part, read as the part's altChunks need them
	types       *contentTypes    // [Content_Types].xml, read for the first altChunk
	attachments []*Document      // those of imported packages
	warnings    []string
}

// altChunk reads the part an altChunk of part imports (w:altChunk
// r:id="…"), for its text to stand in the chunk's place. A chunk that
// cannot be read is a warning, not the document's failure; a limit
// (MaxUnpacked, MaxAttachments, cancellation) stops the document.
func (dr *docxReader) altChunk(part, id string) (string, error) {
	rels, ok := dr.rels[part]
	if !ok {
		var err error
		if rels, err = readRels(dr.ctx, dr.a, part); err != nil {
			return "", err
		}
		dr.rels[part] = rels
	}
	var target string
	for _, r := range rels {
		if r.ID == id && !r.External {
			target = r.Target
			break
		}
	}
	if target == "" || !dr.a.has(target) {
		dr.warnings = append(dr.warnings, fmt.Sprintf("an imported part (altChunk %q) is missing from the package", id))
		return "", nil
	}
	if dr.types == nil {
		ct := readContentTypes(dr.ctx, dr.a)
		dr.types = &ct
	}
	chunk, err := altChunkText(dr.ctx, dr.a, target, dr.types.of(target), dr.opts)
	switch {
	case errors.Is(err, errChunkDepth):
		dr.warnings = append(dr.warnings, fmt.Sprintf("the imported part %s was left out: %v", target, err))
		return "", nil
	case err != nil && (isLimitErr(err) || errors.Is(err, ErrBomb)):
		return "", err
	case err != nil:
		dr.warnings = append(dr.warnings, fmt.Sprintf("the imported part %s could not be read: %v", target, err))
		return "", nil
	}
	dr.attachments = append(dr.attachments, chunk.Attachments...)
	dr.warnings = append(dr.warnings, chunk.Warnings...)
	return chunk.Text, nil
}

// parts walks every part related by the given type; a header or footer
// whose text was already written (first-page and even-page variants often
// repeat the default one) is written once.
func (dr *docxReader) parts(rels []rel, suffix string) error {
	seen := map[string]bool{}
	main := dr.w
	defer func() { dr.w = main }()
	for _, r := range rels {
		if !strings.HasSuffix(r.Type, suffix) || r.External || !dr.a.has(r.Target) {
			continue
		}
		dr.w = newTextWriter(Limits{MaxText: main.max})
		if err := dr.part(r.Target); err != nil {
			return err
		}
		text, _, err := dr.w.text()
		if err != nil {
			return err
		}
		if !seen[text] {
			seen[text] = true
			main.block(text)
		}
	}
	return main.err
}

// docxTable is a table being read: rows of cells.
type docxTable struct {
	rows [][]string
	cell *strings.Builder
}

func (dr *docxReader) part(name string) error {
	rc, err := dr.a.open(dr.ctx, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	d := newXMLStream(rc)
	var (
		para      strings.Builder
		inText    bool
		pDepth    int
		style     string // the paragraph's own w:pStyle, w:numId and w:ilvl
		numID     string
		ilvl      = -1   // unset
		prefix    string // a footnote's [n] before its first paragraph
		tables    []*docxTable
		inList    bool
		separator bool // the footnote being read is a separator line
		// A page break seen in the body: before the paragraph when it came
		// before any of its text, else after it.
		breakBefore, breakAfter bool
	)
	body := name == dr.main
	w := dr.w
	flushPara := func() {
		text := strings.TrimSpace(para.String())
		para.Reset()
		if breakBefore && len(tables) == 0 {
			w.pageBreak()
			breakBefore = false
		}
		if breakAfter && len(tables) == 0 {
			defer w.pageBreak()
			breakAfter = false
		}
		marker := ""
		if num, lvl := dr.listOf(style, numID, ilvl); num != "" {
			marker = dr.counters.marker(num, dr.numbering[num], lvl)
		}
		style, numID, ilvl = "", "", -1
		if prefix != "" && text != "" {
			text, prefix = prefix+text, ""
		}
		if len(tables) > 0 {
			t := tables[len(tables)-1]
			if t.cell != nil && text != "" {
				if t.cell.Len() > 0 {
					t.cell.WriteString(" ")
				}
				t.cell.WriteString(strings.TrimSpace(marker + " " + text))
			}
			return
		}
		if marker != "" && text != "" {
			w.line(marker + " " + text)
			inList = true
			return
		}
		if inList {
			w.endLines()
			inList = false
		}
		w.block(text)
	}
	charts, err := walkPart(d, name, func(t xml.StartElement) (bool, error) {
		switch t.Name.Local {
		case "delText", "instrText", "moveFrom", "pPrChange":
			// pPrChange: the properties before a tracked change.
			return true, nil
		case "footnote", "endnote":
			typ := attr(t, "type")
			separator = typ == "separator" || typ == "continuationSeparator" || typ == "continuationNotice"
			if separator {
				return true, nil
			}
			prefix = "[" + dr.noteNumber(t.Name.Local, attr(t, "id")) + "] "
		case "p":
			pDepth++
			if pDepth > 1 && para.Len() > 0 {
				para.WriteString(" ")
			}
		// Only the outer paragraph's properties: a text box's paragraphs
		// inside it are read as part of its text.
		case "pStyle":
			if pDepth == 1 {
				style = attr(t, "val")
			}
		case "numId":
			if pDepth == 1 {
				numID = attr(t, "val")
			}
		case "ilvl":
			if pDepth == 1 {
				ilvl = levelOf(attr(t, "val"))
			}
		case "t":
			inText = true
		case "tab":
			if pDepth > 0 {
				para.WriteString("\t")
			}
		case "br", "cr":
			if body && attr(t, "type") == "page" {
				breakBefore, breakAfter = breakBefore || para.Len() == 0, breakAfter || para.Len() > 0
			}
			para.WriteString("\n")
		case "lastRenderedPageBreak", "pageBreakBefore":
			if body && (t.Name.Local == "lastRenderedPageBreak" || attr(t, "val") != "0" && attr(t, "val") != "false") {
				breakBefore, breakAfter = breakBefore || para.Len() == 0, breakAfter || para.Len() > 0
			}
		case "noBreakHyphen":
			para.WriteString("-")
		case "footnoteReference", "endnoteReference":
			para.WriteString("[" + dr.noteNumber(strings.TrimSuffix(t.Name.Local, "Reference"), attr(t, "id")) + "]")
		case "altChunk":
			// Another document imported here, which Word renders in place:
			// a block of the body, or of the table cell it stands in.
			text, err := dr.altChunk(name, attr(t, "id"))
			if err != nil || strings.TrimSpace(text) == "" {
				return true, err
			}
			if n := len(tables); n > 0 && tables[n-1].cell != nil {
				c := tables[n-1].cell
				if c.Len() > 0 {
					c.WriteString(" ")
				}
				c.WriteString(strings.Join(strings.Fields(text), " "))
				return true, nil
			}
			if inList {
				w.endLines()
				inList = false
			}
			w.block(text)
			return true, nil
		case "tbl":
			if pDepth == 0 || len(tables) > 0 {
				tables = append(tables, &docxTable{})
			}
		case "tr":
			if n := len(tables); n > 0 {
				tables[n-1].rows = append(tables[n-1].rows, nil)
			}
		case "tc":
			if n := len(tables); n > 0 {
				tables[n-1].cell = &strings.Builder{}
			}
		}
		return false, nil
	}, func(c xml.CharData) {
		if inText {
			para.Write(c)
		}
	}, func(t xml.EndElement) {
		switch t.Name.Local {
		case "t":
			inText = false
		case "p":
			pDepth--
			if pDepth == 0 {
				flushPara()
			}
		case "tc":
			if n := len(tables); n > 0 && tables[n-1].cell != nil {
				tb := tables[n-1]
				if len(tb.rows) == 0 {
					tb.rows = append(tb.rows, nil)
				}
				tb.rows[len(tb.rows)-1] = append(tb.rows[len(tb.rows)-1], tb.cell.String())
				tb.cell = nil
			}
		case "tbl":
			n := len(tables)
			if n == 0 {
				return
			}
			tb := tables[n-1]
			tables = tables[:n-1]
			if n > 1 {
				// A nested table becomes its parent cell's text.
				outer := tables[n-2]
				if outer.cell != nil {
					for _, row := range tb.rows {
						outer.cell.WriteString(" " + strings.Join(row, cellSep))
					}
				}
				return
			}
			if inList {
				w.endLines()
				inList = false
			}
			for _, row := range tb.rows {
				w.row("", row)
			}
			w.endLines()
		}
	})
	if err != nil {
		return err
	}
	if inList {
		w.endLines()
	}
	return writeCharts(dr.ctx, dr.a, name, charts, w)
}

// noteNumber is the number a footnote or endnote shows: Word numbers
// them in order of citation, whatever their ids; endnotes get roman
// numerals, as Word's default.
func (dr *docxReader) noteNumber(kind, id string) string {
	key := kind + " " + id
	n, ok := dr.notes[key]
	if !ok {
		for k := range dr.notes {
			if strings.HasPrefix(k, kind+" ") {
				n++
			}
		}
		n++
		dr.notes[key] = n
	}
	if kind == "endnote" {
		return roman(n)
	}
	return strconv.Itoa(n)
}

// docxStyle is what the reader takes from a paragraph style: the style
// it is based on and its numbering, numId "" and ilvl -1 where the style
// sets none (it inherits them).
type docxStyle struct {
	basedOn, numID string
	ilvl           int
}

// maxStyleDepth bounds a basedOn chain, so a cycle ends; Word's own
// chains are a few styles long.
const maxStyleDepth = 16

// readStyles reads the paragraph styles of styles.xml, the styleId of
// the default one, and the numId of each numbering style (a "list
// style": w:type="numbering"), by styleId.
func readStyles(b []byte) (map[string]docxStyle, string, map[string]string) {
	styles := map[string]docxStyle{}
	numStyles := map[string]string{}
	var id, numStyle, def string
	// Best effort, as readNumbering: a damaged part leaves style numbering out.
	_ = eachStart(b, "styles", func(e xml.StartElement) {
		if e.Name.Local == "style" {
			id, numStyle = "", ""
			switch attr(e, "type") {
			case "paragraph":
				id = attr(e, "styleId")
				styles[id] = docxStyle{ilvl: -1}
				if v := attr(e, "default"); v == "1" || v == "true" {
					def = id
				}
			case "numbering":
				numStyle = attr(e, "styleId")
			}
			return
		}
		if numStyle != "" && e.Name.Local == "numId" {
			numStyles[numStyle] = attr(e, "val")
			return
		}
		s, ok := styles[id]
		if id == "" || !ok {
			return
		}
		switch e.Name.Local {
		case "basedOn":
			s.basedOn = attr(e, "val")
		case "numId":
			s.numID = attr(e, "val")
		case "ilvl":
			s.ilvl = levelOf(attr(e, "val"))
		}
		styles[id] = s
	})
	return styles, def, numStyles
}

// levelOf reads a w:ilvl value, a list level from 0 to 8.
func levelOf(v string) int {
	n, _ := strconv.Atoi(v)
	return max(0, min(n, 8))
}

// listOf returns the list (numId, "" for none) and level of a paragraph
// of the given style and numbering of its own (numID "" and ilvl -1 where
// it has none). Each is its own, else its style's, inherited through the
// basedOn chain (Word merges them one by one); numId 0 takes the
// paragraph out of its style's list. A level set nowhere is the one the
// list links to the paragraph's style (w:pStyle in numbering.xml, how
// numbered headings are made), else 0: ECMA-376 puts the link before the
// style's w:ilvl, but Word does not ([MS-OI29500] 2.1.50).
func (dr *docxReader) listOf(style, numID string, ilvl int) (string, int) {
	if style == "" {
		style = dr.defStyle
	}
	own := style
	for range maxStyleDepth {
		s, ok := dr.styles[style]
		if !ok {
			break
		}
		if numID == "" {
			numID = s.numID
		}
		if ilvl < 0 {
			ilvl = s.ilvl
		}
		style = s.basedOn
	}
	if numID == "" || numID == "0" {
		return "", 0
	}
	if ilvl >= 0 {
		return numID, ilvl
	}
	for l, lv := range dr.numbering[numID] {
		if lv.style == own && own != "" {
			return numID, l
		}
	}
	return numID, 0
}

// readNumbering maps each list (numId) to its levels' formats, through
// its abstract definition, with the list's own start values
// (startOverride). An abstract definition that links to a numbering
// style (w:numStyleLink, as Word writes every list made from a list
// style) has the levels of the one that defines the style
// (w:styleLink), else of the list the style names (numStyles: the
// numbering styles' numIds, by styleId).
func readNumbering(b []byte, numStyles map[string]string) map[string][]numLevel {
	abstract := map[string][]numLevel{}
	numToAbs := map[string]string{}
	styleLink := map[string]string{}    // numbering style → the abstractNum defining it
	numStyleLink := map[string]string{} // abstractNum → the numbering style it takes its levels from
	starts := map[string]map[int]int{}  // numId → level → start
	var absID, numID string
	lvl, override := -1, -1
	// Best effort: a damaged numbering part leaves plain "-" markers.
	_ = eachStart(b, "numbering", func(e xml.StartElement) {
		switch e.Name.Local {
		case "abstractNum":
			absID, numID = attr(e, "abstractNumId"), ""
		case "styleLink":
			if absID != "" {
				if _, dup := styleLink[attr(e, "val")]; !dup {
					styleLink[attr(e, "val")] = absID
				}
			}
		case "numStyleLink":
			if absID != "" {
				numStyleLink[absID] = attr(e, "val")
			}
		case "num":
			numID, absID = attr(e, "numId"), ""
		case "abstractNumId":
			if numID != "" {
				numToAbs[numID] = attr(e, "val")
			}
		case "lvl":
			if absID != "" {
				lvl = levelOf(attr(e, "ilvl"))
				for len(abstract[absID]) <= lvl {
					abstract[absID] = append(abstract[absID], numLevel{start: 1})
				}
			}
		case "numFmt":
			if absID != "" && lvl >= 0 && lvl < len(abstract[absID]) {
				abstract[absID][lvl].format = attr(e, "val")
			}
		case "pStyle":
			if absID != "" && lvl >= 0 && lvl < len(abstract[absID]) {
				abstract[absID][lvl].style = attr(e, "val")
			}
		case "lvlText":
			if absID != "" && lvl >= 0 && lvl < len(abstract[absID]) {
				abstract[absID][lvl].text = attr(e, "val")
			}
		case "start":
			if n, err := strconv.Atoi(attr(e, "val")); err == nil && absID != "" && lvl >= 0 && lvl < len(abstract[absID]) {
				abstract[absID][lvl].start = n
			}
		case "lvlOverride":
			if numID != "" {
				override, _ = strconv.Atoi(attr(e, "ilvl"))
			}
		case "startOverride":
			if n, err := strconv.Atoi(attr(e, "val")); err == nil && numID != "" && override >= 0 {
				if starts[numID] == nil {
					starts[numID] = map[int]int{}
				}
				starts[numID][override] = n
			}
		}
	})
	// linked follows an abstractNum's numStyleLink to the definition of
	// its style, a bounded number of times: a link may lead to another
	// link, or back (a cycle ends with no levels).
	linked := func(abs string) string {
		for range maxStyleDepth {
			st, ok := numStyleLink[abs]
			if !ok {
				return abs
			}
			next, ok := styleLink[st]
			if !ok {
				next = numToAbs[numStyles[st]]
			}
			if next == "" || next == abs {
				return abs
			}
			abs = next
		}
		return abs
	}
	out := map[string][]numLevel{}
	for num, abs := range numToAbs {
		levels := slices.Clone(abstract[linked(abs)])
		for l, n := range starts[num] {
			if l < len(levels) {
				levels[l].start = n
			}
		}
		out[num] = levels
	}
	return out
}
