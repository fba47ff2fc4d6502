package main

import (
	"slices"
	"testing"
	"time"
)

// TestChildArgs: the flags that drive the comparison are not passed on to
// the runs, whatever their spelling; all others are.
func TestChildArgs(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want []string }{
		{[]string{"-compare", "s2base", "-rounds", "2", "-docs", "5000"}, []string{"-docs", "5000"}},
		{[]string{"-compare=main", "--rounds=3", "-same-harness", "-sim-process"}, []string{"-sim-process"}},
		{[]string{"-same-harness=true", "-docs=20000", "-compare", "x"}, []string{"-docs=20000"}},
	}
	for _, tc := range cases {
		if got := childArgs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("childArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestParseFigures reads the lines a run prints, the CPU split's included,
// and leaves at zero what an older revision does not print.
func TestParseFigures(t *testing.T) {
	t.Parallel()
	out := `  submit (store in Postgres + publish):     37457 docs/s  (267ms)
  end to end (pull, extract, audit, ack):     2091 docs/s  (4.783s, 10000 simulator calls)
  worker CPU per document:                    177 µs    (1.766s user+sys over 10000 documents)
  raw JetStream publish:                    96318 msgs/s (505-byte messages, same server)
  raw JetStream publish+consume+ack:        42616 msgs/s (505-byte messages, same server)
  raw publish CPU per message:               11.4 µs    (this process: client and the embedded NATS server)
  submit CPU per document:                   19.0 µs    (this process: submit and the embedded NATS server) + 8.7 µs in Postgres (the audit database's backends)
  CPU per document by process:           worker 177 µs, this process (embedded NATS server, bench polls) 52 µs, Postgres backends 78 µs (2.1 of it the bench's polls), simulator 100 µs (its own process); sum 406 µs
  per document: NATS messages worker→server 1.20, server→worker 1.00; Postgres transactions 0.05; worker log records 0.00
  CPU-bound end to end ÷ raw:                 4.4 %     (raw's CPU per message ÷ …)
  the same without the simulator:             5.9 %     (its CPU …)
  first job acked after:                     62ms (the worker's start-up is part of end to end)
`
	want := figures{submit: 37457, e2e: 2091, cpuUS: 177, rawPublish: 96318, rawAll: 42616, fleetCPU: 406, cpuBound: 4.4, cpuBoundNoSim: 5.9, simUS: 100,
		rawNearUS: 11.4, submitUS: 19.0, submitPGUS: 8.7, benchUS: 52, natsIn: 1.20, natsOut: 1.00, firstAckMS: 62}
	if got := parseFigures(out); got != want {
		t.Errorf("parseFigures = %+v, want %+v", got, want)
	}
	old := `  end to end (pull, extract, audit, ack):     2091 docs/s  (4.783s, 10000 simulator calls)
`
	if got := parseFigures(old); got != (figures{e2e: 2091}) {
		t.Errorf("an older run's output: %+v", got)
	}
}

// TestPollWait: the end-to-end phase polls often while the workers start
// and once the messages left would drain before the next slow poll, so the
// run's end is not timed up to 50 ms late.
func TestPollWait(t *testing.T) {
	t.Parallel()
	cases := []struct {
		left, drained uint64
		started       bool
		want          time.Duration
	}{
		{10000, 0, false, 2 * time.Millisecond},   // workers starting
		{9000, 1000, true, 50 * time.Millisecond}, // mid-run
		{400, 450, true, 2 * time.Millisecond},    // would drain before the next slow poll
		{0, 12, true, 2 * time.Millisecond},       // done: the count confirms it
		{5000, 0, true, 50 * time.Millisecond},    // stalled (retries waiting)
	}
	for _, tc := range cases {
		if got := pollWait(tc.left, tc.drained, tc.started); got != tc.want {
			t.Errorf("pollWait(%d, %d, %v) = %s, want %s", tc.left, tc.drained, tc.started, got, tc.want)
		}
	}
}
