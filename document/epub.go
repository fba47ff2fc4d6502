package document

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

func init() {
	Register(Format{
		Name:       "epub",
		MediaType:  "application/epub+zip",
		Extensions: []string{".epub"},
		Version:    "4", // 2: chapters through html/2; 3: through html/4; 4: through html/5
		Match: func(head []byte, r io.ReaderAt, size int64) bool {
			a := zipMatch(head, r, size)
			return odfMimetype(context.Background(), a) == "application/epub+zip" || (a != nil && a.has("META-INF/container.xml") && !a.has("mimetype"))
		},
		Priority: 100,
		Decoder:  DecoderFunc(decodeEPUB),
	})
}

// decodeEPUB reads a book in its spine's reading order, each chapter
// (spine item) a page labelled with its first heading or title.
func decodeEPUB(ctx context.Context, r io.ReaderAt, size int64, opts *Options) (*Document, error) {
	a, err := openArchive(r, size, opts.Limits)
	if err != nil {
		return nil, err
	}
	container, err := a.read(ctx, "META-INF/container.xml")
	if err != nil {
		return nil, err
	}
	opf := ""
	err = eachStart(container, "META-INF/container.xml", func(e xml.StartElement) {
		if e.Name.Local == "rootfile" && opf == "" {
			opf = resolvePart("", attr(e, "full-path"))
		}
	})
	if err != nil {
		return nil, err
	}
	if opf == "" {
		return nil, fmt.Errorf("%w: META-INF/container.xml names no package document", ErrCorrupt)
	}
	pkg, err := a.read(ctx, opf)
	if err != nil {
		return nil, err
	}
	doc := &Document{}
	readMeta(pkg, &doc.Meta)
	hrefs := map[string]string{} // manifest id → part
	types := map[string]string{}
	var spine []string
	err = eachStart(pkg, opf, func(e xml.StartElement) {
		switch e.Name.Local {
		case "item":
			hrefs[attr(e, "id")] = resolvePart(opf, attr(e, "href"))
			types[attr(e, "id")] = attr(e, "media-type")
		case "itemref":
			spine = append(spine, attr(e, "idref"))
		}
	})
	if err != nil {
		return nil, err
	}
	w := newTextWriter(opts.Limits)
	for _, id := range spine {
		part, ok := hrefs[id]
		if !ok || !a.has(part) || !(strings.Contains(types[id], "html") || types[id] == "") {
			continue
		}
		b, err := a.read(ctx, part)
		if err != nil {
			return nil, err
		}
		ch, err := htmlDocument(b, "", opts.Limits, false)
		if err != nil {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("chapter %s skipped: %v", part, err))
			continue
		}
		if strings.TrimSpace(ch.Text) == "" {
			continue
		}
		w.startPage()
		w.block(ch.Text)
		label, _, _ := strings.Cut(ch.Text, "\n")
		w.endPage(truncateLabel(label))
	}
	if doc.Text, doc.Pages, err = w.text(); err != nil {
		return nil, err
	}
	return doc, nil
}

// truncateLabel keeps a chapter label short: its first line, at most 80
// bytes, cut at a rune boundary.
func truncateLabel(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= 80 {
		return s
	}
	cut := 80
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
