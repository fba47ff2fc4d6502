package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/console"
	"github.com/extractq/extractq/internal/worker"
)

// defaultUIListen is loopback: the console shows documents and model
// answers, which are nobody else's business.
const defaultUIListen = "127.0.0.1:8090"

func newUICmd() *cobra.Command {
	var (
		c           cli.Conn
		listen      string
		allowWrites bool
		token       string
		hosts       []string
	)
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve the web console: runs, documents and their attempts, dead letters, resubmission, schemas",
		Long: `ui serves extractq's web console, read from the audit database and NATS (found like the other
commands: --database-url / --nats-url, the environment, a running extractq dev, the defaults):
runs with their totals and throughput, each pool's queue, a run's documents (filterable, paged),
a document's text beside every attempt (raw answers with repairs marked, violations pinned to the
value at their JSON pointer), dead letters, and schemas with a diff between versions.

It only reads unless --allow-writes: then dead letters can be resubmitted (one, a selection or a
run's, optionally on another provider or under a newer schema version, after a confirmation that
says how many and at what estimated cost) by whoever logs in with the token (--token, or
EXTRACTQ_UI_TOKEN; at least 16 characters). It binds to loopback by default: anyone who reaches
the address reads the documents and the answers. It answers only to localhost, IP addresses and
the names given with --allow-host (or EXTRACTQ_UI_ALLOWED_HOSTS): a web page that rebinds its own
name to this machine cannot read through a local browser.

Example:
  extractq ui
  EXTRACTQ_UI_TOKEN=$(openssl rand -hex 16) extractq ui --allow-writes --listen 127.0.0.1:8090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = os.Getenv("EXTRACTQ_UI_TOKEN")
			}
			if allowWrites && token == "" {
				return cli.Usage(errors.New("--allow-writes needs a token: pass --token or set EXTRACTQ_UI_TOKEN (at least 16 characters, e.g. openssl rand -hex 16)"))
			}
			store, err := c.OpenStore(cmd.Context(), cli.Migrated)
			if err != nil {
				return err
			}
			defer store.Close()
			nc, js, err := c.ConnectNATS(cmd.Context(), "extractq ui")
			if err != nil {
				return err
			}
			defer nc.Close()
			log, err := worker.NewLogger(cmd.ErrOrStderr(), "auto", "info")
			if err != nil {
				return cli.Usage(err)
			}
			if !cmd.Flags().Changed("allow-host") {
				hosts = splitHosts(os.Getenv("EXTRACTQ_UI_ALLOWED_HOSTS"))
			}
			srv, err := console.New(console.Config{Store: store, JS: js, AllowWrites: allowWrites, Token: token, AllowedHosts: hosts, Log: log})
			if errors.Is(err, console.ErrConfig) {
				return cli.Usage(err)
			}
			if err != nil {
				return cli.Failed(err)
			}
			if !console.IsLoopback(listen) {
				log.Warn("the console listens beyond this machine: anyone who reaches it reads documents and model answers", "listen", listen)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			mode := "read-only"
			if allowWrites {
				mode = "writes enabled: log in with the token"
			}
			err = srv.Serve(ctx, listen, func(addr string) {
				fmt.Fprintf(cmd.OutOrStdout(), "extractq console on http://%s/ (%s); Ctrl-C stops it\n", addr, mode)
			})
			if err != nil {
				return cli.Usage(err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", defaultUIListen, "address to serve on (host:port; port 0 picks a free one)")
	f.BoolVar(&allowWrites, "allow-writes", false, "allow resubmitting dead letters (needs --token or EXTRACTQ_UI_TOKEN)")
	f.StringVar(&token, "token", "", "`TOKEN` that opens a write session (default $EXTRACTQ_UI_TOKEN)")
	f.StringArrayVar(&hosts, "allow-host", nil, "host `NAME` the console answers to besides localhost and IP addresses, e.g. a reverse proxy's (repeatable; default $EXTRACTQ_UI_ALLOWED_HOSTS, comma-separated); other Host headers are refused, against DNS rebinding")
	c.AddDatabaseFlag(cmd, false)
	c.AddNATSFlag(cmd, false)
	return cmd
}

// splitHosts reads a comma-separated list of host names.
func splitHosts(s string) []string {
	var out []string
	for h := range strings.SplitSeq(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
