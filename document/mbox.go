package document

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
)

func init() {
	Register(Format{
		Name:       "mbox",
		MediaType:  "application/mbox",
		Extensions: []string{".mbox", ".mbx", ".mbs"},
		Version:    "1",
		Match:      matchMBOX,
		Priority:   65,
		Decoder:    DecoderFunc(decodeMBOX),
	})
}

// matchMBOX recognises a mailbox: a "From " separator line followed by a
// message's header block.
func matchMBOX(head []byte, r io.ReaderAt, size int64) bool {
	if !bytes.HasPrefix(head, []byte("From ")) {
		return false
	}
	i := bytes.IndexByte(head, '\n')
	return i > 0 && matchEML(head[i+1:], r, size)
}

// decodeMBOX reads a mailbox as a list of messages: each message is a
// child document (read as an e-mail, its own attachments below it) and
// the mailbox's text is their index, one line per message, so a caller
// extracts from each message on its own (--attachments separate) or from
// all of them inline.
func decodeMBOX(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	b := make([]byte, size)
	if _, err := r.ReadAt(b, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read: %w", err)
	}
	doc := &Document{Archive: true}
	w := newTextWriter(opts.Limits)
	for i, msg := range splitMBOX(b) {
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		name := "message-" + strconv.Itoa(i+1) + ".eml"
		child := ReadChild(ctx, opts, name, msg)
		doc.Attachments = append(doc.Attachments, child)
		line := name
		if child.Err == nil {
			m := child.Meta
			line = fmt.Sprintf("%s: From: %s | Subject: %s", name, m.From, m.Subject)
			if !m.Date.IsZero() {
				line += " | Date: " + m.Date.Format("2006-01-02 15:04")
			}
		} else {
			line += ": " + child.Err.Error()
		}
		w.line(line)
	}
	if len(doc.Attachments) == 0 {
		return nil, fmt.Errorf("%w: the mailbox holds no message", ErrEmpty)
	}
	var err error
	if doc.Text, _, err = w.text(); err != nil {
		return nil, err
	}
	return doc, nil
}

// splitMBOX cuts a mailbox at its "From " separator lines (a line
// starting with "From " at the start of the file or after a line break)
// and undoes the mboxrd quoting of ">From " in the bodies.
func splitMBOX(b []byte) [][]byte {
	var out [][]byte
	var cur []byte
	in := false
	for line := range bytes.Lines(b) {
		if bytes.HasPrefix(line, []byte("From ")) {
			if in {
				out = append(out, cur)
			}
			cur, in = nil, true
			continue
		}
		if !in {
			continue
		}
		if q := bytes.TrimLeft(line, ">"); len(q) < len(line) && bytes.HasPrefix(q, []byte("From ")) {
			line = line[1:]
		}
		cur = append(cur, line...)
	}
	if in {
		out = append(out, cur)
	}
	return slices.DeleteFunc(out, func(m []byte) bool { return len(bytes.TrimSpace(m)) == 0 })
}
