package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/docfake"
	"github.com/extractq/extractq/llm"
)

// TestExtractDocuments runs extract over documents read by format readers
// (the stand-ins of package docfake): pages reach the output's sources, an
// e-mail's attachment is a document of its own, an encrypted one needs
// --password, and a scan goes to a model that reads images or is rejected
// naming the remedies.
func TestExtractDocuments(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"schema.json":      extractSchema,
		"docs/invoice.pdf": docfake.PDF + "ACME cover page\f" + "Invoice total 12.5",
		"docs/locked.pdf":  docfake.PDF + "PASSWORD s3cret\nBETA invoice, total 12.5",
		"docs/scan.pdf":    docfake.PDF + "GAMMA cover letter\f[scan]",
		"docs/message.eml": docfake.Mail + "Hello, invoice attached.\n--- inv.pdf\n" + docfake.PDF + "DELTA invoice, total 12.5",
		"docs/notes/a.txt": "OMEGA plain text, total 12.5",
	})
	schema, docs := filepath.Join(dir, "schema.json"), filepath.Join(dir, "docs")
	tests := []struct {
		name    string
		images  bool
		args    []string
		code    int
		outcome map[string]string         // by id (base name), the outcome or the error's words
		pages   map[string]map[string]int // by id: the page of each value
	}{
		{
			name: "a model that reads no images", code: 1,
			outcome: map[string]string{
				"invoice.pdf": "ok", "message.eml": "ok", "message.eml#inv.pdf": "ok", "a.txt": "ok",
				"locked.pdf": "encrypted: the document needs a password: give its password with --password",
				"scan.pdf":   "no text layer on page 2: install tesseract (read by OCR), or use a model that reads images",
			},
			pages: map[string]map[string]int{"invoice.pdf": {"/vendor": 1, "/total": 2}, "message.eml#inv.pdf": {"/vendor": 1, "/total": 1}},
		},
		{
			name: "a model that reads images, and the password", images: true, args: []string{"--password", "s3cret", "--attachments", "skip"}, code: 0,
			outcome: map[string]string{"invoice.pdf": "ok", "locked.pdf": "ok", "scan.pdf": "ok", "message.eml": "ok", "a.txt": "ok"},
			pages:   map[string]map[string]int{"invoice.pdf": {"/total": 2}, "locked.pdf": {"/total": 1}, "scan.pdf": {"/vendor": 1}},
		},
		{
			name: "input text refuses the scan even for a model that reads images", images: true, args: []string{"--input", "text", "--password", "s3cret"}, code: 1,
			outcome: map[string]string{"scan.pdf": "no text layer on page 2", "invoice.pdf": "ok", "locked.pdf": "ok", "message.eml": "ok", "message.eml#inv.pdf": "ok", "a.txt": "ok"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := extractqtest.New(nil, extractqtest.WithResponder(model), extractqtest.WithMedia(tc.images, false))
			r := runExtractCmd(t, p, nil, "", append([]string{"--schema", schema, "--provider", "fake:m", docs}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			got := map[string]map[string]any{}
			for _, l := range r.lines {
				got[strings.TrimPrefix(l["id"].(string), filepath.ToSlash(docs)+"/")] = l
			}
			if len(got) != len(tc.outcome) {
				t.Errorf("%d lines, want %d", len(got), len(tc.outcome))
			}
			for id, want := range tc.outcome {
				base := filepath.Base(id)
				var l map[string]any
				for gid, gl := range got {
					if filepath.Base(gid) == base {
						l = gl
					}
				}
				switch {
				case l == nil:
					t.Errorf("%s: no line", id)
				case want == "ok" && l["outcome"] != "ok":
					t.Errorf("%s: %v %v, want ok", id, l["outcome"], l["error"])
				case want != "ok" && (l["outcome"] != outcomeBadInput || !strings.Contains(l["error"].(string), want)):
					t.Errorf("%s: %v %q, want bad_input saying %q", id, l["outcome"], l["error"], want)
				}
				for ptr, page := range tc.pages[base] {
					srcs, _ := l["sources"].(map[string]any)
					if src, _ := srcs[ptr].(map[string]any); src == nil || src["page"] != float64(page) {
						t.Errorf("%s: %s source in %v, want page %d", id, ptr, srcs, page)
					}
				}
				if base == "a.txt" && l != nil && l["sources"] != nil {
					t.Errorf("a.txt: sources %v on a document without pages, want none (the output as before)", l["sources"])
				}
			}
			for _, req := range p.Requests() {
				if parts := req.Messages[1].Parts; len(parts) > 0 && (!tc.images || parts[0].Kind != llm.PartImage || string(parts[0].Data) != string(docfake.ScanPicture)) {
					t.Errorf("parts %+v sent, want the scan's picture only to a model that reads images", parts)
				}
			}
		})
	}
}
