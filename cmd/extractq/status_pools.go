package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/term"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/termsafe"
)

// statusView is what `extractq status` shows: the pools' queues (NATS) and
// the runs (audit database).
type statusView struct {
	store   *audit.Store
	js      jetstream.JetStream // nil when NATS is unreachable
	natsErr error
	filter  audit.StatusFilter
}

// statusJSON is `status --json`.
type statusJSON struct {
	Pools []fleetview.Pool `json:"pools"`
	// PoolsError says why the pools are missing (NATS unreachable, no
	// streams yet).
	PoolsError string `json:"pools_error,omitempty"`
	// Batches are the provider batches in flight (audit), by pool; absent
	// when there are none, as on a fleet without batch pools.
	Batches []fleetview.Batch `json:"batches,omitempty"`
	Runs    []statusLine      `json:"runs"`
}

// snapshot reads both halves; a pool error is kept, not returned, so the
// runs still show when NATS is down.
func (v *statusView) snapshot(ctx context.Context) (statusJSON, error) {
	var out statusJSON
	lines, err := statusLines(ctx, v.store, v.filter)
	if err != nil {
		return out, err
	}
	out.Runs = lines
	if out.Batches, err = fleetview.InFlight(ctx, v.store); err != nil {
		return out, err
	}
	switch {
	case v.js == nil:
		out.PoolsError = v.natsErr.Error()
	default:
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		pools, err := fleetview.Pools(pctx, v.js)
		if err != nil {
			out.PoolsError = err.Error()
		}
		out.Pools = pools
	}
	if out.Pools == nil {
		out.Pools = []fleetview.Pool{}
	}
	return out, nil
}

// print writes one snapshot as text or JSON.
func (v *statusView) print(ctx context.Context, w io.Writer, asJSON bool) error {
	snap, err := v.snapshot(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(snap)
	}
	return renderStatus(w, snap, time.Now())
}

func renderStatus(w io.Writer, snap statusJSON, now time.Time) error {
	fmt.Fprintln(w, "POOLS")
	if snap.PoolsError != "" {
		fmt.Fprintf(w, "  unavailable: %s\n", snap.PoolsError)
	} else if err := printPools(w, snap.Pools, now); err != nil {
		return err
	}
	if len(snap.Batches) > 0 {
		fmt.Fprintln(w, "\nBATCHES IN FLIGHT")
		if err := printBatchesInFlight(w, snap.Batches, now); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nRUNS")
	return printRuns(w, snap.Runs)
}

// watch redraws the status every interval until ctx ends or Ctrl-C: in
// place on a terminal, as successive time-stamped snapshots otherwise.
func (v *statusView) watch(ctx context.Context, w io.Writer, interval time.Duration) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var buf bytes.Buffer
	for {
		buf.Reset()
		now := time.Now()
		snap, err := v.snapshot(ctx)
		if ctx.Err() != nil {
			return nil // Ctrl-C while reading
		}
		if tty {
			buf.WriteString("\x1b[H\x1b[2J") // home, clear: one write per frame, no flicker
		}
		fmt.Fprintf(&buf, "extractq status  %s  (every %s, Ctrl-C to stop)\n\n", now.Format(time.TimeOnly), interval)
		if err != nil {
			fmt.Fprintf(&buf, "cannot read the audit database: %v\n", err)
		} else if err := renderStatus(&buf, snap, now); err != nil {
			return err
		}
		if !tty {
			buf.WriteString("\n")
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// printPools writes the pools' table, then their live workers.
func printPools(w io.Writer, pools []fleetview.Pool, now time.Time) error {
	if len(pools) == 0 {
		fmt.Fprintln(w, "  no pool has jobs, a consumer or a live worker yet")
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tQUEUED\tIN PROGRESS\tREDELIVERED\tWORKERS\tPAUSED\tDLQ\tOLDEST QUEUED\t429s 1h")
	for _, p := range pools {
		workers := fmt.Sprint(len(p.Workers))
		if !p.Consumer && p.Queued > 0 {
			workers += " (no consumer yet)"
		}
		oldest := "-"
		if !p.OldestQueued.IsZero() {
			oldest = roundAge(p.OldestAge(now))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t%s\t%d\n", terminalSafe(p.Name), p.Queued, p.InProgress, p.Redelivered,
			workers, p.PauseText(), p.DeadLetters, oldest, p.RateLimitedHour)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	workers := false
	for _, p := range pools {
		workers = workers || len(p.Workers) > 0
	}
	if !workers {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tWORKER\tSHARE\tPAUSED\t429s 1h\tLAST BEAT")
	for _, p := range pools {
		for _, wk := range p.Workers {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s ago\n", terminalSafe(p.Name), terminalSafe(wk.ID), wk.ShareText(), terminalSafe(wk.PauseText()),
				wk.RateLimitedHour, roundAge(now.Sub(wk.LastBeat)))
		}
	}
	return tw.Flush()
}

// printBatchesInFlight writes the open provider batches of batch pools:
// what `extractq batch list` shows, in short.
func printBatchesInFlight(w io.Writer, batches []fleetview.Batch, now time.Time) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tBATCH\tPROVIDER BATCH\tREQUESTS\tROUND\tAGE\tSTATUS")
	for _, b := range batches {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%s\n", terminalSafe(b.Pool), b.ID, termsafe.String(b.ProviderBatchID), b.Requests, b.Round,
			roundAge(b.Age(now)), termsafe.String(orDash(b.Status)))
	}
	return tw.Flush()
}

// roundAge prints an age to the second (to the minute past an hour).
func roundAge(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}

// terminalSafe replaces control characters (ESC sequences among them) in
// names that came over the network, so they cannot drive the terminal.
func terminalSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
