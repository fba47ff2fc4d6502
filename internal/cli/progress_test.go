package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// clock is a manual time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func lines(b *bytes.Buffer) []string {
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// TestProgressFirstTick is the 49,060 docs/s bug: documents found done on
// the first look must not count toward the rate.
func TestProgressFirstTick(t *testing.T) {
	t.Parallel()
	c := newClock()
	var b bytes.Buffer
	p := newProgress(&b, "submit", false, c.now)
	p.SetTotal(1000, true)
	p.SetDone(981, 0) // already done before anyone looked
	c.advance(20 * time.Millisecond)
	p.tick()
	if got := p.Line(); !strings.Contains(got, "– docs/s") || !strings.Contains(got, "ETA ?") {
		t.Fatalf("first tick %q, want no rate and no ETA yet", got)
	}
	for range 4 {
		c.advance(time.Second)
		p.SetDone(p.done+2, 0)
	}
	if got := p.Line(); !strings.Contains(got, "2.0 docs/s") || !strings.Contains(got, "ETA 6s") {
		t.Fatalf("after 4 s at 2 docs/s: %q, want 2.0 docs/s and ETA 6s (11 left)", got)
	}
}

func TestProgressNonTerminalLines(t *testing.T) {
	t.Parallel()
	c := newClock()
	var b bytes.Buffer
	p := newProgress(&b, "extract", false, c.now)
	p.SetTotal(100, true)
	p.tick() // the first line
	for i := 0; i < 100; i++ {
		c.advance(100 * time.Millisecond) // 10 docs/s: a decile a second
		p.Add(1, 0)
		p.tick()
	}
	got := lines(&b)
	// One at the start and one per 10%: 11, never one per document.
	if len(got) != 11 {
		t.Fatalf("%d lines, want 11 (start + each 10%%):\n%s", len(got), b.String())
	}
	if strings.Contains(b.String(), "\r") || strings.Contains(b.String(), "\033") {
		t.Error("terminal escapes written to a non-terminal")
	}
	// A stall: a line every 10 s, and at once when the reason appears.
	b.Reset()
	p.SetTotal(200, true)
	for range 25 {
		c.advance(time.Second)
		p.tick()
	}
	if n := len(lines(&b)); n != 2 {
		t.Fatalf("%d lines in a 25 s stall, want 2 (every 10 s):\n%s", n, b.String())
	}
	b.Reset()
	p.SetReason("no live worker serves pool sim_clean")
	c.advance(time.Second)
	p.tick()
	if !strings.Contains(b.String(), "waiting: no live worker serves pool sim_clean") {
		t.Fatalf("a new reason printed %q, want a line with it at once", b.String())
	}
}

func TestProgressTerminal(t *testing.T) {
	t.Parallel()
	c := newClock()
	var b bytes.Buffer
	p := newProgress(&b, "submit", true, c.now)
	p.SetTotal(10, true)
	p.SetActive(2, 5)
	p.tick()
	p.tick() // nothing changed: nothing redrawn
	c.advance(time.Second)
	p.Add(3, 1)
	p.tick()
	out := b.String()
	if strings.Count(out, "\r\033[K") != 2 || strings.Contains(out, "\n") {
		t.Fatalf("terminal output %q, want two in-place redraws and no new line", out)
	}
	if !strings.Contains(out, "2 running · 5 queued") {
		t.Errorf("%q: want running and queued apart", out)
	}
	p.Finish()
	if !strings.HasSuffix(b.String(), "\r\033[Ksubmit: 3 done, 1 failed of 10 (6 unfinished: 2 running, 5 queued) in 1s (4.0 docs/s)\n") {
		t.Errorf("final line %q", b.String()[strings.LastIndex(b.String(), "\r"):])
	}
}

// BenchmarkProgressAdd is the cost of counting one finished document
// (go test -bench ProgressAdd -benchmem ./internal/cli).
func BenchmarkProgressAdd(b *testing.B) {
	p := NewProgress(io.Discard, "bench")
	p.SetTotal(b.N, true)
	for b.Loop() {
		p.Add(1, 0)
	}
}
