// Package cpustat reads CPU time for benchmarks: this process's, and that
// of the Postgres backends serving a database, so that a benchmark can give
// CPU per document, steadier than a rate on a loaded machine.
package cpustat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Self is this process's user+system CPU time.
func Self() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Backends is the CPU time of each Postgres backend connected to pool's
// database, the one asking included, from /proc: only a server on this
// machine is counted (another's backends are left out).
func Backends(ctx context.Context, pool *pgxpool.Pool) (map[int]time.Duration, error) {
	rows, err := pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err != nil {
		return nil, fmt.Errorf("list the database's backends: %w", err)
	}
	var pid int
	out := map[int]time.Duration{}
	_, err = pgx.ForEachRow(rows, []any{&pid}, func() error {
		if t, ok := procCPU(pid); ok {
			out[pid] = t
		}
		return nil
	})
	return out, err
}

// Since is the CPU the backends spent since before was read (Backends); a
// backend started since counts from zero.
func Since(ctx context.Context, pool *pgxpool.Pool, before map[int]time.Duration) (time.Duration, error) {
	now, err := Backends(ctx, pool)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for pid, t := range now {
		sum += t - before[pid]
	}
	return sum, nil
}

// procCPU reads a process's utime+stime from /proc/PID/stat.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command name (in parentheses, and it may hold
	// spaces) start at the state; utime and stime are the 12th and 13th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100), true // USER_HZ is 100 on Linux
}

// Process is the user+system CPU time of process pid so far, from /proc;
// false if it cannot be read (the process is gone, or not on this machine).
func Process(pid int) (time.Duration, bool) { return procCPU(pid) }

// Machine is the whole machine's busy CPU time (every process's, all CPUs)
// and the time all CPUs have run at all (busy and idle), from /proc/stat:
// the difference of two readings gives how busy the machine was between
// them, whoever kept it busy.
func Machine() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("read the machine's CPU times: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("unexpected first line of /proc/stat: %q", line)
	}
	// user nice system idle iowait irq softirq steal (guest is in user).
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat field %d: %w", i+1, err)
		}
		d := time.Duration(v) * (time.Second / 100)
		total += d
		if i != 3 && i != 4 { // idle, iowait
			busy += d
		}
	}
	return busy, total, nil
}
