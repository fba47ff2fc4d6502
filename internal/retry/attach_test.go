package retry

import (
	"errors"
	"strings"
	"testing"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/llm"
)

// TestAttachments checks that pictures reach the model at their place in
// the document, in every call of a re-ask, and that bad ones are refused
// before any call.
func TestAttachments(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, invoiceSchema)
	page := llm.Part{Kind: llm.PartImage, MediaType: "image/png", Data: []byte("PNG")}
	doc := "Page 1: ACME.\nPage 2:\nPage 3: end."
	at := strings.Index(doc, "\nPage 3")
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "a picture between pages", cfg: Config{MaxReasks: 1, Attachments: []Attachment{{At: at, Part: page}}}},
		{name: "out of the document", cfg: Config{Attachments: []Attachment{{At: len(doc) + 1, Part: page}}}, wantErr: "within the document"},
		{name: "not a picture", cfg: Config{Attachments: []Attachment{{At: 0, Part: llm.Part{Kind: llm.PartText, Text: "x"}}}}, wantErr: "want an image or a file"},
		{name: "prefill", cfg: Config{Mode: llm.ModePrefill, Attachments: []Attachment{{At: 0, Part: page}}}, wantErr: "prefill mode sends text only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"vendor": 1}`), extractqtest.Text(`{"vendor":"ACME","total":1,"paid":true,"items":[]}`)})
			_, err := Run(t.Context(), p, doc, s, tc.cfg)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.wantErr) || p.Calls() != 0 {
					t.Fatalf("err = %v after %d calls, want ErrConfig %q before any", err, p.Calls(), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reqs := p.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d calls, want 2 (an invalid answer, then a valid one)", len(reqs))
			}
			for i, r := range reqs {
				task := r.Messages[1]
				if len(task.Parts) != 2 || task.Parts[0].Kind != llm.PartImage || string(task.Parts[0].Data) != "PNG" || task.Parts[1].Kind != llm.PartText {
					t.Fatalf("call %d: task parts %+v, want the picture then the text after it", i+1, task.Parts)
				}
				if !strings.HasSuffix(task.Content, "Page 2:") || !strings.HasPrefix(task.Parts[1].Text, "\nPage 3: end.") {
					t.Errorf("call %d: picture not at its place: before %q, after %q", i+1, tail(task.Content), task.Parts[1].Text[:20])
				}
				if strings.Contains(task.Text(), "\u2063") {
					t.Errorf("call %d: the marker reached the model", i+1)
				}
			}
		})
	}
}

func tail(s string) string { return s[max(0, len(s)-20):] }
