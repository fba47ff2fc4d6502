package document

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/extractq/extractq/document/internal/pdf"
)

// Files a PDF carries: the document's attachments (the catalog's
// EmbeddedFiles name tree: a Factur-X, ZUGFeRD or XRechnung invoice's XML
// beside its printable pages, a portfolio's files, a mail archived as PDF
// with its attachments) and files attached to pages (FileAttachment
// annotations). Each becomes a child document read by its own format, as
// an e-mail's attachments do.

// maxNameTreeDepth bounds the walk of a name tree, which may be
// malformed or loop.
const maxNameTreeDepth = 16

// pdfFileSpec is one attached file, before it is read.
type pdfFileSpec struct {
	name string
	spec pdf.Value // the file specification dictionary
}

// embeddedFiles lists the catalog's EmbeddedFiles, in the tree's order.
func embeddedFiles(root pdf.Value) []pdfFileSpec {
	var out []pdfFileSpec
	seen := map[uint32]bool{}
	var walk func(node pdf.Value, depth int)
	walk = func(node pdf.Value, depth int) {
		if depth > maxNameTreeDepth || node.Kind() != pdf.Dict {
			return
		}
		if id, _ := node.ObjectID(); id != 0 {
			if seen[id] {
				return // a tree that loops
			}
			seen[id] = true
		}
		names := node.Key("Names")
		for i := 0; i+1 < names.Len(); i += 2 {
			out = append(out, pdfFileSpec{name: names.Index(i).Text(), spec: names.Index(i + 1)})
		}
		kids := node.Key("Kids")
		for i := 0; i < kids.Len(); i++ {
			walk(kids.Index(i), depth+1)
		}
	}
	walk(root.Key("Names").Key("EmbeddedFiles"), 0)
	return out
}

// annotationFiles lists the files attached to a page by its
// FileAttachment annotations.
func annotationFiles(page pdf.Value) []pdfFileSpec {
	var out []pdfFileSpec
	annots := page.Key("Annots")
	for i := 0; i < annots.Len(); i++ {
		a := annots.Index(i)
		if a.Key("Subtype").Name() == "FileAttachment" {
			out = append(out, pdfFileSpec{spec: a.Key("FS")})
		}
	}
	return out
}

// readPDFFiles reads each attached file as a child document. A file is
// read once however many times it is listed (the tree and an annotation
// may name the same); one whose stream is damaged is a child with its
// error, the rest are read. All files' bytes together are bounded by
// Limits.MaxUnpacked.
func readPDFFiles(ctx context.Context, specs []pdfFileSpec, opts *Options) ([]*Document, error) {
	var out []*Document
	budget := opts.Limits.withDefaults().MaxUnpacked
	seen := map[uint32]bool{}
	for i, fs := range specs {
		ef := fs.spec.Key("EF")
		stream := ef.Key("UF")
		if stream.Kind() != pdf.Stream {
			stream = ef.Key("F")
		}
		if stream.Kind() != pdf.Stream {
			continue // a reference to a file outside the PDF: nothing to read
		}
		if id, _ := stream.ObjectID(); id != 0 {
			if seen[id] {
				continue
			}
			seen[id] = true
		}
		if err := opts.countAttachment(); err != nil {
			return nil, err
		}
		if err := context.Cause(ctx); err != nil {
			return nil, err
		}
		name := fileSpecName(fs, i+1)
		b, err := readPDFStream(stream, budget)
		if err != nil {
			out = append(out, &Document{Name: name, Err: &Error{Name: name, Err: err}})
			continue
		}
		if budget -= int64(len(b)); budget < 0 {
			return nil, fmt.Errorf("%w: its attached files decode to more than %d bytes (Limits.MaxUnpacked)", ErrTooLarge, opts.Limits.withDefaults().MaxUnpacked)
		}
		out = append(out, ReadChild(ctx, opts, name, b))
	}
	return out, nil
}

// fileSpecName is an attached file's name: the specification's Unicode
// name, else its file name, else its name in the tree, else "attachment-N";
// only the last element of a path.
func fileSpecName(fs pdfFileSpec, n int) string {
	for _, v := range []string{fs.spec.Key("UF").Text(), fs.spec.Key("F").Text(), fs.name} {
		v = strings.TrimSpace(strings.ReplaceAll(v, `\`, "/"))
		if b := path.Base(v); v != "" && b != "." && b != "/" {
			return b
		}
	}
	return fmt.Sprintf("attachment-%d", n)
}

// readPDFStream decodes an embedded file's stream, at most budget bytes.
// The parser reports damage by panicking: here that is the file's error.
func readPDFStream(stream pdf.Value, budget int64) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("%w: the attached file's stream does not decode: %v", ErrCorrupt, p)
		}
	}()
	rc := stream.Reader()
	defer rc.Close()
	b, err = io.ReadAll(io.LimitReader(rc, budget+1))
	if err != nil {
		return nil, fmt.Errorf("%w: the attached file's stream does not decode: %v", ErrCorrupt, err)
	}
	return b, nil
}
