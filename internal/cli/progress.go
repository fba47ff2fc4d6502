package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/extractq/extractq/internal/settings"
)

// Progress is the one progress display of `extractq extract` and `submit
// --wait`: total, done, failed, running and queued, the rate, the ETA, and
// why it waits when it waits (a transport backoff, no live worker for the
// pool…). On a terminal it redraws one line in place; elsewhere (a log, CI)
// it prints a line every 10 s, at each 10% step, and when the reason for
// waiting changes, so a log shows both progress and stalls without one line
// per second.
//
// The rate counts only what finished while it was watching, over the last
// 30 s, and is shown only after 2 s of watching: documents that were done
// already (or finished before the first look) must not make the first
// tick read thousands of documents per second.
//
// It is safe for concurrent use. Start runs its ticker until Finish.
type Progress struct {
	w      io.Writer
	tty    bool
	label  string
	now    func() time.Time
	every  time.Duration // non-terminal: a line at least this often
	redraw time.Duration // terminal: redraw at most this often

	mu              sync.Mutex
	total           int  // 0: unknown
	totalFinal      bool // false: more may come (input still being read)
	done, failed    int
	running, queued int // -1: unknown
	reason          string
	samples         []sample
	firstLook       time.Time
	firstFinished   int // finished at firstLook: not counted in rates
	lastLine        time.Time
	lastDecile      int
	lastReason      string
	drawn           string // terminal: what the line shows
	finished        bool
	stop            chan struct{}
	stopped         chan struct{}
}

type sample struct {
	at       time.Time
	finished int
}

// Window and delays of the rate and the output.
const (
	rateWindow  = 30 * time.Second
	rateWarmup  = 2 * time.Second
	lineEvery   = 10 * time.Second
	redrawEvery = 200 * time.Millisecond
	sampleEvery = 100 * time.Millisecond
)

// NewProgress returns a display writing to w (normally stderr) whose lines
// start with label, e.g. "extract" or "submit".
func NewProgress(w io.Writer, label string) *Progress {
	return newProgress(w, label, settings.IsTerminal(w), time.Now)
}

func newProgress(w io.Writer, label string, tty bool, now func() time.Time) *Progress {
	return &Progress{w: w, tty: tty, label: label, now: now, every: lineEvery, redraw: redrawEvery, running: -1, queued: -1, lastDecile: -1}
}

// SetTotal sets how many documents there are in all; final says whether
// more may still come (false while the input is being read).
func (p *Progress) SetTotal(n int, final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.totalFinal = n, final
}

// SetDone sets the finished counts, for callers that poll (submit --wait).
func (p *Progress) SetDone(done, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.failed = done, failed
	p.observe(done + failed)
}

// Add counts finished documents, for callers that see each finish.
func (p *Progress) Add(done, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.done + p.failed
	p.done += done
	p.failed += failed
	p.observe(before)
}

// SetActive sets how many documents are being worked on now and how many
// wait in a queue (-1: unknown). Queued ones are never shown as running.
func (p *Progress) SetActive(running, queued int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running, p.queued = running, queued
}

// SetReason says why nothing moves ("" when it does).
func (p *Progress) SetReason(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reason = reason
}

// observe records a rate sample; p.mu is held. base is how many had
// finished before this change, in case this is the first look.
func (p *Progress) observe(base int) {
	now := p.now()
	p.look(now, base)
	// One sample per sampleEvery at most: the window holds a few hundred
	// however fast documents finish.
	if n := len(p.samples); n > 1 && now.Sub(p.samples[n-2].at) < sampleEvery {
		p.samples[n-1] = sample{now, p.done + p.failed}
	} else {
		p.samples = append(p.samples, sample{now, p.done + p.failed})
	}
	// Keep one sample older than the window as its left edge.
	cut := 0
	for cut+1 < len(p.samples) && now.Sub(p.samples[cut+1].at) >= rateWindow {
		cut++
	}
	p.samples = p.samples[cut:]
}

// look starts the watch at now if it has not started; p.mu is held.
func (p *Progress) look(now time.Time, finished int) {
	if p.firstLook.IsZero() {
		p.firstLook, p.firstFinished = now, finished
		p.samples = append(p.samples, sample{now, finished})
	}
}

// rate is documents finished per second over the window, and whether it
// is known yet; p.mu is held.
func (p *Progress) rate(now time.Time) (float64, bool) {
	if len(p.samples) < 2 || now.Sub(p.firstLook) < rateWarmup {
		return 0, false
	}
	first, last := p.samples[0], p.samples[len(p.samples)-1]
	span := now.Sub(first.at).Seconds()
	if span <= 0 {
		return 0, false
	}
	return float64(last.finished-first.finished) / span, true
}

// Line is the current progress line, without label.
func (p *Progress) Line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.line(p.now())
}

func (p *Progress) line(now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d done, %d failed", p.done, p.failed)
	if p.total > 0 {
		more := ""
		if !p.totalFinal {
			more = "+"
		}
		fmt.Fprintf(&b, " of %d%s", p.total, more)
	}
	if p.running >= 0 {
		fmt.Fprintf(&b, " · %d running", p.running)
	}
	if p.queued >= 0 {
		fmt.Fprintf(&b, " · %d queued", p.queued)
	}
	r, known := p.rate(now)
	switch {
	case !known:
		b.WriteString(" · – docs/s")
	case r < 10:
		fmt.Fprintf(&b, " · %.1f docs/s", r)
	default:
		fmt.Fprintf(&b, " · %.0f docs/s", r)
	}
	left := p.total - p.done - p.failed
	switch {
	case p.total > 0 && left <= 0 && p.totalFinal:
	case p.total > 0 && known && r > 0:
		eta := time.Duration(float64(left) / r * float64(time.Second))
		fmt.Fprintf(&b, " · ETA %s", roundETA(eta))
	default:
		b.WriteString(" · ETA ?")
	}
	if p.reason != "" {
		b.WriteString(" · waiting: " + p.reason)
	}
	return b.String()
}

// final is the last line: the counts, then how long it watched and the
// average rate of what finished meanwhile, instead of a rate and an ETA.
func (p *Progress) final(now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d done, %d failed", p.done, p.failed)
	if p.total > 0 {
		fmt.Fprintf(&b, " of %d", p.total)
	}
	if left := p.total - p.done - p.failed; left > 0 && p.totalFinal {
		fmt.Fprintf(&b, " (%d unfinished", left)
		if p.running >= 0 && p.queued >= 0 {
			fmt.Fprintf(&b, ": %d running, %d queued", p.running, p.queued)
		}
		b.WriteString(")")
	}
	if !p.firstLook.IsZero() {
		took := now.Sub(p.firstLook)
		fmt.Fprintf(&b, " in %s", took.Round(100*time.Millisecond))
		if n := p.done + p.failed - p.firstFinished; n > 0 && took > 0 {
			fmt.Fprintf(&b, " (%.1f docs/s)", float64(n)/took.Seconds())
		}
	}
	if p.reason != "" {
		b.WriteString(" · waiting: " + p.reason)
	}
	return b.String()
}

func roundETA(d time.Duration) time.Duration {
	switch {
	case d < time.Minute:
		return d.Round(time.Second)
	case d < time.Hour:
		return d.Round(10 * time.Second)
	default:
		return d.Round(time.Minute)
	}
}

// Start shows progress until Finish, redrawing on a terminal and printing
// periodic lines elsewhere. The goroutine it starts ends with Finish or
// with ctx.
func (p *Progress) Start(ctx context.Context) {
	p.mu.Lock()
	if p.stop != nil {
		p.mu.Unlock()
		return
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	p.look(p.now(), p.done+p.failed)
	p.mu.Unlock()
	every := p.redraw
	if !p.tty {
		every = time.Second // decides; prints only on the 10 s, 10% or reason rules
	}
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.stop:
				return
			case <-t.C:
				p.tick()
			}
		}
	}()
}

// tick writes what is due now.
func (p *Progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	now := p.now()
	p.look(now, p.done+p.failed)
	line := p.line(now)
	if p.tty {
		if line != p.drawn {
			fmt.Fprintf(p.w, "\r\033[K%s: %s", p.label, line)
			p.drawn = line
		}
		return
	}
	decile := -1
	if p.total > 0 {
		decile = min(10, (p.done+p.failed)*10/p.total)
	}
	due := p.lastLine.IsZero() || now.Sub(p.lastLine) >= p.every ||
		decile > p.lastDecile || (p.reason != "" && p.reason != p.lastReason)
	if !due {
		return
	}
	fmt.Fprintf(p.w, "%s: %s\n", p.label, line)
	p.lastLine, p.lastDecile, p.lastReason = now, decile, p.reason
}

// Printf writes a line of its own (a warning) to the display's writer
// without tearing the progress line: on a terminal the line being redrawn
// is cleared first and drawn again at the next tick. Callers that write
// to the same writer while the display runs must use it.
func (p *Progress) Printf(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn != "" {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = ""
	}
	fmt.Fprintf(p.w, format, a...)
}

// Finish stops the display and prints the final line (always, on a
// terminal too, so the last state stays on screen).
func (p *Progress) Finish() { p.end(true) }

// Stop stops the display; it prints the final line only when it showed
// progress before (a run too short for a tick ends without one), for
// commands that print their own summary next.
func (p *Progress) Stop() { p.end(false) }

func (p *Progress) end(always bool) {
	p.mu.Lock()
	stop, stopped := p.stop, p.stopped
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if !always && p.lastLine.IsZero() && p.drawn == "" {
		return
	}
	if p.totalFinal && p.done+p.failed >= p.total {
		p.reason = "" // nothing waits any more
	}
	line := p.final(p.now())
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "%s: %s\n", p.label, line)
}
