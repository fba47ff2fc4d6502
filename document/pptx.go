package document

import (
	"context"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
)

func init() {
	Register(Format{
		Name:       "pptx",
		MediaType:  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
		Extensions: []string{".pptx", ".pptm", ".ppsx", ".ppsm", ".potx"},
		// 2: embedded objects (a workbook or document pasted onto a
		// slide) are attachments. 3: SmartArt diagrams' text (their data
		// part), after the slide's text frames, as charts.
		Version:  "3",
		Match:    func(head []byte, r io.ReaderAt, size int64) bool { return ooxmlKind(head, r, size) == "pptx" },
		Priority: 100,
		Decoder:  DecoderFunc(decodePPTX),
	})
}

// decodePPTX reads a presentation: one page per slide in the show's
// order, the slide's text frames and tables, then its speaker notes after
// a "Notes:" line.
func decodePPTX(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	pkg, err := openOOXMLMain(ctx, r, size, opts.Limits, "pptx", "ppt/presentation.xml")
	if err != nil {
		return nil, err
	}
	a, main, rels := pkg.a, pkg.main, pkg.rels
	pres, err := a.read(ctx, main)
	if err != nil {
		return nil, err
	}
	var slides []string
	err = eachStart(pres, main, func(e xml.StartElement) {
		if e.Name.Local != "sldId" {
			return
		}
		id := attr(e, "id") // r:id; the plain id attribute is numeric
		for _, a := range e.Attr {
			if a.Name.Local == "id" && a.Name.Space != "" {
				id = a.Value
			}
		}
		for _, rl := range rels {
			if rl.ID == id && !rl.External {
				slides = append(slides, rl.Target)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	doc := &Document{}
	ooxmlMeta(ctx, a, &doc.Meta)
	w := newTextWriter(opts.Limits)
	var slideRels [][]rel
	for i, slide := range slides {
		if !a.has(slide) {
			continue
		}
		w.startPage()
		w.line("Slide " + strconv.Itoa(i+1))
		w.endLines()
		if err := drawingText(ctx, a, slide, w); err != nil {
			return nil, err
		}
		srels, err := readRels(ctx, a, slide)
		if err != nil {
			return nil, err
		}
		slideRels = append(slideRels, srels)
		if nr, ok := relOfType(srels, "/notesSlide"); ok && a.has(nr.Target) {
			notes := newTextWriter(opts.Limits)
			if err := drawingText(ctx, a, nr.Target, notes); err != nil {
				return nil, err
			}
			if text, _, _ := notes.text(); strings.TrimSpace(text) != "" {
				w.line("Notes:")
				w.block(text)
			}
		}
		w.endPage("")
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	if doc.Attachments, err = embedded(readEmbedded(ctx, a, embeddedParts(a, slideRels...), opts)); err != nil {
		return nil, err
	}
	return doc, nil
}

// drawingText writes a slide's (or notes page's) DrawingML text: each
// paragraph a line, bullets marked, tables as rows, then its charts'
// series and its SmartArt diagrams' text; slide number, date and footer
// placeholders and the notes page's slide image are left out.
func drawingText(ctx context.Context, a *archive, part string, w *textWriter) error {
	rc, err := a.open(ctx, part)
	if err != nil {
		return err
	}
	defer rc.Close()
	d := newXMLStream(rc)
	var (
		para   strings.Builder
		inT    bool
		bullet bool
		level  int
		rows   [][]string
		cell   *strings.Builder
		tables int // open tables: a table nested in a cell becomes that cell's text
	)
	charts, err := walkPart(d, part, func(e xml.StartElement) (bool, error) {
		switch e.Name.Local {
		case "ph":
			switch attr(e, "type") {
			case "sldNum", "dt", "ftr", "hdr", "sldImg":
				// Drop the rest of this shape: its text is chrome.
				return false, skipShape(d, part)
			}
		case "p":
			para.Reset()
			bullet, level = false, 0
		case "pPr":
			level, _ = strconv.Atoi(attr(e, "lvl"))
		case "buChar", "buAutoNum":
			bullet = true
		case "t":
			inT = true
		case "br":
			para.WriteString("\n")
		case "tab":
			para.WriteString("\t")
		case "tbl":
			tables++
			if tables == 1 {
				rows = nil
			}
		case "tr":
			if tables == 1 {
				rows = append(rows, nil)
			}
		case "tc":
			if tables == 1 {
				cell = &strings.Builder{}
			}
		}
		return false, nil
	}, func(c xml.CharData) {
		if inT {
			para.Write(c)
		}
	}, func(e xml.EndElement) {
		switch e.Name.Local {
		case "t":
			inT = false
		case "p":
			text := strings.TrimSpace(para.String())
			switch {
			case text == "":
			case cell != nil:
				if cell.Len() > 0 {
					cell.WriteString(" ")
				}
				cell.WriteString(text)
			case bullet:
				w.line(strings.Repeat("  ", level) + "- " + text)
			default:
				w.line(text)
			}
		case "tc":
			if tables != 1 {
				return
			}
			if cell != nil && len(rows) > 0 {
				rows[len(rows)-1] = append(rows[len(rows)-1], cell.String())
			}
			cell = nil
		case "tbl":
			if tables--; tables > 0 {
				return
			}
			w.endLines()
			for _, r := range rows {
				w.row("", r)
			}
			w.endLines()
		case "sp", "graphicFrame":
			w.endLines()
		}
	})
	if err != nil {
		return err
	}
	w.endLines()
	return writeCharts(ctx, a, part, charts, w)
}

// skipShape consumes tokens up to the end of the enclosing p:sp (the
// placeholder's own end tags come first, so depth goes below zero).
func skipShape(d *xml.Decoder, part string) error {
	depth := 0
	for {
		t, err := nextToken(d, part)
		if err != nil || t == nil {
			return err
		}
		switch e := t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			if depth <= 0 && e.Name.Local == "sp" {
				return nil
			}
			depth--
		}
	}
}
