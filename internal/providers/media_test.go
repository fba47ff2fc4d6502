package providers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"
)

// scanMessages is a request showing a model a page picture and a PDF
// between two pieces of text.
func scanMessages() []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "You extract data as JSON."},
		{Role: llm.RoleUser, Content: "Page 1 text. Page 2:", Parts: []llm.Part{
			{Kind: llm.PartImage, MediaType: "image/png", Data: []byte("PNGDATA")},
			{Kind: llm.PartText, Text: "The original:"},
			{Kind: llm.PartFile, MediaType: "application/pdf", Data: []byte("%PDF-1.7"), Name: "invoice.pdf"},
		}},
	}
}

// TestMediaParts checks each API family's encoding of pictures and files
// against the request bodies its documentation gives, and that a text-only
// message is still sent as before.
func TestMediaParts(t *testing.T) {
	t.Parallel()
	const (
		png = "UE5HREFUQQ==" // base64 of PNGDATA
		pdf = "JVBERi0xLjc=" // base64 of %PDF-1.7
	)
	tests := []struct {
		name, spec string
		env        func(url string) env
		opts       func(url string) []Option
		reply      string
		// content picks the user message's content out of the body.
		content func(b map[string]any) any
		want    string
	}{
		{
			name: "openai", spec: "openai:gpt-4o-mini",
			env:   func(string) env { return env{"OPENAI_API_KEY": "sk-x"} },
			opts:  func(u string) []Option { return []Option{WithBaseURL(u + "/v1")} },
			reply: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
			content: func(b map[string]any) any {
				return b["messages"].([]any)[1].(map[string]any)["content"]
			},
			want: `[{"text":"Page 1 text. Page 2:","type":"text"},{"image_url":{"url":"data:image/png;base64,` + png + `"},"type":"image_url"},{"text":"The original:","type":"text"},{"file":{"file_data":"data:application/pdf;base64,` + pdf + `","filename":"invoice.pdf"},"type":"file"}]`,
		},
		{
			name: "anthropic", spec: "anthropic:claude-haiku-4-5",
			env:   func(u string) env { return env{"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": u} },
			reply: `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"{}"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":2}}`,
			content: func(b map[string]any) any {
				return b["messages"].([]any)[0].(map[string]any)["content"]
			},
			want: `[{"text":"Page 1 text. Page 2:","type":"text"},{"source":{"data":"` + png + `","media_type":"image/png","type":"base64"},"type":"image"},{"text":"The original:","type":"text"},{"source":{"data":"` + pdf + `","media_type":"application/pdf","type":"base64"},"type":"document"}]`,
		},
		{
			name: "gemini", spec: "gemini:gemini-2.5-flash",
			env: func(u string) env {
				return env{"GEMINI_API_KEY": "AIzaSyTEST-gemini-key-0123456789abcdefg", "GEMINI_BASE_URL": u}
			},
			reply: `{"candidates":[{"content":{"parts":[{"text":"{}"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"totalTokenCount":12}}`,
			content: func(b map[string]any) any {
				return b["contents"].([]any)[0].(map[string]any)["parts"]
			},
			want: `[{"text":"Page 1 text. Page 2:"},{"inline_data":{"data":"` + png + `","mime_type":"image/png"}},{"text":"The original:"},{"inline_data":{"data":"` + pdf + `","mime_type":"application/pdf"}}]`,
		},
		{
			name: "ollama reads pictures only", spec: "ollama:llava",
			env:   func(u string) env { return env{"OLLAMA_HOST": u} },
			reply: `{"model":"llava","message":{"role":"assistant","content":"{}"},"done":true,"done_reason":"stop","prompt_eval_count":10,"eval_count":2}`,
			content: func(b map[string]any) any {
				m := b["messages"].([]any)[1].(map[string]any)
				return []any{m["content"], m["images"]}
			},
			want: `["Page 1 text. Page 2:The original:",["` + png + `"]]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCanned(t, 200, nil, tc.reply)
			var opts []Option
			if tc.opts != nil {
				opts = tc.opts(srv.URL)
			}
			p := mustNew(t, tc.spec, tc.env(srv.URL), opts...)
			for _, msgs := range [][]llm.Message{conversation(), scanMessages()} {
				if _, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Mode: llm.ModeText, MaxTokens: 100}); err != nil {
					t.Fatal(err)
				}
				got, _ := json.Marshal(tc.content(srv.lastJSON(t)))
				if len(msgs[1].Parts) == 0 {
					stringContent := tc.name == "openai" || tc.name == "anthropic"
					if strings.Contains(string(got), "base64") || stringContent && got[0] != '"' {
						t.Errorf("a text-only message went as %s, want a plain string as before", got)
					}
					continue
				}
				if string(got) != tc.want {
					t.Errorf("content\n got %s\nwant %s", got, tc.want)
				}
			}
		})
	}
}

func TestMediaCapabilities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		family, model string
		images, pdf   bool
	}{
		{"openai", "gpt-4o-mini", true, true},
		{"openai", "gpt-3.5-turbo-0125", false, false},
		{"openai", "gpt-4-turbo-2024-04-09", true, false},
		{"anthropic", "claude-sonnet-4-5", true, true},
		{"anthropic", "claude-3-haiku-20240307", true, false},
		{"gemini", "gemini-2.5-flash", true, true},
		{"groq", "llama-3.3-70b-versatile", false, false},
	}
	for _, tc := range tests {
		c := capabilitiesFor(tc.family, tc.model)
		if c.Images != tc.images || c.PDF != tc.pdf {
			t.Errorf("%s:%s reads images %v, PDFs %v; want %v, %v", tc.family, tc.model, c.Images, c.PDF, tc.images, tc.pdf)
		}
	}
}
