package document

import (
	"context"
	"fmt"
	"io"
)

func init() {
	Register(Format{
		Name:       "odp",
		MediaType:  "application/vnd.oasis.opendocument.presentation",
		Extensions: []string{".odp", ".otp", ".odg", ".otg"},
		// 2: embedded objects (a Calc table, a chart's data on a
		// slide) are child documents.
		Version: "2",
		Match: func(head []byte, r io.ReaderAt, size int64) bool {
			return matchODF("application/vnd.oasis.opendocument.presentation")(head, r, size) ||
				matchODF("application/vnd.oasis.opendocument.graphics")(head, r, size)
		},
		Priority: 100,
		Decoder:  DecoderFunc(decodeODP),
	})
}

// decodeODP reads an OpenDocument presentation (Impress) or drawing
// (Draw): one page per slide, "Slide N" and the slide's text frames,
// shapes' text, lists and tables, then its speaker notes after "Notes:",
// as the PPTX reader writes a slide. Without it such a file was read as a
// plain zip: a list of its parts and their raw XML.
func decodeODP(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	a, err := openArchive(r, size, opts.Limits)
	if err != nil {
		return nil, err
	}
	doc := &Document{}
	odfMeta(ctx, a, &doc.Meta)
	if !a.has("content.xml") {
		return nil, fmt.Errorf("%w: no content.xml: not a complete OpenDocument file (save it again from LibreOffice)", ErrCorrupt)
	}
	content, err := a.read(ctx, "content.xml")
	if err != nil {
		return nil, err
	}
	var styles []byte
	if a.has("styles.xml") {
		if styles, err = a.read(ctx, "styles.xml"); err != nil {
			return nil, err
		}
	}
	w := newTextWriter(opts.Limits)
	if _, err := odfText(content, "content.xml", w, "body", odfListStyles(styles, content), true); err != nil {
		return nil, err
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	if doc.Attachments, err = embedded(odfObjects(ctx, a, content, true, opts)); err != nil {
		return nil, err
	}
	return doc, nil
}
