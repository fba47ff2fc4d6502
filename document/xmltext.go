package document

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/net/html/charset"
)

// newXMLDecoder reads a container's XML part safely: encoding/xml expands
// only the five predefined entities and never a DTD's own, so an entity
// bomb ("billion laughs") fails as an unknown entity instead of growing;
// the part itself is already bounded by the archive's limits.
func newXMLDecoder(b []byte) *xml.Decoder { return newXMLStream(bytes.NewReader(b)) }

// newXMLStream is newXMLDecoder over a stream (a part as it inflates).
func newXMLStream(r io.Reader) *xml.Decoder {
	d := xml.NewDecoder(r)
	d.CharsetReader = charset.NewReaderLabel
	return d
}

// xmlCorrupt wraps a parse failure of part name as ErrCorrupt.
func xmlCorrupt(name string, err error) error {
	return fmt.Errorf("%w: %s is not well-formed XML: %v", ErrCorrupt, name, err)
}

// nextToken returns the next token, nil at the end; other errors are the
// part's corruption. Readers match elements by local name only, so the raw
// tokens do (namespace resolution took 40% of reading a large sheet).
func nextToken(d *xml.Decoder, name string) (xml.Token, error) {
	t, err := d.RawToken()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if errors.Is(err, ErrBomb) || errors.Is(err, ErrCorrupt) {
		return nil, err // the container's own verdict, from the part's reader
	}
	if err != nil {
		return nil, xmlCorrupt(name, err)
	}
	return t, nil
}

// eachStart calls fn with every start element of an XML part, in order;
// the part's corruption is the error.
func eachStart(b []byte, name string, fn func(xml.StartElement)) error {
	d := newXMLDecoder(b)
	for {
		t, err := nextToken(d, name)
		if err != nil || t == nil {
			return err
		}
		if e, ok := t.(xml.StartElement); ok {
			fn(e)
		}
	}
}

// attr returns the value of the attribute with the local name, any
// namespace.
func attr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// readMeta fills m from a Dublin Core style properties part: OOXML's
// docProps/core.xml, ODF's meta.xml and EPUB's package metadata share the
// element names.
func readMeta(b []byte, m *Metadata) {
	d := newXMLDecoder(b)
	var cur string
	var text strings.Builder
	for {
		t, err := d.Token()
		if err != nil {
			return
		}
		switch t := t.(type) {
		case xml.StartElement:
			cur = t.Name.Local
			text.Reset()
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			if t.Name.Local != cur {
				continue
			}
			v := strings.TrimSpace(text.String())
			if v == "" {
				continue
			}
			switch cur {
			case "title":
				setOnce(&m.Title, v)
			case "creator", "initial-creator":
				setOnce(&m.Author, v)
			case "subject", "description":
				setOnce(&m.Subject, v)
			case "language":
				setOnce(&m.Language, v)
			case "created", "creation-date":
				setTime(&m.Created, v)
			case "modified", "date":
				setTime(&m.Modified, v)
			}
			cur = ""
		}
	}
}

func setOnce(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

func setTime(dst *time.Time, v string) {
	if !dst.IsZero() {
		return
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			*dst = t
			return
		}
	}
}
