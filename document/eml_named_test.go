package document

import (
	"strings"
	"testing"
)

// A MIME entity saved on its own as .eml (mailparser's test/mixed.eml: a
// multipart/mixed whose only header is its Content-Type) is a message,
// its boundary lines and part headers no text; without the name, or with
// a header block no e-mail has, it stays text.
func TestEMLNamedEntity(t *testing.T) {
	t.Parallel()
	entity := "Content-Type: multipart/mixed;\r\n\tboundary=\"--=b7\"\r\n\r\n" +
		"----=b7\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: 7bit\r\n\r\nInvoice 46 is attached.\r\n" +
		"----=b7\r\nContent-Type: text/csv; name=\"lines.csv\"\r\nContent-Disposition: attachment; filename=\"lines.csv\"\r\n\r\nitem,amount\r\npaper,12\r\n" +
		"----=b7--\r\n"
	tests := []struct {
		name, in, format string
		want, not        string
	}{
		{"part.eml", entity, "eml", "Invoice 46 is attached.", "----=b7"},
		{"part.EML", entity, "eml", "Invoice 46 is attached.", "Content-Transfer-Encoding"},
		{"part.txt", entity, "text", "----=b7", ""},
		{"stdin", entity, "text", "----=b7", ""},
		{"one-part.eml", "Content-Type: text/plain; charset=iso-8859-1\n\nFacture 47, pay\xe9e.\n", "eml", "Facture 47, payée.", "Content-Type"},
		// One field, but no blank line ending a header block: a note.
		{"note.eml", "Subject: the minutes\nwere sent on Monday.\n", "text", "Subject: the minutes", ""},
		// Fields no e-mail has.
		{"todo.eml", "Note: call back\nDue: Friday\n\nabout invoice 48\n", "text", "Note: call back", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := ReadBytes(t.Context(), []byte(tc.in), Options{Name: tc.name})
			if err != nil {
				t.Fatal(err)
			}
			if d.Reader.Name != tc.format {
				t.Errorf("read as %s, want %s", d.Reader.Name, tc.format)
			}
			if !strings.Contains(d.Text, tc.want) {
				t.Errorf("text %q lacks %q", d.Text, tc.want)
			}
			if tc.not != "" && strings.Contains(d.Text, tc.not) {
				t.Errorf("text %q holds %q", d.Text, tc.not)
			}
			if tc.name == "part.eml" && (len(d.Attachments) != 1 || !strings.Contains(d.Attachments[0].Text, "paper")) {
				t.Errorf("attachments %d, want lines.csv read", len(d.Attachments))
			}
		})
	}
}
