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
		Version:    "1",
		Match:      matchODF("application/vnd.oasis.opendocument.text"),
		Priority:   100,
		Decoder:    DecoderFunc(decodeODT),
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
	if styles != nil {
		if _, err := odfText(styles, "styles.xml", w, "header"); err != nil {
			return nil, err
		}
	}
	var notes []string
	if a.has("content.xml") {
		content, err := a.read(ctx, "content.xml")
		if err != nil {
			return nil, err
		}
		if notes, err = odfText(content, "content.xml", w, "body"); err != nil {
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
		if _, err := odfText(styles, "styles.xml", w, "footer"); err != nil {
			return nil, err
		}
	}
	if doc.Text, _, err = w.text(); err != nil {
		return nil, err
	}
	return doc, nil
}

// odfText writes the text of one region of an ODF part: "body" (the
// office:body), "header" or "footer" (the master pages' headers or
// footers). It returns the body's footnotes, each "[n] text".
func odfText(b []byte, name string, w *textWriter, region string) ([]string, error) {
	d := newXMLDecoder(b)
	var (
		in       int // depth inside the region
		para     strings.Builder
		pDepth   int
		skip     int
		lists    []int // per open list: items so far
		notes    []string
		note     *strings.Builder // the footnote body being read
		noteCite string
		inCite   bool
		rows     [][]string
		cell     *strings.Builder
		tables   int
		inList   bool
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
		case cell != nil:
			if cell.Len() > 0 {
				cell.WriteString(" ")
			}
			cell.WriteString(text)
		case len(lists) > 0:
			depth := len(lists) - 1
			w.line(strings.Repeat("  ", depth) + "- " + text)
			inList = true
		default:
			if inList {
				w.endLines()
				inList = false
			}
			w.block(text)
		}
	}
	for {
		t, err := nextToken(d, name)
		if err != nil {
			return nil, err
		}
		if t == nil {
			break
		}
		switch e := t.(type) {
		case xml.StartElement:
			if in == 0 {
				if regionStart(e.Name.Local) {
					in = 1
				}
				continue
			}
			in++
			if skip > 0 {
				skip++
				continue
			}
			switch e.Name.Local {
			case "tracked-changes", "annotation", "sequence-decls", "forms", "note-citation":
				if e.Name.Local == "note-citation" {
					inCite, noteCite = true, ""
					continue
				}
				skip = 1
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
			case "line-break":
				para.WriteString("\n")
			case "list":
				if inList && len(lists) == 0 {
					w.endLines()
				}
				lists = append(lists, 0)
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
		case xml.CharData:
			if in > 0 && skip == 0 {
				if inCite {
					noteCite += string(e)
				} else if note != nil && pDepth > 1 {
					note.Write(e)
				} else if pDepth > 0 {
					para.Write(e)
				}
			}
		case xml.EndElement:
			if in == 0 {
				continue
			}
			in--
			if skip > 0 {
				skip--
				continue
			}
			if in == 0 {
				continue
			}
			switch e.Name.Local {
			case "note-citation":
				inCite = false
			case "h", "p":
				pDepth--
				if note != nil && pDepth >= 1 {
					if note.Len() > 0 && !strings.HasSuffix(note.String(), " ") {
						note.WriteString(" ")
					}
					continue
				}
				if pDepth == 0 {
					text := para.String()
					para.Reset()
					emit(text)
				}
			case "note-body":
				notes = append(notes, "["+noteCite+"] "+strings.TrimSpace(note.String()))
				note = nil
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
		}
	}
	return notes, nil
}
