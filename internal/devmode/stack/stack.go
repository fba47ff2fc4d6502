// Package stack assembles `extractq dev`: one process holding an embedded
// NATS JetStream server, the Postgres audit database (created if missing),
// optionally the LLM simulator, and the fleet worker run by worker.Serve,
// the same assembly as `worker run` (pools, audit, /metrics, /healthz,
// /readyz), whose listener also serves the simulator. While it runs it
// publishes its endpoints for devmode.Discover.
package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/extractq/extractq/internal/devmode"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/internal/settings"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/internal/worker"
)

// ErrInvalidConfig is matched by errors that mean the configuration, not
// the machine, is wrong (a CLI maps it to a usage error).
var ErrInvalidConfig = errors.New("invalid dev-mode configuration")

// Defaults of Config.
const (
	// DefaultNATSAddr is not NATS's usual 4222, so that dev mode runs
	// beside a NATS server already on the machine.
	DefaultNATSAddr = "127.0.0.1:4223"
	DefaultHTTPAddr = "127.0.0.1:9464"
	// DefaultPool is served when neither a simulator nor a pool is named.
	DefaultPool  = "openai:gpt-4o-mini"
	DefaultGrace = 10 * time.Second
	// SimPath is where the simulator's APIs and /stats are served on the
	// HTTP listener.
	SimPath = "/sim"
)

// Config is what a dev-mode process runs. Zero fields take the defaults
// above; DataDir defaults to devmode.DefaultDir and DatabaseURL to
// settings.DefaultDatabaseURL.
type Config struct {
	DataDir     string // JetStream storage and the discovery file; created if missing
	NATSAddr    string // host:port of the embedded NATS server; port 0 picks a free one
	HTTPAddr    string // host:port of /metrics, /healthz, /readyz and the simulator; port 0 picks a free one
	DatabaseURL string
	// SimProfile runs the in-process simulator with this built-in profile
	// or profile file, and serves the pool "sim:SimProfile".
	SimProfile string
	SimSeed    uint64
	// SimAnswers names labels the simulator answers from (sim.AnswerKey):
	// a labelled document gets its label, the profile's faults on top.
	SimAnswers string
	// Pools are served in addition to the simulator's pool; with neither,
	// the worker serves DefaultPool.
	Pools []ratelimit.PoolSpec
	Grace time.Duration // in-flight jobs' time to finish at shutdown
	// UIToken, when set, lets the web console under UIPath resubmit dead
	// letters for whoever logs in with it; without it the console reads only.
	UIToken string
	Log     *slog.Logger
}

func (c *Config) defaults() {
	if c.DataDir == "" {
		c.DataDir = devmode.DefaultDir
	}
	if c.NATSAddr == "" {
		c.NATSAddr = DefaultNATSAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = settings.DefaultDatabaseURL
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
}

// pools returns the pool specs to serve: the simulator's, then the
// configured ones, or DefaultPool when there are none.
func (c *Config) pools() ([]ratelimit.PoolSpec, error) {
	var specs []ratelimit.PoolSpec
	if c.SimProfile != "" {
		specs = append(specs, ratelimit.PoolSpec{
			Name: "sim:" + c.SimProfile, Provider: "sim", Model: c.SimProfile,
			Limits: ratelimit.Limits{Concurrency: ratelimit.DefaultConcurrency},
		})
	}
	for _, p := range c.Pools {
		if c.SimProfile != "" && jobs.PoolFor(p.Name) == jobs.PoolFor(specs[0].Name) {
			specs[0] = p // an explicit --pool sets the simulator pool's limits
			continue
		}
		specs = append(specs, p)
	}
	if len(specs) == 0 {
		p, err := ratelimit.ParsePoolSpec(DefaultPool)
		if err != nil {
			return nil, err
		}
		specs = append(specs, p)
	}
	if err := ratelimit.Validate(specs); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return specs, nil
}

// Stack is a running dev mode. Create it with Start; Wait returns after it
// has shut down.
type Stack struct {
	cfg       Config
	log       *slog.Logger
	endpoints devmode.Endpoints
	pools     []ratelimit.PoolSpec

	ns  *server.Server
	sim *sim.Server
	ui  *devConsole

	ran chan error // worker.Serve's result
}

// Start brings dev mode up: NATS, the audit database (created if missing),
// the simulator, then the worker with its HTTP endpoints (worker.Serve
// migrates and creates the streams), and publishes the endpoints in the
// data folder once the worker pulls jobs. The worker runs until ctx ends;
// then call Wait. On error everything started is stopped again.
func Start(ctx context.Context, cfg Config) (_ *Stack, err error) {
	cfg.defaults()
	s := &Stack{cfg: cfg, log: cfg.Log, ran: make(chan error, 1)}
	if s.pools, err = cfg.pools(); err != nil {
		return nil, err
	}
	var profile sim.Profile
	simOpts := []sim.Option{sim.WithSeed(cfg.SimSeed)}
	if cfg.SimProfile != "" {
		if profile, err = sim.LoadProfile(cfg.SimProfile); err != nil {
			return nil, fmt.Errorf("%w: --sim: %w", ErrInvalidConfig, err)
		}
		if cfg.SimAnswers != "" {
			key, err := sim.LoadAnswerKey(cfg.SimAnswers)
			if err != nil {
				return nil, fmt.Errorf("%w: --sim-answers: %w", ErrInvalidConfig, err)
			}
			simOpts = append(simOpts, sim.WithAnswers(key))
		}
	}
	// A pool whose provider cannot be built (a missing API key) would
	// dead-letter every job it pulls: refuse to start instead.
	if err := worker.CheckProviders(s.pools, func(spec string) (llm.Provider, error) {
		if usesProfile(spec, cfg.SimProfile) {
			return nil, nil // the profile loaded above; the shared simulator starts below
		}
		return providers.New(spec)
	}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data folder %s: %w (choose another with --data)", cfg.DataDir, err)
	}
	if other, ok := devmode.Discover(cfg.DataDir); ok {
		return nil, fmt.Errorf("another extractq dev (pid %d) is running with data folder %s: stop it, or pass a different --data", other.PID, cfg.DataDir)
	}
	httpLn, err := listen(cfg.HTTPAddr, "--http")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			httpLn.Close()
			s.stop()
		}
	}()
	if err := s.startNATS(); err != nil {
		return nil, err
	}
	if err := ensureDatabase(ctx, cfg.DatabaseURL, s.log); err != nil {
		return nil, err
	}

	wcfg := worker.DefaultConfig()
	wcfg.NATSURL, wcfg.DatabaseURL, wcfg.Listen = s.ns.ClientURL(), cfg.DatabaseURL, ""
	wcfg.WorkerID = fmt.Sprintf("dev-%d", os.Getpid())
	wcfg.Pools, wcfg.Grace, wcfg.Migrate = s.pools, cfg.Grace, true
	opts := []worker.ServeOption{
		worker.WithListener(httpLn),
		worker.WithWorkerOptions(worker.WithProviders(s.newProvider)),
	}
	if cfg.SimProfile != "" {
		s.sim = sim.New(profile, simOpts...)
		opts = append(opts, worker.WithRoute(SimPath+"/", http.StripPrefix(SimPath, s.sim.Handler())))
	}
	if err := s.startConsole(ctx); err != nil {
		return nil, err
	}
	opts = append(opts, worker.WithRoute(UIPath+"/", s.ui.h))
	base := "http://" + httpLn.Addr().String()
	s.endpoints = devmode.Endpoints{
		NATSURL: s.ns.ClientURL(), DatabaseURL: cfg.DatabaseURL, MetricsURL: base + "/metrics", PID: os.Getpid(),
		UIURL: base + UIPath + "/",
	}
	if s.sim != nil {
		s.endpoints.SimURL = base + SimPath
	}
	ready := make(chan struct{})
	opts = append(opts, worker.WithReady(func() { close(ready) }))
	wctx, cancel := context.WithCancel(ctx) // canceled here only when Start fails
	go func() { s.ran <- worker.Serve(wctx, wcfg, s.log, worker.NewEngine(), opts...) }()
	select {
	case <-ready:
	case err := <-s.ran:
		cancel()
		if err == nil { // ctx ended before the worker was ready
			err = ctx.Err()
		}
		return nil, err
	}
	if err := devmode.Publish(cfg.DataDir, s.endpoints); err != nil {
		cancel()
		<-s.ran
		return nil, err
	}
	context.AfterFunc(ctx, cancel) // releases wctx's resources with ctx
	return s, nil
}

// Endpoints are what this dev mode serves (also in its discovery file).
func (s *Stack) Endpoints() devmode.Endpoints { return s.endpoints }

// Pools are the pool specs the worker serves.
func (s *Stack) Pools() []ratelimit.PoolSpec { return s.pools }

// Wait blocks until the worker has stopped (its context ended; worker.Serve
// flushes the audit and closes the HTTP endpoints), then stops the
// simulator and NATS and removes the discovery file. It returns the
// worker's error and any shutdown error.
func (s *Stack) Wait() error {
	err := <-s.ran
	return errors.Join(err, s.stop())
}

// stop releases what Start started besides the worker, in reverse order.
func (s *Stack) stop() error {
	var errs []error
	s.stopConsole()
	if s.sim != nil {
		s.sim.Close()
	}
	if s.ns != nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	}
	if s.endpoints.PID != 0 {
		if err := devmode.Unpublish(s.cfg.DataDir, s.endpoints.PID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// startNATS starts the embedded JetStream server on cfg.NATSAddr with its
// storage in the data folder.
func (s *Stack) startNATS() error {
	host, portText, err := net.SplitHostPort(s.cfg.NATSAddr)
	if err != nil {
		return fmt.Errorf("%w: --nats-addr %q: want host:port, e.g. %s", ErrInvalidConfig, s.cfg.NATSAddr, DefaultNATSAddr)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("%w: --nats-addr %q: the port must be a number from 0 to 65535", ErrInvalidConfig, s.cfg.NATSAddr)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	} else {
		// nats-server only logs a busy port; find out here, with a clear message.
		ln, err := listen(s.cfg.NATSAddr, "--nats-addr")
		if err != nil {
			return err
		}
		ln.Close()
	}
	store, err := filepath.Abs(filepath.Join(s.cfg.DataDir, "jetstream"))
	if err != nil {
		return err
	}
	s.ns, err = server.NewServer(&server.Options{
		ServerName: "extractq-dev", Host: host, Port: port,
		JetStream: true, StoreDir: store, NoLog: true, NoSigs: true,
	})
	if err != nil {
		return fmt.Errorf("embedded NATS server: %w", err)
	}
	go s.ns.Start()
	if !s.ns.ReadyForConnections(15 * time.Second) {
		return fmt.Errorf("embedded NATS server did not start on %s within 15s (is the port free? choose another with --nats-addr)", s.cfg.NATSAddr)
	}
	return nil
}

// newProvider builds a job's provider: the dev simulator for the "sim:"
// profile it runs (so its /stats counts every call), providers.New
// otherwise.
func (s *Stack) newProvider(spec string) (llm.Provider, error) {
	if s.sim != nil && usesProfile(spec, s.cfg.SimProfile) {
		return simprovider.New(spec, s.sim)
	}
	return providers.New(spec)
}

// usesProfile reports whether the provider spec is "sim:PROFILE" or
// "sim:PROFILE/model".
func usesProfile(spec, profile string) bool {
	rest, ok := strings.CutPrefix(spec, "sim:")
	return ok && (rest == profile || strings.HasPrefix(rest, profile+"/"))
}

// listen opens a TCP listener, naming the flag to change when it fails.
func listen(addr, flag string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w (is another extractq dev running? choose another address with %s)", flag, addr, err, flag)
	}
	return ln, nil
}

// RedactURL hides the password of a URL for printing.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
