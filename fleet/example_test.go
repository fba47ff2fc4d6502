package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"time"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/schema"
)

// Example submits two documents, a text and a PDF read by package
// document (its original kept, so that it can be read again after a
// reader upgrade), follows their jobs until each is final, and reads the
// results: what `submit --wait` does, from Go.
func Example() {
	ctx := context.Background()
	c, err := fleet.Dial(ctx, os.Getenv("EXTRACTQ_NATS_URL"), os.Getenv("EXTRACTQ_DATABASE_URL"))
	switch {
	case errors.Is(err, fleet.ErrNotMigrated):
		log.Fatalf("%v: run `worker migrate` once", err)
	case err != nil:
		log.Fatal(err) // fleet.ErrUnreachable: try again later
	}
	defer c.Close()

	invoice, err := schema.CompileFile("invoice.schema.json")
	if err != nil {
		log.Fatal(err)
	}
	pdf, err := os.ReadFile("scan-0042.pdf")
	if err != nil {
		log.Fatal(err)
	}
	read, err := document.ReadBytes(ctx, pdf, document.Options{Name: "scan-0042.pdf"})
	if err != nil {
		log.Fatal(err)
	}
	docs := []fleet.Document{
		{ID: "inv-0041", Text: "Invoice 41 from ACME Ltd, total 12.50 EUR"},
		{ID: "inv-0042", Source: "scan-0042.pdf", Text: read.Text, Document: read, Original: pdf},
	}
	sub, err := c.Submit(ctx, fleet.Job{
		Schema: invoice, SchemaName: "invoice", Provider: "openai:gpt-4o-mini", Run: "march",
		Options: fleet.JobOptions{MaxReasks: new(1)}, // nil: the worker's default (3); new(0): ask once
	}, slices.Values(docs))
	if errors.Is(err, fleet.ErrBadJob) {
		log.Fatal(err) // a *fleet.JobError names the field: nothing was queued
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range sub.Rejected {
		fmt.Printf("rejected %s: %s\n", r.ID, r.Reason)
	}
	fmt.Printf("queued %d (already done %d) in run %s, pool %s\n", sub.Queued, sub.AlreadyDone, sub.Run, sub.Pool)

	wait, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	p, err := c.Follow(wait, sub.JobIDs, time.Second, func(p fleet.Progress) {
		fmt.Printf("%d done, %d failed of %d\n", p.Done, p.Failed, p.Total)
	})
	if err != nil {
		log.Fatal(err) // the deadline passed: the jobs stay queued
	}
	if p.Failed > 0 {
		// Dead letters: queue them again once the cause is fixed.
		again, err := c.Resubmit(ctx, fleet.Resubmission{FromDLQ: true, Run: sub.Run})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("resubmitted %d\n", again.Queued)
	}
	for _, d := range docs {
		results, err := c.Results(ctx, d.ID)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range results {
			fmt.Printf("%s (schema v%d, %s): %s\n", r.DocumentID, r.SchemaVersion, r.Model, r.Value)
		}
	}
}
