//go:build unix

package schema

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used: benchmarks report
// validations per CPU-second too, a figure that other load on a shared
// machine does not distort the way it distorts wall-clock time.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
