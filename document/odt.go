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
		Name:       "odt",
		MediaType:  "application/vnd.oasis.opendocument.text",
		Extensions: []string{".odt", ".ott"},
		// 2: embedded objects (a Calc table, a chart's data in the
		// report) are child documents.
		Version:  "2",
		Match:    matchODF("application/vnd.oasis.opendocument.text"),
		Priority: 100,
		Decoder:  DecoderFunc(decodeODT),
	})
}

// decodeODT reads an OpenDocument text: the page headers (styles.xml),
// the body (headings, paragraphs, lists with markers, tables as rows,
// footnotes cited as [n] and written after the body), then the footers.
func decodeODT(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	a, err := openArchive(r, size, opts.Limits)
	if err != nil {
		return nil, err
	}
	doc := &Document{}
	odfMeta(ctx, a, &doc.Meta)
	w := newTextWriter(opts.Limits)
	var styles []byte
	if a.has("styles.xml") {
		if styles, err = a.read(ctx, "styles.xml"); err != nil {
			return nil, err
		}
	}
	var content []byte
	if a.has("content.xml") {
		if content, err = a.read(ctx, "content.xml"); err != nil {
			return nil, err
		}
	}
	listStyles := odfListStyles(styles, content)
	if styles != nil {
		if _, err := odfText(styles, "styles.xml", w, "header", listStyles, false); err != nil {
			return nil, err
		}
	}
	var notes []string
	if content != nil {
		if notes, err = odfText(content, "content.xml", w, "body", listStyles, false); err != nil {
			return nil, err
		}
	} else {
		// A template may hold only styles: its headers and footers are its text.
		doc.Warnings = append(doc.Warnings, "no content.xml: the document has no body")
	}
	for _, n := range notes {
		w.block(n)
	}
	if styles != nil {
		if _, err := odfText(styles, "styles.xml", w, "footer", listStyles, false); err != nil {
			return nil, err
		}
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	if doc.Attachments, err = embedded(odfObjects(ctx, a, content, true, opts)); err != nil {
		return nil, err
	}
	return doc, nil
}

// odfText writes the text of one region of an ODF part: "body" (the
// office:body), "header" or "footer" (the master pages' headers or
// footers). It returns the body's footnotes, each "[n] text". With
// slides, the body is a presentation's or a drawing's: each draw:page is a
// page headed "Slide N", its speaker notes (presentation:notes) written
// after a "Notes:" line when they hold text.
func odfText(b []byte, name string, w *textWriter, region string, listStyles map[string][]odfLevel, slides bool) ([]string, error) {
	d := newXMLDecoder(b)
	var (
		slide    int
		slideW   *textWriter // the slide's writer while w collects its notes
		lim      = Limits{MaxText: w.max}
		in       int // depth inside the region
		para     strings.Builder
		pDepth   int
		lists    []odfList
		fresh    bool // the list item's first paragraph is next: it takes the marker
		notes    []string
		note     *strings.Builder // the footnote body being read
		noteCite string
		inCite   bool
		rows     [][]string
		cell     *strings.Builder
		tables   int
		inList   bool
		// LibreOffice's soft page breaks: before the paragraph when it came
		// before any of its text, else after it.
		breakBefore, breakAfter bool
	)
	regionStart := func(local string) bool {
		switch region {
		case "body":
			return local == "body"
		case "header":
			return local == "header" || local == "header-first" || local == "header-left"
		}
		return local == "footer" || local == "footer-first" || local == "footer-left"
	}
	emit := func(text string) {
		text = strings.TrimSpace(text)
		if text == "" {
			return
		}
		switch {
		case note != nil:
			if note.Len() > 0 {
				note.WriteString(" ")
			}
			note.WriteString(text)
			return
		case cell != nil:
			if cell.Len() > 0 {
				cell.WriteString(" ")
			}
			cell.WriteString(text)
			return
		}
		if breakBefore {
			w.pageBreak()
			breakBefore = false
		}
		if breakAfter {
			defer w.pageBreak()
			breakAfter = false
		}
		switch {
		case len(lists) > 0:
			depth := len(lists) - 1
			l := lists[depth]
			marker := "-"
			if levels := listStyles[l.style]; depth < len(levels) && levels[depth].format != "" {
				lv := levels[depth]
				marker = lv.prefix + formatNumber(l.count, lv.format) + lv.suffix
			}
			if !fresh {
				marker = strings.Repeat(" ", len(marker))
			}
			fresh = false
			w.line(strings.Repeat("  ", depth) + marker + " " + text)
			inList = true
		default:
			if inList {
				w.endLines()
				inList = false
			}
			w.block(text)
		}
	}
	// Elements outside the region are passed over, the region's own start
	// and end tags too; in counts the depth inside it.
	_, err := walkPart(d, name, func(e xml.StartElement) (bool, error) {
		if in == 0 {
			if regionStart(e.Name.Local) {
				in = 1
			}
			return false, nil
		}
		switch e.Name.Local {
		case "tracked-changes", "annotation", "sequence-decls", "forms":
			return true, nil // its end tag is passed over with it: in stays
		case "frame", "custom-shape":
			switch attr(e, "class") {
			case "page-number", "date-time", "footer", "header":
				if slides {
					return true, nil // a placeholder ("<number>"): chrome, as in PPTX
				}
			}
		case "page":
			if slides {
				slide++
				w.startPage()
				w.line("Slide " + strconv.Itoa(slide))
				w.endLines()
			}
		case "notes":
			if slides && slideW == nil {
				slideW, w = w, newTextWriter(lim)
			}
		case "note-citation":
			inCite, noteCite = true, ""
		case "h", "p":
			pDepth++
			if pDepth > 1 && para.Len() > 0 && note == nil {
				para.WriteString(" ")
			}
		case "s":
			n, err := strconv.Atoi(attr(e, "c"))
			if err != nil || n < 1 {
				n = 1
			}
			para.WriteString(strings.Repeat(" ", min(n, 100)))
		case "tab":
			para.WriteString("\t")
		case "soft-page-break":
			if region == "body" {
				breakBefore, breakAfter = breakBefore || strings.TrimSpace(para.String()) == "", breakAfter || strings.TrimSpace(para.String()) != ""
			}
		case "line-break":
			para.WriteString("\n")
		case "list":
			if inList && len(lists) == 0 {
				w.endLines()
			}
			style := attr(e, "style-name")
			if style == "" && len(lists) > 0 {
				style = lists[len(lists)-1].style
			}
			lists = append(lists, odfList{style: style})
		case "list-item":
			if n := len(lists); n > 0 {
				lists[n-1].count++
				if v, err := strconv.Atoi(attr(e, "start-value")); err == nil {
					lists[n-1].count = v
				}
				fresh = true
			}
		case "note-body":
			note = &strings.Builder{}
			// The paragraph holding the citation continues after the note.
			para.WriteString("[" + noteCite + "]")
		case "table":
			if tables == 0 {
				rows = nil
			}
			tables++
		case "table-row":
			if tables == 1 {
				rows = append(rows, nil)
			}
		case "table-cell", "covered-table-cell":
			if tables == 1 {
				cell = &strings.Builder{}
			}
		}
		in++
		return false, nil
	}, func(c xml.CharData) {
		switch {
		case in == 0:
		case inCite:
			noteCite += string(c)
		case note != nil && pDepth > 1:
			note.Write(c)
		case pDepth > 0:
			para.Write(c)
		}
	}, func(e xml.EndElement) {
		if in == 0 {
			return
		}
		if in--; in == 0 {
			return
		}
		switch e.Name.Local {
		case "page":
			if slides {
				w.endPage("")
			}
		case "notes":
			if slides && slideW != nil {
				notes, _, err := w.text()
				w, slideW = slideW, nil
				if err != nil {
					w.err = err
				} else if strings.TrimSpace(notes) != "" {
					w.line("Notes:")
					w.block(notes)
				}
			}
		case "note-citation":
			inCite = false
		case "h", "p":
			pDepth--
			if note != nil && pDepth >= 1 {
				if note.Len() > 0 && !strings.HasSuffix(note.String(), " ") {
					note.WriteString(" ")
				}
				return
			}
			if pDepth == 0 {
				text := para.String()
				para.Reset()
				emit(text)
			}
		case "note-body":
			// A note body nested in another (a crafted file) ended the
			// note with its own end tag.
			if note != nil {
				notes = append(notes, "["+noteCite+"] "+strings.TrimSpace(note.String()))
				note = nil
			}
		case "list":
			lists = lists[:len(lists)-1]
			if len(lists) == 0 && inList {
				w.endLines()
				inList = false
			}
		case "table-cell", "covered-table-cell":
			if tables == 1 && cell != nil && len(rows) > 0 {
				rows[len(rows)-1] = append(rows[len(rows)-1], cell.String())
				cell = nil
			}
		case "table":
			tables--
			if tables == 0 {
				for _, r := range rows {
					w.row("", r)
				}
				w.endLines()
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return notes, nil
}

// odfList is an open list: its style and the items so far.
type odfList struct {
	style string
	count int
}

// odfLevel is how one level of a list style numbers its items; format
// "" is a bullet.
type odfLevel struct{ format, prefix, suffix string }

// odfListStyles reads the list styles of the given parts: per style name,
// each level's number format ("1", "a", "A", "i", "I") and the text around
// the number.
func odfListStyles(parts ...[]byte) map[string][]odfLevel {
	out := map[string][]odfLevel{}
	for _, b := range parts {
		if b == nil {
			continue
		}
		var cur string
		// Best effort: a damaged style part leaves plain "-" markers.
		_ = eachStart(b, "styles", func(e xml.StartElement) {
			switch e.Name.Local {
			case "list-style":
				cur = attr(e, "name")
			case "list-level-style-number", "list-level-style-bullet", "list-level-style-image":
				lvl, err := strconv.Atoi(attr(e, "level"))
				if cur == "" || err != nil || lvl < 1 || lvl > 10 {
					return
				}
				for len(out[cur]) < lvl {
					out[cur] = append(out[cur], odfLevel{})
				}
				if e.Name.Local == "list-level-style-number" && attr(e, "num-format") != "" {
					out[cur][lvl-1] = odfLevel{format: odfNumFormat(attr(e, "num-format")), prefix: attr(e, "num-prefix"), suffix: attr(e, "num-suffix")}
				}
			}
		})
	}
	return out
}

// odfNumFormat maps an ODF num-format to formatNumber's names.
func odfNumFormat(f string) string {
	switch f {
	case "a":
		return "lowerLetter"
	case "A":
		return "upperLetter"
	case "i":
		return "lowerRoman"
	case "I":
		return "upperRoman"
	}
	return "decimal"
}
