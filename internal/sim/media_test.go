package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/docfake"
)

// TestMediaParts sends the document as a PDF file part or a picture in the
// shape of each API the simulator imitates, and checks that the answer
// comes from what the file holds, or from a picture's label in the answer
// key, or that a picture is refused without either.
func TestMediaParts(t *testing.T) {
	t.Parallel()
	_, raw := invoiceSchema(t)
	pdf := base64.StdEncoding.EncodeToString([]byte(docfake.PDF + testDoc))
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nnot really"))
	head := "Extract the fields below from the document. Answer with JSON only.\n<json-schema>\n" + string(raw) + "\n</json-schema>\n\n<document-0123456789abcdef>\n"
	tail := "\n</document-0123456789abcdef>"
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	key := NewAnswerKey() // the picture's label: the answer's issue date below
	key.AddBytes([]byte("\x89PNG\r\n\x1a\nnot really"), json.RawMessage(`{"issue_date": "2026-03-19"}`))
	openAI := func(media map[string]any) any {
		return map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": []any{text(head), media, text(tail)}}}}
	}
	anthropic := func(media map[string]any) any {
		return map[string]any{"model": "m", "max_tokens": 1000, "messages": []any{map[string]any{"role": "user", "content": []any{text(head), media, text(tail)}}}}
	}
	gemini := func(media map[string]any) any {
		return map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": head}, media, map[string]any{"text": tail}}}}}
	}
	tests := []struct {
		name    string // its first word picks the API
		body    any
		images  ImageReader
		answers *AnswerKey
		wantErr string
	}{
		{name: "openai file", body: openAI(map[string]any{"type": "file", "file": map[string]any{"filename": "a.pdf", "file_data": "data:application/pdf;base64," + pdf}})},
		{name: "anthropic document", body: anthropic(map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": pdf}})},
		{name: "gemini inline_data", body: gemini(map[string]any{"inline_data": map[string]any{"mime_type": "application/pdf", "data": pdf}})},
		{name: "gemini inlineData", body: gemini(map[string]any{"inlineData": map[string]any{"mimeType": "application/pdf", "data": pdf}})},
		{name: "openai image without a reader", body: openAI(map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + png}}), wantErr: "cannot read this image/png picture: label it in the answer key"},
		{name: "anthropic image without a reader", body: anthropic(map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": png}}), wantErr: "give it an image reader"},
		{name: "anthropic image known by the answer key", body: anthropic(map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": png}}), answers: key},
		{name: "openai image known by the answer key, with a reader", body: openAI(map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + png}}), answers: key,
			images: func(context.Context, string, []byte) (string, error) {
				return "", errors.New("a labelled picture went to the reader")
			}},
		{name: "gemini image read by the reader", body: gemini(map[string]any{"inline_data": map[string]any{"mime_type": "image/png", "data": png}}),
			images: func(_ context.Context, mt string, data []byte) (string, error) {
				if mt != "image/png" || !bytes.HasPrefix(data, []byte("\x89PNG")) {
					return "", errors.New("not the picture sent")
				}
				return testDoc, nil
			}},
		{name: "openai image by URL", body: openAI(map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/a.png"}}), wantErr: "reaches no URL"},
		{name: "openai uploaded file", body: openAI(map[string]any{"type": "file", "file": map[string]any{"file_id": "file-1"}}), wantErr: "keeps no uploaded files"},
	}
	paths := map[string]string{"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "gemini": "/v1beta/models/m:generateContent"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []Option
			if tc.images != nil {
				opts = append(opts, WithImageReader(tc.images))
			}
			if tc.answers != nil {
				opts = append(opts, WithAnswers(tc.answers))
			}
			s := New(builtins["clean"], opts...)
			resp, body := call(t, s, paths[strings.Fields(tc.name)[0]], tc.body)
			if tc.wantErr != "" {
				if resp.StatusCode != 400 || !strings.Contains(string(body), tc.wantErr) {
					t.Fatalf("status %d %s, want 400 saying %q", resp.StatusCode, body, tc.wantErr)
				}
				return
			}
			if resp.StatusCode != 200 || !strings.Contains(string(body), "2026-03-19") {
				t.Fatalf("status %d %s, want an answer from the file's text (issue date 2026-03-19)", resp.StatusCode, body)
			}
		})
	}
}

// TestMediaTokens checks that a PDF page costs its text plus a page
// picture, and a picture its pixels, not the text read in it.
func TestMediaTokens(t *testing.T) {
	t.Parallel()
	_, raw := invoiceSchema(t)
	head := "<json-schema>\n" + string(raw) + "\n</json-schema>\n<document-0123456789abcdef>\n"
	usage := func(s *Server, content any) float64 {
		_, body := call(t, s, "/v1/chat/completions", map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": content}}})
		return obj(t, body)["usage"].(map[string]any)["prompt_tokens"].(float64)
	}
	s := New(builtins["clean"], WithImageReader(func(context.Context, string, []byte) (string, error) { return testDoc, nil }))
	asText := usage(s, head+testDoc)
	asPDF := usage(s, []any{map[string]any{"type": "text", "text": head}, map[string]any{"type": "file", "file": map[string]any{"file_data": "data:application/pdf;base64," + base64.StdEncoding.EncodeToString([]byte(docfake.PDF+testDoc))}}})
	asImage := usage(s, []any{map[string]any{"type": "text", "text": head}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}}})
	if asPDF != asText+pageTokens {
		t.Errorf("PDF prompt %v tokens, want the text's %v plus a page picture's %d", asPDF, asText, pageTokens)
	}
	if want := asText - float64(tokens(len(testDoc))) + pageTokens; asImage < want-1 || asImage > want+1 {
		t.Errorf("picture prompt %v tokens, want about %v (the prompt without the text, plus a picture)", asImage, want)
	}
}
