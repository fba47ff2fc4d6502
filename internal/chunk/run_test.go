package chunk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// A part that ends unextractable (a refusal), or is accepted through a
// repair that may have lost items, is asked again afresh (at most twice)
// before it fails the document or its answer is used; a part that refuses
// three times fails the document, named.
func TestRunAsksASuspectPartAgain(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(`{"type":"object","required":["items"],"properties":{"items":{"type":"array","minItems":1,"items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, "%s\nsku %s-%d\n\n", strings.Repeat("Filler words about the delivery terms. ", 20), "AB", i)
	}
	doc := b.String()
	tests := []struct {
		name     string
		refuses  int // how many times the third part refuses
		wraps    int // then how many times it answers one item wrapped into the list
		wantOK   bool
		attempts int // recorded for the third part
	}{
		{"refuses once", 1, 0, true, 2},
		{"refuses twice", 2, 0, true, 3},
		{"refuses three times", 3, 0, false, 3},
		{"one item wrapped", 0, 1, true, 2},
		{"wrapped, then refused", 0, 1, true, 3}, // refuses after the wrap: see below
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			calls := 0
			extract := func(ctx context.Context, text string, _ *schema.Schema, span *llm.Span) (*llm.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				if span != nil && span.Index == 2 {
					calls++
					if calls <= tt.refuses || tt.name == "wrapped, then refused" && calls > 1 {
						r := &llm.Result{Outcome: llm.OutcomeUnextractable, Reason: "refused", Attempts: []llm.Attempt{{N: 1, Error: "refused"}}}
						return r, &llm.ExtractionError{Result: r}
					}
					if calls <= tt.refuses+tt.wraps {
						return &llm.Result{Outcome: llm.OutcomeOK, Value: []byte(`{"items":[{"sku":"lone"}]}`),
							Attempts: []llm.Attempt{{N: 1, Repairs: []llm.Repair{{Kind: jsonx.KindCoerceWrapArray, Where: "/items"}}}}}, nil
					}
				}
				var skus []string
				for _, ln := range strings.Split(text, "\n") {
					if sku, ok := strings.CutPrefix(ln, "sku "); ok {
						skus = append(skus, fmt.Sprintf(`{"sku":%q}`, sku))
					}
				}
				return &llm.Result{Outcome: llm.OutcomeOK, Value: []byte(`{"items":[` + strings.Join(skus, ",") + `]}`), Attempts: []llm.Attempt{{N: 1}}}, nil
			}
			res, err := Run(t.Context(), "openai:test", doc, s, 300, Config{Parallel: 2}, extract)
			if len(res.Chunks) < 4 {
				t.Fatalf("only %d chunks", len(res.Chunks))
			}
			if tt.wantOK {
				if err != nil {
					t.Fatalf("a part refused once failed the document: %v", err)
				}
				want := 8
				if tt.name == "wrapped, then refused" {
					want = 9 // the wrapped answer stands: its lone item joins the others
				}
				if got := strings.Count(string(res.Value), `"sku"`); got != want {
					t.Errorf("%d items, want %d: %s", got, want, res.Value)
				}
				n := 0
				for _, a := range res.Attempts {
					if a.Chunk != nil && a.Chunk.Index == 2 {
						n++
					}
				}
				if n != tt.attempts {
					t.Errorf("part 3 has %d attempts recorded, want %d", n, tt.attempts)
				}
				return
			}
			var ee *llm.ExtractionError
			if !errors.As(err, &ee) || res.FailedChunk == nil || res.FailedChunk.Index != 2 || res.Outcome != llm.OutcomeUnextractable {
				t.Fatalf("want part 3 named as failed, unextractable; got %v (failed %v, outcome %s)", err, res.FailedChunk, res.Outcome)
			}
		})
	}
}
