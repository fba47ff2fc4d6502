package document

import (
	"context"
	"encoding/xml"
	"strconv"
	"strings"
)

// chartRef returns the relationship id of a DrawingML chart reference
// (<c:chart r:id="…"/>), "" for any other element.
func chartRef(e xml.StartElement) string { return relAttr(e, "chart", "id") }

// relAttr returns the relationship id an element named local holds in its
// namespaced attribute attr (r:id, r:dm), "" for any other element.
func relAttr(e xml.StartElement, local, attr string) string {
	if e.Name.Local != local {
		return ""
	}
	for _, a := range e.Attr {
		if a.Name.Local == attr && a.Name.Space != "" {
			return a.Value
		}
	}
	return ""
}

// writeCharts writes the charts and SmartArt diagrams a part refers to
// (by relationship id): a chart's numbers are often nowhere else in a
// slide or a report, and a diagram's text is nowhere else at all.
func writeCharts(ctx context.Context, a *archive, part string, ids []string, w *textWriter) error {
	if len(ids) == 0 {
		return nil
	}
	rels, err := readRels(ctx, a, part)
	if err != nil {
		return err
	}
	for _, id := range ids {
		for _, r := range rels {
			if r.ID != id || r.External || !a.has(r.Target) {
				continue
			}
			b, err := a.read(ctx, r.Target)
			if err != nil {
				return err
			}
			text := chartText
			if strings.HasSuffix(r.Type, "/diagramData") {
				text = diagramText
			}
			lines, err := text(b, r.Target)
			if err != nil {
				return err
			}
			w.endLines()
			for _, l := range lines {
				w.line(l)
			}
			w.endLines()
		}
	}
	return nil
}

// chartText renders a DrawingML chart as lines: "Chart: title", then one
// line per series, "name: category = value | …", from the values cached
// in the chart part.
func chartText(b []byte, name string) ([]string, error) {
	d := newXMLDecoder(b)
	type series struct {
		name       strings.Builder
		cats, vals map[int]string
	}
	var (
		title   strings.Builder
		all     []*series
		cur     *series
		inTitle int
		where   string // "tx", "cat", "val" inside a series
		idx     int
		inV     bool
		inT     bool
		v       strings.Builder
	)
	for {
		t, err := nextToken(d, name)
		if err != nil {
			return nil, err
		}
		if t == nil {
			break
		}
		switch e := t.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "title":
				inTitle++
			case "ser":
				cur = &series{cats: map[int]string{}, vals: map[int]string{}}
				all = append(all, cur)
			case "tx", "cat", "val", "xVal", "yVal":
				if cur != nil && inTitle == 0 {
					where = map[string]string{"tx": "tx", "cat": "cat", "xVal": "cat", "val": "val", "yVal": "val"}[e.Name.Local]
				}
			case "pt":
				idx, _ = strconv.Atoi(attr(e, "idx"))
			case "v":
				inV = true
				v.Reset()
			case "t":
				inT = true
			}
		case xml.CharData:
			switch {
			case inT && inTitle > 0:
				title.Write(e)
			case inV:
				v.Write(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "title":
				inTitle--
			case "t":
				inT = false
			case "ser":
				cur = nil
			case "tx", "cat", "val", "xVal", "yVal":
				where = ""
			case "v":
				inV = false
				if cur == nil || idx < 0 || idx > 1<<16 {
					continue
				}
				switch where {
				case "tx":
					cur.name.WriteString(v.String())
				case "cat":
					cur.cats[idx] = v.String()
				case "val":
					cur.vals[idx] = v.String()
				}
			}
		}
	}
	var lines []string
	if s := collapseSpace(title.String()); s != "" {
		lines = append(lines, "Chart: "+s)
	} else if len(all) > 0 {
		lines = append(lines, "Chart:")
	}
	for i, s := range all {
		n := collapseSpace(s.name.String())
		if n == "" {
			n = "Series " + strconv.Itoa(i+1)
		}
		var pts []string
		for k := 0; k < 1<<16 && len(pts) < len(s.vals); k++ {
			val, ok := s.vals[k]
			if !ok {
				continue
			}
			if c := s.cats[k]; c != "" {
				val = c + " = " + val
			}
			pts = append(pts, val)
		}
		lines = append(lines, n+": "+strings.Join(pts, cellSep))
	}
	return lines, nil
}
