// Command docsweep reads every file under the directories it is given, the
// way an external referee with a corpus of real documents tests a reader:
// each file in a child process of its own, under a timeout, with its peak
// resident memory taken from the kernel, and its text compared with a
// reference converter's.
//
//	go run ./bench/docsweep [-timeout 60s] [-min 0.8] [-v] DIR...
//
// Per file it checks: no panic, no hang (the timeout), a failure is a typed
// *document.Error naming the file, and the text is sane: the share of the
// reference's words the reader recovers (recall, words as multisets) and of
// its adjacent word pairs (which reading order decides). Files below -min
// are listed with their figures. The reference is FILE.ref.txt when present,
// else by extension: pdftotext -layout (PDF), pandoc -t plain (HTML, DOCX,
// ODT, EPUB). Files without a reference are only read. The reference tools
// run here only, never in extractq.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/extractq/extractq/bench/internal/wordmatch"
	"github.com/extractq/extractq/document"
	"golang.org/x/text/unicode/norm"
)

func main() {
	child := flag.String("child", "", "internal: read this one file and print the outcome as JSON")
	timeout := flag.Duration("timeout", 60*time.Second, "time allowed to read one file")
	minSim := flag.Float64("min", 0.8, "list files whose word recall is below this")
	ocr := flag.Bool("ocr", true, "read pages without a text layer with tesseract when installed")
	verbose := flag.Bool("v", false, "one line per file")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), `usage: docsweep [flags] DIR...

Reads every file under each DIR with extractq's readers, each in a child
process under a timeout, and compares its text with pdftotext or pandoc
where they apply. Exit status: 0 when every file was read or refused with a
typed error, 1 when a file panicked, hung or failed untyped, 2 on bad usage.

Flags:`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *child != "" {
		readChild(*child, *ocr)
		return
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: docsweep [-timeout 60s] [-min 0.8] [-v] DIR...")
		os.Exit(2)
	}
	if err := sweep(flag.Args(), *timeout, *minSim, *ocr, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "docsweep:", err)
		os.Exit(1)
	}
}

// outcome is what the child reports about one file.
type outcome struct {
	Format      string `json:"format"`
	Pages       int    `json:"pages"`
	Attachments int    `json:"attachments"`
	AttachErrs  []string
	Unreadable  []int    `json:"unreadable,omitempty"`
	Faults      []string `json:"faults,omitempty"` // warnings of a fault the reader recovered from
	Text        string   `json:"text"`
	Err         string   `json:"err,omitempty"`
	Typed       bool     `json:"typed"` // the error is a *document.Error
	Kind        string   `json:"kind,omitempty"`
	Millis      int64    `json:"ms"`
	PeakKB      int64    `json:"peak_kb"` // VmHWM: the child's own peak RSS
}

func readChild(path string, useOCR bool) {
	opts := document.Options{}
	if useOCR {
		if t, err := document.NewTesseract(); err == nil {
			opts.OCR = t
		}
	}
	start := time.Now()
	doc, err := document.ReadFile(context.Background(), path, opts)
	o := outcome{Millis: time.Since(start).Milliseconds()}
	if err != nil {
		var de *document.Error
		o.Err, o.Typed, o.Kind = err.Error(), errors.As(err, &de), kind(err)
	} else {
		o.Format, o.Pages, o.Text = doc.Format, len(doc.Pages), allText(doc, &o)
		o.Unreadable = doc.Unreadable()
		for _, w := range doc.Warnings {
			if strings.Contains(w, "runtime error") || strings.Contains(w, "partly unreadable") {
				o.Faults = append(o.Faults, w)
			}
		}
	}
	o.PeakKB = peakRSS()
	json.NewEncoder(os.Stdout).Encode(o)
}

// peakRSS reads the process's peak resident set (VmHWM) in KB. The
// rusage of a child is no use here: Linux carries the parent's peak across
// exec into ru_maxrss.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb
		}
	}
	return 0
}

func kind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{{document.ErrUnknownFormat, "unknown-format"}, {document.ErrEmpty, "empty"}, {document.ErrEncrypted, "encrypted"},
		{document.ErrCorrupt, "corrupt"}, {document.ErrTooLarge, "too-large"}, {document.ErrBomb, "bomb"}, {document.ErrNoText, "no-text"},
		{document.ErrUnsupported, "unsupported"}, {document.ErrEncoding, "encoding"}} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
}

// allText is a document's text and its attachments', as --attachments
// inline sends them.
func allText(d *document.Document, o *outcome) string {
	var b strings.Builder
	b.WriteString(d.Text)
	for _, c := range d.Attachments {
		o.Attachments++
		if c.Err != nil {
			o.AttachErrs = append(o.AttachErrs, c.Err.Error())
			continue
		}
		b.WriteString("\n")
		b.WriteString(allText(c, o))
	}
	return b.String()
}

// result is one file's line in the report.
type result struct {
	path, ext  string
	out        outcome
	status     string // ok, error, panic, timeout
	detail     string
	rssKB      int64
	refWords   int
	recall     float64 // share of the reference's words read
	pairs      float64 // share of its adjacent word pairs
	precision  float64 // share of the reader's words the reference has
	hasRef     bool
	namedFile  bool
	wall       time.Duration
	refProblem string
}

func sweep(dirs []string, timeout time.Duration, minSim float64, useOCR, verbose bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var files []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || strings.HasSuffix(p, ".ref.txt") {
				return nil
			}
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() { // symlinks followed
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	slices.Sort(files)
	var results []result
	for _, f := range files {
		r := one(self, f, timeout, useOCR)
		results = append(results, r)
		if verbose {
			fmt.Printf("%-60s %-6s %-7s recall %5.1f%% pairs %5.1f%% prec %5.1f%% %6d refw %7d KB %6v %s\n", short(f), r.out.Format, r.status,
				100*r.recall, 100*r.pairs, 100*r.precision, r.refWords, r.rssKB, r.wall.Round(time.Millisecond), r.detail)
		}
	}
	if bad := report(results, minSim); bad > 0 {
		return fmt.Errorf("%d of %d files panicked, hung, or failed with an untyped error or one not naming the file (listed above)", bad, len(results))
	}
	return nil
}

func short(p string) string {
	if len(p) > 60 {
		return "…" + p[len(p)-59:]
	}
	return p
}

func one(self, path string, timeout time.Duration, useOCR bool) result {
	r := result{path: path, ext: strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-child", path, fmt.Sprintf("-ocr=%v", useOCR))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r.wall = time.Since(start)
	switch {
	case ctx.Err() != nil:
		r.status, r.detail = "timeout", fmt.Sprintf("no answer in %v", timeout)
		return r
	case err != nil:
		r.status = "panic"
		r.detail = firstLines(stderr.String(), 3)
		return r
	}
	if err := json.Unmarshal(stdout.Bytes(), &r.out); err != nil {
		r.status, r.detail = "panic", "bad child output: "+err.Error()
		return r
	}
	r.rssKB = r.out.PeakKB
	if r.out.Err != "" {
		r.status = "error"
		r.namedFile = strings.Contains(r.out.Err, path)
		r.detail = r.out.Kind + ": " + r.out.Err
		if !r.out.Typed {
			r.detail = "UNTYPED " + r.detail
		}
		if !r.namedFile {
			r.detail = "UNNAMED " + r.detail
		}
		return r
	}
	r.status = "ok"
	if len(r.out.AttachErrs) > 0 {
		r.detail = fmt.Sprintf("%d attachment errors: %s", len(r.out.AttachErrs), r.out.AttachErrs[0])
	}
	if len(r.out.Faults) > 0 {
		r.detail += " RECOVERED FAULT: " + firstLines(r.out.Faults[0], 1)
	}
	if len(r.out.Unreadable) > 0 {
		r.detail += fmt.Sprintf(" unreadable pages %v", r.out.Unreadable)
	}
	ref, problem := reference(path, r.ext)
	r.refProblem = problem
	if ref != "" {
		r.hasRef = true
		rw, gw := words(ref), words(r.out.Text)
		r.refWords = len(rw)
		r.recall = wordmatch.Ratio(wordmatch.Matched(rw, gw), len(rw))
		r.precision = wordmatch.Ratio(wordmatch.Matched(gw, rw), len(gw))
		r.pairs = wordmatch.Ratio(wordmatch.Matched(pairs(rw), pairs(gw)), len(rw)-1)
	}
	return r
}

// firstLines is s's first n lines, printable and at most 200 bytes: a
// fault's message may quote the binary bytes it failed on.
func firstLines(s string, n int) string {
	lines := strings.SplitN(strings.TrimSpace(s), "\n", n+1)
	s = strings.Join(lines[:min(n, len(lines))], " / ")
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

// reference returns the reference converter's text for path.
func reference(path, ext string) (string, string) {
	if b, err := os.ReadFile(path + ".ref.txt"); err == nil {
		return string(b), ""
	}
	var cmd *exec.Cmd
	switch ext {
	case "pdf":
		cmd = exec.Command("pdftotext", "-layout", "-enc", "UTF-8", path, "-")
	case "html", "htm", "xhtml":
		cmd = exec.Command("pandoc", "-f", "html", "-t", "plain", "--wrap=none", path)
	case "docx", "odt", "epub":
		cmd = exec.Command("pandoc", "-f", ext, "-t", "plain", "--wrap=none", path)
	default:
		return "", "no reference converter"
	}
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		return "", fmt.Sprintf("%s failed: %v", cmd.Args[0], err)
	}
	return string(out), ""
}

// ligatures are spelled out on both sides: pdftotext keeps some (ﬁ) as
// the font maps them, extractq spells them out. Both sides are NFC first:
// pdftotext writes an accent drawn over its letter as a combining mark
// after it ("e\u0300"), which words would split at.
var ligatures = strings.NewReplacer("\uFB00", "ff", "\uFB01", "fi", "\uFB02", "fl", "\uFB03", "ffi", "\uFB04", "ffl", "\uFB05", "st", "\uFB06", "st")

// words splits text into lower-cased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(ligatures.Replace(norm.NFC.String(s))), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func pairs(w []string) []string {
	var p []string
	for i := 1; i < len(w); i++ {
		p = append(p, w[i-1]+" "+w[i])
	}
	return p
}

// tally counts the files of one extension, in the columns of the report's
// first table.
type tally [nCounts]int

const (
	nFiles = iota
	nRead
	nErrors
	nPanics
	nTimeouts
	nCompared
	nLow
	nCounts
)

// report prints the sweep's tables and lists, and returns how many files
// panicked, hung, or failed with an untyped error or one not naming the
// file.
func report(results []result, minSim float64) (bad int) {
	byExt := map[string]*tally{}
	buckets := []float64{0.99, 0.95, 0.9, 0.8, 0.5, 0}
	counts := make([]int, len(buckets))
	var biggest result
	var low, broken []result
	for _, r := range results {
		t := byExt[r.ext]
		if t == nil {
			t = &tally{}
			byExt[r.ext] = t
		}
		t[nFiles]++
		switch r.status {
		case "ok":
			t[nRead]++
		case "error":
			t[nErrors]++
			if !r.out.Typed || !r.namedFile {
				broken = append(broken, r)
			}
		case "panic":
			t[nPanics]++
			broken = append(broken, r)
		case "timeout":
			t[nTimeouts]++
			broken = append(broken, r)
		}
		if r.rssKB > biggest.rssKB {
			biggest = r
		}
		if r.status != "ok" || !r.hasRef || r.refWords == 0 {
			continue
		}
		t[nCompared]++
		for i, b := range buckets {
			if r.recall >= b {
				counts[i]++
				break
			}
		}
		if r.recall < minSim || r.pairs < minSim {
			t[nLow]++
			low = append(low, r)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ext\tfiles\tread\terrors\tpanics\ttimeouts\tcompared\tbelow min\t")
	row := func(name string, t *tally) {
		fmt.Fprint(tw, name)
		for _, n := range t {
			fmt.Fprintf(tw, "\t%d", n)
		}
		fmt.Fprintln(tw, "\t")
	}
	var sum tally
	for _, e := range slices.Sorted(maps.Keys(byExt)) {
		row(e, byExt[e])
		for i, n := range byExt[e] {
			sum[i] += n
		}
	}
	row("all", &sum)
	tw.Flush()
	fmt.Printf("\nword recall of the %d compared files (with a reference):\n", sum[nCompared])
	prev := "1.00"
	for i, b := range buckets {
		fmt.Printf("  [%.2f, %s%s  %d\n", b, prev, map[bool]string{true: "]", false: ")"}[i == 0], counts[i])
		prev = fmt.Sprintf("%.2f", b)
	}
	if biggest.path != "" {
		fi, _ := os.Stat(biggest.path)
		var size int64
		if fi != nil {
			size = fi.Size()
		}
		fmt.Printf("\npeak RSS: %d MB reading %s (%d bytes, %d pages, %v)\n", biggest.rssKB>>10, biggest.path, size, biggest.out.Pages, biggest.wall.Round(time.Millisecond))
	}
	if len(broken) > 0 {
		fmt.Printf("\npanics, timeouts, untyped or unnamed errors (%d):\n", len(broken))
		for _, r := range broken {
			fmt.Printf("  %s: %s: %s\n", r.path, r.status, r.detail)
		}
	}
	var faults []result
	for _, r := range results {
		if len(r.out.Faults) > 0 {
			faults = append(faults, r)
		}
	}
	if len(faults) > 0 {
		fmt.Printf("\nread with a recovered fault (text lost from there; %d):\n", len(faults))
		for _, r := range faults {
			fmt.Printf("  %s: %d pages: %s\n", r.path, len(r.out.Faults), firstLines(r.out.Faults[0], 1))
		}
	}
	var errs []result
	for _, r := range results {
		if r.status == "error" {
			errs = append(errs, r)
		}
	}
	if len(errs) > 0 {
		fmt.Printf("\nerrors (%d):\n", len(errs))
		for _, r := range errs {
			fmt.Printf("  %s\n", r.detail)
		}
	}
	if len(low) > 0 {
		slices.SortFunc(low, func(a, b result) int { return cmp.Compare(a.recall, b.recall) })
		fmt.Printf("\nbelow %.2f word recall or pair recall (%d):\n", minSim, len(low))
		for _, r := range low {
			fmt.Printf("  %-64s %-5s recall %5.1f%% pairs %5.1f%% precision %5.1f%% (%d ref words) %s\n", r.path, r.out.Format, 100*r.recall, 100*r.pairs, 100*r.precision, r.refWords, r.detail)
		}
	}
	return len(broken)
}
