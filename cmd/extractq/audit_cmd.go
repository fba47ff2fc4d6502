package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/settings"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Manage the audit database (migrations, retention)",
		Long: "Manage extractq's PostgreSQL audit database: --database-url, else EXTRACTQ_DATABASE_URL, else a\n" +
			"running extractq dev's, else " + settings.DefaultDatabaseURL + ".\n\n" +
			"Example:\n  extractq audit migrate\n  extractq audit prune --older-than 90d",
	}
	cmd.AddCommand(newAuditMigrateCmd(), newAuditPruneCmd(), newAuditGrantsCmd())
	return cmd
}

func newAuditMigrateCmd() *cobra.Command {
	var c cli.Conn
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending schema migrations (safe to run concurrently and repeatedly)",
		Long: "Apply every pending migration embedded in this binary, forward only, under an advisory lock.\n" +
			"A database migrated by a newer extractq is refused: upgrade this binary instead.\n\n" +
			"Example:\n  EXTRACTQ_DATABASE_URL=postgres://extractq@db:5432/extractq?sslmode=verify-full extractq audit migrate",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Reachable)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				return cli.Usage(err)
			}
			v, _ := audit.KnownSchemaVersion()
			fmt.Fprintf(cmd.OutOrStdout(), "audit database at schema version %d\n", v)
			return nil
		},
	}
	c.AddDatabaseFlag(cmd, false)
	return cmd
}

func newAuditPruneCmd() *cobra.Command {
	var (
		c         cli.Conn
		olderThan time.Duration
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION",
		Short: "Delete attempts, finished jobs and resubmitted dead-letter references older than a duration",
		Long: "Enforce retention on the audit log: attempts older than DURATION (whole monthly partitions are\n" +
			"dropped, which is instant), finished jobs and references to dead letters resubmitted since. Results,\n" +
			"documents, schemas and the references of dead letters still on the DLQ are never pruned (status counts them). DURATION is a number of days (90d), a Go duration (720h) or both (1d12h).\n\n" +
			"Example:\n  extractq audit prune --older-than 90d",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan <= 0 {
				return cli.Usage(fmt.Errorf("--older-than %s: want a positive duration, e.g. 90d", settings.FormatDuration(olderThan)))
			}
			cutoff := time.Now().Add(-olderThan)
			if dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "would prune audit rows older than %s\n", cutoff.UTC().Format(time.RFC3339))
				return nil
			}
			ctx := cmd.Context()
			s, err := c.OpenStore(ctx, cli.Migrated)
			if err != nil {
				return err
			}
			defer s.Close()
			res, err := s.Prune(ctx, cutoff)
			if err != nil {
				return cli.Failed(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pruned before %s: %d partitions dropped %v, %d attempts, %d jobs, %d dead-letter references, %d closed batches deleted; the job ids counted into %d settled runs\n",
				cutoff.UTC().Format(time.RFC3339), len(res.PartitionsDropped), res.PartitionsDropped, res.AttemptsDeleted, res.JobsDeleted, res.DeadLetters, res.BatchesDeleted, res.RunCountsPruned)
			return nil
		},
	}
	cli.DurationVar(cmd.Flags(), &olderThan, "older-than", 0, "retention: delete what is older than this, e.g. 90d or 720h (required)")
	c.AddDatabaseFlag(cmd, false)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the cutoff without deleting")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}

func newAuditGrantsCmd() *cobra.Command {
	var forWhat string
	cmd := &cobra.Command{
		Use:   "grants ROLE --for worker|submit|reader",
		Short: "Print the least-privilege GRANT statements for a database role",
		Long: "Print the GRANT statements that give ROLE exactly what it needs, to run as the owner after\n" +
			"`extractq audit migrate`: worker (write attempts, jobs, results, dead letters), submit (schemas,\n" +
			"documents, resubmission) or reader (status, history, export, analyst views).\n\n" +
			"Example:\n  extractq audit grants extractq_worker --for worker | psql \"$OWNER_DATABASE_URL\"",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			grants := map[string]func(string) []string{
				"worker": audit.WorkerGrants, "submit": audit.SubmitterGrants, "reader": audit.ReaderGrants,
			}[forWhat]
			if grants == nil {
				return cli.Usage(fmt.Errorf("--for %q: use worker, submit or reader", forWhat))
			}
			for _, q := range grants(args[0]) {
				fmt.Fprintln(cmd.OutOrStdout(), q+";")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&forWhat, "for", "worker", "worker, submit or reader")
	return cmd
}
