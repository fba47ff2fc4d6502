package submit

import (
	"context"
	"fmt"
)

// RunCounter counts the jobs a resubmission queues into runs and seals
// them (the audit's run_done, migration 014), as a submission does: each
// run gets one more done event, once its resubmitted jobs are final too.
// *audit.Store implements it.
type RunCounter interface {
	StartRunCount(ctx context.Context, run string) error
	CountRunJobs(ctx context.Context, run string, queued, seen []string) (int, error)
	SealRun(ctx context.Context, run string) (int, error)
}

// SealedRun is a run a resubmission queued into and sealed.
type SealedRun struct {
	Run    string `json:"run"`
	Queued int    `json:"queued"` // jobs newly queued into it (not duplicates)
	// Generation is the run's new done generation: its done event (and
	// webhook) comes once every job of the run is final, these included.
	Generation int `json:"generation"`
}

// runCounts follows the runs of one resubmission: counted after each
// page the server acked (a resubmission stopped half-way has counted what
// it queued), sealed once all was queued.
type runCounts struct {
	st     RunCounter
	queued map[string]int // by run: jobs queued (duplicates: 0)
	order  []string       // runs in the order first queued into
}

func newRunCounts(st RunCounter) *runCounts {
	return &runCounts{st: st, queued: map[string]int{}}
}

// publishCounted publishes items, starting the count of runs seen for the first
// time before and counting the jobs queued after.
func (s *Submitter) publishCounted(ctx context.Context, rc *runCounts, items []item) error {
	seen := map[string]bool{}
	for _, it := range items {
		run := it.env.Run
		if _, ok := rc.queued[run]; ok || seen[run] || run == "" {
			continue
		}
		seen[run] = true
		if err := rc.st.StartRunCount(ctx, run); err != nil {
			return err
		}
	}
	if err := s.publishAll(ctx, items); err != nil {
		return err
	}
	// A duplicate still queued into its own run may be one a resubmission
	// killed before its count queued: counted too, once (CountRunJobs).
	var dups []int
	for i, it := range items {
		if it.err == nil && it.dup && it.env.Run != "" {
			dups = append(dups, i)
		}
	}
	still, err := s.stillQueued(ctx, items, dups)
	if err != nil {
		return fmt.Errorf("%w (the jobs are queued; resubmit again to seal the run)", err)
	}
	added, runSeen := map[string][]string{}, map[string][]string{}
	for i, it := range items {
		if it.err != nil {
			continue
		}
		run := it.env.Run
		if run == "" { // a job of no run (an old letter): nothing awaits it
			continue
		}
		if _, ok := rc.queued[run]; !ok {
			rc.queued[run] = 0
			rc.order = append(rc.order, run)
		}
		switch original, ok := still[i]; {
		case !it.dup:
			added[run] = append(added[run], it.env.JobID)
		case ok && original == run:
			runSeen[run] = append(runSeen[run], it.env.JobID)
		}
	}
	for _, run := range rc.order {
		if len(added[run]) == 0 && len(runSeen[run]) == 0 {
			continue
		}
		if _, err := rc.st.CountRunJobs(ctx, run, added[run], runSeen[run]); err != nil {
			return fmt.Errorf("%w (the jobs are queued; resubmit again to seal the run)", err)
		}
		rc.queued[run] += len(added[run])
	}
	return nil
}

// seal seals every run something was queued into (duplicates included:
// a rerun of a resubmission stopped half-way seals what the first counted).
func (rc *runCounts) seal(ctx context.Context) ([]SealedRun, error) {
	var out []SealedRun
	for _, run := range rc.order {
		gen, err := rc.st.SealRun(ctx, run)
		if err != nil {
			return out, err
		}
		out = append(out, SealedRun{Run: run, Queued: rc.queued[run], Generation: gen})
	}
	return out, nil
}
