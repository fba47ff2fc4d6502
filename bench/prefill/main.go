// Command prefill compares prefill mode with text and json modes on a small
// model: the simulator's small-model profile (broken structure when asked
// for whole objects, reasonable continuations of a JSON prefix with some
// overrun stops, numbers as words and enum values outside the list). Every
// mode extracts the same documents (the examples' invoices and abstracts)
// against the same simulator seeds in one run, at the same re-ask budget,
// and it prints valid documents per 100 and the tokens and calls spent per
// valid document.
//
//	go run ./bench/prefill                      # 5 seeds x 24 documents per schema
//	go run ./bench/prefill -seeds 10 -reasks 3
//
// The figures are the simulator's, not a real model's.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/extractq/extractq/internal/retry"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

type set struct{ name, schema, glob string }

type tally struct {
	runs, valid, calls int
	prompt, completion int
}

func main() {
	var (
		seeds   = flag.Int("seeds", 5, "simulator seeds: every document is extracted once per seed and mode")
		reasks  = flag.Int("reasks", 3, "max re-asks (per document in text/json, per field in prefill)")
		profile = flag.String("profile", "small-model", "simulator profile")
		dir     = flag.String("examples", "examples", "the examples folder")
	)
	flag.Parse()
	prof, err := sim.LoadProfile(*profile)
	if err != nil {
		fail(err)
	}
	sets := []set{
		{"invoice", filepath.Join(*dir, "invoice.schema.json"), filepath.Join(*dir, "invoices", "*.txt")},
		{"abstract", filepath.Join(*dir, "abstract.schema.yaml"), filepath.Join(*dir, "abstracts", "*.txt")},
	}
	modes := []llm.Mode{llm.ModePrefill, llm.ModeText, llm.ModeJSON}
	ctx := context.Background()
	start := time.Now()
	fmt.Printf("profile %s, %d seeds, max %d re-asks\n\n", prof.Name, *seeds, *reasks)
	fmt.Println("| schema | mode | valid per 100 | tokens per valid doc | calls per valid doc | tokens per call (prompt + answer) |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	for _, st := range sets {
		s, err := schema.CompileFile(st.schema)
		if err != nil {
			fail(err)
		}
		files, err := filepath.Glob(st.glob)
		if err != nil || len(files) == 0 {
			fail(fmt.Errorf("no documents match %s: run from the module root or pass -examples", st.glob))
		}
		docs := make([]string, len(files))
		for i, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				fail(err)
			}
			docs[i] = string(b)
		}
		tallies := map[llm.Mode]*tally{}
		for _, m := range modes {
			tallies[m] = &tally{}
		}
		for seed := 1; seed <= *seeds; seed++ {
			srv := sim.New(prof, sim.WithSeed(uint64(seed)))
			p, err := simprovider.New("sim:"+prof.Name, srv)
			if err != nil {
				fail(err)
			}
			for _, m := range modes {
				t := tallies[m]
				for _, doc := range docs {
					cfg := retry.DefaultConfig()
					cfg.Mode, cfg.MaxReasks = m, *reasks
					res, err := retry.Run(ctx, p, doc, s, cfg)
					if res == nil {
						fail(err)
					}
					t.runs++
					if err == nil {
						t.valid++
					}
					t.calls += res.Calls()
					t.prompt += res.Usage.PromptTokens
					t.completion += res.Usage.CompletionTokens
				}
			}
			srv.Close()
		}
		for _, m := range modes {
			t := tallies[m]
			per := func(x int) string {
				if t.valid == 0 {
					return "–"
				}
				return fmt.Sprintf("%.0f", float64(x)/float64(t.valid))
			}
			fmt.Printf("| %s | %s | %.0f | %s | %s | %.0f + %.1f |\n", st.name, m, 100*float64(t.valid)/float64(t.runs),
				per(t.prompt+t.completion), per(t.calls), float64(t.prompt)/float64(t.calls), float64(t.completion)/float64(t.calls))
		}
	}
	fmt.Printf("\n%d seeds x every example document, per schema and mode; %v\n", *seeds, time.Since(start).Round(time.Millisecond))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "prefill:", err)
	os.Exit(1)
}
