package document

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"path"
	"strings"
)

// Objects embedded in an OpenDocument file: a Calc table in a Writer
// report is a sub-document, a directory of the zip ("Object 1/content.xml",
// "Object 1/styles.xml") that META-INF/manifest.xml types
// ("Object 1/" application/vnd.oasis.opendocument.spreadsheet) and the body
// points to (<draw:object xlink:href="./Object 1"/>); an object of another
// program is an OLE compound file ("Object 2", <draw:object-ole>). Beside
// each, ObjectReplacements/ holds its preview picture, which is no
// document.

// odfObjectExt is the extension of the sub-documents read as children, by
// their media type; formulas are left out (a line of notation), charts
// are read (as their data table, by the ods reader) only where asked.
var odfObjectExt = map[string]string{
	odfChart: ".odc",
	"application/vnd.oasis.opendocument.spreadsheet":  ".ods",
	"application/vnd.oasis.opendocument.text":         ".odt",
	"application/vnd.oasis.opendocument.presentation": ".odp",
	"application/vnd.oasis.opendocument.graphics":     ".odg",
}

// odfChart is a chart sub-document's media type.
const odfChart = "application/vnd.oasis.opendocument.chart"

// odfOLEObject is the manifest's media type of an embedded OLE object.
const odfOLEObject = "application/vnd.sun.star.oleobject"

// odfManifestEntry is one file-entry of META-INF/manifest.xml.
type odfManifestEntry struct{ path, mediaType string }

// odfManifest reads META-INF/manifest.xml's entries in order; a missing
// or damaged one lists none (best effort: the document's own text does
// not depend on it).
func odfManifest(ctx context.Context, a *archive) []odfManifestEntry {
	if !a.has("META-INF/manifest.xml") {
		return nil
	}
	b, err := a.read(ctx, "META-INF/manifest.xml")
	if err != nil {
		return nil
	}
	var out []odfManifestEntry
	_ = eachStart(b, "META-INF/manifest.xml", func(e xml.StartElement) {
		if e.Name.Local == "file-entry" {
			out = append(out, odfManifestEntry{attr(e, "full-path"), attr(e, "media-type")})
		}
	})
	return out
}

// odfObjects reads the objects the body of an OpenDocument file embeds
// as child documents, in the body's order: each <draw:object> or
// <draw:object-ole> whose xlink:href names a part of the file ("./Object
// 1"). A spreadsheet, text, presentation or drawing sub-document is read
// as the file it would be saved as ("Object 1.ods": its directory
// repacked as an OpenDocument zip, its own objects with it); an OLE
// object as readEmbedded reads an OOXML package's. Parts the body does
// not point to are passed over: LibreOffice keeps an imported Office
// object's original bytes ("Obj100") beside the object it made of it.
// content is content.xml when the caller holds it, else nil: it is read
// only when the manifest lists objects. With charts, a chart is a child
// too ("Object 2.odc", its data table): a Writer or Impress chart keeps
// its numbers nowhere else; a Calc chart's are the sheet's, already read.
func odfObjects(ctx context.Context, a *archive, content []byte, charts bool, opts *Options) ([]*Document, error) {
	manifest := odfManifest(ctx, a)
	types := map[string]string{} // part key of an object's directory or file → media type
	for _, m := range manifest {
		mt := strings.ToLower(strings.TrimSpace(m.mediaType))
		if i := strings.IndexByte(mt, ';'); i >= 0 {
			mt = strings.TrimSpace(mt[:i])
		}
		if mt == odfOLEObject || (odfObjectExt[mt] != "" && (charts || mt != odfChart)) {
			types[partKey(m.path)] = mt
		}
	}
	if len(types) == 0 {
		return nil, nil
	}
	if content == nil {
		b, err := a.read(ctx, "content.xml")
		if err != nil {
			return nil, err
		}
		content = b
	}
	var hrefs []string
	seen := map[string]bool{}
	// Best effort: the body was read already; a damaged one ends the list.
	_ = eachStart(content, "content.xml", func(e xml.StartElement) {
		if e.Name.Local != "object" && e.Name.Local != "object-ole" {
			return
		}
		h := strings.TrimPrefix(strings.TrimSpace(attr(e, "href")), "./")
		if h == "" || strings.Contains(h, ":") || strings.HasPrefix(h, "/") || strings.HasPrefix(h, "../") || h == ".." {
			return // outside the file (a link), or nowhere
		}
		// Cleaned as the archive keys parts ("Object 1/../Object 2" is
		// "Object 2"), so that the directory's parts are found by it.
		h = strings.TrimPrefix(path.Clean("/"+h), "/")
		if k := partKey(h); !seen[k] && k != "" {
			seen[k] = true
			hrefs = append(hrefs, h)
		}
	})
	var out []*Document
	for _, h := range hrefs {
		k := partKey(h)
		switch mt := types[k]; {
		case odfObjectExt[mt] != "" && a.has(h+"/content.xml"):
			if err := opts.countAttachment(); err != nil {
				return nil, err
			}
			name := path.Base(h) + odfObjectExt[mt]
			b, err := odfSubDocument(ctx, a, h, mt, manifest)
			if err != nil {
				if isLimitErr(err) || errors.Is(err, ErrBomb) {
					return nil, err
				}
				out = append(out, &Document{Name: name, Err: &Error{Name: name, Err: err}})
				continue
			}
			out = append(out, ReadChild(ctx, opts, name, b))
		case mt == odfOLEObject && a.has(h):
			c, err := readEmbedded(ctx, a, []string{h}, opts)
			if err != nil {
				return nil, err
			}
			out = append(out, c...)
		}
		// Anything else (a formula, a Calc chart, a part not in the
		// file) is no child.
	}
	return out, nil
}

// odfSubDocument repacks the sub-document in directory dir as an
// OpenDocument file of media type mt: its mimetype first and stored, its
// parts under their names within dir, and a manifest of the parent's
// entries for them (so that objects nested in it are its own).
func odfSubDocument(ctx context.Context, a *archive, dir, mt string, manifest []odfManifestEntry) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, method uint16, b []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if err := add("mimetype", zip.Store, []byte(mt)); err != nil {
		return nil, fmt.Errorf("repacking the embedded object %s: %w", dir, err)
	}
	var man strings.Builder
	man.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">` + "\n" +
		` <manifest:file-entry manifest:full-path="/" manifest:media-type="` + html.EscapeString(mt) + `"/>` + "\n")
	for _, m := range manifest {
		if rel, ok := strings.CutPrefix(strings.TrimPrefix(m.path, "./"), dir+"/"); ok && rel != "" {
			man.WriteString(` <manifest:file-entry manifest:full-path="` + html.EscapeString(rel) + `" manifest:media-type="` + html.EscapeString(m.mediaType) + `"/>` + "\n")
		}
	}
	man.WriteString("</manifest:manifest>\n")
	for _, f := range a.zr.File {
		// The part's name within dir; one with another part of the same
		// name before it (a crafted duplicate) is the one read, as the
		// archive reads it.
		name := strings.TrimPrefix(path.Clean("/"+f.Name), "/")
		if len(name) <= len(dir)+1 || name[len(dir)] != '/' || partKey(name[:len(dir)]) != partKey(dir) ||
			strings.HasSuffix(f.Name, "/") || a.byName[partKey(name)] != f {
			continue
		}
		rel := name[len(dir)+1:]
		if k := partKey(rel); k == "mimetype" || k == "meta-inf/manifest.xml" {
			continue
		}
		b, err := a.read(ctx, f.Name)
		if err != nil {
			return nil, err
		}
		if err := add(rel, zip.Deflate, b); err != nil {
			return nil, fmt.Errorf("repacking the embedded object %s: %w", dir, err)
		}
	}
	if err := add("META-INF/manifest.xml", zip.Deflate, []byte(man.String())); err != nil {
		return nil, fmt.Errorf("repacking the embedded object %s: %w", dir, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("repacking the embedded object %s: %w", dir, err)
	}
	return buf.Bytes(), nil
}
