package providers

import (
	"strings"

	"github.com/extractq/extractq/llm"
)

// price is a list price in US dollars per million tokens.
type price struct{ input, output float64 }

// Notional price of simulator models (USD per million tokens). It is made
// up, not a price anyone charges: it only lets cost reports and budgets be
// exercised without a real model.
const (
	SimInputPrice  = 0.10
	SimOutputPrice = 0.40
)

// priceTable holds public list prices (USD per million tokens, standard
// tier, no caching or batch discounts) of common models as published by
// their providers in late 2025. Prices change: treat estimates as
// estimates. Keys are matched like capabilities: the longest prefix wins and
// dated variants ("gpt-4o-mini-2024-07-18") match their base name.
var priceTable = map[string]price{
	"gpt-4o":        {2.50, 10.00},
	"gpt-4o-mini":   {0.15, 0.60},
	"gpt-4.1":       {2.00, 8.00},
	"gpt-4.1-mini":  {0.40, 1.60},
	"gpt-4.1-nano":  {0.10, 0.40},
	"gpt-5":         {1.25, 10.00},
	"gpt-5-mini":    {0.25, 2.00},
	"gpt-5-nano":    {0.05, 0.40},
	"gpt-3.5-turbo": {0.50, 1.50},
	"o3":            {2.00, 8.00},
	"o3-mini":       {1.10, 4.40},
	"o4-mini":       {1.10, 4.40},

	"claude-haiku-4-5":  {1.00, 5.00},
	"claude-sonnet-4-5": {3.00, 15.00},
	"claude-sonnet-4":   {3.00, 15.00},
	"claude-opus-4-5":   {5.00, 25.00},
	"claude-opus-4-1":   {15.00, 75.00},
	"claude-3-5-haiku":  {0.80, 4.00},
	"claude-3-haiku":    {0.25, 1.25},

	"gemini-2.5-pro":        {1.25, 10.00},
	"gemini-2.5-flash":      {0.30, 2.50},
	"gemini-2.5-flash-lite": {0.10, 0.40},
	"gemini-2.0-flash":      {0.10, 0.40},

	"llama-3.1-8b-instant":    {0.05, 0.08},
	"llama-3.3-70b-versatile": {0.59, 0.79},

	"sim": {SimInputPrice, SimOutputPrice},
}

// EstimateCost estimates the list price of one call. model is a model name
// ("gpt-4o-mini"), a router name ("openai/gpt-4o-mini") or a provider
// string ("openai:gpt-4o-mini"). Pass Provider.Name() rather than Model():
// every "sim:…" name costs the notional Sim*Price, even "sim:clean/gpt-4o"
// whose model name imitates a real one. known is false when the model is
// not in the table.
func EstimateCost(model string, u llm.Usage) (usd float64, known bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if fam, rest, ok := strings.Cut(m, ":"); ok {
		if fam == "sim" {
			m = "sim"
		} else if _, isFamily := families[fam]; isFamily {
			m = rest
		}
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	var p price
	bestLen := -1
	for k, v := range priceTable {
		if len(k) > bestLen && matchesPrefix(m, k) {
			p, bestLen = v, len(k)
		}
	}
	if bestLen < 0 {
		return 0, false
	}
	return (float64(u.PromptTokens)*p.input + float64(u.CompletionTokens)*p.output) / 1e6, true
}
