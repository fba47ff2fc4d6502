// Command myworker is the extractq fleet's worker with this module's own
// provider (MyCo, "myco:MODEL") and invoice rule (the total is the sum of
// the lines). It reads the shipped worker's configuration (EXTRACTQ_CONFIG,
// EXTRACTQ_* variables) and serves the same streams and audit database, so
// it replaces `worker run` in an image, or runs beside it for the myco
// pools:
//
//	EXTRACTQ_POOLS='myco:small-1=concurrency:8' MYCO_BASE_URL=http://myco:9000 myworker
//
// Exit codes: 0 after a graceful shutdown (SIGTERM, Ctrl-C), 1 on a
// runtime failure, 2 on a configuration that cannot work.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"example.com/custom/invoices"
	"example.com/custom/myco"
	"github.com/extractq/extractq"
	"github.com/extractq/extractq/fleet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := fleet.LoadConfig(os.Getenv("EXTRACTQ_CONFIG"))
	if err == nil {
		err = serve(ctx, cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "myworker:", err)
		if errors.Is(err, fleet.ErrConfig) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// serve runs the worker with this module's provider and validator until
// ctx ends.
func serve(ctx context.Context, cfg fleet.Config, opts ...fleet.Option) error {
	if err := myco.Register(); err != nil && !errors.Is(err, extractq.ErrProviderRegistered) {
		return err
	}
	return fleet.Serve(ctx, cfg, append([]fleet.Option{fleet.WithExtractOptions(extractq.WithValidator(invoices.TotalIsSum))}, opts...)...)
}
