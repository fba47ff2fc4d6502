// Command documents measures the document package's PDF reader on a corpus
// of real PDFs: the share of words (and of adjacent word pairs, which
// reading order decides) it recovers against pdftotext, per producer;
// pages per second on one core; and peak heap against document size. The
// same corpus is read by the pure-Go parsers it was chosen against
// (rsc.io/pdf, github.com/ledongthuc/pdf, each with its own text
// extraction) so the choice can be checked again.
//
// The corpus is built, not committed: PDFs shipped by installed Debian
// documentation packages (the program names those missing), plus PDFs it
// makes with LibreOffice, Chromium and img2pdf when they are installed
// (a scan: a page rendered by pdftoppm, wrapped as an image-only PDF).
//
//	go run ./bench/documents                       # the corpus in $TMPDIR/extractq-pdf-corpus
//	go run ./bench/documents -v                    # one line per document
//	go run ./bench/documents -pages 10000          # and a generated 10,000-page PDF
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"

	ledongthuc "github.com/ledongthuc/pdf"
	rscpdf "rsc.io/pdf"

	"github.com/extractq/extractq/document"
)

// debianPackages ship real PDFs from many producers (pdfTeX, FOP,
// ReportLab, Ghostscript, LibreOffice, …).
var (
	maxBytes       int64
	othersMaxPages int
)

var debianPackages = []string{"r-doc-pdf", "asymptote-doc", "gnuplot-doc", "python-reportlab-doc", "docbook-xsl-doc-pdf", "auto-multiple-choice-doc-pdf", "camlidl-doc"}

func main() {
	dir := flag.String("corpus", filepath.Join(os.TempDir(), "extractq-pdf-corpus"), "where the corpus is assembled")
	verbose := flag.Bool("v", false, "one line per document")
	pages := flag.Int("pages", 0, "also read a generated PDF of this many pages (peak heap against size)")
	flag.Int64Var(&maxBytes, "max-bytes", 3<<20, "skip corpus PDFs larger than this (the R reference manual alone takes minutes)")
	flag.IntVar(&othersMaxPages, "others-max-pages", 40, "read with the other parsers only documents of at most this many pages (ledongthuc's own text extraction is quadratic in pages)")
	flag.Parse()
	runtime.GOMAXPROCS(1) // figures per core
	if err := run(*dir, *verbose, *pages); err != nil {
		fmt.Fprintln(os.Stderr, "documents:", err)
		os.Exit(1)
	}
}

type result struct {
	name, producer        string
	size                  int64
	pages                 int
	refWords              int
	ours, rsc, ledongthuc score
	oursTime, oursCPU     time.Duration
	peakHeap              uint64
	err                   string
}

type score struct{ words, pairs float64 }

func run(dir string, verbose bool, genPages int) error {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		return fmt.Errorf("pdftotext is the reference: install poppler-utils (%w)", err)
	}
	files, err := assemble(dir)
	if err != nil {
		return err
	}
	if genPages > 0 {
		p := filepath.Join(dir, fmt.Sprintf("generated-%d-pages.pdf", genPages))
		if err := os.WriteFile(p, manyPages(genPages), 0o644); err != nil {
			return err
		}
		files = append(files, p)
	}
	var results []result
	for _, f := range files {
		r := measure(f)
		results = append(results, r)
		if verbose {
			fmt.Printf("%-40s %8d B %4d p  words %5.1f%% pairs %5.1f%%  rsc %5.1f%%  ledongthuc %5.1f%%  cpu %v  heap %d KiB %s\n",
				filepath.Base(r.name), r.size, r.pages, 100*r.ours.words, 100*r.ours.pairs, 100*r.rsc.words, 100*r.ledongthuc.words, r.oursCPU.Round(time.Millisecond), r.peakHeap>>10, r.err)
		}
	}
	report(results)
	return nil
}

// assemble gathers the corpus: Debian's PDFs and the ones made here.
func assemble(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, pkg := range debianPackages {
		if exec.Command("dpkg", "-s", pkg).Run() != nil {
			fmt.Fprintf(os.Stderr, "documents: Debian package %s is not installed: its PDFs are not in the corpus (apt-get install %s)\n", pkg, pkg)
		}
	}
	var files []string
	filepath.WalkDir("/usr/share/doc", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if !strings.Contains(p, ".pdf") {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() > maxBytes {
			fmt.Fprintf(os.Stderr, "documents: %s skipped: %d bytes, over -max-bytes\n", p, info.Size())
			return nil
		}
		switch {
		case strings.HasSuffix(p, ".pdf"):
			files = append(files, p)
		case strings.HasSuffix(p, ".pdf.gz"):
			out := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(strings.TrimSuffix(p, ".gz"), "/usr/share/doc/"), "/", "_"))
			if _, err := os.Stat(out); err != nil {
				if err := gunzip(p, out); err != nil {
					fmt.Fprintf(os.Stderr, "documents: %s: %v\n", p, err)
					return nil
				}
			}
			files = append(files, out)
		}
		return nil
	})
	made, err := makePDFs(dir)
	if err != nil {
		return nil, err
	}
	return append(files, made...), nil
}

func gunzip(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// sample is the text the office and browser PDFs are made of: a heading,
// a table, and two columns of running text.
const sample = `<html><head><title>Invoice 2024-117</title><style>body{font-family:sans-serif} .cols{column-count:2}</style></head><body>
<h1>Invoice 2024-117</h1>
<p>Acme Widgets Ltd, 12 Harbour Road, Portsmouth. Invoice date: 3 March 2024. Customer: Northwind Traders, account 88213.</p>
<table border="1"><tr><th>Item</th><th>Quantity</th><th>Unit price</th><th>Amount</th></tr>
<tr><td>Steel widget, large</td><td>12</td><td>4.50</td><td>54.00</td></tr>
<tr><td>Copper fitting</td><td>200</td><td>0.35</td><td>70.00</td></tr>
<tr><td>Delivery</td><td>1</td><td>15.00</td><td>15.00</td></tr></table>
<p>Total due: 139.00 GBP within thirty days.</p>
<div class="cols"><p>Terms and conditions. Goods remain the property of Acme Widgets until paid in full. Claims for damage must reach us within seven days of delivery, with photographs of the packaging and the goods. Returns are accepted for unused goods in their original packaging.</p><p>Payment may be made by bank transfer to the account shown below, quoting the invoice number. Late payments bear interest at four percent above the base rate, charged monthly until the balance is settled in full.</p></div>
</body></html>`

// makePDFs makes PDFs with the tools installed, saying which are missing.
func makePDFs(dir string) ([]string, error) {
	html := filepath.Join(dir, "invoice.html")
	if err := os.WriteFile(html, []byte(sample), 0o644); err != nil {
		return nil, err
	}
	var out []string
	try := func(name, tool string, args ...string) {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
			return
		}
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "documents: %s is not installed: no %s in the corpus\n", tool, name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, tool, args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "documents: %s: %v: %s\n", name, err, bytes.TrimSpace(b))
			return
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	try("chromium-invoice.pdf", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer", "--print-to-pdf="+filepath.Join(dir, "chromium-invoice.pdf"), html)
	try("invoice.pdf", "libreoffice", "--headless", "--convert-to", "pdf", "--outdir", dir, html)
	if len(out) > 0 {
		// A scan: the browser's page rendered at 150 dpi, wrapped as an
		// image-only PDF (no text layer: read by OCR, or by a model).
		try("scan-1.png", "pdftoppm", "-r", "150", "-png", "-f", "1", "-l", "1", "-singlefile", out[0], "scan-1")
		out = slicesDelete(out, "scan-1.png")
		try("scan.pdf", "img2pdf", "-o", "scan.pdf", "scan-1.png")
	}
	return out, nil
}

func slicesDelete(s []string, base string) []string {
	var out []string
	for _, p := range s {
		if filepath.Base(p) != base {
			out = append(out, p)
		}
	}
	return out
}

// manyPages is a PDF of n pages of a few lines each, sharing one font.
func manyPages(n int) []byte {
	var b bytes.Buffer
	offs := map[int]int{}
	obj := func(id int, body string) {
		offs[id] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", id, body)
	}
	b.WriteString("%PDF-1.4\n")
	obj(3, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	var kids []string
	for i := range n {
		c := fmt.Sprintf("BT /F1 11 Tf 72 720 Td (Page %d of the long report.) Tj 0 -14 Td (Revenue rose in every region this quarter.) Tj ET", i+1)
		obj(4+2*i, fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(c), c))
		obj(5+2*i, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 4+2*i))
		kids = append(kids, fmt.Sprintf("%d 0 R", 5+2*i))
	}
	obj(2, fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n))
	obj(1, "<< /Type /Catalog /Pages 2 0 R >>")
	last := 4 + 2*n
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", last)
	for id := 1; id < last; id++ {
		fmt.Fprintf(&b, "%010d 00000 n \n", offs[id])
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", last, xref)
	return b.Bytes()
}

func measure(path string) result {
	r := result{name: path}
	info, err := os.Stat(path)
	if err != nil {
		r.err = err.Error()
		return r
	}
	r.size = info.Size()
	ref, err := exec.Command("pdftotext", "-enc", "UTF-8", path, "-").Output()
	if err != nil {
		r.err = "pdftotext: " + err.Error()
		return r
	}
	refWords := words(string(ref))
	r.refWords = len(refWords)

	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go sampleHeap(&peak, stop, done)
	start, cpu0 := time.Now(), cpuTime()
	doc, err := document.ReadFile(context.Background(), path, document.Options{})
	r.oursTime, r.oursCPU = time.Since(start), cpuTime()-cpu0
	close(stop)
	<-done
	r.peakHeap = peak.Load()
	if err != nil {
		r.err = err.Error()
	} else {
		r.pages = len(doc.Pages)
		r.producer = producer(doc.Meta.Other["Producer"], doc.Meta.Other["Creator"], path)
		r.ours = compare(refWords, words(doc.Text))
	}
	if r.producer == "" {
		r.producer = producer("", "", path)
	}
	if r.pages > othersMaxPages {
		r.rsc, r.ledongthuc = score{-1, -1}, score{-1, -1}
		return r
	}
	others++
	r.rsc = compare(refWords, words(rscText(path)))
	r.ledongthuc = compare(refWords, words(ledongthucText(path)))
	return r
}

// cpuTime is the CPU time this process has used: on a shared machine,
// pages per CPU second is the figure that does not depend on the load.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sampleHeap records the largest live heap until stop is closed: the
// reader's peak memory, sampled every 5 ms.
func sampleHeap(peak *atomic.Uint64, stop, done chan struct{}) {
	defer close(done)
	var m runtime.MemStats
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		runtime.ReadMemStats(&m)
		if m.HeapAlloc > peak.Load() {
			peak.Store(m.HeapAlloc)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// producer groups documents by the software that wrote them.
func producer(prod, creator, path string) string {
	p := strings.ToLower(prod + " " + creator)
	for _, k := range []struct{ key, name string }{
		{"pdftex", "pdfTeX"}, {"luatex", "LuaTeX"}, {"xetex", "XeTeX"}, {"dvipdfm", "dvipdfmx"}, {"ghostscript", "Ghostscript"},
		{"fop", "Apache FOP"}, {"reportlab", "ReportLab"}, {"libreoffice", "LibreOffice"}, {"openoffice", "OpenOffice"},
		{"skia", "Chromium (Skia)"}, {"img2pdf", "img2pdf (scan)"}, {"cairo", "cairo"}, {"word", "Microsoft Word"}, {"acrobat", "Adobe"}, {"qpdf", "qpdf"},
	} {
		if strings.Contains(p, k.key) {
			return k.name
		}
	}
	if strings.Contains(path, "generated-") {
		return "generated (this program)"
	}
	if prod != "" {
		return prod
	}
	return "unknown"
}

// words are the text's words: runs between spaces holding a letter or a
// digit (dot leaders and rules are not words, and converters render them
// differently).
func words(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			out = append(out, w)
		}
	}
	return out
}

// compare is the share of the reference's words found in got (as a
// multiset), and of its adjacent word pairs: words measure what is
// recovered, pairs also the order it is read in.
func compare(ref, got []string) score {
	if len(ref) == 0 {
		return score{}
	}
	count := func(ws []string, n int) map[string]int {
		m := map[string]int{}
		for i := 0; i+n <= len(ws); i++ {
			m[strings.Join(ws[i:i+n], " ")]++
		}
		return m
	}
	share := func(n int) float64 {
		r, g := count(ref, n), count(got, n)
		hit, total := 0, 0
		for k, c := range r {
			total += c
			hit += min(c, g[k])
		}
		if total == 0 {
			return 0
		}
		return float64(hit) / float64(total)
	}
	return score{share(1), share(2)}
}

// failures count the documents each other parser could not read at all
// (an error or a panic), by parser.
var failures = map[string]int{}

// others counts the documents the other parsers read (-others-max-pages).
var others int

// rscText is rsc.io/pdf's text: the Content's strings in drawing order.
func rscText(path string) (text string) {
	defer func() {
		if recover() != nil {
			failures["rsc.io/pdf"]++
			text = ""
		}
	}()
	f, err := rscpdf.Open(path)
	if err != nil {
		failures["rsc.io/pdf"]++
		return ""
	}
	var b strings.Builder
	for i := 1; i <= f.NumPage(); i++ {
		for _, t := range f.Page(i).Content().Text {
			b.WriteString(t.S)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ledongthucText is github.com/ledongthuc/pdf's own plain text.
func ledongthucText(path string) (text string) {
	defer func() {
		if recover() != nil {
			failures["ledongthuc/pdf"]++
			text = ""
		}
	}()
	f, r, err := ledongthuc.Open(path)
	if err != nil {
		failures["ledongthuc/pdf"]++
		return ""
	}
	defer f.Close()
	rd, err := r.GetPlainText()
	if err != nil {
		failures["ledongthuc/pdf"]++
		return ""
	}
	b, _ := io.ReadAll(rd)
	return string(b)
}

func report(results []result) {
	type agg struct {
		docs, pages, refWords int
		ours, rsc, led        [2]float64 // word-weighted sums
		otherWords            int        // reference words of the documents the other parsers read
		failed                []string
	}
	groups := map[string]*agg{}
	var totalPages int
	var totalTime, totalCPU time.Duration
	for _, r := range results {
		g := groups[r.producer]
		if g == nil {
			g = &agg{}
			groups[r.producer] = g
		}
		g.docs++
		if r.err != "" {
			g.failed = append(g.failed, filepath.Base(r.name)+": "+r.err)
		}
		g.pages += r.pages
		g.refWords += r.refWords
		w := float64(r.refWords)
		g.ours[0] += w * r.ours.words
		g.ours[1] += w * r.ours.pairs
		if r.rsc.words >= 0 {
			g.otherWords += r.refWords
			g.rsc[0] += w * r.rsc.words
			g.rsc[1] += w * r.ours.words // ours on the same documents
			g.led[0] += w * r.ledongthuc.words
		}
		totalPages += r.pages
		totalTime += r.oursTime
		totalCPU += r.oursCPU
	}
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "producer\tdocs\tpages\tref words\twords\tword pairs\tsmall docs: ours\trsc.io/pdf\tledongthuc\t")
	pct := func(sum float64, n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*sum/float64(n))
	}
	for _, n := range names {
		g := groups[n]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", n, g.docs, g.pages, g.refWords, pct(g.ours[0], g.refWords), pct(g.ours[1], g.refWords), pct(g.rsc[1], g.otherWords), pct(g.rsc[0], g.otherWords), pct(g.led[0], g.otherWords))
	}
	tw.Flush()
	for _, n := range names {
		for _, f := range groups[n].failed {
			fmt.Println("  not read:", f)
		}
	}
	fmt.Printf("\"small docs\": the documents of at most %d pages, which the other parsers read too (%d); of those they could not open or read: rsc.io/pdf %d, ledongthuc/pdf %d\n", othersMaxPages, others, failures["rsc.io/pdf"], failures["ledongthuc/pdf"])
	if totalCPU > 0 {
		fmt.Printf("\nPDF text: %d pages in %v of CPU time (%v wall) with GOMAXPROCS=1: %.0f pages per CPU second\n", totalPages, totalCPU.Round(time.Millisecond), totalTime.Round(time.Millisecond), float64(totalPages)/totalCPU.Seconds())
	}
	sort.Slice(results, func(i, j int) bool { return results[i].size > results[j].size })
	fmt.Println("\npeak heap against document size (largest five):")
	for _, r := range results[:min(5, len(results))] {
		fmt.Printf("  %-50s %9d B %6d pages  peak heap %7d KiB (%.1f× its size)\n", filepath.Base(r.name), r.size, r.pages, r.peakHeap>>10, float64(r.peakHeap)/float64(max(r.size, 1)))
	}
}
