package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/devmode"
)

// openAuditStore connects to EXTRACTQ_DATABASE_URL, else a running
// `extractq dev`'s database, else the default.
// Failing to connect is a configuration problem: exit 2.
func openAuditStore(cmd *cobra.Command) (*audit.Store, error) {
	s, err := audit.Open(cmd.Context(), connFlag(cmd, "database-url", devmode.DatabaseURL))
	if err != nil {
		return nil, usageErr(err)
	}
	return s, nil
}

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Manage the audit database (migrations, retention)",
		Long: "Manage extractq's PostgreSQL audit database, found through EXTRACTQ_DATABASE_URL\n" +
			"(default " + audit.DefaultDatabaseURL + ").\n\n" +
			"Example:\n  extractq audit migrate\n  extractq audit prune --older-than 90d",
	}
	cmd.AddCommand(newAuditMigrateCmd(), newAuditPruneCmd(), newAuditGrantsCmd())
	return cmd
}

func newAuditMigrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending schema migrations (safe to run concurrently and repeatedly)",
		Long: "Apply every pending migration embedded in this binary, forward only, under an advisory lock.\n" +
			"A database migrated by a newer extractq is refused: upgrade this binary instead.\n\n" +
			"Example:\n  EXTRACTQ_DATABASE_URL=postgres://extractq@db:5432/extractq?sslmode=verify-full extractq audit migrate",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, err := openAuditStore(cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				return usageErr(err)
			}
			v, _ := audit.KnownSchemaVersion()
			fmt.Fprintf(cmd.OutOrStdout(), "audit database at schema version %d\n", v)
			return nil
		},
	}
}

func newAuditPruneCmd() *cobra.Command {
	var olderThan string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "prune --older-than DURATION",
		Short: "Delete attempts, finished jobs and dead-letter references older than a duration",
		Long: "Enforce retention on the audit log: attempts older than DURATION (whole monthly partitions are\n" +
			"dropped, which is instant), finished jobs and dead-letter references. Results, documents and\n" +
			"schemas are never pruned. DURATION is a number of days (90d) or a Go duration (720h).\n\n" +
			"Example:\n  extractq audit prune --older-than 90d",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := parseRetention(olderThan)
			if err != nil {
				return usageErr(err)
			}
			cutoff := time.Now().Add(-d)
			if dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "would prune audit rows older than %s\n", cutoff.UTC().Format(time.RFC3339))
				return nil
			}
			ctx := cmd.Context()
			s, err := openAuditStore(cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			res, err := s.Prune(ctx, cutoff)
			if err != nil {
				return failErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pruned before %s: %d partitions dropped %v, %d attempts, %d jobs, %d dead-letter references deleted\n",
				cutoff.UTC().Format(time.RFC3339), len(res.PartitionsDropped), res.PartitionsDropped, res.AttemptsDeleted, res.JobsDeleted, res.DeadLetters)
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "retention: delete what is older than this (e.g. 90d, 720h) (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the cutoff without deleting")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}

// parseRetention accepts "90d" as well as Go durations.
func parseRetention(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--older-than %q: want a positive number of days (90d) or a duration (720h)", s)
	}
	return d, nil
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
				return usageErr(fmt.Errorf("--for %q: use worker, submit or reader", forWhat))
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
