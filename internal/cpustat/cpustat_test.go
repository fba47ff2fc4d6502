package cpustat_test

import (
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit/audittest"
	"github.com/extractq/extractq/internal/cpustat"
)

// TestBackendsCountWork: a backend that computes for a while shows CPU
// time, so the figures the benchmarks print are not zeros.
func TestBackendsCountWork(t *testing.T) {
	t.Parallel()
	st, _ := audittest.Store(t)
	before, err := cpustat.Backends(t.Context(), st.Pool())
	if err != nil {
		t.Fatal(err)
	}
	if len(before) == 0 {
		t.Fatal("no backend of the test database found in /proc (the server must run on this machine)")
	}
	self0 := cpustat.Self()
	if _, err := st.Pool().Exec(t.Context(), "SELECT count(*) FROM generate_series(1, 3000000)"); err != nil {
		t.Fatal(err)
	}
	pg, err := cpustat.Since(t.Context(), st.Pool(), before)
	if err != nil {
		t.Fatal(err)
	}
	if pg < 10*time.Millisecond {
		t.Errorf("backends' CPU %s after counting 3 million rows, want some", pg)
	}
	if cpustat.Self() < self0 {
		t.Error("this process's CPU went backwards")
	}
}
