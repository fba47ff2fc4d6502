package extractq_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/document"
)

// TestLocate: any value is placed in a document as a result's is: page,
// range within the page, box and snippet (the document's own spelling
// with its line's context); what the document does not hold is
// ungrounded; what is not JSON finds nothing.
func TestLocate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		doc        *document.Document
		value      string
		ptr        string
		page       int
		snippet    string
		ungrounded []string
	}{
		{"a number on page 2, as the document writes it", paged(), `{"total":"9.50","vendor":"Globex"}`, "/total", 2, "Résumé: total 9.50 EUR", []string{"/vendor"}},
		{"a string on page 1 with its box", paged(), `{"vendor":"acme ltd"}`, "/vendor", 1, "Invoice from ACME Ltd", nil},
		{"no pages", &document.Document{Text: "Total due: 12.50\n"}, `{"total":12.5}`, "/total", 0, "Total due: 12.50", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sources, ungrounded := extractq.Locate(tt.doc, json.RawMessage(tt.value))
			src, ok := sources[tt.ptr]
			if !ok || src.Page != tt.page || src.Snippet != tt.snippet {
				t.Errorf("%s: %+v (found %v), want page %d snippet %q", tt.ptr, src, ok, tt.page, tt.snippet)
			}
			if !slices.Equal(ungrounded, tt.ungrounded) {
				t.Errorf("ungrounded %v, want %v", ungrounded, tt.ungrounded)
			}
		})
	}
	if s, u := extractq.Locate(paged(), json.RawMessage(`not json`)); s != nil || u != nil {
		t.Errorf("not JSON: %v %v, want nothing", s, u)
	}
}
