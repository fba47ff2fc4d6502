package fleet

import (
	"testing"

	"github.com/extractq/extractq/internal/audit/audittest"
)

// A submission that stops half-way has counted what it queued, and does not
// seal; the same submission run again counts what it queues anew and
// seals: the run awaits the jobs of both.
func TestRunCountCountsAnInterruptedSubmission(t *testing.T) {
	t.Parallel()
	st, _ := audittest.Store(t)
	ctx := t.Context()
	first := startRunCount(ctx, st, "nightly")
	for _, q := range []int{500, 1000, 1200} { // the summaries after each batch
		first.progress(q)
	}
	if err := first.stop(ctx); err != nil {
		t.Fatal(err)
	}
	d, ok, err := st.RunDoneState(ctx, "nightly")
	if err != nil || !ok || d.Jobs != 1200 || d.Sealed != 0 {
		t.Fatalf("after the interrupted submission: %+v, %v, %v; want 1200 jobs counted, not sealed", d, ok, err)
	}
	again := startRunCount(ctx, st, "nightly")
	again.progress(300)
	again.progress(800)
	if err := again.stop(ctx); err != nil {
		t.Fatal(err)
	}
	c := &Client{store: st}
	gen, err := c.SealRun(ctx, "nightly")
	if err != nil || gen != 1 {
		t.Fatalf("seal: %d, %v", gen, err)
	}
	if d, _, err := st.RunDoneState(ctx, "nightly"); err != nil || d.Jobs != 2000 || d.Sealed != 1 || d.Done() {
		t.Fatalf("after the rerun: %+v, %v; want 2000 jobs counted, sealed, not done", d, err)
	}
}
