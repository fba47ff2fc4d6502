package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// ErrEncoding: the text is in no encoding the reader recognises (not UTF-8,
// no byte-order mark) and Options.Transcode was not set.
var ErrEncoding = errors.New("not UTF-8")

func init() {
	Register(Format{
		Name:       "text",
		MediaType:  "text/plain; charset=utf-8",
		Extensions: []string{".txt", ".text", ".md", ".markdown", ".log"}, // only hints: the catch-all must not win a tie by name (an .xml file of XHTML is HTML)
		Version:    "1",
		Match:      matchText,
		Priority:   -1000, // the catch-all: every other format goes first
		Decoder:    DecoderFunc(decodeText),
	})
}

// boms are the byte-order marks the text reader honours, longest first
// where one is a prefix of another (UTF-32LE starts like UTF-16LE).
var boms = []struct {
	mark []byte
	name string
	enc  encoding.Encoding // nil: UTF-8
}{
	{[]byte{0xFF, 0xFE, 0, 0}, "UTF-32LE", utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM)},
	{[]byte{0, 0, 0xFE, 0xFF}, "UTF-32BE", utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)},
	{[]byte{0xEF, 0xBB, 0xBF}, "UTF-8", nil},
	{[]byte{0xFF, 0xFE}, "UTF-16LE", unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)},
	{[]byte{0xFE, 0xFF}, "UTF-16BE", unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)},
}

func bomOf(b []byte) (mark []byte, name string, enc encoding.Encoding, ok bool) {
	for _, m := range boms {
		if bytes.HasPrefix(b, m.mark) {
			return m.mark, m.name, m.enc, true
		}
	}
	return nil, "", nil, false
}

// matchText takes anything that is not binary: a byte-order mark, or no
// NUL byte in the head. Binary input matches nothing and so is reported as
// ErrUnknownFormat.
func matchText(head []byte, _ io.ReaderAt, _ int64) bool {
	if _, _, _, ok := bomOf(head); ok {
		return true
	}
	return bytes.IndexByte(head, 0) < 0
}

func decodeText(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read: %w", err)
	}
	text, warn, err := decodeTextBytes(b, opts.Transcode)
	if err != nil {
		return nil, err
	}
	doc := &Document{Text: text}
	if warn != "" {
		doc.Warnings = append(doc.Warnings, warn)
	}
	return doc, nil
}

// decodeTextBytes turns b into UTF-8 text: by its byte-order mark, else as
// UTF-8, else (with transcode) as Windows-1252. warn says what was
// converted, for Document.Warnings.
func decodeTextBytes(b []byte, transcode bool) (text, warn string, err error) {
	if mark, name, enc, ok := bomOf(b); ok {
		b = b[len(mark):]
		if enc != nil {
			out, err := enc.NewDecoder().Bytes(b)
			if err != nil {
				return "", "", fmt.Errorf("%w: %s (by its byte-order mark) does not decode: %v", ErrCorrupt, name, err)
			}
			b, warn = out, "converted from "+name
		}
		if !utf8.Valid(b) {
			return "", "", fmt.Errorf("%w: invalid %s at offset %d", ErrCorrupt, name, firstInvalid(b))
		}
	} else {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return "", "", fmt.Errorf("%w (binary data: a NUL byte at offset %d; UTF-16 or UTF-32 text needs a byte-order mark)", ErrUnknownFormat, i)
		}
		if !utf8.Valid(b) {
			if !transcode {
				return "", "", fmt.Errorf("%w (first bad byte at offset %d): re-encode it, or pass --transcode (Options.Transcode) to read it as Windows-1252", ErrEncoding, firstInvalid(b))
			}
			out, err := charmap.Windows1252.NewDecoder().Bytes(b)
			if err != nil {
				return "", "", fmt.Errorf("transcode from Windows-1252: %w", err)
			}
			b, warn = out, "transcoded from Windows-1252"
		}
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", "", fmt.Errorf("%w: the text is blank", ErrEmpty)
	}
	return string(b), warn, nil
}

// firstInvalid is the offset of b's first byte that is not UTF-8.
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}
