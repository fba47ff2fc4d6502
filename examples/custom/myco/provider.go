// Package myco is a provider for "MyCo", a made-up model API that speaks
// its own JSON (not OpenAI's): POST {base}/generate with a prompt, answered
// with the text and token counts. It shows what a provider needs: the
// llm.Provider methods, and failures as *llm.Error with a class, so that
// extractq retries what is worth retrying and stops on the rest.
package myco

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/llm"
)

// Family is the provider family this package registers: "myco:MODEL".
const Family = "myco"

// Register makes "myco:MODEL" work in extractq.NewProvider. The base URL
// comes from the settings, else MYCO_BASE_URL; the key from the settings,
// else MYCO_API_KEY.
func Register() error {
	return extractq.RegisterProvider(Family, func(model string, s extractq.ProviderSettings) (llm.Provider, error) {
		base := s.BaseURL
		if base == "" {
			base = s.Getenv("MYCO_BASE_URL")
		}
		key := s.APIKey
		if key == "" {
			key = s.Getenv("MYCO_API_KEY")
		}
		if base == "" {
			return nil, fmt.Errorf("myco:%s: set MYCO_BASE_URL to the MyCo server", model)
		}
		hc := s.HTTPClient
		if hc == nil {
			hc = &http.Client{Timeout: 2 * time.Minute}
		}
		return &Provider{model: model, base: strings.TrimRight(base, "/"), key: key, hc: hc}, nil
	})
}

// Provider calls one MyCo model. It is safe for concurrent use.
type Provider struct {
	model, base, key string
	hc               *http.Client
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return Family + ":" + p.model }

// Model implements llm.Provider.
func (p *Provider) Model() string { return p.model }

// Capabilities implements llm.Provider: MyCo has a JSON mode and no native
// schema, so extractq shows the schema in the prompt and validates locally.
func (p *Provider) Capabilities() llm.Capabilities {
	return llm.Capabilities{Modes: []llm.Mode{llm.ModeText, llm.ModeJSON}}
}

type generateRequest struct {
	Model     string  `json:"model"`
	Prompt    string  `json:"prompt"`
	JSON      bool    `json:"json"`
	MaxTokens int     `json:"max_tokens,omitempty"`
	Temp      float64 `json:"temperature"`
}

type generateResponse struct {
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
	TokensIn  int    `json:"tokens_in"`
	TokensOut int    `json:"tokens_out"`
}

// Chat implements llm.Provider: one HTTP call, no retries (extractq retries).
func (p *Provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	var prompt strings.Builder
	for _, m := range req.Messages {
		fmt.Fprintf(&prompt, "[%s]\n%s\n", m.Role, m.Content)
	}
	body, _ := json.Marshal(generateRequest{Model: p.model, Prompt: prompt.String(), JSON: req.Mode == llm.ModeJSON, MaxTokens: req.MaxTokens, Temp: req.Temperature})
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/generate", bytes.NewReader(body))
	if err != nil {
		return nil, &llm.Error{Provider: p.Name(), Class: llm.ClassInvalidRequest, Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	if p.key != "" {
		hr.Header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := p.hc.Do(hr)
	if err != nil {
		class := llm.ClassNetwork
		if ctx.Err() != nil {
			class = llm.ClassCanceled
		}
		return nil, &llm.Error{Provider: p.Name(), Class: class, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e := &llm.Error{Provider: p.Name(), Status: resp.StatusCode, Message: resp.Status}
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			e.Class = llm.ClassRateLimited
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
				e.RateLimit.RetryAfter = time.Duration(s) * time.Second
			}
		case resp.StatusCode >= 500:
			e.Class = llm.ClassServer
		case resp.StatusCode == http.StatusUnauthorized:
			e.Class = llm.ClassAuth
		default:
			e.Class = llm.ClassInvalidRequest
		}
		return nil, e
	}
	var out generateResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, &llm.Error{Provider: p.Name(), Class: llm.ClassBadResponse, Err: err}
	}
	finish := llm.FinishStop
	if out.Truncated {
		finish = llm.FinishLength
	}
	return &llm.Response{Text: out.Text, FinishReason: finish, Model: p.model,
		Usage: llm.Usage{PromptTokens: out.TokensIn, CompletionTokens: out.TokensOut}}, nil
}
