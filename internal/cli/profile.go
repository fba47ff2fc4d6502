package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// ProfileDirEnv names the directory a command writes its profiles to when
// its --profile-dir flag is not given.
const ProfileDirEnv = "EXTRACTQ_PROFILE_DIR"

// profileFraction samples one mutex contention event in this many: cheap
// enough to leave on for a whole run.
const profileFraction = 100

// blockRate samples every blocking event of at least this many
// nanoseconds and a shorter one with probability its length ÷ blockRate.
// It was 100 ns, which recorded nearly every channel receive and select of
// a worker with its stack: about 4% of the worker's CPU profile was the
// block profiler itself (runtime.blockevent and its tracebacks, charged to
// selectgo and the net/http connection loops).
const blockRate = 10_000

// StartProfiles profiles the process into dir (created if missing): CPU
// from now, and mutex and block contention sampled from now. stop writes
// cpu.pprof, allocs.pprof, heap.pprof, mutex.pprof and block.pprof there;
// read them with `go tool pprof BINARY DIR/cpu.pprof`. An empty dir
// profiles nothing and stop does nothing.
func StartProfiles(dir string) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profile dir %s: %w (choose another with --profile-dir or %s)", dir, err, ProfileDirEnv)
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("profile dir %s: %w (choose another with --profile-dir or %s)", dir, err, ProfileDirEnv)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, fmt.Errorf("start CPU profile: %w", err)
	}
	runtime.SetMutexProfileFraction(profileFraction)
	runtime.SetBlockProfileRate(blockRate)
	return func() error {
		pprof.StopCPUProfile()
		errs := []error{cpu.Close()}
		for _, name := range []string{"allocs", "heap", "mutex", "block"} {
			errs = append(errs, writeProfile(filepath.Join(dir, name+".pprof"), name))
		}
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
		return errors.Join(errs...)
	}, nil
}

func writeProfile(path, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s profile: %w", name, err)
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write %s profile: %w", name, err)
	}
	return f.Close()
}
