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
		Name:       "ods",
		MediaType:  "application/vnd.oasis.opendocument.spreadsheet",
		Extensions: []string{".ods", ".ots", ".odc"},
		// 2: embedded objects (a Writer text on a sheet) are child
		// documents; a chart (.odc, as a Writer report embeds one) is
		// read as its data table.
		Version: "2",
		Match: func(head []byte, r io.ReaderAt, size int64) bool {
			return matchODF("application/vnd.oasis.opendocument.spreadsheet")(head, r, size) ||
				matchODF("application/vnd.oasis.opendocument.chart")(head, r, size)
		},
		Priority: 100,
		Decoder:  DecoderFunc(decodeODS),
	})
}

// maxRepeat bounds how often one repeated row or cell with content is
// written out: ODF compresses runs ("number-rows-repeated=1048576"), and a
// run that large with content is a crafted file, not a sheet.
const maxRepeat = 1000

// decodeODS reads an OpenDocument spreadsheet like a workbook (see
// decodeXLSX): each sheet a page labelled with its name, rows prefixed by
// their first cell's reference, cells as the sheet shows them (ODF stores
// the displayed text beside the value). A chart's content is read the
// same way: its data table ("local-table") is its one sheet.
func decodeODS(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	a, err := openArchive(r, size, opts.Limits)
	if err != nil {
		return nil, err
	}
	content, err := a.open(ctx, "content.xml")
	if err != nil {
		return nil, err
	}
	defer content.Close()
	doc := &Document{}
	odfMeta(ctx, a, &doc.Meta)
	w := newTextWriter(opts.Limits)
	d := newXMLStream(content)
	var (
		sheet            string
		rowNum, col      int
		rowRepeat        int
		cellRepeat       int
		cells            []string
		cell             *strings.Builder
		pDepth, skip     int
		pendingEmptyRows int
	)
	for {
		t, err := nextToken(d, "content.xml")
		if err != nil {
			return nil, err
		}
		if t == nil {
			break
		}
		switch e := t.(type) {
		case xml.StartElement:
			if skip > 0 {
				skip++
				continue
			}
			switch e.Name.Local {
			case "annotation", "shapes":
				skip = 1
			case "table":
				if sheet == "" {
					sheet = attr(e, "name")
					rowNum, pendingEmptyRows = 0, 0
					w.startPage()
					w.line("Sheet: " + sheet)
				}
			case "table-row":
				rowRepeat = repeat(attr(e, "number-rows-repeated"))
				cells, col = cells[:0], 0
			case "table-cell", "covered-table-cell":
				cellRepeat = repeat(attr(e, "number-columns-repeated"))
				cell = &strings.Builder{}
			case "p", "h":
				if cell != nil && pDepth == 0 && cell.Len() > 0 {
					cell.WriteString(" ")
				}
				pDepth++
			case "s":
				if cell != nil {
					cell.WriteString(" ")
				}
			case "line-break", "tab":
				if cell != nil {
					cell.WriteString(" ")
				}
			}
		case xml.CharData:
			if cell != nil && pDepth > 0 && skip == 0 {
				cell.Write(e)
			}
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			switch e.Name.Local {
			case "p", "h":
				pDepth--
			case "table-cell", "covered-table-cell":
				if cell == nil {
					continue
				}
				v := cell.String()
				if strings.TrimSpace(v) == "" {
					col += cellRepeat
				} else {
					for range min(cellRepeat, maxRepeat) {
						for len(cells) <= col {
							cells = append(cells, "")
						}
						cells[col] = v
						col++
					}
				}
				cell = nil
			case "table-row":
				if len(cells) == 0 {
					pendingEmptyRows += rowRepeat
					continue
				}
				rowNum += pendingEmptyRows
				pendingEmptyRows = 0
				for range min(rowRepeat, maxRepeat) {
					rowNum++
					w.writeSheetRow(rowNum, cells)
				}
				if w.err != nil {
					return nil, w.err
				}
			case "table":
				if sheet != "" {
					w.endLines()
					w.endPage(sheet)
					sheet = ""
				}
			}
		}
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	if doc.Attachments, err = embedded(odfObjects(ctx, a, nil, false, opts)); err != nil {
		return nil, err
	}
	return doc, nil
}

// repeat parses an ODF repeat count, 1 when absent or malformed.
func repeat(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 1
	}
	return n
}
