package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
)

// TestExampleDocuments extracts the bundled example documents (PDFs, one
// of them scanned, an HTML page, an e-mail with an attached PDF invoice)
// through the simulator with the real readers, as text and natively: every
// document ends with a valid value, the attachment is a document of its
// own, and a value found on the second page of a PDF says so.
func TestExampleDocuments(t *testing.T) {
	t.Parallel()
	ocr, err := document.NewTesseract()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tesseract is required under CI (.ci/run installs tesseract-ocr): %v", err)
		}
		t.Skipf("the scanned example needs tesseract: %v", err)
	}
	root := filepath.Join("..", "..", "examples")
	docs, schema := filepath.Join(root, "documents"), filepath.Join(root, "invoice.schema.json")
	want := []string{"invoice-05.html", "invoice-07.pdf", "invoice-mail.eml", "invoice-mail.eml#INV76642.pdf", "invoice-scan.pdf", "invoice-two-pages.pdf"}
	tests := []struct {
		name   string
		images bool // the simulator reads pictures (by OCR here, as a stand-in for a vision model)
		args   []string
	}{
		{name: "text, the scan read by OCR", args: []string{"--input", "text"}},
		{name: "native: PDFs whole, pictures to the model", images: true, args: []string{"--input", "native"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []sim.Option
			if tc.images {
				opts = append(opts, sim.WithImageReader(func(ctx context.Context, mediaType string, data []byte) (string, error) {
					return ocr.Recognize(ctx, &document.Image{MediaType: mediaType, Data: data})
				}))
			}
			p, err := simprovider.New("sim:clean", sim.New(sim.Profile{Name: "clean"}, opts...))
			if err != nil {
				t.Fatal(err)
			}
			if p.Capabilities().Images != tc.images || !p.Capabilities().PDF {
				t.Fatalf("sim capabilities %+v: want images %v and PDFs", p.Capabilities(), tc.images)
			}
			r := runExtractCmd(t, p, nil, "", append([]string{"--schema", schema, "--provider", "sim:clean", docs}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d, want 0\n%s", r.code, r.stderr)
			}
			var got []string
			for _, l := range r.lines {
				id := strings.TrimPrefix(l["id"].(string), filepath.ToSlash(docs)+"/")
				got = append(got, id)
				if l["outcome"] != "ok" {
					t.Errorf("%s: %v %v", id, l["outcome"], l["error"])
				}
				// A picture has no text to find values in: only documents
				// with a text layer have sources.
				if strings.HasSuffix(id, ".pdf") && (id != "invoice-scan.pdf" || !tc.images) && l["sources"] == nil {
					t.Errorf("%s: no sources, want each value's page", id)
				}
				if id == "invoice-two-pages.pdf" && !onPage(l["sources"], 2) {
					t.Errorf("%s: no value found on page 2 (the invoice after the cover letter): %v", id, l["sources"])
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("documents %v, want %v", got, want)
			}
		})
	}
}

// onPage reports whether any of a line's sources lies on page n.
func onPage(sources any, n int) bool {
	m, _ := sources.(map[string]any)
	for _, src := range m {
		if s, _ := src.(map[string]any); s != nil && s["page"] == float64(n) {
			return true
		}
	}
	return false
}
