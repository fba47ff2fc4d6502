package document

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Inline returns doc with its attachments' text appended to its own, each
// after a line "--- attachment NAME ---", and their pages after its pages
// (numbered on, labelled with the attachment's name), nested ones too.
// Attachments that could not be read become warnings. Read does the same
// with the objects embedded in a document's content (see
// Options.KeepEmbedded).
func Inline(doc *Document) *Document {
	return inlineWhere(doc, "attachment", func(*Document) bool { return true })
}

// attachmentHeading begins the line Inline writes before each
// attachment's text (inlineWhere's heading for kind "attachment").
const attachmentHeading = "\n\n--- attachment "

// InlinedAttachments counts the attachments whose text Inline wrote into
// text, by the lines it puts before each: a stored text holding more of
// them than its original read again without inlining was submitted with
// its attachments inlined.
func InlinedAttachments(text string) int { return strings.Count(text, attachmentHeading) }

// inlineEmbedded returns doc with the text of the objects embedded in its
// content (Document.Embedded: a workbook in a Word report) appended to its
// own, after a line "--- embedded NAME ---": they are part of the
// document, not files beside it. Its other children stay attachments.
func inlineEmbedded(doc *Document) *Document {
	isEmbedded := func(c *Document) bool { return c.Embedded }
	if !slices.ContainsFunc(doc.Attachments, isEmbedded) {
		return doc
	}
	return inlineWhere(doc, "embedded", isEmbedded)
}

// inlineWhere appends the text and pages of the children of doc that take
// to its own, each after a line "--- KIND NAME ---", with all their own
// children; the other children stay doc's attachments.
func inlineWhere(doc *Document, kind string, take func(*Document) bool) *Document {
	out := *doc
	out.Attachments, out.Warnings = nil, slices.Clone(doc.Warnings)
	out.Pages = slices.Clone(doc.Pages)
	var b strings.Builder
	b.WriteString(doc.Text)
	var add func(prefix string, children []*Document)
	add = func(prefix string, children []*Document) {
		for i, c := range children {
			name := c.Name
			if name == "" {
				name = "attachment-" + strconv.Itoa(i+1)
			}
			name = prefix + name
			if c.Err != nil {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s %s not read: %v", kind, name, c.Err))
				continue
			}
			// Its text now needs the password too: whoever reads the
			// original again without it loses this part.
			out.Locked = out.Locked || c.Locked
			fmt.Fprintf(&b, "\n\n--- %s %s ---\n\n", kind, name)
			off := b.Len()
			b.WriteString(c.Text)
			for _, p := range c.Pages {
				p.Number = len(out.Pages) + 1
				p.Label = strings.TrimSpace(name + " " + p.Label)
				p.Start, p.End = p.Start+off, p.End+off
				p.Blocks = slices.Clone(p.Blocks)
				for j := range p.Blocks {
					p.Blocks[j].Start += off
					p.Blocks[j].End += off
				}
				for _, s := range []*Span{&p.Header, &p.Footer} {
					if !s.Empty() {
						s.Start, s.End = s.Start+off, s.End+off
					}
				}
				out.Pages = append(out.Pages, p)
			}
			add(name+"#", c.Attachments)
		}
	}
	var taken []*Document
	for _, c := range doc.Attachments {
		if take(c) {
			taken = append(taken, c)
		} else {
			out.Attachments = append(out.Attachments, c)
		}
	}
	add("", taken)
	out.Text = b.String()
	return &out
}
