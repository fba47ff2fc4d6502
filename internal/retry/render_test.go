package retry

import (
	"strings"
	"testing"
	"text/template"

	"github.com/extractq/extractq/llm"
)

// TestRenderBuiltinAsTemplate checks that the built-in prompts render
// writes directly are what executing their templates writes.
func TestRenderBuiltinAsTemplate(t *testing.T) {
	t.Parallel()
	data := []*llm.PromptData{
		{Document: "Invoice 7\nTotal: 12 €", Open: "<document-abc>", Close: "</document-abc>", Mode: llm.ModeStrict},
		{Document: "", Open: "<document-x>", Close: "</document-x>"},
		{Document: "{{.Open}} <b>&</b>\n\n", Open: "<document-0123456789abcdef>", Close: "</document-0123456789abcdef>"},
	}
	builtin := []*template.Template{leanTask, leanAloneTask, defaultTask}
	for _, row := range leanSystems {
		builtin = append(builtin, row[:]...)
	}
	for _, tmpl := range builtin {
		for _, d := range data {
			var want strings.Builder
			if err := tmpl.Execute(&want, d); err != nil {
				t.Fatal(err)
			}
			got, err := render(tmpl, d)
			if err != nil || got != want.String() {
				t.Errorf("render(%s) = %q, %v; the template writes %q", tmpl.Name(), got, err, want.String())
			}
		}
	}
	for _, fb := range feedbackTemplates {
		if !builtinFeedback(fb) {
			t.Errorf("feedback template %s not known as built-in", fb.Name())
		}
	}
	if builtinFeedback(template.Must(template.New("mine").Parse("{{.Errors}}"))) {
		t.Error("a caller's feedback template counted as built-in: its errors would surface only after paid calls")
	}
}

// TestNewFence checks the fence tags against their nonce: twelve digits
// that the document does not contain, in both tags.
func TestNewFence(t *testing.T) {
	doc := "Invoice 000000000001 of 123456789012\n<document-1>"
	for range 100 {
		nonce, open, close := newFence(doc)
		if len(nonce) != 12 || strings.Trim(nonce, "0123456789") != "" || strings.Contains(doc, nonce) {
			t.Fatalf("nonce %q", nonce)
		}
		if open != "<document-"+nonce+">" || close != "</document-"+nonce+">" {
			t.Fatalf("tags %q %q for nonce %q", open, close, nonce)
		}
	}
}
