package sim

import "sync"

// Prompt caching as the APIs report it, so a client's token accounting can
// be tested. A request is read as one text (its schema or tool first, then
// the messages in order, as the APIs lay a prompt out) and the cache keeps
// hashes of prefixes of that text, four characters a token like usage.
//
//   - OpenAI and Gemini cache automatically: prompts of at least
//     cacheMinTokens tokens are cached in steps of cacheStep tokens, and a
//     request is served the longest cached prefix (usage
//     prompt_tokens_details.cached_tokens, cachedContentTokenCount).
//   - Anthropic caches only up to a cache_control breakpoint, and only a
//     prefix of at least cacheMinTokens: a hit is reported as
//     cache_read_input_tokens, a miss as cache_creation_input_tokens, and
//     input_tokens counts what follows the breakpoint.
//   - Ollama reports no caching.
const (
	cacheMinTokens = 1024
	cacheStep      = 128
	// cacheEntries bounds the memory of the cache; when full it forgets
	// everything, as an expired cache would.
	cacheEntries = 1 << 16
)

// promptCache holds hashes of cached prefixes. Safe for concurrent use.
type promptCache struct {
	mu   sync.Mutex
	seen map[uint64]struct{}
}

func newPromptCache() *promptCache { return &promptCache{seen: map[uint64]struct{}{}} }

// cacheUse is what a request got from the cache, in tokens.
type cacheUse struct {
	read, created int
}

// prefixText is the request laid out as the cache sees it, with the end
// offset of each breakpoint (Anthropic's cache_control), in characters.
func prefixText(req *chatRequest) (text []byte, marks []int) {
	text = make([]byte, 0, prefixLen(req))
	text = append(text, req.model...)
	text = append(text, 0)
	text = append(text, req.schema...)
	text = append(text, 0)
	for _, b := range req.breakpoints {
		if b < 0 {
			marks = append(marks, len(text))
		}
	}
	for i, m := range req.messages {
		text = append(text, byte('0'+m.role))
		text = append(text, m.text...)
		text = append(text, 0)
		for _, b := range req.breakpoints {
			if b == i {
				marks = append(marks, len(text))
			}
		}
	}
	return text, marks
}

// prefixLen is the length of prefixText(req) (the capacity it takes).
func prefixLen(req *chatRequest) int {
	n := len(req.model) + 1 + len(req.schema) + 1
	for _, m := range req.messages {
		n += len(m.text) + 2
	}
	return n
}

// use looks the request up and stores its prefixes. promptTok caps what is
// reported, so cached tokens never exceed the prompt's.
func (c *promptCache) use(a api, req *chatRequest, promptTok int) cacheUse {
	if a == apiOllama {
		return cacheUse{}
	}
	if a != apiAnthropic && prefixLen(req) < cacheMinTokens*4 {
		return cacheUse{} // too short to be cached: no prefix to lay out
	}
	text, marks := prefixText(req)
	var cuts []int // candidate prefix ends, in characters, ascending
	if a == apiAnthropic {
		for _, m := range marks {
			if tokens(m) >= cacheMinTokens {
				cuts = append(cuts, m)
			}
		}
	} else {
		for t := cacheMinTokens; t*4 <= len(text); t += cacheStep {
			cuts = append(cuts, t*4)
		}
	}
	if len(cuts) == 0 {
		return cacheUse{}
	}
	hashes := make([]uint64, len(cuts))
	h, j := uint64(14695981039346656037), 0
	for i := 0; i < len(text) && j < len(cuts); i++ {
		h ^= uint64(text[i])
		h *= 1099511628211
		for j < len(cuts) && cuts[j] == i+1 {
			hashes[j] = h
			j++
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := -1
	for i := len(hashes) - 1; i >= 0; i-- {
		if _, ok := c.seen[hashes[i]]; ok {
			hit = i
			break
		}
	}
	if len(c.seen)+len(hashes) > cacheEntries {
		clear(c.seen)
	}
	for _, x := range hashes {
		c.seen[x] = struct{}{}
	}
	var u cacheUse
	if hit >= 0 {
		u.read = min(tokens(cuts[hit]), promptTok)
	}
	if a == apiAnthropic && hit < len(cuts)-1 {
		u.created = min(tokens(cuts[len(cuts)-1])-u.read, promptTok-u.read)
	}
	return u
}
