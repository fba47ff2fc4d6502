package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/devmode"
	"github.com/extractq/extractq/internal/devmode/stack"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/settings"
)

func newDevCmd() *cobra.Command {
	var (
		cfg                           stack.Config
		pools                         []string
		databaseURL, logFormat, level string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the whole fleet in one process: NATS, a worker, the simulator, metrics",
		Long: `dev starts everything extractq needs on one machine, in one process, for trying it and for small
jobs: an embedded NATS JetStream server (data in --data), a worker serving its pools, and with --sim
the LLM simulator (pool sim:PROFILE, no API key needed). It audits to the Postgres at
EXTRACTQ_DATABASE_URL (default the local server), creating the database if it is missing and applying
the migrations. /metrics (Prometheus), /healthz, /readyz and the simulator (under /sim, stats at
/sim/stats) and the web console (under /ui/, see extractq ui) are served on --http.

While it runs, dev writes its endpoints to dev.json in --data (.extractq), so submit and every extractq
command started in the folder holding .extractq finds it without flags (a flag or EXTRACTQ_NATS_URL / EXTRACTQ_DATABASE_URL
still wins). Ctrl-C or SIGTERM stops it gracefully: running jobs finish (within --grace), the audit is
flushed, NATS shuts down, and it exits 0; a second Ctrl-C ends it at once.

Without --sim and --pool the worker serves ` + stack.DefaultPool + ` (needs OPENAI_API_KEY).

Example:
  extractq dev --sim sloppy 2> dev.log &
  extractq dev status --wait 30s
  submit --schema examples/invoice.schema.json --provider sim:sloppy --run demo --wait examples/invoices
  extractq dev stop
  extractq dev --pool anthropic:claude-haiku-4-5=rpm:50,concurrency:4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			// Say at once, in the data folder, that dev mode is starting, and
			// why it stopped if it fails: `dev status --wait` reads it to stop
			// waiting for a dev mode that died.
			if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
				return cli.Usage(fmt.Errorf("data folder %s: %w (choose another with --data)", cfg.DataDir, err))
			}
			pid := os.Getpid()
			if err := devmode.Announce(cfg.DataDir, pid); err != nil {
				return cli.Usage(err)
			}
			defer func() {
				if err != nil {
					_ = devmode.MarkExited(cfg.DataDir, pid, err)
				}
			}()
			specs, err := ratelimit.ParsePoolSpecs(pools)
			if err != nil {
				return cli.Usage(fmt.Errorf("--pool: %w", err))
			}
			cfg.Pools = specs
			cfg.DatabaseURL = databaseURL
			if cfg.DatabaseURL == "" {
				cfg.DatabaseURL = os.Getenv("EXTRACTQ_DATABASE_URL")
			}
			log, err := settings.NewLogger(cmd.ErrOrStderr(), logFormat, level)
			if err != nil {
				return cli.Usage(err)
			}
			cfg.Log = log
			if cfg.UIToken == "" {
				cfg.UIToken = os.Getenv("EXTRACTQ_UI_TOKEN")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			s, err := stack.Start(ctx, cfg)
			if errors.Is(err, stack.ErrInvalidConfig) {
				return cli.Usage(err)
			}
			if err != nil {
				return cli.Failed(err)
			}
			// After the first signal, restore the default handling: a second
			// Ctrl-C ends a shutdown that takes too long.
			context.AfterFunc(ctx, stop)
			printEndpoints(cmd, cfg, s)
			if err := s.Wait(); err != nil {
				return cli.Failed(err)
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "extractq dev: stopped")
			return nil
		},
	}
	cmd.AddCommand(newDevStatusCmd(), newDevStopCmd())
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data", devmode.DefaultDir, "folder for JetStream data and the discovery file dev.json")
	f.StringVar(&cfg.SimProfile, "sim", "", "run the LLM simulator with this profile (clean, sloppy, flaky, rate-limited, realistic or a file) and serve pool sim:PROFILE")
	f.Uint64Var(&cfg.SimSeed, "seed", 0, "simulator seed: the same seed and documents give the same answers")
	f.StringVar(&cfg.SimAnswers, "sim-answers", "", "labels the simulator answers from (a folder with NAME.expected.json beside each document, or a JSONL): labelled documents get their labels, faults on top")
	f.StringVar(&cfg.NATSAddr, "nats-addr", stack.DefaultNATSAddr, "address of the embedded NATS server (port 0 picks a free one)")
	f.StringVar(&cfg.HTTPAddr, "http", stack.DefaultHTTPAddr, "address of /metrics, /healthz, /readyz and the simulator (port 0 picks a free one)")
	f.StringArrayVar(&pools, "pool", nil, "also serve this pool: family:model=rpm:N,tpm:N,concurrency:N (repeatable)")
	f.StringVar(&databaseURL, "database-url", "", "audit database `URL`, created if missing (default: $"+settings.EnvDatabaseURL+", else "+settings.DefaultDatabaseURL+")")
	f.StringVar(&cfg.UIToken, "ui-token", "", "`TOKEN` that lets the web console resubmit dead letters (default $EXTRACTQ_UI_TOKEN; at least 16 characters)")
	cli.DurationVar(f, &cfg.Grace, "grace", stack.DefaultGrace, "time running jobs get to finish at shutdown")
	f.StringVar(&logFormat, "log-format", "auto", "auto (text on a terminal, else JSON), json or text")
	f.StringVar(&level, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// printEndpoints tells the person what runs where and how to use it.
func printEndpoints(cmd *cobra.Command, cfg stack.Config, s *stack.Stack) {
	e := s.Endpoints()
	w := cmd.OutOrStdout()
	names := make([]string, 0, len(s.Pools()))
	for _, p := range s.Pools() {
		names = append(names, fmt.Sprintf("%s (concurrency %d)", p.Name, p.Limits.Concurrency))
	}
	data := cfg.DataDir
	if abs, err := filepath.Abs(data); err == nil {
		data = abs
	}
	fmt.Fprintf(w, "extractq dev: ready (pid %d)\n", e.PID)
	fmt.Fprintf(w, "  NATS       %s (JetStream data in %s)\n", e.NATSURL, filepath.Join(data, "jetstream"))
	fmt.Fprintf(w, "  Postgres   %s (migrated)\n", stack.RedactURL(e.DatabaseURL))
	fmt.Fprintf(w, "  metrics    %s\n", e.MetricsURL)
	if cfg.UIToken != "" {
		fmt.Fprintf(w, "  console    %s (writes enabled: log in with the UI token)\n", e.UIURL)
	} else {
		fmt.Fprintf(w, "  console    %s (read-only; --ui-token or EXTRACTQ_UI_TOKEN enables resubmission)\n", e.UIURL)
	}
	if e.SimURL != "" {
		fmt.Fprintf(w, "  simulator  %s (profile %s, seed %d; OpenAI base %s/v1, stats %s/stats)\n", e.SimURL, cfg.SimProfile, cfg.SimSeed, e.SimURL, e.SimURL)
	}
	fmt.Fprintf(w, "  pools      %s\n", strings.Join(names, ", "))
	if data == mustAbs(devmode.DefaultDir) {
		fmt.Fprintf(w, "submit and extractq commands run in %s find it through %s; Ctrl-C stops it.\n", mustAbs("."), filepath.Join(devmode.DefaultDir, devmode.FileName))
	} else {
		fmt.Fprintf(w, "elsewhere, point commands at it with: export EXTRACTQ_NATS_URL=%s; Ctrl-C stops it.\n", e.NATSURL)
	}
}

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return abs
}

func newDevStatusCmd() *cobra.Command {
	var (
		data string
		wait time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the endpoints of the extractq dev running in this folder",
		Long: `status reads the discovery file of a running extractq dev (.extractq/dev.json, or --data) and prints
its endpoints as JSON. With --wait it first waits, up to that long, until dev mode is ready to take jobs:
scripts start dev mode in the background and then wait for it with this command. It stops waiting as soon
as the dev process has died, and prints why when dev mode recorded it.
Exit 1 when no dev mode runs (or none was ready in time, or it died).

Example:
  extractq dev --sim sloppy 2> dev.log &
  extractq dev status --wait 30s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Without --wait there is one look, and its /readyz check has
			// its own timeout: a deadline of zero would fail it at once.
			ctx := cmd.Context()
			if wait > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, wait)
				defer cancel()
			}
			e, err := waitForDev(ctx, data, wait > 0, devmodeGoneGrace)
			if err != nil {
				return cli.Failed(err)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			e.DatabaseURL = stack.RedactURL(e.DatabaseURL)
			return enc.Encode(e)
		},
	}
	cmd.Flags().StringVar(&data, "data", devmode.DefaultDir, "data folder of the dev mode to look for")
	cli.DurationVar(cmd.Flags(), &wait, "wait", 0, "wait up to this long for dev mode to be ready")
	return cmd
}

// devmodeGoneGrace is how long status --wait keeps waiting after it found
// the discovery file of a dead process: a dev mode started just now may
// not have replaced the stale file of an earlier, killed one yet.
const devmodeGoneGrace = 3 * time.Second

// waitForDev polls the discovery file in data until dev mode is ready and
// answers /readyz, the process that wrote the file has died (for longer
// than grace, in case a new one takes over), or ctx ends (when waiting).
func waitForDev(ctx context.Context, data string, waiting bool, grace time.Duration) (devmode.Endpoints, error) {
	var goneSince time.Time
	var gonePID int
	for {
		e, l := devmode.Inspect(data)
		switch l {
		case devmode.Alive:
			goneSince = time.Time{}
			if e.State == devmode.StateReady && devReady(ctx, e) {
				return e, nil
			}
		case devmode.Gone:
			if goneSince.IsZero() || gonePID != e.PID {
				goneSince, gonePID = time.Now(), e.PID
			}
			if !waiting || time.Since(goneSince) >= grace {
				why := "it was killed, or crashed: see its log"
				if e.Error != "" {
					why = e.Error
				}
				return e, fmt.Errorf("extractq dev (pid %d) with data folder %s is not running: %s", e.PID, data, why)
			}
		case devmode.Absent:
			goneSince = time.Time{}
		}
		if !waiting {
			if l == devmode.Alive {
				return e, fmt.Errorf("extractq dev (pid %d) with data folder %s is still starting: wait for it with --wait 60s", e.PID, data)
			}
			return e, fmt.Errorf("no extractq dev is running with data folder %s: start one with extractq dev --sim sloppy", data)
		}
		select {
		case <-ctx.Done():
			if l == devmode.Alive {
				return e, fmt.Errorf("extractq dev (pid %d) did not become ready in %s within the wait: see its log", e.PID, data)
			}
			return e, fmt.Errorf("no extractq dev started with data folder %s within the wait: start one with extractq dev --sim sloppy", data)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// devReady reports whether dev mode's worker answers /readyz with 200.
func devReady(ctx context.Context, e devmode.Endpoints) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(e.MetricsURL, "/metrics")+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func newDevStopCmd() *cobra.Command {
	var (
		data    string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the extractq dev running in this folder, gracefully",
		Long: `stop sends SIGTERM to the extractq dev found through .extractq/dev.json (or --data), as Ctrl-C
would, and waits until it has drained its jobs, flushed the audit and exited.

Example:
  extractq dev stop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, ok := devmode.Discover(data)
			if !ok {
				return cli.Failed(fmt.Errorf("no extractq dev is running with data folder %s", data))
			}
			p, err := os.FindProcess(e.PID)
			if err == nil {
				err = p.Signal(syscall.SIGTERM)
			}
			if err != nil {
				return cli.Failed(fmt.Errorf("stop extractq dev (pid %d): %w", e.PID, err))
			}
			deadline := time.Now().Add(timeout)
			for time.Now().Before(deadline) {
				if _, ok := devmode.Discover(data); !ok {
					fmt.Fprintf(cmd.OutOrStdout(), "extractq dev (pid %d) stopped\n", e.PID)
					return nil
				}
				time.Sleep(200 * time.Millisecond)
			}
			return cli.Failed(fmt.Errorf("extractq dev (pid %d) did not stop within %s", e.PID, timeout))
		},
	}
	cmd.Flags().StringVar(&data, "data", devmode.DefaultDir, "data folder of the dev mode to stop")
	cli.DurationVar(cmd.Flags(), &timeout, "timeout", time.Minute, "how long to wait for it to exit")
	return cmd
}
