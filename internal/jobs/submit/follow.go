package submit

import (
	"context"
	"fmt"
	"time"

	"github.com/extractq/extractq/internal/audit"
)

// JobStater reports jobs' states in the audit store; *audit.Store
// implements it.
type JobStater interface {
	JobStates(ctx context.Context, jobIDs []string) (map[string]audit.JobState, error)
}

// Progress is how far the followed jobs are.
type Progress struct {
	Total    int   // jobs followed
	Done     int   // final with a valid result
	Failed   int   // final without one (dead-lettered)
	Tokens   int64 // tokens spent by the finished jobs
	Elapsed  time.Duration
	InFlight int // not final yet
	// Open are the jobs not final yet (InFlight of them), valid until the
	// next call of the progress function.
	Open []string
}

// Follow polls the audit store every interval until every job in ids is
// final (a result or a dead letter) or ctx ends, calling progress after
// each poll. It follows exactly ids: jobs that were never queued cannot
// keep it waiting, because only jobs this submission queued are passed.
func Follow(ctx context.Context, st JobStater, ids []string, every time.Duration, progress func(Progress)) (Progress, error) {
	start := time.Now()
	p := Progress{Total: len(ids)}
	open := append([]string(nil), ids...)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		states, err := st.JobStates(ctx, open)
		if err != nil {
			return p, fmt.Errorf("follow the submitted jobs: %w", err)
		}
		rest := open[:0]
		for _, id := range open {
			s, ok := states[id]
			if !ok || !s.Final() {
				rest = append(rest, id)
				continue
			}
			if s.OK() {
				p.Done++
			} else {
				p.Failed++
			}
			p.Tokens += s.Tokens
		}
		open = rest
		p.InFlight, p.Open, p.Elapsed = len(open), open, time.Since(start)
		if progress != nil {
			progress(p)
		}
		if len(open) == 0 {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-tick.C:
		}
	}
}
