package providers

import (
	"encoding/base64"

	"github.com/extractq/extractq/llm"
)

// mediaRule says whether the models of one family whose name starts with
// prefix read images and PDFs ("" = the family's default; the longest
// matching prefix wins, as in capabilityTable).
type mediaRule struct {
	prefix      string
	images, pdf bool
}

// mediaTable follows the vendors' vision and PDF-input guides. A family or
// model not listed reads neither: a scan then goes to OCR rather than to a
// model that would answer without seeing it.
var mediaTable = map[string][]mediaRule{
	"openai": {
		{"", true, true}, // gpt-4o, gpt-4.1, gpt-5, o1, o3, o4-mini and later
		{"gpt-4", false, false},
		{"gpt-4-turbo", true, false},
		{"gpt-3.5-turbo", false, false},
		{"o1-mini", false, false},
		{"o1-preview", false, false},
		{"o3-mini", false, false},
	},
	"anthropic": {
		{"", true, true}, // every Claude 3.5 model and later reads PDFs
		{"claude-3-haiku", true, false},
		{"claude-3-opus", true, false},
		{"claude-3-sonnet", true, false},
	},
	"gemini": {{"", true, true}},
}

// mediaFor looks up a family and model (lower case) in mediaTable.
func mediaFor(family, model string) (images, pdf bool) {
	best := -1
	for _, r := range mediaTable[family] {
		if len(r.prefix) > best && matchesPrefix(model, r.prefix) {
			images, pdf, best = r.images, r.pdf, len(r.prefix)
		}
	}
	return images, pdf
}

// dataURL is data as an RFC 2397 URL, which OpenAI takes for images and
// files.
func dataURL(mediaType string, data []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// wireMessage is a chat message as the OpenAI and Anthropic APIs take it:
// content is a string, or an array of content parts when the message shows
// pictures or files.
type wireMessage struct {
	Role    llm.Role `json:"role"`
	Content any      `json:"content"`
}

// oaiPart is an OpenAI chat content part: text, image_url or file.
type oaiPart struct {
	Type     string       `json:"type"`
	Text     *string      `json:"text,omitempty"`
	ImageURL *oaiImageURL `json:"image_url,omitempty"`
	File     *oaiFile     `json:"file,omitempty"`
}

type oaiImageURL struct {
	URL string `json:"url"`
}

type oaiFile struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data"`
}

// openAIMessages encodes messages for chat completions: an image as an
// image_url part holding a data URL, a file (a PDF) as a file part with
// its bytes in file_data.
func openAIMessages(msgs []llm.Message) []wireMessage {
	return wireMessages(msgs, func(p llm.Part) any {
		switch p.Kind {
		case llm.PartImage:
			return oaiPart{Type: "image_url", ImageURL: &oaiImageURL{URL: dataURL(p.MediaType, p.Data)}}
		case llm.PartFile:
			name := p.Name
			if name == "" {
				name = "document.pdf"
			}
			return oaiPart{Type: "file", File: &oaiFile{Filename: name, FileData: dataURL(p.MediaType, p.Data)}}
		}
		return oaiPart{Type: "text", Text: &p.Text}
	})
}

// antPart is an Anthropic content block: text, image or document.
type antPart struct {
	Type   string     `json:"type"`
	Text   *string    `json:"text,omitempty"`
	Source *antSource `json:"source,omitempty"`
}

type antSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// anthropicMessages encodes messages for the Messages API: an image as an
// image block, a file (a PDF) as a document block, both with a base64
// source.
func anthropicMessages(msgs []llm.Message) []wireMessage {
	return wireMessages(msgs, func(p llm.Part) any {
		switch p.Kind {
		case llm.PartImage, llm.PartFile:
			typ := "image"
			if p.Kind == llm.PartFile {
				typ = "document"
			}
			return antPart{Type: typ, Source: &antSource{Type: "base64", MediaType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)}}
		}
		return antPart{Type: "text", Text: &p.Text}
	})
}

// wireMessages keeps a message without parts a plain string (what every
// text-only request sent before) and turns one with parts into an array:
// Content as the first text part, then each part as encode makes it.
func wireMessages(msgs []llm.Message, encode func(llm.Part) any) []wireMessage {
	out := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		if len(m.Parts) == 0 {
			out[i] = wireMessage{Role: m.Role, Content: m.Content}
			continue
		}
		var parts []any
		if m.Content != "" {
			parts = append(parts, encode(llm.Part{Kind: llm.PartText, Text: m.Content}))
		}
		for _, p := range m.Parts {
			if p.Kind == llm.PartText && p.Text == "" {
				continue
			}
			parts = append(parts, encode(p))
		}
		out[i] = wireMessage{Role: m.Role, Content: parts}
	}
	return out
}

// geminiParts encodes a message for generateContent: text parts, and
// pictures and files as inline_data.
func geminiParts(m llm.Message) []gemPart {
	if len(m.Parts) == 0 {
		return []gemPart{{Text: m.Content}}
	}
	var parts []gemPart
	if m.Content != "" {
		parts = append(parts, gemPart{Text: m.Content})
	}
	for _, p := range m.Parts {
		switch p.Kind {
		case llm.PartImage, llm.PartFile:
			parts = append(parts, gemPart{InlineData: &gemBlob{MimeType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)}})
		default:
			if p.Text != "" {
				parts = append(parts, gemPart{Text: p.Text})
			}
		}
	}
	return parts
}

// gemBlob is Gemini's inline data: bytes (base64) and their type.
type gemBlob struct {
	MimeType string `json:"mime_type"`
	Data     string `json:"data"`
}

// ollamaMessage is an /api/chat message: text, and pictures as base64 in
// images (Ollama's vision models); Ollama reads no files.
type ollamaMessage struct {
	Role    llm.Role `json:"role"`
	Content string   `json:"content"`
	Images  []string `json:"images,omitempty"`
}

func ollamaMessages(msgs []llm.Message) []ollamaMessage {
	out := make([]ollamaMessage, len(msgs))
	for i, m := range msgs {
		out[i] = ollamaMessage{Role: m.Role, Content: m.Text()}
		for _, p := range m.Parts {
			if p.Kind == llm.PartImage {
				out[i].Images = append(out[i].Images, base64.StdEncoding.EncodeToString(p.Data))
			}
		}
	}
	return out
}
