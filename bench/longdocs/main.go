// Command longdocs measures chunked extraction of long documents against
// the in-process simulator (zero latency): synthetic invoices of about 5k,
// 50k and 500k tokens with known line items scattered through filler
// text, extracted by a model with a small context window. Per document it
// prints recall and precision of the items, whether the merged value is
// valid against the original schema, the calls and tokens spent, and
// grounding accuracy: the share of extracted strings and numbers whose
// source offsets point at the text that states them.
//
//	go run ./bench/longdocs                                  # 5k, 50k, 500k; clean and sloppy
//	go run ./bench/longdocs -sizes 50000 -profiles sloppy -model sim-16k
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/chunk"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

var verbose bool

// invoiceNumber is what Document writes on its first line.
const invoiceNumber = "INV-2026-0042"

func main() {
	sizes := flag.String("sizes", "5000,50000,500000", "document sizes in tokens, comma-separated")
	profiles := flag.String("profiles", "clean,sloppy", "simulator profiles, comma-separated")
	model := flag.String("model", "sim-8k", `simulated model; "-Nk" sets its context window to N×1024 tokens`)
	perItem := flag.Int("tokens-per-item", 250, "document tokens per known line item")
	parallel := flag.Int("parallel", 4, "chunk calls in flight per document (WithChunkParallel)")
	reasks := flag.Int("reasks", 3, "re-asks per chunk (WithMaxReasks)")
	seed := flag.Uint64("seed", 1, "document seed")
	flag.BoolVar(&verbose, "v", false, "print each value grounded wrongly")
	flag.Parse()
	if err := run(*sizes, *profiles, *model, *perItem, *parallel, *reasks, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "longdocs:", err)
		os.Exit(1)
	}
}

func run(sizes, profiles, model string, perItem, parallel, reasks int, seed uint64) error {
	s, err := schema.Compile([]byte(Schema))
	if err != nil {
		return fmt.Errorf("benchmark schema: %w", err)
	}
	window, _ := sim.ContextWindow(model)
	fmt.Printf("model %s (context window %d tokens), in-process simulator at zero latency, %d chunk calls in flight, %d re-asks\n\n", model, window, parallel, reasks)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "profile\tdoc tokens\titems\tchunks\trecall\tprecision\tvalid\tcalls\ttokens\tgrounded right\tungrounded\ttime\t")
	for _, prof := range strings.Split(profiles, ",") {
		p, err := sim.LoadProfile(prof)
		if err != nil {
			return err
		}
		for _, f := range strings.Split(sizes, ",") {
			size, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || size <= 0 {
				return fmt.Errorf("size %q: want a positive number of tokens", f)
			}
			srv := sim.New(p)
			prov, err := simprovider.New("sim:"+prof+"/"+model, srv)
			if err != nil {
				return err
			}
			doc, items := Document(seed, size, max(1, size/perItem))
			start := time.Now()
			res, err := extractq.Extract(context.Background(), doc, s, extractq.WithProvider(prov),
				extractq.WithChunkParallel(parallel), extractq.WithMaxReasks(reasks))
			took := time.Since(start)
			var ee *llm.ExtractionError
			if err != nil && !errors.As(err, &ee) {
				return fmt.Errorf("%s, %d tokens: %w", prof, size, err)
			}
			sc := score(doc, items, res)
			st := srv.Stats()
			valid := "yes"
			if err != nil {
				valid = "no"
				if res.FailedChunk != nil {
					valid = fmt.Sprintf("part %d failed", res.FailedChunk.Index+1)
				}
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.4f\t%.4f\t%s\t%d\t%d\t%.4f\t%d\t%s\t\n", prof, tokensOf(doc), len(items), len(res.Chunks),
				sc.recall, sc.precision, valid, st.Requests, st.PromptTokens+st.CompletionTokens, sc.grounded, len(res.Ungrounded), took.Round(time.Millisecond))
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s, %d tokens: %v\n", prof, size, err)
			}
		}
	}
	return w.Flush()
}

// tokensOf is the document's size as the engine estimates it.
func tokensOf(doc string) int { return chunk.Tokens("openai", doc) }

type scores struct {
	recall, precision, grounded float64
}

// extracted is the benchmark schema's value.
type extracted struct {
	InvoiceNumber string `json:"invoice_number"`
	Items         []struct {
		SKU         string      `json:"sku"`
		Description string      `json:"description"`
		Quantity    json.Number `json:"quantity"`
		UnitPrice   json.Number `json:"unit_price"`
	} `json:"items"`
}

// score compares the merged value (valid or not: an exhausted result
// carries it on its last attempt) with the known items. An item counts
// when every field equals the known item's; a leaf is grounded right when
// its source lies on the line that states it and reads as its value.
func score(doc string, items []Item, res *llm.Result) scores {
	raw := res.Value
	if raw == nil && len(res.Attempts) > 0 {
		raw = res.Attempts[len(res.Attempts)-1].Value
	}
	var v extracted
	_ = json.Unmarshal(raw, &v)
	known := make(map[string]Item, len(items))
	for _, it := range items {
		known[it.SKU] = it
	}
	right, seen := 0, map[string]bool{}
	leaves, grounded := 0, 0
	at := func(ptr string) (string, [2]int, bool) {
		src, ok := res.Sources[ptr]
		if !ok || src.Start < 0 || src.End > len(doc) {
			return "", [2]int{}, false
		}
		// The documents are ASCII: character offsets are byte offsets.
		return doc[src.Start:src.End], [2]int{src.Start, src.End}, true
	}
	if v.InvoiceNumber != "" {
		leaves++
		if text, _, ok := at("/invoice_number"); ok && text == invoiceNumber {
			grounded++
		}
	}
	for i, it := range v.Items {
		k, ok := known[it.SKU]
		if ok && !seen[it.SKU] && it.Description == k.Description && it.Quantity.String() == strconv.Itoa(k.Quantity) && sameNumber(it.UnitPrice.String(), k.Price) {
			right++
			seen[it.SKU] = true
		}
		for field, want := range map[string]string{"sku": it.SKU, "description": it.Description, "quantity": it.Quantity.String(), "unit_price": it.UnitPrice.String()} {
			if want == "" {
				continue
			}
			leaves++
			text, span, ok := at(fmt.Sprintf("/items/%d/%s", i, field))
			onLine := ok && k.Line[0] <= span[0] && span[1] <= k.Line[1]
			if onLine && (text == want || sameNumber(text, want)) {
				grounded++
			} else if verbose {
				fmt.Fprintf(os.Stderr, "item %d %s=%q: source %v %q, item line %v\n", i, field, want, span, text, k.Line)
			}
		}
	}
	out := scores{}
	if len(items) > 0 {
		out.recall = float64(right) / float64(len(items))
	}
	if len(v.Items) > 0 {
		out.precision = float64(right) / float64(len(v.Items))
	}
	if leaves > 0 {
		out.grounded = float64(grounded) / float64(leaves)
	}
	return out
}

func sameNumber(a, b string) bool {
	x, err1 := strconv.ParseFloat(strings.ReplaceAll(a, ",", ""), 64)
	y, err2 := strconv.ParseFloat(strings.ReplaceAll(b, ",", ""), 64)
	return err1 == nil && err2 == nil && x == y
}
