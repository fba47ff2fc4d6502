package document

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"strings"
)

// OOXML (DOCX, XLSX, PPTX) containers: a zip with [Content_Types].xml
// naming the main part's content type.

// ooxmlKind names the main content type's kind ("wordprocessingml",
// "spreadsheetml", "presentationml") from [Content_Types].xml; "" when the
// input is not an OOXML container.
func ooxmlKind(head []byte, r io.ReaderAt, size int64) string {
	a := zipMatch(head, r, size)
	if a == nil || !a.has("[Content_Types].xml") {
		return ""
	}
	b, err := a.read(context.Background(), "[Content_Types].xml")
	if err != nil {
		return ""
	}
	for _, kind := range []struct{ marker, name string }{
		{"wordprocessingml.document.main", "docx"},
		{"wordprocessingml.template.main", "docx"},
		{"ms-word.document.macroenabled.main", "docx"},
		{"ms-word.template.macroenabledtemplate.main", "docx"},
		{"spreadsheetml.sheet.main", "xlsx"},
		{"spreadsheetml.template.main", "xlsx"},
		{"ms-excel.sheet.macroenabled.main", "xlsx"},
		{"ms-excel.template.macroenabled.main", "xlsx"},
		{"presentationml.presentation.main", "pptx"},
		{"presentationml.slideshow.main", "pptx"},
		{"presentationml.template.main", "pptx"},
		{"ms-powerpoint.presentation.macroenabled.main", "pptx"},
		{"ms-powerpoint.slideshow.macroenabled.main", "pptx"},
	} {
		if bytes.Contains(bytes.ToLower(b), []byte(kind.marker)) {
			return kind.name
		}
	}
	return ""
}

// openOOXML opens a container that must be of the given kind ("docx",
// "xlsx", "pptx"): a format forced on the wrong container is ErrCorrupt
// naming what it is, not an empty document.
func openOOXML(r io.ReaderAt, size int64, lim Limits, want string) (*archive, error) {
	head := make([]byte, len(zipMagic))
	n, _ := r.ReadAt(head, 0)
	if got := ooxmlKind(head[:n], r, size); got != want {
		if got == "" {
			got = "not an Office Open XML package"
		}
		return nil, fmt.Errorf("%w: not a %s container (%s); let the format be detected, or name the right one with --format", ErrCorrupt, want, got)
	}
	return openArchive(r, size, lim)
}

// ooxmlPackage is an opened OOXML container: its main part and that
// part's relationships.
type ooxmlPackage struct {
	a    *archive
	main string
	rels []rel
}

// openOOXMLMain opens a container of the given kind and finds its main
// part (fallback when _rels/.rels does not name it) and relationships.
func openOOXMLMain(ctx context.Context, r io.ReaderAt, size int64, lim Limits, kind, fallback string) (*ooxmlPackage, error) {
	a, err := openOOXML(r, size, lim, kind)
	if err != nil {
		return nil, err
	}
	main, err := mainPart(ctx, a, fallback)
	if err != nil {
		return nil, err
	}
	rels, err := readRels(ctx, a, main)
	if err != nil {
		return nil, err
	}
	return &ooxmlPackage{a: a, main: main, rels: rels}, nil
}

// rel is one OOXML relationship.
type rel struct {
	ID, Type, Target string
	External         bool
}

// readRels reads the relationships of part (its _rels/<name>.rels), with
// targets resolved to part names; a part without relationships has none.
func readRels(ctx context.Context, a *archive, part string) ([]rel, error) {
	relsName := path.Join(path.Dir(part), "_rels", path.Base(part)+".rels")
	if part == "" {
		relsName = "_rels/.rels"
	}
	if !a.has(relsName) {
		return nil, nil
	}
	b, err := a.read(ctx, relsName)
	if err != nil {
		return nil, err
	}
	var out []rel
	err = eachStart(b, relsName, func(e xml.StartElement) {
		if e.Name.Local != "Relationship" {
			return
		}
		r := rel{ID: attr(e, "Id"), Type: attr(e, "Type"), Target: attr(e, "Target"), External: attr(e, "TargetMode") == "External"}
		if !r.External {
			r.Target = resolvePart(part, r.Target)
		}
		out = append(out, r)
	})
	return out, err
}

// relOfType returns the first relationship whose type ends with suffix.
func relOfType(rels []rel, suffix string) (rel, bool) {
	for _, r := range rels {
		if strings.HasSuffix(r.Type, suffix) && !r.External {
			return r, true
		}
	}
	return rel{}, false
}

// mainPart finds the package's main part through _rels/.rels, falling back
// to the conventional name.
func mainPart(ctx context.Context, a *archive, fallback string) (string, error) {
	rels, err := readRels(ctx, a, "")
	if err != nil {
		return "", err
	}
	if r, ok := relOfType(rels, "/officeDocument"); ok && a.has(r.Target) {
		return r.Target, nil
	}
	return fallback, nil
}

// ooxmlMeta reads docProps/core.xml into m when present.
func ooxmlMeta(ctx context.Context, a *archive, m *Metadata) {
	if !a.has("docProps/core.xml") {
		return
	}
	if b, err := a.read(ctx, "docProps/core.xml"); err == nil {
		readMeta(b, m)
	}
}

// walkPart walks the tokens of a DOCX or PPTX part for a reader's
// handlers. The subtrees of mc:Fallback (the copy of mc:AlternateContent
// kept for older readers) and of any element start asks to skip are passed
// over, their text and end tags included; the charts the part draws are
// collected and returned. start may read tokens of d itself (a subtree it
// consumes whole).
func walkPart(d *xml.Decoder, name string, start func(xml.StartElement) (skip bool, err error), text func(xml.CharData), end func(xml.EndElement)) (charts []string, err error) {
	skip := 0 // depth inside a subtree passed over
	for {
		t, err := nextToken(d, name)
		if err != nil || t == nil {
			return charts, err
		}
		switch e := t.(type) {
		case xml.StartElement:
			if skip > 0 {
				skip++
				continue
			}
			if id := chartRef(e); id != "" {
				charts = append(charts, id)
			} else if id := diagramRef(e); id != "" {
				charts = append(charts, id)
			}
			if e.Name.Local == "Fallback" {
				skip = 1
				continue
			}
			drop, err := start(e)
			if err != nil {
				return charts, err
			}
			if drop {
				skip = 1
			}
		case xml.CharData:
			if skip == 0 {
				text(e)
			}
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			end(e)
		}
	}
}
