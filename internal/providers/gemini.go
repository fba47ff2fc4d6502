package providers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/schema"
)

// geminiProvider speaks Google's Gemini API
// (POST {base}/v1beta/models/{model}:generateContent). The key travels in the
// x-goog-api-key header, never in the URL, so it cannot leak through a
// logged URL or a *url.Error.
type geminiProvider struct {
	base
	// jsonSchema: ModeStrict sends the JSON Schema itself in
	// responseJsonSchema (Gemini 2.5 and later); else the OpenAPI subset in
	// responseSchema, which has no maps, tuples or recursion.
	jsonSchema bool
}

type gemRequest struct {
	Contents          []gemContent `json:"contents"`
	SystemInstruction *gemContent  `json:"systemInstruction,omitempty"`
	GenerationConfig  gemGenConfig `json:"generationConfig"`
}

type gemContent struct {
	Role  string    `json:"role,omitempty"`
	Parts []gemPart `json:"parts"`
}

type gemPart struct {
	Text       string   `json:"text,omitempty"`
	InlineData *gemBlob `json:"inline_data,omitempty"`
}

type gemGenConfig struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	MaxOutputTokens    int             `json:"maxOutputTokens,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
}

type gemResponse struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text    string `json:"text"`
				Thought bool   `json:"thought"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
		// CachedContentTokenCount is the part of promptTokenCount served
		// from a cache (implicit caching on Gemini 2.5 and later).
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
}

// Chat performs one generateContent call. A 400 that names a part of the
// request the model refuses is learned from and the call sent again
// without it (sendLearning).
func (p *geminiProvider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	return p.sendLearning(ctx, func(adj adjustments) (*llm.Response, error) {
		return p.chat(ctx, req, adj)
	})
}

// chat is one generateContent call with the adjustments adj applied.
func (p *geminiProvider) chat(ctx context.Context, req llm.Request, adj adjustments) (*llm.Response, error) {
	mode, err := p.prepare(req)
	if err != nil {
		return nil, err
	}
	msgs := req.Messages
	if adj.has(llm.AdjustNoSystemRole) {
		msgs = systemAsUser(msgs) // Gemma models refuse systemInstruction
	}
	system, turns := splitSystem(msgs)
	body := &gemRequest{GenerationConfig: gemGenConfig{MaxOutputTokens: req.MaxTokens, StopSequences: req.Stop}}
	if !adj.has(llm.AdjustNoTemperature) {
		t := req.Temperature
		body.GenerationConfig.Temperature = &t
	}
	if system != "" {
		body.SystemInstruction = &gemContent{Parts: []gemPart{{Text: system}}}
	}
	for _, m := range turns {
		role := "user"
		if m.Role == llm.RoleAssistant {
			role = "model"
		}
		body.Contents = append(body.Contents, gemContent{Role: role, Parts: geminiParts(m)})
	}
	if len(body.Contents) == 0 {
		return nil, p.localError("the request has only system messages; generateContent needs a user turn")
	}
	switch mode {
	case llm.ModeJSON:
		body.GenerationConfig.ResponseMimeType = "application/json"
	case llm.ModeStrict:
		body.GenerationConfig.ResponseMimeType = "application/json"
		if p.jsonSchema && !adj.has(llm.AdjustNoNativeSchema) {
			// The schema as it is: maps, tuples (prefixItems) and
			// recursive $defs included. $schema names the draft and
			// constrains nothing.
			body.GenerationConfig.ResponseJSONSchema = dropKeywords(req.Schema.JSON(), append(adj.droppedKeywords(), "$schema"))
			break
		}
		form, err := req.Schema.ProviderForm(schema.FormGemini)
		if err != nil {
			return nil, p.formError(err, llm.ModeJSON)
		}
		body.GenerationConfig.ResponseSchema = dropKeywords(form, adj.droppedKeywords())
	}
	hdr := http.Header{}
	if p.apiKey != "" {
		hdr.Set("x-goog-api-key", p.apiKey)
	}
	endpoint := p.baseURL + "/v1beta/models/" + url.PathEscape(p.model) + ":generateContent"
	r, err := p.post(ctx, req, endpoint, hdr, body)
	if err != nil {
		return nil, err
	}
	var doc gemResponse
	if err := json.Unmarshal(r.body, &doc); err != nil {
		return nil, p.badResponse(r, "the answer is not a generateContent response", err)
	}
	out := &llm.Response{
		Usage: llm.Usage{
			PromptTokens: doc.UsageMetadata.PromptTokenCount,
			// Thinking tokens are billed as output.
			CompletionTokens:   doc.UsageMetadata.CandidatesTokenCount + doc.UsageMetadata.ThoughtsTokenCount,
			CachedPromptTokens: min(doc.UsageMetadata.CachedContentTokenCount, doc.UsageMetadata.PromptTokenCount),
		},
		RateLimit: r.rateLimit,
		Raw:       r.body,
		Model:     doc.ModelVersion,
	}
	if len(doc.Candidates) == 0 {
		if doc.PromptFeedback != nil && doc.PromptFeedback.BlockReason != "" {
			out.FinishReason = llm.FinishContentFilter
			out.Refusal = "prompt blocked: " + doc.PromptFeedback.BlockReason
			return out, nil
		}
		return nil, p.badResponse(r, "the generateContent response has no candidates", nil)
	}
	c := doc.Candidates[0]
	var text strings.Builder
	for _, part := range c.Content.Parts {
		if !part.Thought {
			text.WriteString(part.Text)
		}
	}
	out.Text = text.String()
	switch c.FinishReason {
	case "STOP", "":
		out.FinishReason = llm.FinishStop
	case "MAX_TOKENS":
		out.FinishReason = llm.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MODEL_ARMOR",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		// A filter stopped the answer: a refusal, not a malformed answer.
		out.FinishReason = llm.FinishContentFilter
		out.Refusal = "the answer was blocked (finishReason " + c.FinishReason + ")"
	default:
		out.FinishReason = llm.FinishOther
	}
	return out, nil
}
