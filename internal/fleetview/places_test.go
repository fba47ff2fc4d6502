package fleetview

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestPlaceLetter: a dead letter's invalid values are placed on their
// page with a snippet; a missing member is not blamed on the members
// present; the failed part of a long document names its pages; without
// pages or text only what is known is said.
func TestPlaceLetter(t *testing.T) {
	t.Parallel()
	page1 := "Dear customer,\nthe invoice follows.\n"
	page2 := "INVOICE INV-7\nTotal due: 12,50 EUR\n"
	text := page1 + page2
	pages := []jobs.Page{{N: 1, Start: 0, End: len(page1)}, {N: 2, Start: len(page1), End: len(text), Label: "B"}}
	letter := func(violations []schema.Violation, chunk *llm.Span, pages []jobs.Page) *jobs.DeadLetter {
		return &jobs.DeadLetter{Job: jobs.Envelope{Pages: pages}, Result: llm.Result{Attempts: []llm.Attempt{
			{N: 1, Value: json.RawMessage(`{"number":"nothing here"}`), Violations: []schema.Violation{{Pointer: "/number"}}},
			{N: 2, Value: json.RawMessage(`{"number":"INV-7","total":"12,50","customer":"Dear customer"}`), Violations: violations, Chunk: chunk},
			{N: 3, Class: llm.ClassRefusal}, // no answer: the one before is placed
		}}}
	}
	total := audit.FieldSource{Field: "/total", Page: 2, PageLabel: "B", Start: 25, End: 30, Snippet: "Total due: 12,50 EUR"}
	tests := []struct {
		name string
		dl   *jobs.DeadLetter
		text string
		want LetterPlaces
	}{
		{"an invalid value on page 2", letter([]schema.Violation{{Pointer: "/total", Keyword: "type"}}, nil, pages), text,
			LetterPlaces{Violations: []audit.FieldSource{total}, FirstPage: 1, LastPage: 2}},
		{"a missing member blames nothing", letter([]schema.Violation{{Pointer: "", Keyword: "required"}}, nil, pages), text,
			LetterPlaces{FirstPage: 1, LastPage: 2}},
		{"a failed part names its pages", letter([]schema.Violation{{Pointer: "/total", Keyword: "type"}}, &llm.Span{Index: 1, Start: len(page1) + 2, End: len(text)}, pages), text,
			LetterPlaces{Violations: []audit.FieldSource{total}, FirstPage: 2, LastPage: 2}},
		{"no pages: snippets without pages", letter([]schema.Violation{{Pointer: "/total", Keyword: "type"}}, nil, nil), text,
			LetterPlaces{Violations: []audit.FieldSource{{Field: "/total", Start: 61, End: 66, Snippet: "Total due: 12,50 EUR"}}}},
		{"no text: the pages of a whole document", letter([]schema.Violation{{Pointer: "/total"}}, nil, pages), "",
			LetterPlaces{FirstPage: 1, LastPage: 2}},
		{"no text and a part: nothing", letter([]schema.Violation{{Pointer: "/total"}}, &llm.Span{Start: 40, End: 70}, pages), "", LetterPlaces{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := PlaceLetter(tt.dl, tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PlaceLetter:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if p := (&LetterPlaces{FirstPage: 2, LastPage: 2}).Pages(); p != "page 2" {
		t.Errorf("Pages() = %q", p)
	}
}
