// Command formats measures the document readers of issue 23 on a corpus:
// per format, the share of a reference converter's words that the reader
// recovers (recall), the share of the reader's words the reference also
// has (precision: low when the reader adds text the reference drops, such
// as headers, footers and cell references), and the reading throughput.
//
// Build the corpus first (libreoffice, pandoc and poppler-utils, used only
// as references):
//
//	bench/formats/corpus.sh /tmp/fmtcorpus
//	go run ./bench/formats -corpus /tmp/fmtcorpus
//	go build -o /tmp/formats ./bench/formats && /usr/bin/time -f '%M KB' /tmp/formats -one big.xlsx
//
// A document's text is what a model would see with --attachments inline:
// its own text and its attachments', recursively. Words are maximal runs
// of letters and digits, compared case-insensitively as multisets.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/extractq/extractq/bench/internal/wordmatch"
	"github.com/extractq/extractq/document"
)

func main() {
	corpus := flag.String("corpus", "", "directory of documents, each FILE beside its reference text FILE.ref.txt (made by corpus.sh)")
	rounds := flag.Int("rounds", 3, "times each document is read for the throughput figure")
	verbose := flag.Bool("v", false, "print each document's figures")
	one := flag.String("one", "", "read only this file and print its sizes and read time (run under /usr/bin/time -f %M for the peak memory)")
	flag.Parse()
	if *one != "" {
		if err := readOne(context.Background(), *one); err != nil {
			fmt.Fprintln(os.Stderr, "formats:", err)
			os.Exit(1)
		}
		return
	}
	if *corpus == "" {
		fmt.Fprintln(os.Stderr, "formats: -corpus is required; build one with bench/formats/corpus.sh DIR")
		os.Exit(2)
	}
	if err := run(context.Background(), *corpus, *rounds, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "formats:", err)
		os.Exit(1)
	}
}

// tally sums one format's figures.
type tally struct {
	docs, failed  int
	refWords, got int // words in the references, words the reader produced
	matched       int // reference words the reader produced too
	bytes         int64
	elapsed       time.Duration
	worstRecall   float64
	worstName     string
}

func run(ctx context.Context, dir string, rounds int, verbose bool) error {
	refs, err := filepath.Glob(filepath.Join(dir, "*.ref.txt"))
	if err != nil || len(refs) == 0 {
		return fmt.Errorf("no *.ref.txt in %s: build the corpus with bench/formats/corpus.sh %s", dir, dir)
	}
	byFormat := map[string]*tally{}
	for _, ref := range refs {
		path := strings.TrimSuffix(ref, ".ref.txt")
		want, err := os.ReadFile(ref)
		if err != nil {
			return err
		}
		info, err := os.Stat(path)
		if err != nil {
			continue
		}
		var doc *document.Document
		start := time.Now()
		for range rounds {
			if doc, err = document.ReadFile(ctx, path, document.Options{}); err != nil {
				break
			}
		}
		elapsed := time.Since(start)
		format := strings.TrimPrefix(filepath.Ext(path), ".")
		t := byFormat[format]
		if t == nil {
			t = &tally{worstRecall: 2}
			byFormat[format] = t
		}
		t.docs++
		if err != nil {
			t.failed++
			fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(path), err)
			continue
		}
		t.bytes += info.Size() * int64(rounds)
		t.elapsed += elapsed
		refW, gotW := words(string(want)), words(allText(doc))
		m := wordmatch.Matched(refW, gotW)
		t.refWords += len(refW)
		t.got += len(gotW)
		t.matched += m
		recall := wordmatch.Ratio(m, len(refW))
		if recall < t.worstRecall {
			t.worstRecall, t.worstName = recall, filepath.Base(path)
		}
		if verbose {
			fmt.Printf("%-24s %-5s recall %5.1f%%  precision %5.1f%%  %6d ref words  %8.2f ms/read\n", filepath.Base(path), doc.Format, 100*recall, 100*wordmatch.Ratio(m, len(gotW)), len(refW), elapsed.Seconds()*1000/float64(rounds))
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "format\tdocs\tfailed\tref words\trecall\tprecision\tworst recall\tMB/s\tdocs/s\t")
	var names []string
	for n := range byFormat {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t := byFormat[n]
		secs := t.elapsed.Seconds()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f%%\t%.1f%%\t%.1f%% (%s)\t%.1f\t%.0f\t\n", n, t.docs, t.failed, t.refWords,
			100*wordmatch.Ratio(t.matched, t.refWords), 100*wordmatch.Ratio(t.matched, t.got), 100*t.worstRecall, t.worstName,
			float64(t.bytes)/1e6/max(secs, 1e-9), float64((t.docs-t.failed)*rounds)/max(secs, 1e-9))
	}
	return tw.Flush()
}

// readOne reads one file and prints what it cost.
func readOne(ctx context.Context, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	start := time.Now()
	doc, err := document.ReadFile(ctx, path, document.Options{})
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s, %d bytes in, %d bytes of text, %d pages, read in %v\n", filepath.Base(path), doc.Format, info.Size(), len(allText(doc)), len(doc.Pages), time.Since(start).Round(time.Millisecond))
	return nil
}

// allText is a document's text and its attachments', as --attachments
// inline sends them.
func allText(d *document.Document) string {
	var b strings.Builder
	b.WriteString(d.Text)
	for _, c := range d.Attachments {
		if c.Err == nil {
			b.WriteString("\n")
			b.WriteString(allText(c))
		}
	}
	return b.String()
}

// words splits text into lower-cased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
