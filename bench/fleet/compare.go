package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runCompare builds bench/fleet of rev (in a git worktree in a temporary
// directory) and of the working tree, runs them one after the other for
// rounds rounds (alternating which goes first, so a change in the machine's
// load falls on both), and prints each round's figures and the ratios of
// the working tree to rev: median and spread over the rounds. Only ratios
// within a round mean anything on a shared machine.
//
// With sameHarness, rev's tree gets this tree's bench/fleet and
// internal/cpustat before it is built: both then print the same figures
// (the CPU by process of an older revision too), while the worker, the
// simulator, submit and the audit code stay rev's.
func runCompare(rev string, rounds int, sameHarness bool, args []string) error {
	if rounds < 1 {
		return fmt.Errorf("-rounds %d: must be at least 1", rounds)
	}
	tmp, err := os.MkdirTemp("", "extractq-bench-compare")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	here, err := os.Getwd()
	if err != nil {
		return err
	}
	base := filepath.Join(tmp, "base")
	if out, err := exec.Command("git", "worktree", "add", "--detach", base, rev).CombinedOutput(); err != nil {
		return fmt.Errorf("git worktree add %s: %v\n%s", rev, err, out)
	}
	defer exec.Command("git", "worktree", "remove", "--force", base).Run()
	if sameHarness {
		for _, dir := range harnessDirs {
			if err := os.RemoveAll(filepath.Join(base, dir)); err != nil {
				return err
			}
			if err := os.CopyFS(filepath.Join(base, dir), os.DirFS(filepath.Join(here, dir))); err != nil {
				return fmt.Errorf("-same-harness: copy %s into %s's tree: %w", dir, rev, err)
			}
		}
	}
	trees := []struct{ name, dir, bin string }{
		{rev, base, filepath.Join(tmp, "bench-base")},
		{"working tree", here, filepath.Join(tmp, "bench-new")},
	}
	for _, t := range trees {
		cmd := exec.Command("go", "build", "-o", t.bin, "./bench/fleet")
		cmd.Dir = t.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build bench/fleet of %s: %v\n%s", t.name, err, out)
		}
	}
	pass := childArgs(args)
	var base2, new2 []figures
	for round := range rounds {
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		var got [2]figures
		for _, k := range order {
			t := trees[k]
			// A run may fail on a loaded machine (an older revision's raw
			// publish gave up after 200ms without acks): run it again.
			var out bytes.Buffer
			for try := 1; ; try++ {
				out.Reset()
				cmd := exec.Command(t.bin, pass...)
				cmd.Dir = t.dir // each builds its own cmd/worker
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				if err == nil {
					break
				}
				if try == 3 {
					return fmt.Errorf("round %d, %s: %v\n%s", round+1, t.name, err, out.String())
				}
				fmt.Printf("round %d, %s: failed (%v), run again\n", round+1, t.name, err)
			}
			got[k] = parseFigures(out.String())
			fmt.Printf("round %d, %s: %s\n", round+1, t.name, got[k])
		}
		base2, new2 = append(base2, got[0]), append(new2, got[1])
	}
	fmt.Printf("\n%s → working tree, %d rounds (%s), median [min–max] of the rounds' ratios:\n", rev, rounds, strings.Join(pass, " "))
	for _, m := range []struct {
		name string
		f    func(figures) float64
		unit string
	}{
		{"worker CPU per document", func(f figures) float64 { return f.cpuUS }, "µs"},
		{"Postgres CPU, workers", func(f figures) float64 { return f.workerPGUS }, "µs/doc"},
		{"Postgres CPU, submit", func(f figures) float64 { return f.submitPGUS }, "µs/doc"},
		{"submit CPU, this process", func(f figures) float64 { return f.submitUS }, "µs/doc"},
		{"raw publish CPU next to it", func(f figures) float64 { return f.rawNearUS }, "µs/msg"},
		{"raw CPU ÷ submit CPU", func(f figures) float64 { return f.submitCPUFrac() }, "%"},
		{"end to end ÷ raw JetStream", func(f figures) float64 { return f.e2eFrac() }, "%"},
		{"submit ÷ raw publish", func(f figures) float64 { return f.submitFrac() }, "%"},
		{"submit ÷ raw next to it", func(f figures) float64 { return f.submitNearFrac() }, "%"},
		{"end to end", func(f figures) float64 { return f.e2e }, "docs/s"},
		{"first job acked after", func(f figures) float64 { return f.firstAckMS }, "ms"},
		{"submit", func(f figures) float64 { return f.submit }, "docs/s"},
		{"simulator CPU per document", func(f figures) float64 { return f.simUS }, "µs"},
		{"NATS server (+polls) CPU", func(f figures) float64 { return f.benchUS }, "µs/doc"},
		{"NATS msgs worker → server", func(f figures) float64 { return f.natsIn }, "/doc"},
		{"NATS msgs server → worker", func(f figures) float64 { return f.natsOut }, "/doc"},
		{"CPU per document, all", func(f figures) float64 { return f.fleetCPU }, "µs"},
		{"CPU-bound e2e ÷ raw", func(f figures) float64 { return f.cpuBound }, "%"},
		{"… without the simulator", func(f figures) float64 { return f.cpuBoundNoSim }, "%"},
	} {
		var ratios, bs, ns []float64
		for i := range base2 {
			b, n := m.f(base2[i]), m.f(new2[i])
			bs, ns = append(bs, b), append(ns, n)
			if b > 0 && n > 0 {
				ratios = append(ratios, n/b)
			}
		}
		if len(ratios) == 0 {
			fmt.Printf("  %-28s %s → %s %s (no ratio: %s does not print it)\n", m.name, fmtMedian(bs), fmtMedian(ns), m.unit, rev)
			continue
		}
		lo, hi := slices.Min(ratios), slices.Max(ratios)
		fmt.Printf("  %-28s %s → %s %s   ×%.2f [%.2f–%.2f]\n", m.name, fmtMedian(bs), fmtMedian(ns), m.unit, median(ratios), lo, hi)
	}
	return nil
}

// harnessDirs are what -same-harness copies into the compared revision.
var harnessDirs = []string{"bench/fleet", "internal/cpustat"}

// childArgs are the flags passed on to both runs: all but -compare and
// -rounds.
func childArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		if k := strings.IndexByte(name, '='); k >= 0 {
			name = name[:k]
		}
		if name == "compare" || name == "rounds" || name == "same-harness" {
			if !strings.Contains(a, "=") && name != "same-harness" {
				i++ // its value
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// figures are what a run of bench/fleet printed; zero where an older
// revision does not print a figure.
type figures struct {
	submit, e2e, cpuUS, rawPublish, rawAll float64
	rawNear                                float64 // raw publish next to submit (newer revisions)
	fleetCPU, cpuBound, cpuBoundNoSim      float64 // CPU per document of all processes, and the CPU-bound ratios (newer revisions, or -same-harness)
	workerPGUS, submitPGUS                 float64 // Postgres CPU per document, worker phase (newer revisions) and submit
	simUS                                  float64 // the simulator's CPU per document, with -sim-process
	submitUS, rawNearUS                    float64 // this process's CPU per document in submit, and per message in the raw publish next to it
	benchUS                                float64 // this process's CPU per document during end to end: the embedded NATS server and the bench's polls (and the simulator without -sim-process)
	natsIn, natsOut                        float64 // NATS messages per document, worker → server and server → worker
	firstAckMS                             float64 // from the workers' start to the first job acked, in milliseconds (the worker's start-up)
}

// submitCPUFrac is raw publish's CPU per message over submit's per
// document, both of the bench's process (the client and the embedded
// server): the ratio submit ÷ raw would reach if CPU alone set the pace.
func (f figures) submitCPUFrac() float64 {
	if f.submitUS == 0 || f.rawNearUS == 0 {
		return 0
	}
	return 100 * f.rawNearUS / f.submitUS
}

func (f figures) e2eFrac() float64 {
	if f.rawAll == 0 {
		return 0
	}
	return 100 * f.e2e / f.rawAll
}

func (f figures) submitFrac() float64 {
	if f.rawPublish == 0 {
		return 0
	}
	return 100 * f.submit / f.rawPublish
}

// submitNearFrac is submit ÷ the raw publish measured next to submit
// (zero for revisions that do not print it).
func (f figures) submitNearFrac() float64 {
	if f.rawNear == 0 {
		return 0
	}
	return 100 * f.submit / f.rawNear
}

func (f figures) String() string {
	s := fmt.Sprintf("worker CPU %.0f µs/doc, end to end %.0f docs/s (%.1f%% of raw %.0f), submit %.0f docs/s (%.1f%% of raw publish %.0f",
		f.cpuUS, f.e2e, f.e2eFrac(), f.rawAll, f.submit, f.submitFrac(), f.rawPublish)
	if f.rawNear > 0 {
		s += fmt.Sprintf("; %.1f%% of %.0f next to it", f.submitNearFrac(), f.rawNear)
	}
	s += ")"
	if f.fleetCPU > 0 {
		s += fmt.Sprintf(", all processes %.0f µs/doc, CPU-bound %.1f%%", f.fleetCPU, f.cpuBound)
	}
	if f.cpuBoundNoSim > 0 {
		s += fmt.Sprintf(" (%.1f%% without the simulator)", f.cpuBoundNoSim)
	}
	if f.simUS > 0 {
		s += fmt.Sprintf(", simulator %.0f µs/doc", f.simUS)
	}
	if f.benchUS > 0 {
		s += fmt.Sprintf(", NATS server (+polls) %.0f µs/doc", f.benchUS)
	}
	if f.natsIn > 0 {
		s += fmt.Sprintf(", NATS msgs/doc %.2f in %.2f out", f.natsIn, f.natsOut)
	}
	if f.firstAckMS > 0 {
		s += fmt.Sprintf(", first job acked after %.0fms", f.firstAckMS)
	}
	return s
}

var figureLines = []struct {
	re  *regexp.Regexp
	set func(*figures, float64)
}{
	{regexp.MustCompile(`submit \(store in Postgres \+ publish\):\s+([0-9.]+)`), func(f *figures, v float64) { f.submit = v }},
	{regexp.MustCompile(`end to end \(pull, extract, audit, ack\):\s+([0-9.]+)`), func(f *figures, v float64) { f.e2e = v }},
	{regexp.MustCompile(`worker CPU per document:\s+([0-9.]+)`), func(f *figures, v float64) { f.cpuUS = v }},
	{regexp.MustCompile(`Postgres CPU per document, workers:\s+([0-9.]+)`), func(f *figures, v float64) { f.workerPGUS = v }},
	{regexp.MustCompile(`submit CPU per document:.*\+ ([0-9.]+) µs in Postgres`), func(f *figures, v float64) { f.submitPGUS = v }},
	{regexp.MustCompile(`submit CPU per document:\s+([0-9.]+) µs`), func(f *figures, v float64) { f.submitUS = v }},
	{regexp.MustCompile(`raw publish CPU per message:\s+([0-9.]+) µs`), func(f *figures, v float64) { f.rawNearUS = v }},
	{regexp.MustCompile(`raw JetStream publish:\s+([0-9.]+)`), func(f *figures, v float64) { f.rawPublish = v }},
	{regexp.MustCompile(`raw JetStream publish next to submit:\s+([0-9.]+)`), func(f *figures, v float64) { f.rawNear = v }},
	{regexp.MustCompile(`raw JetStream publish\+consume\+ack:\s+([0-9.]+)`), func(f *figures, v float64) { f.rawAll = v }},
	{regexp.MustCompile(`CPU per document by process:.*; sum ([0-9.]+) µs`), func(f *figures, v float64) { f.fleetCPU = v }},
	{regexp.MustCompile(`simulator ([0-9.]+) µs \(its own process\)`), func(f *figures, v float64) { f.simUS = v }},
	{regexp.MustCompile(`this process \(embedded NATS server, bench polls\) ([0-9.]+) µs`), func(f *figures, v float64) { f.benchUS = v }},
	{regexp.MustCompile(`NATS messages worker→server ([0-9.]+)`), func(f *figures, v float64) { f.natsIn = v }},
	{regexp.MustCompile(`NATS messages worker→server [0-9.]+, server→worker ([0-9.]+)`), func(f *figures, v float64) { f.natsOut = v }},
	{regexp.MustCompile(`CPU-bound end to end ÷ raw:\s+([0-9.]+)`), func(f *figures, v float64) { f.cpuBound = v }},
	{regexp.MustCompile(`the same without the simulator:\s+([0-9.]+)`), func(f *figures, v float64) { f.cpuBoundNoSim = v }},
}

func parseFigures(out string) figures {
	var f figures
	for _, l := range figureLines {
		if m := l.re.FindStringSubmatch(out); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			l.set(&f, v)
		}
	}
	if m := firstAckLine.FindStringSubmatch(out); m != nil {
		if d, err := time.ParseDuration(m[1]); err == nil {
			f.firstAckMS = float64(d) / float64(time.Millisecond)
		}
	}
	return f
}

// firstAckLine is the worker's start-up, a Go duration ("62ms", "1.2s").
var firstAckLine = regexp.MustCompile(`first job acked after:\s+(\S+)`)

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtMedian(v []float64) string {
	var ok []float64
	for _, x := range v {
		if x > 0 && !math.IsNaN(x) {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return "—"
	}
	m := median(ok)
	if m >= 100 {
		return strconv.FormatFloat(m, 'f', 0, 64)
	}
	return strconv.FormatFloat(m, 'f', 1, 64)
}
