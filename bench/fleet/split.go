package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/cpustat"
	"github.com/extractq/extractq/internal/sim"
)

// simChildEnv, set in the environment of this program, makes it serve the
// simulator (the profile named by the value) on a loopback port, print
// the address, and serve until its standard input closes: -sim-process
// runs the simulator so, apart from the bench, as a remote provider would
// be, so that its CPU is counted on its own.
const simChildEnv = "EXTRACTQ_BENCH_FLEET_SIM"

// simChildTLSEnv, set beside simChildEnv, makes the simulator's process
// serve https with the certificate and key files it names ("CERT,KEY").
const simChildTLSEnv = "EXTRACTQ_BENCH_FLEET_SIM_TLS"

// serveSimChild is this program run as the simulator's process.
// It profiles itself into the directory in cli.ProfileDirEnv, if set.
func serveSimChild(prof sim.Profile) error {
	stopProfile, err := cli.StartProfiles(os.Getenv(cli.ProfileDirEnv))
	if err != nil {
		return err
	}
	defer stopProfile()
	var cf *certFiles
	if v := os.Getenv(simChildTLSEnv); v != "" {
		cert, key, _ := strings.Cut(v, ",")
		cf = &certFiles{cert: cert, key: key}
	}
	s := sim.New(prof)
	url, stop, err := simOnLoopback(s, cf)
	if err != nil {
		return err
	}
	fmt.Println(url)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the bench closes it or exits
	return stop()
}

// simProcess is the simulator running in a child process.
type simProcess struct {
	cmd   *exec.Cmd
	hc    *http.Client // trusts the simulator's certificate with -tls
	stdin io.Closer
	url   string
}

// startSimProcess starts this program as the simulator's process, under
// taskset -c cpus if cpus is set, serving https with cf when set.
func startSimProcess(profile, cpus, profileDir string, cf *certFiles) (*simProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	if cpus != "" {
		cmd = exec.Command("taskset", "-c", cpus, self) // taskset execs: the same pid
	} else {
		cmd = exec.Command(self)
	}
	cmd.Env = append(os.Environ(), simChildEnv+"="+profile)
	if cf != nil {
		cmd.Env = append(cmd.Env, simChildTLSEnv+"="+cf.cert+","+cf.key)
	}
	if profileDir != "" {
		cmd.Env = append(cmd.Env, cli.ProfileDirEnv+"="+filepath.Join(profileDir, "sim"))
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the simulator's process: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = in.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the simulator's process printed no address: %w", err)
	}
	hc := http.DefaultClient
	if cf != nil {
		if hc, err = cf.client(); err != nil {
			_ = in.Close()
			_ = cmd.Wait()
			return nil, err
		}
	}
	return &simProcess{cmd: cmd, hc: hc, stdin: in, url: strings.TrimSpace(line)}, nil
}

// cpu is the simulator process's CPU so far.
func (p *simProcess) cpu() time.Duration {
	d, _ := cpustat.Process(p.cmd.Process.Pid)
	return d
}

// requests reads the simulator's request count from its /stats.
func (p *simProcess) requests(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/stats", nil)
	if err != nil {
		return 0, err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st sim.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("decode the simulator's /stats: %w", err)
	}
	return st.Requests, nil
}

func (p *simProcess) stop() error {
	_ = p.stdin.Close()
	return p.cmd.Wait()
}

// cpuSplit is the CPU each part of the fleet spent during the end-to-end
// phase, and the machine's.
type cpuSplit struct {
	bench, sim, pg       time.Duration // this process (NATS server, polls, and the simulator unless apart); the simulator's process; the audit database's backends
	pgPolls              time.Duration // of pg, the backend answering the bench's polls
	machineBusy, machine time.Duration // the whole machine's busy CPU time, and its CPUs' time
}

// splitMark is a reading of the counters cpuSplit is made of.
type splitMark struct {
	bench, sim           time.Duration
	pg                   map[int]time.Duration
	machineBusy, machine time.Duration
}

func markSplit(ctx context.Context, st *audit.Store, sp *simProcess) (m splitMark, err error) {
	m.bench = cpustat.Self()
	if sp != nil {
		m.sim = sp.cpu()
	}
	if m.machineBusy, m.machine, err = cpustat.Machine(); err != nil {
		return m, err
	}
	m.pg, err = cpustat.Backends(ctx, st.Pool())
	return m, err
}

// since is the split from m to now; pollPID is the backend of the bench's
// polls.
func (m splitMark) since(ctx context.Context, st *audit.Store, sp *simProcess, pollPID int) (cpuSplit, error) {
	now, err := markSplit(ctx, st, sp)
	if err != nil {
		return cpuSplit{}, err
	}
	s := cpuSplit{bench: now.bench - m.bench, sim: now.sim - m.sim,
		machineBusy: now.machineBusy - m.machineBusy, machine: now.machine - m.machine}
	for pid, t := range now.pg {
		s.pg += t - m.pg[pid] // a backend started since counts from zero
	}
	s.pgPolls = now.pg[pollPID] - m.pg[pollPID]
	return s, nil
}

// printSplit writes the CPU per document of each part of the fleet, the
// machine's load, and what the CPU alone says about end to end ÷ raw.
func (r result) printSplit(n float64, simApart bool) {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / n }
	s := r.split
	fleet := r.cpu + s.bench + s.sim + s.pg
	simNote := "the simulator runs in this process: counted with NATS"
	if simApart {
		simNote = fmt.Sprintf("simulator %.0f µs (its own process)", us(s.sim))
	}
	fmt.Printf("  CPU per document by process:           worker %.0f µs, this process (embedded NATS server, bench polls) %.0f µs, Postgres backends %.0f µs (%.1f of it the bench's polls), %s; sum %.0f µs\n",
		us(r.cpu), us(s.bench), us(s.pg), us(s.pgPolls), simNote, us(fleet))
	fmt.Printf("  first job acked after:                 %8s (the worker's start-up is part of end to end)\n", r.firstSettled.Round(time.Millisecond))
	if s.machine > 0 {
		fmt.Printf("  machine during end to end:             %.0f%% of its %d CPUs busy (%.0f µs per document), %.0f%% of that by the processes above; the rest is other work\n",
			100*float64(s.machineBusy)/float64(s.machine), runtime.NumCPU(), us(s.machineBusy), 100*float64(fleet)/float64(max(s.machineBusy, 1)))
	}
	if r.rawAllCPU > 0 {
		raw := us(r.rawAllCPU)
		fmt.Printf("  raw publish+consume+ack CPU per msg:   %8.1f µs    (this process: client and the embedded NATS server)\n", raw)
		fmt.Printf("  CPU-bound end to end ÷ raw:            %8.1f %%     (raw's CPU per message ÷ the fleet's per document: what the ratio tends to when the CPUs are the limit)\n", 100*raw/us(fleet))
		if simApart {
			fmt.Printf("  the same without the simulator:        %8.1f %%     (its CPU belongs to a remote provider, not to the fleet)\n", 100*raw/us(fleet-s.sim))
		}
	}
}
