package cpustat_test

import (
	"os"
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

// TestProcessAndMachineCountWork: spinning for a while shows in this
// process's /proc figure and in the machine's busy time.
func TestProcessAndMachineCountWork(t *testing.T) {
	t.Parallel()
	p0, ok := cpustat.Process(os.Getpid())
	if !ok {
		t.Fatal("cannot read this process's CPU from /proc")
	}
	busy0, total0, err := cpustat.Machine()
	if err != nil {
		t.Fatal(err)
	}
	for self0 := cpustat.Self(); cpustat.Self()-self0 < 100*time.Millisecond; {
	}
	p1, _ := cpustat.Process(os.Getpid())
	busy1, total1, err := cpustat.Machine()
	if err != nil {
		t.Fatal(err)
	}
	if p1-p0 < 50*time.Millisecond {
		t.Errorf("process CPU grew %s after spinning 100ms, want ≥ 50ms", p1-p0)
	}
	if busy1-busy0 < 50*time.Millisecond || total1-total0 < busy1-busy0 {
		t.Errorf("machine busy grew %s of %s after spinning 100ms", busy1-busy0, total1-total0)
	}
	if _, ok := cpustat.Process(-1); ok {
		t.Error("Process(-1) read something")
	}
}
