package sim

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
)

// TestLoadAnswerKeyFiles labels a PDF, a text file with a byte order mark
// and a picture, and checks that each is known as the fleet sends it: the
// PDF and the text by the text the document readers give, the PDF and the
// picture by their bytes (sent natively), and nothing by an empty text.
func TestLoadAnswerKeyFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pdf, err := os.ReadFile("../../examples/documents/invoice-07.pdf")
	if err != nil {
		t.Fatal(err)
	}
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"a.pdf": pdf, "a.expected.json": []byte(`{"n": "pdf"}`),
		"b.txt": []byte("\xef\xbb\xbfInvoice 7 from Acme\n"), "b.expected.json": []byte(`{"n": "text"}`),
		"c.png": pic.Bytes(), "c.expected.json": []byte(`{"n": "picture"}`),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k, err := LoadAnswerKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	pdfDoc, err := document.ReadBytes(t.Context(), pdf, document.Options{})
	if err != nil {
		t.Fatal(err)
	}
	standIn := func(b []byte) string {
		s, ok := k.mediaStandIn(b)
		if !ok {
			t.Fatalf("the key does not know %d bytes it was given", len(b))
		}
		return "\n" + s + "\n"
	}
	tests := []struct {
		name, text string
		want       string // "" for unknown
	}{
		{"PDF by its text", "\n" + pdfDoc.Text + "\n", "pdf"},
		{"PDF by its bytes", standIn(pdf), "pdf"},
		{"text without its byte order mark", "Invoice 7 from Acme", "text"},
		{"picture by its bytes", standIn(pic.Bytes()), "picture"},
		{"picture's stand-in after an unknown one", "[sim: labelled file 12ab] and " + standIn(pic.Bytes()), "picture"},
		{"an empty document", "  ", ""},
		{"an unknown stand-in", "[sim: labelled file 12ab]", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, ok := k.lookup(tc.text)
			if tc.want == "" {
				if ok {
					t.Fatalf("lookup = %v, want unknown", v)
				}
				return
			}
			got, _ := json.Marshal(v)
			if !ok || !strings.Contains(string(got), `"`+tc.want+`"`) {
				t.Fatalf("lookup = %s, %v; want the label %q", got, ok, tc.want)
			}
		})
	}
	if _, ok := k.mediaStandIn([]byte("not labelled")); ok {
		t.Error("unlabelled bytes are known")
	}
}
