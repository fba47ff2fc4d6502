package document

import (
	"cmp"
	"encoding/xml"
	"slices"
	"strconv"
	"strings"
)

// diagramRef returns the relationship id of a SmartArt diagram's data
// part (<dgm:relIds r:dm="…"/>), "" for any other element.
func diagramRef(e xml.StartElement) string { return relAttr(e, "relIds", "dm") }

// maxDiagramDepth bounds the walk down a diagram's tree; SmartArt's text
// pane goes a few levels deep.
const maxDiagramDepth = 32

// diagramText renders a SmartArt diagram's data model as SmartArt's text
// pane shows it: each node's text a bulleted line, indented by its level
// in the tree (the connections of type parOf, in their srcOrd order). The
// presentation points, and the transitions between nodes, carry no text of
// the diagram's; nodes the tree does not reach follow in the part's order.
func diagramText(b []byte, name string) ([]string, error) {
	d := newXMLDecoder(b)
	type point struct {
		id, typ string
		paras   []string
	}
	type cxn struct {
		src, dest string
		ord       int
	}
	var (
		points []*point
		cxns   []cxn
		cur    *point
		para   strings.Builder
		inT    bool // in a point's text body
		inRun  bool // in an a:t
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
			case "pt":
				typ := attr(e, "type")
				if typ == "" {
					typ = "node"
				}
				cur = &point{id: attr(e, "modelId"), typ: typ}
				points = append(points, cur)
			case "cxn":
				if typ := attr(e, "type"); typ == "" || typ == "parOf" {
					ord, _ := strconv.Atoi(attr(e, "srcOrd"))
					cxns = append(cxns, cxn{attr(e, "srcId"), attr(e, "destId"), ord})
				}
			case "t":
				// The point's dgm:t holds the text body; an a:t inside
				// it, a run's text.
				if cur != nil {
					if inT {
						inRun = true
					} else {
						inT = true
					}
				}
			case "p":
				para.Reset()
			case "br":
				if inT {
					para.WriteString(" ")
				}
			}
		case xml.CharData:
			if inRun {
				para.Write(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "t":
				if inRun {
					inRun = false
				} else {
					inT = false
				}
			case "p":
				if inT && cur != nil {
					if s := collapseSpace(para.String()); s != "" {
						cur.paras = append(cur.paras, s)
					}
				}
			case "pt":
				cur = nil
			}
		}
	}
	byID := map[string]*point{}
	for _, p := range points {
		byID[p.id] = p
	}
	children := map[string][]cxn{}
	for _, c := range cxns {
		children[c.src] = append(children[c.src], c)
	}
	for _, cs := range children {
		slices.SortStableFunc(cs, func(a, b cxn) int { return cmp.Compare(a.ord, b.ord) })
	}
	var lines []string
	seen := map[*point]bool{}
	write := func(p *point, depth int) {
		seen[p] = true
		if p.typ != "node" && p.typ != "asst" {
			return
		}
		for _, s := range p.paras {
			lines = append(lines, strings.Repeat("  ", depth)+"- "+s)
		}
	}
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		if depth > maxDiagramDepth {
			return
		}
		for _, c := range children[id] {
			p := byID[c.dest]
			if p == nil || seen[p] {
				continue
			}
			write(p, depth)
			walk(p.id, depth+1)
		}
	}
	for _, p := range points {
		if p.typ == "doc" && !seen[p] {
			seen[p] = true
			walk(p.id, 0)
		}
	}
	for _, p := range points {
		if !seen[p] {
			write(p, 0)
		}
	}
	return lines, nil
}
