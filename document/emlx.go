package document

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
)

// Apple Mail keeps each message as an .emlx: a line with the message's
// length in bytes, the message (RFC 5322, read as an .eml), then a
// property list of Mail's own flags, which is left out. A ".partial.emlx"
// holds a message whose large attachments Mail stored apart: the message
// is read as it is there.

func init() {
	Register(Format{Name: "emlx", MediaType: "message/rfc822", Extensions: []string{".emlx"}, Version: "3", // 2: the message through eml/4; 3: through eml/5
		Match: func(head []byte, r io.ReaderAt, size int64) bool {
			n, rest, ok := emlxLength(head)
			if !ok || !matchEML(rest, r, size) {
				return false
			}
			// Mail's property list follows the message: a text that
			// starts with a number line and mail headers is not cut.
			end := int64(len(head)-len(rest)) + n
			tail := make([]byte, 5)
			k, _ := r.ReadAt(tail, end)
			return end == size || string(tail[:k]) == "<?xml"
		},
		Decoder: DecoderFunc(decodeEMLX)})
}

// emlxLength reads an .emlx's first line: the message's length.
func emlxLength(b []byte) (n int64, rest []byte, ok bool) {
	line, _, found := bytes.Cut(b[:min(len(b), 24)], []byte("\n"))
	if !found {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
	if err != nil || n <= 0 {
		return 0, nil, false
	}
	return n, b[len(line)+1:], true
}

func decodeEMLX(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	head := make([]byte, min(size, 24))
	if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	n, _, ok := emlxLength(head)
	if !ok {
		return nil, fmt.Errorf("%w: the first line is not the message's length", ErrCorrupt)
	}
	start := int64(bytes.IndexByte(head, '\n') + 1)
	if n > size-start {
		// Cut short (a copy that stopped): read what is there, and say so.
		doc, err := decodeEML(ctx, io.NewSectionReader(r, start, size-start), size-start, opts)
		if err == nil {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("the message is %d bytes by its first line, the file holds %d: read as far as it goes", n, size-start))
		}
		return doc, err
	}
	return decodeEML(ctx, io.NewSectionReader(r, start, n), n, opts)
}
