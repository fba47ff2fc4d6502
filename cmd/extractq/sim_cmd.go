package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/sim"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the LLM simulator (OpenAI, Anthropic, Ollama and Gemini APIs)",
		Long: `The simulator stands in for an LLM provider on machines with no model: it answers the
OpenAI, Anthropic, Ollama and Gemini chat APIs with schema-valid JSON derived from the
document, and misbehaves as its profile says (latency, rate limits, 5xx/529, timeouts,
dropped connections, malformed output).

Example:
  extractq sim serve --profile sloppy --seed 7
  extractq sim profiles`,
	}
	cmd.AddCommand(newSimServeCmd(), newSimProfilesCmd())
	return cmd
}

func newSimServeCmd() *cobra.Command {
	var (
		addr    string
		profile string
		seed    uint64
		limiter string
		answers string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the simulated LLM APIs over HTTP until interrupted",
		Long: `Serve the simulated APIs on a loopback address:
  POST /v1/chat/completions                       OpenAI (and OpenAI-compatible)
  POST /v1/messages                               Anthropic
  POST /api/chat                                  Ollama
  POST /v1beta/models/MODEL:generateContent       Gemini
  GET  /stats, POST /stats/reset                  what the simulator did

--profile names a built-in profile (see "extractq sim profiles") or a YAML/JSON file.
Answers are reproducible for a given --seed. --limiter overrides how the profile's rate
limits are counted: token-bucket, sliding-window (strict trailing minute) or fixed-window
(reset on every minute).

Example:
  extractq sim serve --addr 127.0.0.1:8089 --profile flaky --seed 1
  extractq sim serve --profile rate-limited --limiter sliding-window
  OPENAI_BASE_URL=http://127.0.0.1:8089/v1 extractq extract --provider openai:gpt-4o-mini ...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := sim.LoadProfile(profile)
			if err != nil {
				return cli.Usage(fmt.Errorf("--profile: %w", err))
			}
			if cmd.Flags().Changed("limiter") {
				p.RateLimits.Shape = limiter
				if err := p.Validate(); err != nil {
					return cli.Usage(fmt.Errorf("--limiter: %w", err))
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return cli.Usage(fmt.Errorf("--addr %s: %w; choose a free address", addr, err))
			}
			opts := []sim.Option{sim.WithSeed(seed)}
			if answers != "" {
				key, err := sim.LoadAnswerKey(answers)
				if err != nil {
					return cli.Usage(fmt.Errorf("--answers: %w", err))
				}
				opts = append(opts, sim.WithAnswers(key))
			}
			s := sim.New(p, opts...)
			defer s.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// Serve answers the API clients' requests itself and hands
			// anything else to net/http (sim.Server.Serve); it stops when
			// serving is cancelled, after the requests being answered.
			serving, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- s.Serve(serving, ln) }()
			fmt.Fprintf(cmd.OutOrStdout(), "extractq sim: profile %q, seed %d%s, serving on http://%s (stats at /stats); Ctrl-C stops\n", p.Name, seed, limiterNote(p), ln.Addr())
			select {
			case err := <-served:
				return cli.Failed(fmt.Errorf("simulator stopped: %w", err))
			case <-ctx.Done():
			}
			s.Close() // release requests held by latency or simulated timeouts
			cancel()
			if err := <-served; err != nil {
				return cli.Failed(fmt.Errorf("simulator shutdown: %w", err))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8089", "address to listen on")
	cmd.Flags().StringVar(&profile, "profile", "clean", "built-in profile name or a YAML/JSON profile file")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed for every random choice (same seed, same answers)")
	cmd.Flags().StringVar(&answers, "answers", "", "labels to answer from (a folder with NAME.expected.json beside each document, or a JSONL as extractq eval reads): a labelled document gets its label, faults on top")
	cmd.Flags().StringVar(&limiter, "limiter", "", "how rate limits are counted, overriding the profile: "+strings.Join(sim.LimiterShapes(), ", "))
	return cmd
}

// limiterNote names the limiter shape in the start-up line when the
// profile has rate limits.
func limiterNote(p sim.Profile) string {
	if p.RateLimits.RequestsPerMinute == 0 && p.RateLimits.TokensPerMinute == 0 {
		return ""
	}
	shape := p.RateLimits.Shape
	if shape == "" {
		shape = sim.ShapeTokenBucket
	}
	return ", rate limits counted as a " + shape
}

func newSimProfilesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "profiles [NAME]",
		Short: "List the built-in simulator profiles, or print one as YAML",
		Long: `Without an argument, list the built-in profiles. With a name, print that profile as
YAML: a starting point for a profile file of your own.

Example:
  extractq sim profiles
  extractq sim profiles flaky > my-profile.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				p, err := sim.LoadProfile(args[0])
				if err != nil {
					return cli.Usage(err)
				}
				b, err := yaml.Marshal(p)
				if err != nil {
					return cli.Failed(fmt.Errorf("render profile %s: %w", args[0], err))
				}
				_, err = out.Write(b)
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			for _, name := range sim.ProfileNames() {
				p, err := sim.LoadProfile(name)
				if err != nil {
					return cli.Failed(err)
				}
				fmt.Fprintf(tw, "%s\t%s\n", name, p.Description)
			}
			return tw.Flush()
		},
	}
}
