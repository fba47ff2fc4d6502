package fleetview

import (
	"slices"
	"strconv"
	"strings"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
)

// LetterPlaces is where in its document a dead letter failed, as `dlq show`
// and the console's dead-letter page show it.
type LetterPlaces struct {
	// Violations are the values of the last answer that broke the schema
	// (and that the document holds), with their page and snippet: the
	// text the model misread. A violation of a missing field has none.
	Violations []audit.FieldSource `json:"violations,omitempty"`
	// FirstPage and LastPage are the pages of the failed part of a long
	// document (else of the whole document); 0 when the document has no
	// pages or they cannot be placed.
	FirstPage int `json:"first_page,omitempty"`
	LastPage  int `json:"last_page,omitempty"`
}

// Empty reports whether nothing could be placed.
func (p LetterPlaces) Empty() bool { return len(p.Violations) == 0 && p.FirstPage == 0 }

// Pages names the pages, "page 3" or "pages 3-4"; "" for none.
func (p LetterPlaces) Pages() string {
	switch {
	case p.FirstPage == 0:
		return ""
	case p.FirstPage == p.LastPage:
		return "page " + strconv.Itoa(p.FirstPage)
	}
	return "pages " + strconv.Itoa(p.FirstPage) + "-" + strconv.Itoa(p.LastPage)
}

// PlaceLetter finds where a dead letter's failure lies in text, the job's
// document text (the letter's own, the object store's or the audit's; "" when none has
// it): the violating values of its last answer that carries violations,
// grounded as a result's values are (extractq.Locate), and the pages of
// the part that failed. Without text only the pages of a document sent
// whole are known.
func PlaceLetter(dl *jobs.DeadLetter, text string) LetterPlaces {
	var out LetterPlaces
	doc := &document.Document{Text: text}
	for _, p := range dl.Job.Pages {
		if text != "" && (p.Start < 0 || p.End > len(text) || p.Start > p.End) {
			doc.Pages = nil // pages of another text: place nothing by page
			break
		}
		doc.Pages = append(doc.Pages, document.Page{Number: p.N, Start: p.Start, End: p.End, Label: p.Label})
	}
	part := failedPart(dl)
	switch {
	case len(doc.Pages) == 0:
	case part == nil:
		out.FirstPage, out.LastPage = doc.Pages[0].Number, doc.Pages[len(doc.Pages)-1].Number
	case text != "":
		lo, hi := byteOffset(text, part[0]), byteOffset(text, max(part[0], part[1]-1))
		if p := doc.PageAt(lo); p != nil {
			out.FirstPage, out.LastPage = p.Number, p.Number
		}
		if p := doc.PageAt(hi); p != nil && out.FirstPage != 0 {
			out.LastPage = p.Number
		}
	}
	if text == "" {
		return out
	}
	for i := len(dl.Attempts) - 1; i >= 0; i-- {
		a := &dl.Attempts[i]
		if len(a.Violations) == 0 || len(a.Value) == 0 {
			continue
		}
		sources, _ := extractq.Locate(doc, a.Value)
		found := audit.SourceList(sources)
		seen := map[string]bool{}
		for _, v := range a.Violations {
			// The value at the pointer, else the first value under it; not
			// for an object missing a member or holding one too many: the
			// members it has are not what is wrong.
			under := v.Pointer != "" && v.Keyword != "required" && v.Keyword != "additionalProperties"
			for _, f := range found {
				if (f.Field == v.Pointer || under && strings.HasPrefix(f.Field, v.Pointer+"/")) && !seen[f.Field] {
					seen[f.Field] = true
					out.Violations = append(out.Violations, f)
					break
				}
			}
		}
		break
	}
	return out
}

// failedPart is the [start, end) characters of the part of a long
// document that failed, nil for a document sent whole.
func failedPart(dl *jobs.DeadLetter) []int {
	if cf := dl.ChunkFailure; cf != nil {
		return []int{cf.Start, cf.End}
	}
	if sp := dl.FailedChunk; sp != nil {
		return []int{sp.Start, sp.End}
	}
	for _, a := range slices.Backward(dl.Attempts) {
		if a.Chunk != nil {
			return []int{a.Chunk.Start, a.Chunk.End}
		}
	}
	return nil
}

// byteOffset is the byte offset of character n of text.
func byteOffset(text string, n int) int {
	for i := range text {
		if n == 0 {
			return i
		}
		n--
	}
	return len(text)
}
