package chunk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Config is how a long document is split and merged.
type Config struct {
	// Size is the target tokens per chunk; 0 derives it from the model's
	// context window (auto).
	Size int
	// Overlap is the tokens neighbouring chunks share (default Size/10).
	Overlap int
	// Parallel bounds the chunk calls in flight (default 4).
	Parallel int
	// MergeKeys names, per array pointer ("/items", "/a/*/b"), the item
	// field that identifies an item; the schema's x-merge-key also does.
	MergeKeys map[string]string
	// Validate checks the merged value besides the schema (the caller's
	// validators); nil for none.
	Validate func(ctx context.Context, v json.RawMessage) []llm.Violation
	// Breaks are byte offsets where the document's pages start: a cut
	// falls on one before any other boundary (SplitAt).
	Breaks []int
}

// ExtractFunc extracts from one chunk's text with the relaxed schema: the
// caller's whole validate-and-reask loop. span is nil for the final call
// that resolves conflicts.
type ExtractFunc func(ctx context.Context, text string, s *schema.Schema, span *llm.Span) (*llm.Result, error)

// defaultAutoSize caps auto chunks: models attend less reliably to the
// middle of very long prompts, so even a 1M-token window gets parts of at
// most this size.
const defaultAutoSize = 8000

// Plan decides whether doc needs splitting for a model with caps, given
// cfg and the tokens the prompt adds around the document (overhead). It
// returns the target chunk size in tokens, or 0 when doc goes whole.
func Plan(caps llm.Capabilities, provider, doc string, overhead int, cfg Config) int {
	return plan(caps, int(float64(Tokens(family(provider), doc))*Margin), overhead, cfg)
}

// Whole reports, without counting tokens, that Plan returns 0 for any
// document of docBytes bytes with any overhead up to maxOverhead: Tokens
// never exceeds a text's length in bytes (FuzzTokensAtMostBytes), and
// Plan sends a document whole for fewer tokens and less overhead whenever
// it does for more. False means only that the tokens must be counted.
// Counting them was 3% of a fleet worker's CPU for documents far below
// any window.
func Whole(caps llm.Capabilities, docBytes, maxOverhead int, cfg Config) bool {
	return plan(caps, int(float64(docBytes)*Margin), maxOverhead, cfg) == 0
}

// plan is Plan for a document of n tokens (Margin applied).
func plan(caps llm.Capabilities, n, overhead int, cfg Config) int {
	if cfg.Size > 0 {
		if n <= cfg.Size {
			return 0
		}
		return cfg.Size
	}
	if caps.ContextWindow <= 0 {
		return 0 // unknown window: send whole, as without chunking
	}
	reserve := caps.MaxOutput
	if reserve <= 0 || reserve > caps.ContextWindow/4 {
		reserve = caps.ContextWindow / 4
	}
	budget := caps.ContextWindow - reserve - overhead
	if n <= budget {
		return 0
	}
	// Half the budget: a re-ask also carries the failed answer and feedback.
	return max(200, min(budget/2, defaultAutoSize))
}

// Run splits doc into chunks of size tokens, extracts each with s relaxed
// (at most cfg.Parallel at once), merges the answers, resolves conflicts
// with one more call, grounds the value and validates it against s. The
// Result's attempts are every chunk's, in chunk order. A failed chunk ends
// the run: the Result carries its outcome and FailedChunk, the error says
// which chunk failed.
func Run(ctx context.Context, provider, doc string, s *schema.Schema, size int, cfg Config, extract ExtractFunc) (*llm.Result, error) {
	relaxed, err := s.Relaxed()
	if err != nil {
		return nil, fmt.Errorf("chunking: %w", err)
	}
	overlap := cfg.Overlap
	if overlap <= 0 {
		overlap = size / 10
	}
	chunks := SplitAt(family(provider), doc, size, overlap, cfg.Breaks)
	res := &llm.Result{Provider: provider}
	for _, c := range chunks {
		res.Chunks = append(res.Chunks, llm.Span{Index: c.Index, Start: c.Start, End: c.End})
	}
	results, failed := runChunks(ctx, chunks, relaxed, cfg.Parallel, extract)
	for i, r := range results {
		if r == nil {
			continue
		}
		res.Usage = res.Usage.Add(r.Usage)
		res.Model, res.Mode = r.Model, r.Mode
		for _, a := range r.Attempts {
			a.Chunk = &res.Chunks[i]
			res.Attempts = append(res.Attempts, a)
		}
	}
	if failed >= 0 {
		r := results[failed]
		sp := res.Chunks[failed]
		res.FailedChunk = &sp
		res.Outcome, res.Cause, res.RetryAfter = r.Outcome, r.Cause, r.RetryAfter
		res.Reason = fmt.Sprintf("chunk %d of %d (characters %d-%d) failed: %s", sp.Index+1, len(chunks), sp.Start, sp.End, r.Reason)
		return res, &llm.ExtractionError{Result: res}
	}
	var root map[string]any
	_ = json.Unmarshal(s.JSON(), &root)
	parts := make([]Part, 0, len(results))
	for i, r := range results {
		v, err := decode(r.Value)
		if err != nil {
			continue // a valid result always decodes
		}
		parts = append(parts, Part{Chunk: i, Value: v})
	}
	m := Merge(root, parts, cfg.MergeKeys)
	var violations []llm.Violation
	if len(m.Conflicts) > 0 {
		violations = resolve(ctx, doc, chunks, &m, root, res, extract)
	}
	g := Ground(doc, m.Value, m.Origin, chunks)
	res.Sources, res.Ungrounded = g.Sources, g.Ungrounded
	markUngrounded(res, g.Ungrounded, m.Origin)
	raw, err := json.Marshal(m.Value)
	if err != nil {
		return nil, fmt.Errorf("chunking: encode the merged value: %w", err)
	}
	value, _ := decode(raw)
	violations = append(violations, s.Validate(value)...)
	if len(violations) == 0 && cfg.Validate != nil {
		violations = cfg.Validate(ctx, raw)
	}
	if len(violations) > 0 {
		res.Outcome = llm.OutcomeExhausted
		res.Reason = fmt.Sprintf("the answers of %d chunks merged into a value that is not valid: %s", len(chunks), describe(violations))
		res.Attempts = append(res.Attempts, llm.Attempt{N: len(res.Attempts) + 1, Provider: provider, Model: res.Model, Value: raw, Violations: violations, Class: llm.ClassSchema, Error: "merged value"})
		return res, &llm.ExtractionError{Result: res}
	}
	res.Value, res.Outcome = raw, llm.OutcomeOK
	return res, nil
}

// runChunks extracts every chunk, at most parallel at once. On the first
// failure the others are canceled; it returns the index of the failed
// chunk (the lowest among real failures), or -1.
func runChunks(ctx context.Context, chunks []Chunk, s *schema.Schema, parallel int, extract ExtractFunc) ([]*llm.Result, int) {
	if parallel <= 0 {
		parallel = 4
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*llm.Result, len(chunks))
	errs := make([]error, len(chunks))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, c := range chunks {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sp := &llm.Span{Index: c.Index, Start: c.Start, End: c.End}
			r, err := extract(ctx, c.Text, s, sp)
			sus := suspect(r, err)
			for n := 0; n < maxAgain && sus && ctx.Err() == nil; n++ {
				r, sus, err = again(r, err, func() (*llm.Result, error) { return extract(ctx, c.Text, s, sp) })
			}
			if r == nil && err != nil {
				r = &llm.Result{Outcome: llm.OutcomeFatal, Reason: err.Error(), Cause: err}
			}
			results[i], errs[i] = r, err
			if err != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The failed chunk is the first that failed on its own account; one
	// canceled because another failed (or never started) is not it.
	failed, canceled := -1, -1
	for i, r := range results {
		switch {
		case r == nil:
			results[i] = &llm.Result{Outcome: llm.OutcomeCanceled, Reason: "not started: the extraction was canceled", Cause: context.Canceled}
			if canceled < 0 {
				canceled = i
			}
		case errs[i] == nil:
		case r.Outcome == llm.OutcomeCanceled:
			if canceled < 0 {
				canceled = i
			}
		case failed < 0:
			failed = i
		}
	}
	if failed < 0 {
		failed = canceled
	}
	return results, failed
}

// maxAgain bounds the fresh extractions of a part after a suspect one.
const maxAgain = 2

// suspect reports whether a part's extraction is asked again afresh
// before it is used: among hundreds of parts of a document that, whole,
// was worth extracting, an occasional refusal is expected and must not
// fail the document; and an answer accepted through a repair that may
// have lost content (a lossy repair, or a lone item wrapped into the list
// the part may hold several of) would silently drop the part's items.
func suspect(r *llm.Result, err error) bool {
	if r == nil {
		return false
	}
	if err != nil {
		return r.Outcome == llm.OutcomeUnextractable
	}
	if r.Outcome != llm.OutcomeOK || len(r.Attempts) == 0 {
		return false
	}
	for _, rp := range r.Attempts[len(r.Attempts)-1].Repairs {
		if rp.Lossy || rp.Kind == jsonx.KindCoerceWrapArray {
			return true
		}
	}
	return false
}

// again makes one more extraction of a part whose first was suspect. The
// second is used when it succeeds without being suspect itself, or when
// the first failed; otherwise the first's answer stands. Either way the
// result carries both runs' attempts (numbered on) and usage; the bool
// says whether the answer used is still suspect.
func again(first *llm.Result, firstErr error, extract func() (*llm.Result, error)) (*llm.Result, bool, error) {
	r, err := extract()
	if r == nil {
		return first, true, firstErr
	}
	use, useErr, sus := r, err, suspect(r, err)
	if firstErr == nil && (err != nil || sus) {
		kept := *first
		use, useErr, sus = &kept, nil, true
	}
	attempts := slices.Clone(first.Attempts)
	for _, a := range r.Attempts {
		a.N += len(first.Attempts)
		attempts = append(attempts, a)
	}
	use.Attempts = attempts
	use.Usage = first.Usage.Add(r.Usage)
	return use, sus, useErr
}

// resolve asks once, showing each conflict's candidates with their source
// passages, which candidate the document supports. A conflict the answer
// does not settle with one of the candidates becomes a violation naming
// both sources: never picked silently.
//
// The prompt names each field readably (its pointer as a snake_case name,
// "/totals/net" → "totals_net") and states every candidate as a
// "name: value" line followed by its passage, so that a model sees which
// field it answers for and what each candidate rests on.
func resolve(ctx context.Context, doc string, chunks []Chunk, m *Merged, root map[string]any, res *llm.Result, extract ExtractFunc) []llm.Violation {
	prompt, rs, names := resolution(doc, chunks, m, root)
	var answer map[string]any
	if rs != nil {
		r, _ := extract(ctx, prompt, rs, nil)
		if r != nil {
			res.Attempts = append(res.Attempts, r.Attempts...)
			res.Usage = res.Usage.Add(r.Usage)
			if r.Outcome == llm.OutcomeOK {
				v, _ := decode(r.Value)
				answer, _ = v.(map[string]any)
			}
		}
	}
	var out []llm.Violation
	for i, c := range m.Conflicts {
		if got := answer[names[i]]; got != nil {
			if k := slices.IndexFunc(c.Candidates, func(cand Candidate) bool { return norm(cand.Value) == norm(got) }); k >= 0 {
				setAt(m.Value, c.Pointer, c.Candidates[k].Value)
				m.Origin[c.Pointer] = c.Candidates[k].Chunks[0]
				continue
			}
		}
		var where []string
		for _, cand := range c.Candidates {
			where = append(where, fmt.Sprintf("%s in chunk %d (%q)", jsonText(cand.Value), cand.Chunks[0]+1, snippet(doc, chunks, cand)))
		}
		out = append(out, llm.Violation{Pointer: c.Pointer, Keyword: "conflict", Message: "parts of the document disagree: " + strings.Join(where, " vs ")})
	}
	return out
}

// resolution builds the conflict-resolution call: its text, its schema
// (one optional property per conflict, typed as the original field) and
// the property name of each conflict. The schema is nil if it does not
// compile.
func resolution(doc string, chunks []Chunk, m *Merged, root map[string]any) (string, *schema.Schema, []string) {
	props := map[string]any{}
	names := make([]string, len(m.Conflicts))
	used := map[string]bool{}
	var b strings.Builder
	b.WriteString("Different parts of one document gave different values for the fields below. ")
	b.WriteString("Each candidate is shown as a \"field: value\" line followed by the passage it was read from. ")
	b.WriteString("For each field, answer with the candidate value the passages support, written exactly as shown; leave the field out if the passages do not settle it.\n\n")
	for i, c := range m.Conflicts {
		name := fieldName(c.Pointer)
		for n := 2; used[name]; n++ {
			name = fmt.Sprintf("%s_%d", fieldName(c.Pointer), n)
		}
		used[name] = true
		names[i] = name
		props[name] = subschema(root, c.Pointer)
		fmt.Fprintf(&b, "Field %s (the document's %s), %d candidates.\n", name, c.Pointer, len(c.Candidates))
		for _, cand := range c.Candidates {
			ch := chunks[cand.Chunks[0]]
			fmt.Fprintf(&b, "%s: %s\n", name, scalarText(cand.Value))
			fmt.Fprintf(&b, "    passage in part %d (characters %d-%d): \"%s\"\n", ch.Index+1, ch.Start, ch.End, snippet(doc, chunks, cand))
		}
		b.WriteString("\n")
	}
	sch, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	rs, err := schema.Compile(sch, schema.WithJSONSchema())
	if err != nil {
		return b.String(), nil, names
	}
	return b.String(), rs, names
}

// fieldName is a readable property name for an instance pointer:
// lower-case letters, digits and underscores ("/Totals/net amount" →
// "totals_net_amount"; "" → "value").
func fieldName(ptr string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.NewReplacer("~1", "/", "~0", "~").Replace(ptr)) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	name := strings.TrimSuffix(b.String(), "_")
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		name = "value_" + name
	}
	return strings.TrimSuffix(name, "_")
}

// scalarText is a candidate as a model would write it on a labelled line:
// strings bare, everything else as JSON.
func scalarText(v any) string {
	if s, ok := v.(string); ok {
		return strings.Join(strings.Fields(s), " ")
	}
	return jsonText(v)
}

// snippet is up to 120 bytes of the candidate's first chunk around its
// first occurrence, or the chunk's start.
func snippet(doc string, chunks []Chunk, c Candidate) string {
	ch := chunks[c.Chunks[0]]
	text := ch.Text
	at := 0
	if s, ok := c.Value.(string); ok {
		if st, _, _, ok := findText(text, s); ok {
			at = st
		}
	} else if n, ok := c.Value.(json.Number); ok {
		if st, _, _, ok := findNumber(text, string(n)); ok {
			at = st
		}
	}
	from, to := max(0, at-60), min(len(text), at+60)
	for from > 0 && !isSpaceByte(text[from-1]) {
		from--
	}
	for to < len(text) && !isSpaceByte(text[to]) {
		to++
	}
	return strings.Join(strings.Fields(text[from:to]), " ")
}

// subschema is the schema node at an instance pointer (through properties
// and items), or {} when it cannot be followed.
func subschema(root map[string]any, ptr string) any {
	node := root
	for _, tok := range strings.Split(ptr, "/")[1:] {
		if p, ok := node["properties"].(map[string]any); ok {
			if n, ok := p[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)].(map[string]any); ok {
				node = n
				continue
			}
		}
		if n, ok := node["items"].(map[string]any); ok {
			node = n
			continue
		}
		return map[string]any{}
	}
	return node
}

// setAt replaces the value at ptr in v.
func setAt(v any, ptr string, val any) {
	toks := strings.Split(ptr, "/")[1:]
	for i, tok := range toks {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		last := i == len(toks)-1
		switch x := v.(type) {
		case map[string]any:
			if last {
				x[tok] = val
				return
			}
			v = x[tok]
		case []any:
			var n int
			if _, err := fmt.Sscan(tok, &n); err != nil || n < 0 || n >= len(x) {
				return
			}
			if last {
				x[n] = val
				return
			}
			v = x[n]
		default:
			return
		}
	}
}

// markUngrounded records, on the last attempt of each chunk, the pointers
// of the merged value it gave that the document does not contain.
func markUngrounded(res *llm.Result, ungrounded []string, origin map[string]int) {
	last := map[int]int{}
	for i, a := range res.Attempts {
		if a.Chunk != nil {
			last[a.Chunk.Index] = i
		}
	}
	for _, p := range ungrounded {
		if i, ok := last[origin[p]]; ok {
			res.Attempts[i].Ungrounded = append(res.Attempts[i].Ungrounded, p)
		}
	}
}

func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func describe(vs []llm.Violation) string {
	var parts []string
	for i, v := range vs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-3))
			break
		}
		p := v.Pointer
		if p == "" {
			p = "(root)"
		}
		parts = append(parts, p+": "+v.Message)
	}
	return strings.Join(parts, "; ")
}

// GroundViolations returns a violation for each string and number of
// value (a chunk's answer) that text does not contain: the optional
// feedback "this value does not appear in the document".
func GroundViolations(text string, value json.RawMessage) []llm.Violation {
	v, err := decode(value)
	if err != nil {
		return nil
	}
	g := Ground(text, v, nil, nil)
	var out []llm.Violation
	for _, p := range g.Ungrounded {
		out = append(out, llm.Violation{Pointer: p, Keyword: "grounding", Message: "this value does not appear in the document; give only values the document states"})
	}
	return out
}
