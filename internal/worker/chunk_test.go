package worker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/worker"
	"github.com/extractq/extractq/llm"
)

// gauge is a provider that answers each call after a delay and counts the
// calls in flight. A part of a document holding poison gets no JSON.
type gauge struct {
	delay  time.Duration
	poison string

	mu                    sync.Mutex
	inFlight, peak, calls int
}

func (g *gauge) Name() string  { return "fake:m" }
func (g *gauge) Model() string { return "m" }
func (g *gauge) Capabilities() llm.Capabilities {
	return llm.Capabilities{Modes: []llm.Mode{llm.ModeText, llm.ModeJSON}}
}

func (g *gauge) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	g.mu.Lock()
	g.inFlight++
	g.calls++
	g.peak = max(g.peak, g.inFlight)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-time.After(g.delay):
	case <-ctx.Done():
		return nil, &llm.Error{Provider: g.Name(), Class: llm.ClassCanceled, Message: "canceled", Err: ctx.Err()}
	}
	text := `{"seen": true}`
	for _, m := range req.Messages {
		if g.poison != "" && strings.Contains(m.Content, g.poison) {
			text = "result pending, see the attachment"
		}
	}
	return &llm.Response{Text: text, FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 5}}, nil
}

// stats returns the peak of calls in flight and the calls made, and
// starts counting the peak afresh.
func (g *gauge) stats() (peak, calls int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	peak, calls = g.peak, g.calls
	g.peak = g.inFlight
	return peak, calls
}

// longText is a document of n paragraphs of about 60 tokens each, with
// extra in paragraph at (none when at < 0).
func longText(n, at int, extra string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Paragraph %d. ", i+1)
		b.WriteString(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5))
		if i == at {
			b.WriteString(extra)
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// chunkEngine is the library as the worker's engine, splitting documents
// into parts of about 100 tokens, four at once.
func chunkEngine() worker.Engine {
	return worker.NewEngine(extractq.WithChunking(extractq.ChunkSize(100)), extractq.WithChunkParallel(4), extractq.WithMaxReasks(1))
}

// TestChunkCallsTakePoolSlots: the parts of a long document run in
// parallel within the pool's budget: with slots free (one job in a pool of
// two or three) more than one call runs at once, and however many long
// jobs run, never more calls than the pool's concurrency; and no job waits
// for slots the others hold (all finish).
func TestChunkCallsTakePoolSlots(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		conc   int
		budget func() worker.Budget // nil: the worker's semaphore
	}{
		{"semaphore of 2", 2, nil},
		{"rate-limit pool of 3", 3, func() worker.Budget {
			return ratelimit.NewPool(pool, ratelimit.Limits{Concurrency: 3}, ratelimit.WithLogger(quiet()))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := &gauge{delay: 60 * time.Millisecond}
			p := worker.Pool{Name: pool, Concurrency: tc.conc}
			if tc.budget != nil {
				p.Budget = tc.budget()
			}
			f := startEngine(t, chunkEngine(), fastSettings(5), worker.WithPools(p), worker.WithLogger(quiet()),
				worker.WithProviders(func(string) (llm.Provider, error) { return g, nil }))

			f.submitText(t, "alone", longText(24, -1, ""))
			waitForWithin(t, 60*time.Second, "the long job", func() bool { return f.w.Counts().Done == 1 })
			peak, calls := g.stats()
			t.Logf("one long job: %d calls, at most %d at once", calls, peak)
			if calls < 10 {
				t.Fatalf("%d calls: the document was not split into parts", calls)
			}
			if peak < 2 || peak > tc.conc {
				t.Errorf("one long job in a pool of %d: at most %d calls at once, want 2..%d", tc.conc, peak, tc.conc)
			}
			recs := f.audit.records("alone")
			if len(recs) != 1 || len(recs[0].Attempts) != calls || recs[0].Attempts[calls-1].Chunk == nil {
				t.Fatalf("audit: %d records; want one holding every part's attempt with its chunk", len(recs))
			}

			jobsN := 2 * tc.conc
			for i := range jobsN {
				f.submitText(t, fmt.Sprintf("busy-%d", i), longText(12, -1, fmt.Sprintf("Document %d.", i)))
			}
			waitForWithin(t, 90*time.Second, "every long job", func() bool { return f.w.Counts().Done == int64(1+jobsN) })
			if peak, _ := g.stats(); peak > tc.conc {
				t.Errorf("%d long jobs in a pool of %d: %d calls at once", jobsN, tc.conc, peak)
			}
		})
	}
}

// TestDeadLetterNamesFailedChunk: a long document whose part fails is
// dead-lettered with that part named: its number of all, its character
// offsets (which hold the text the model could not read) and its reason.
func TestDeadLetterNamesFailedChunk(t *testing.T) {
	t.Parallel()
	const poison = "POISONED-PARAGRAPH"
	g := &gauge{delay: 5 * time.Millisecond, poison: poison}
	f := startEngine(t, chunkEngine(), fastSettings(3), worker.WithLogger(quiet()),
		worker.WithProviders(func(string) (llm.Provider, error) { return g, nil }))
	text := longText(12, 7, poison)
	f.submitText(t, "poisoned", text)
	waitFor(t, "the dead letter", func() bool { return f.streamMsgs(t, jobs.DLQStream) == 1 })
	l := f.letters(t)[0]
	cf := l.ChunkFailure
	t.Logf("letter: %s; failed part: %v", l.Reason, cf)
	if cf == nil || l.FailedChunk == nil {
		t.Fatalf("the letter names no failed chunk: reason %q", l.Reason)
	}
	if cf.Of < 2 || cf.Of != len(l.Chunks) || cf.Index != l.FailedChunk.Index || cf.Start != l.FailedChunk.Start || cf.End != l.FailedChunk.End {
		t.Errorf("failed chunk %+v disagrees with the result's %+v of %d chunks", cf, *l.FailedChunk, len(l.Chunks))
	}
	if part := []rune(text); cf.Start < 0 || cf.End > len(part) || !strings.Contains(string(part[cf.Start:cf.End]), poison) {
		t.Errorf("characters %d-%d of the document do not hold the part the model could not read", cf.Start, cf.End)
	}
	if cf.Reason == "" || strings.Contains(cf.Reason, "chunk") || !strings.HasSuffix(l.Reason, cf.Reason) ||
		!strings.Contains(l.Reason, fmt.Sprintf("chunk %d of %d", cf.Index+1, cf.Of)) {
		t.Errorf("failed chunk's reason %q; letter's reason %q", cf.Reason, l.Reason)
	}
	recs := f.audit.records("poisoned")
	if len(recs) != 1 || recs[0].DeadLetter == nil {
		t.Fatalf("audit records = %d, want the dead letter's", len(recs))
	}
	failedAttempts := 0
	for _, a := range recs[0].Attempts {
		if a.Chunk != nil && a.Chunk.Index == cf.Index && a.Class == llm.ClassNoJSON {
			failedAttempts++
		}
	}
	if failedAttempts != 2 {
		t.Errorf("%d audited attempts of the failed chunk with no JSON, want 2 (one re-ask)", failedAttempts)
	}
}
