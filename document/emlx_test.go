package document_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestEMLX reads Apple Mail's .emlx (a length line, the message, Mail's
// property list) as the message it holds, attachments included; one cut
// short is read as far as it goes, with a warning; a text that starts
// with a number is still text.
func TestEMLX(t *testing.T) {
	t.Parallel()
	eml, err := os.ReadFile("../examples/documents/invoice-mail.eml")
	if err != nil {
		t.Fatal(err)
	}
	const plist = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n\t<key>flags</key>\n\t<integer>8590195713</integer>\n</dict>\n</plist>\n"
	want, err := document.ReadBytes(t.Context(), eml, document.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in, format, warn string
		named                  bool // --format emlx
	}{
		{"as Mail writes it", fmt.Sprintf("%d        \n%s%s", len(eml), eml, plist), "emlx", "", false},
		// Not recognised by its content (the length says more than there
		// is, as a text starting with a year would), but read when named.
		{"cut short", fmt.Sprintf("%d\n%s", len(eml)+500, eml), "emlx", "read as far as it goes", true},
		{"a text starting with a number", "2026\nFrom: the annual report\nTo: shareholders\n", "text", "", false},
		{"a long text starting with a number", "40\nFrom: the annual report\nTo: shareholders\n" + strings.Repeat("Revenue grew. ", 20), "text", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := document.Options{Name: "12345.emlx"}
			if tc.named {
				opts.Format = "emlx"
			}
			doc, err := document.ReadBytes(t.Context(), []byte(tc.in), opts)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Format != tc.format {
				t.Fatalf("read as %s, want %s", doc.Format, tc.format)
			}
			if tc.format != "emlx" {
				return
			}
			if doc.Text != want.Text || len(doc.Attachments) != len(want.Attachments) {
				t.Errorf("text %q and %d attachments, want the .eml's %q and %d", doc.Text, len(doc.Attachments), want.Text, len(want.Attachments))
			}
			if got := strings.Join(doc.Warnings, "; "); tc.warn == "" && got != "" || !strings.Contains(got, tc.warn) {
				t.Errorf("warnings %q, want %q", got, tc.warn)
			}
		})
	}
}
