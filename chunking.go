package extractq

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/extractq/extractq/internal/chunk"
	"github.com/extractq/extractq/internal/retry"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Chunking is when a long document is split into parts ("chunks") that
// are extracted separately and merged: ChunkAuto, ChunkOff, or a target
// size in tokens such as "4000" (see ChunkSize).
type Chunking string

// Chunking policies.
const (
	// ChunkAuto (default) sends a document whole when it fits the model's
	// context window (from the capabilities table) with room for the
	// prompt and the answer, and splits it otherwise. A model whose window
	// is unknown always gets the whole document.
	ChunkAuto Chunking = "auto"
	// ChunkOff always sends the whole document.
	ChunkOff Chunking = "off"
)

// ChunkSize is the policy that splits any document longer than tokens
// into parts of about that many tokens.
func ChunkSize(tokens int) Chunking { return Chunking(strconv.Itoa(tokens)) }

// ParseChunking reads "auto", "off" or a positive number of tokens.
func ParseChunking(s string) (Chunking, error) {
	switch c := Chunking(strings.ToLower(strings.TrimSpace(s))); c {
	case ChunkAuto, ChunkOff, "":
		if c == "" {
			c = ChunkAuto
		}
		return c, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 100 {
		return "", fmt.Errorf("%w: chunking %q: want auto, off, or a chunk size of at least 100 tokens", ErrConfig, s)
	}
	return ChunkSize(n), nil
}

// chunkOptions are the options of long documents.
type chunkOptions struct {
	policy    Chunking
	parallel  int
	mergeKeys map[string]string
	groundFB  bool
}

// WithChunking sets when a long document is split (default ChunkAuto).
// Each part is extracted with the schema relaxed (schema.Schema.Relaxed:
// document-level required fields may be null, arrays' minimum counts
// dropped, items keep theirs) through the same validate-and-reask loop, the answers are merged (arrays concatenated and
// de-duplicated, agreeing scalars kept, disagreeing ones settled by one
// more call or reported) and the merged value is validated against the
// original schema. Result.Chunks, Result.Sources and Result.Ungrounded say
// where each value came from.
func WithChunking(c Chunking) Option { return func(o *options) { o.chunk.policy = c } }

// WithChunkParallel bounds how many parts of one document are extracted
// at once (default 4). In the fleet each part's calls also take the
// worker's rate-limit budget like any other call.
func WithChunkParallel(n int) Option { return func(o *options) { o.chunk.parallel = n } }

// WithMergeKey names the field that identifies an item of the array at
// arrayPointer (e.g. "/items", "sku") when parts are merged: items with the
// same key are one item. The schema can say the same with "x-merge-key"
// on the array or its items. Without a key, items merge when all their
// fields are equal after normalising case, whitespace and number format.
func WithMergeKey(arrayPointer, field string) Option {
	return func(o *options) {
		if o.chunk.mergeKeys == nil {
			o.chunk.mergeKeys = map[string]string{}
		}
		o.chunk.mergeKeys[arrayPointer] = field
	}
}

// WithGroundingFeedback makes a part's strings and numbers that do not
// appear in that part's text violations ("this value does not appear in
// the document"), re-asked like any other (default false: such values are
// only listed in Result.Ungrounded and on their attempt).
func WithGroundingFeedback(on bool) Option { return func(o *options) { o.chunk.groundFB = on } }

// validateChunking checks the chunking options.
func (c *chunkOptions) validate() error {
	if c.policy == "" {
		c.policy = ChunkAuto
	}
	if _, err := ParseChunking(string(c.policy)); err != nil {
		return err
	}
	if c.parallel < 0 {
		return fmt.Errorf("%w: chunk parallelism %d: want 0 (default 4) or more", ErrConfig, c.parallel)
	}
	return nil
}

// chunkSize is the part size for document, or 0 to send it whole.
func (x *Extractor) chunkSize(document string, s *schema.Schema) int {
	if x.chunk.policy == ChunkOff {
		return 0
	}
	cfg := chunk.Config{}
	if x.chunk.policy != ChunkAuto {
		cfg.Size, _ = strconv.Atoi(string(x.chunk.policy))
	}
	caps := x.provider.Capabilities()
	// A document whose bytes fit goes whole without counting its tokens or
	// the schema's (a token is at least a byte): the usual document is far
	// below its model's window.
	if chunk.Whole(caps, len(document), promptOverhead(len(s.JSON())), cfg) {
		return 0
	}
	return chunk.Plan(caps, x.provider.Name(), document, promptOverhead(chunk.Tokens("", string(s.JSON()))), cfg)
}

// promptOverhead is the tokens the prompt adds around the document for a
// schema of schemaTokens: rules, the schema or an example, the field
// guide. The schema twice covers the example and the guide.
func promptOverhead(schemaTokens int) int { return 400 + 2*schemaTokens }

// extractChunked runs the chunked path: each part through retry.Run with
// the relaxed schema, exactly as a whole document would go.
func (x *Extractor) extractChunked(ctx context.Context, document string, s *schema.Schema, size int, breaks []int) (*llm.Result, error) {
	validators := x.cfg.Validators
	cfg := chunk.Config{Parallel: x.chunk.parallel, MergeKeys: x.chunk.mergeKeys, Breaks: breaks}
	if len(validators) > 0 {
		cfg.Validate = func(ctx context.Context, v json.RawMessage) []llm.Violation {
			var out []llm.Violation
			for _, f := range validators {
				out = append(out, f(ctx, v)...)
			}
			return out
		}
	}
	extract := func(ctx context.Context, text string, cs *schema.Schema, span *llm.Span) (*llm.Result, error) {
		c := x.cfg
		// The caller's validators judge the merged value, not a part.
		c.Validators = nil
		if x.chunk.groundFB && span != nil {
			c.Validators = []func(context.Context, json.RawMessage) []llm.Violation{func(_ context.Context, v json.RawMessage) []llm.Violation {
				return chunk.GroundViolations(text, v)
			}}
		}
		if span != nil {
			c.Observers = observeChunk(c.Observers, span)
		}
		return retry.Run(ctx, x.provider, text, cs, c)
	}
	return chunk.Run(ctx, x.provider.Name(), document, s, size, cfg, extract)
}

// observeChunk tells observers which part an attempt belongs to.
func observeChunk(obs []func(context.Context, llm.Attempt), span *llm.Span) []func(context.Context, llm.Attempt) {
	if len(obs) == 0 {
		return nil
	}
	out := make([]func(context.Context, llm.Attempt), len(obs))
	for i, f := range obs {
		out[i] = func(ctx context.Context, a llm.Attempt) {
			a.Chunk = span
			f(ctx, a)
		}
	}
	return out
}
