package document

import (
	"context"
	"io"
)

// OpenDocument containers (ODT, ODS): a zip whose first entry,
// "mimetype", names the document type; content.xml holds the body,
// styles.xml the page headers and footers, meta.xml the metadata.

// matchODF returns a Match for one OpenDocument media type. The type is
// also accepted from the template variant (…-template).
func matchODF(mediaType string) func([]byte, io.ReaderAt, int64) bool {
	return func(head []byte, r io.ReaderAt, size int64) bool {
		mt := odfMimetype(context.Background(), zipMatch(head, r, size))
		return mt == mediaType || mt == mediaType+"-template"
	}
}

// odfMeta reads meta.xml into m when present.
func odfMeta(ctx context.Context, a *archive, m *Metadata) {
	if !a.has("meta.xml") {
		return
	}
	if b, err := a.read(ctx, "meta.xml"); err == nil {
		readMeta(b, m)
	}
}
