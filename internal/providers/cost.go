package providers

import (
	"strings"
	"sync"

	"github.com/extractq/extractq/llm"
)

// price is a list price in US dollars per million tokens: input, output,
// input read from the prompt cache, and input written to it.
type price struct{ input, output, cachedInput, cacheWrite float64 }

// Notional price of simulator models (USD per million tokens). It is made
// up, not a price anyone charges: it only lets cost reports and budgets be
// exercised without a real model. Cached reads cost half the input price
// (OpenAI's discount on its gpt-4o family); cache writes, which only the
// simulator's Anthropic API reports, cost 1.25 times it, as Anthropic's do.
const (
	SimInputPrice       = 0.10
	SimOutputPrice      = 0.40
	SimCachedInputPrice = 0.05
	SimCacheWritePrice  = 0.125
)

// openai is an OpenAI price: cached input at its own list price, cache
// writes free (automatic caching).
func openai(in, out, cached float64) price { return price{in, out, cached, in} }

// anthropic is an Anthropic price: cache reads at a tenth of the input
// price, cache writes (5-minute) at 1.25 times it.
func anthropic(in, out float64) price { return price{in, out, in / 10, in * 1.25} }

// priceTable holds public list prices (USD per million tokens, standard
// tier, no batch discounts) of common models as published by their
// providers in late 2025, with their prompt-cache prices. Prices change:
// treat estimates as estimates. Keys are matched like capabilities: the
// longest prefix wins and dated variants ("gpt-4o-mini-2024-07-18") match
// their base name.
var priceTable = map[string]price{
	"gpt-4o":        openai(2.50, 10.00, 1.25),
	"gpt-4o-mini":   openai(0.15, 0.60, 0.075),
	"gpt-4.1":       openai(2.00, 8.00, 0.50),
	"gpt-4.1-mini":  openai(0.40, 1.60, 0.10),
	"gpt-4.1-nano":  openai(0.10, 0.40, 0.025),
	"gpt-5":         openai(1.25, 10.00, 0.125),
	"gpt-5-mini":    openai(0.25, 2.00, 0.025),
	"gpt-5-nano":    openai(0.05, 0.40, 0.005),
	"gpt-3.5-turbo": openai(0.50, 1.50, 0.50), // no caching discount
	"o3":            openai(2.00, 8.00, 0.50),
	"o3-mini":       openai(1.10, 4.40, 0.55),
	"o4-mini":       openai(1.10, 4.40, 0.275),

	"claude-haiku-4-5":  anthropic(1.00, 5.00),
	"claude-sonnet-4-5": anthropic(3.00, 15.00),
	"claude-sonnet-4":   anthropic(3.00, 15.00),
	"claude-opus-4-5":   anthropic(5.00, 25.00),
	"claude-opus-4-1":   anthropic(15.00, 75.00),
	"claude-3-5-haiku":  anthropic(0.80, 4.00),
	"claude-3-haiku":    anthropic(0.25, 1.25),

	// Gemini's implicit caching: reads at the context-caching price, no
	// charge for writing.
	"gemini-2.5-pro":        openai(1.25, 10.00, 0.125),
	"gemini-2.5-flash":      openai(0.30, 2.50, 0.03),
	"gemini-2.5-flash-lite": openai(0.10, 0.40, 0.01),
	"gemini-2.0-flash":      openai(0.10, 0.40, 0.025),

	"llama-3.1-8b-instant":    openai(0.05, 0.08, 0.05),
	"llama-3.3-70b-versatile": openai(0.59, 0.79, 0.59),

	"sim": {SimInputPrice, SimOutputPrice, SimCachedInputPrice, SimCacheWritePrice},
}

// EstimateCost estimates the list price of one call, pricing the prompt
// tokens the provider's cache served (Usage.CachedPromptTokens) or stored
// (Usage.CacheCreationTokens) at the model's cache prices. model is a model name
// ("gpt-4o-mini"), a router name ("openai/gpt-4o-mini") or a provider
// string ("openai:gpt-4o-mini"). Pass Provider.Name() rather than Model():
// every "sim:…" name costs the notional Sim*Price, even "sim:clean/gpt-4o"
// whose model name imitates a real one. known is false when the model is
// not in the table.
func EstimateCost(model string, u llm.Usage) (usd float64, known bool) {
	p, ok := priceOf(model)
	if !ok {
		return 0, false
	}
	// The cache fields are parts of PromptTokens; a provider never reports
	// more of them than the prompt, but a hand-made Usage might.
	cached := min(max(u.CachedPromptTokens, 0), u.PromptTokens)
	written := min(max(u.CacheCreationTokens, 0), u.PromptTokens-cached)
	plain := u.PromptTokens - cached - written
	return (float64(plain)*p.input + float64(cached)*p.cachedInput + float64(written)*p.cacheWrite +
		float64(u.CompletionTokens)*p.output) / 1e6, true
}

// prices remembers priceOf's answers by the name asked about: the fleet
// prices every finished job, and a scan of the whole table per job was
// most of its metrics' CPU. The table never changes.
var prices struct {
	sync.RWMutex
	m map[string]priceHit
}

type priceHit struct {
	p  price
	ok bool
}

// priceOf finds model's price: the longest table key it starts with,
// after the family prefix and a router's path are taken off.
func priceOf(model string) (price, bool) {
	prices.RLock()
	hit, cached := prices.m[model]
	prices.RUnlock()
	if cached {
		return hit.p, hit.ok
	}
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
	hit = priceHit{p, bestLen >= 0}

	prices.Lock()
	if prices.m == nil || len(prices.m) >= 1024 { // names come from the fleet's few providers
		prices.m = map[string]priceHit{}
	}
	prices.m[model] = hit
	prices.Unlock()
	return hit.p, hit.ok
}
