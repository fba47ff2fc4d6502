package document

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

func init() {
	Register(Format{
		Name:       "csv",
		MediaType:  "text/csv",
		Extensions: []string{".csv", ".tsv", ".tab", ".psv"},
		Version:    "2", // 2: Windows-1252 tables recognised
		Match:      matchCSV,
		Priority:   20,
		Decoder:    DecoderFunc(decodeCSV),
	})
}

// csvDelimiters are tried in order; the first that splits the sample
// into a consistent table wins.
var csvDelimiters = []rune{',', '\t', ';', '|'}

// sniffCSV returns the delimiter that makes the first lines of b a table:
// at least two rows of at least two fields each, and either the same
// count in every row, or (real exports are ragged) at least three rows
// whose fields are short, as data is and prose split at its commas is
// not.
func sniffCSV(b []byte) (rune, bool) {
	cut := len(b) == headSize // a sample of a longer input: its last line may be cut
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if bytes.IndexByte(b, 0) >= 0 {
		return 0, false
	}
	if !utf8.Valid(b[:max(0, len(b)-utf8.UTFMax)]) {
		// Excel's "CSV" on Western Windows is Windows-1252, and decodeCSV
		// reads it so: judge the table on its transcoded sample. Control
		// bytes other than white space mean binary data, not a legacy text.
		if bytes.ContainsFunc(b, func(r rune) bool { return r < ' ' && r != '\t' && r != '\n' && r != '\r' && r != '\f' }) {
			return 0, false
		}
		b = []byte(transcode(b, "windows-1252"))
	}
	// Drop the last, perhaps cut, line of the sample.
	if i := bytes.LastIndexByte(b, '\n'); i > 0 && cut {
		b = b[:i+1]
	}
	for _, delim := range csvDelimiters {
		r := csv.NewReader(bytes.NewReader(b))
		r.Comma, r.FieldsPerRecord, r.LazyQuotes = delim, -1, true
		rows, fields, spaces := 0, 0, 0
		consistent, ok := true, true
		first := 0
		for rows < 50 {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || len(rec) < 2 {
				ok = false
				break
			}
			if rows == 0 {
				first = len(rec)
			} else if len(rec) != first {
				consistent = false
			}
			for _, f := range rec {
				spaces += strings.Count(strings.TrimSpace(f), " ")
			}
			fields += len(rec)
			rows++
		}
		if !ok || rows < 2 {
			continue
		}
		if consistent || (rows >= 3 && spaces < fields) {
			return delim, true
		}
	}
	return 0, false
}

func matchCSV(head []byte, _ io.ReaderAt, _ int64) bool {
	_, ok := sniffCSV(head)
	return ok
}

// decodeCSV reads a delimited table as one sheet: one page labelled with the file's name, rows
// prefixed by their first cell's reference like a spreadsheet's.
func decodeCSV(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	text := string(b)
	if !utf8.Valid(b) {
		text = transcode(b, "windows-1252")
	}
	delim, ok := sniffCSV(b[:min(len(b), headSize)])
	if !ok {
		delim = ','
		if bytes.Count(b[:min(len(b), headSize)], []byte("\t")) > bytes.Count(b[:min(len(b), headSize)], []byte(",")) {
			delim = '\t'
		}
	}
	cr := csv.NewReader(bytes.NewReader([]byte(text)))
	cr.Comma, cr.FieldsPerRecord, cr.LazyQuotes, cr.ReuseRecord = delim, -1, true, true
	w := newTextWriter(opts.Limits)
	w.startPage()
	doc := &Document{}
	for row := 1; ; row++ {
		if row%4096 == 0 {
			if err := context.Cause(ctx); err != nil {
				return nil, err
			}
		}
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("%w: line %d: %v", ErrCorrupt, line, err)
		}
		w.writeSheetRow(row, rec)
		if w.err != nil {
			return nil, w.err
		}
	}
	label := ""
	if opts.Name != "" {
		label = strings.TrimSuffix(filepath.Base(opts.Name), filepath.Ext(opts.Name))
	}
	w.endPage(label)
	var err error
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	return doc, nil
}
