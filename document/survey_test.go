package document

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
)

// TestDocumentSurvey reads every file of a list the way `extractq extract`
// and `submit` do (Detect, then ReadBytes with the file's name, OCR by
// tesseract when installed) and reports, per file, what a referee with a
// corpus of real documents would see: the format, pages, characters of
// text, unreadable pages, the error, the time, the bytes allocated and the
// peak live heap, and the share of a reference converter's words found in
// the text. A measure, not a check: run by hand with EXTRACTQ_SURVEY_LIST
// naming a file of paths, one a line, each optionally followed by a tab
// and the path of a reference text (else pdftotext's for a PDF, none for
// the rest); bench/docsurvey/corpus.sh builds such a list.
//
//	EXTRACTQ_SURVEY_LIST=/tmp/docsurvey/list.tsv go test -run TestDocumentSurvey -v -timeout 0 ./document/
//
// EXTRACTQ_SURVEY_TIMEOUT bounds one file (default 60s: a file still
// reading then is reported as a timeout and left running, which a read
// that ignores its context makes visible); EXTRACTQ_SURVEY_OUT names a
// TSV file for the per-file rows, to compare two runs.
func TestDocumentSurvey(t *testing.T) {
	list := os.Getenv("EXTRACTQ_SURVEY_LIST")
	if list == "" {
		t.Skip("EXTRACTQ_SURVEY_LIST is not set")
	}
	timeout := 60 * time.Second
	if v := os.Getenv("EXTRACTQ_SURVEY_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("EXTRACTQ_SURVEY_TIMEOUT=%q: %v (give a duration such as 30s)", v, err)
		}
		timeout = d
	}
	entries, err := readSurveyList(list)
	if err != nil {
		t.Fatal(err)
	}
	var ocr OCR
	if tess, err := NewTesseract(); err == nil {
		ocr = tess
	}
	var out *bufio.Writer
	if p := os.Getenv("EXTRACTQ_SURVEY_OUT"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out = bufio.NewWriter(f)
		defer out.Flush()
		fmt.Fprintln(out, "path\tformat\tpages\tchars\tunreadable\tms\talloc_mb\tpeak_mb\trecall\terr")
	}
	var rows []surveyRow
	for _, e := range entries {
		r := surveyOne(t.Context(), e, ocr, timeout)
		rows = append(rows, r)
		t.Logf("%-8s p=%-4d chars=%-8d unread=%-3d %7.0fms alloc=%6.1fMB peak=%6.1fMB recall=%s %s %s",
			r.format, r.pages, r.chars, r.unreadable, r.ms, r.allocMB, r.peakMB, r.recallString(), e.path, r.err)
		if out != nil {
			fmt.Fprintf(out, "%s\t%s\t%d\t%d\t%d\t%.0f\t%.1f\t%.1f\t%s\t%s\n", e.path, r.format, r.pages, r.chars,
				r.unreadable, r.ms, r.allocMB, r.peakMB, r.recallString(), strings.ReplaceAll(r.err, "\t", " "))
		}
	}
	for _, line := range surveySummary(rows) {
		t.Log(line)
	}
}

type surveyEntry struct{ path, ref string }

// readSurveyList reads "path" or "path<TAB>reference" lines.
func readSurveyList(list string) ([]surveyEntry, error) {
	b, err := os.ReadFile(list)
	if err != nil {
		return nil, fmt.Errorf("survey list %s: %w (write one path a line, e.g. find /usr/share/doc -name '*.pdf' > list)", list, err)
	}
	var es []surveyEntry
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p, ref, _ := strings.Cut(line, "\t")
		es = append(es, surveyEntry{p, ref})
	}
	return es, nil
}

type surveyRow struct {
	format          string
	pages, chars    int
	unreadable      int
	ms              float64
	allocMB, peakMB float64
	recall          float64 // -1: no reference
	err             string
	timeout, panic  bool
	refFailed       bool
}

func (r surveyRow) recallString() string {
	if r.recall < 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", r.recall)
}

// surveyOne reads one file under the timeout in a goroutine of its own,
// sampling the live heap while it runs.
func surveyOne(ctx context.Context, e surveyEntry, ocr OCR, timeout time.Duration) surveyRow {
	row := surveyRow{recall: -1, format: "?"}
	b, err := os.ReadFile(e.path)
	if err != nil {
		row.err = err.Error()
		return row
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	type result struct {
		doc *Document
		err error
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		var res result
		defer func() {
			if p := recover(); p != nil {
				res.err = fmt.Errorf("panic: %v", p)
			}
			done <- res
		}()
		res.doc, res.err = ReadBytes(rctx, b, Options{Name: e.path, OCR: ocr})
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(timeout + 5*time.Second):
		row.timeout = true
		res.err = fmt.Errorf("timeout: still reading after %v", timeout+5*time.Second)
	}
	row.ms = float64(time.Since(start).Microseconds()) / 1000
	close(stop)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	row.allocMB = float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20)
	if p := peak.Load(); p > base {
		row.peakMB = float64(p-base) / (1 << 20)
	}
	if res.err != nil {
		row.err = res.err.Error()
		row.panic = strings.HasPrefix(row.err, "panic: ")
		if errors.Is(res.err, context.DeadlineExceeded) {
			row.timeout = true
		}
		row.format = Detect(bytes.NewReader(b), int64(len(b)), e.path)
		if row.format == "" {
			row.format = "?"
		}
	} else {
		doc := Inline(res.doc)
		row.format, row.pages, row.chars = doc.Format, len(doc.Pages), len(doc.Text)
		row.unreadable = len(doc.Unreadable())
		if ref, ok := surveyReference(e); ok {
			row.recall = wordRecall(ref, doc.Text)
		} else if e.ref != "" {
			row.refFailed = true
		}
	}
	return row
}

// surveyReference is the reference text: the list's file, else pdftotext's
// for a PDF. The converter serves the measure only, never the reader.
func surveyReference(e surveyEntry) (string, bool) {
	if e.ref != "" {
		b, err := os.ReadFile(e.ref)
		return string(b), err == nil
	}
	if strings.EqualFold(filepath.Ext(e.path), ".pdf") {
		if _, err := exec.LookPath("pdftotext"); err == nil {
			b, err := exec.Command("pdftotext", "-q", e.path, "-").Output()
			return string(b), err == nil && len(b) > 0
		}
	}
	return "", false
}

// surveyLigatures spells out the ligature characters both sides may hold.
var surveyLigatures = strings.NewReplacer("ﬀ", "ff", "ﬁ", "fi", "ﬂ", "fl", "ﬃ", "ffi", "ﬄ", "ffl", "ﬅ", "st", "ﬆ", "st")

// surveyWords counts the lower-cased words (runs of letters, marks and
// digits), Arabic presentation forms spelled as letters on both sides
// (pdftotext prints the forms a Unicode map gives, "ﺑﻪ" for "به"); in scripts written without spaces (Han, kana, Thai, Lao,
// Khmer) each character counts as a word, so that where two readers
// break a line does not decide the score.
func surveyWords(s string) map[string]int {
	s = surveyLigatures.Replace(strings.ToLower(arabicForms(s)))
	m := map[string]int{}
	var w strings.Builder
	flush := func() {
		if w.Len() > 0 {
			m[w.String()]++
			w.Reset()
		}
	}
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer):
			flush()
			m[string(r)]++
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			w.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return m
}

// wordRecall is the share of ref's words, as a multiset, that got has;
// 1 when ref has none.
func wordRecall(ref, got string) float64 {
	rw, gw := surveyWords(ref), surveyWords(got)
	total, found := 0, 0
	for w, n := range rw {
		total += n
		found += min(n, gw[w])
	}
	if total == 0 {
		return 1
	}
	return float64(found) / float64(total)
}

// surveySummary sums the rows by format.
func surveySummary(rows []surveyRow) []string {
	type agg struct {
		files, errs, panics, timeouts, low, slow, big int
		ms                                            []float64
		slowest                                       float64
		peak                                          float64
	}
	by := map[string]*agg{}
	for _, r := range rows {
		a := by[r.format]
		if a == nil {
			a = &agg{}
			by[r.format] = a
		}
		a.files++
		if r.err != "" {
			a.errs++
		}
		if r.panic {
			a.panics++
		}
		if r.timeout {
			a.timeouts++
		}
		if r.recall >= 0 && r.recall < 0.8 {
			a.low++
		}
		if r.ms > 2000 {
			a.slow++
		}
		if r.peakMB > 500 {
			a.big++
		}
		a.ms = append(a.ms, r.ms)
		a.slowest = max(a.slowest, r.ms)
		a.peak = max(a.peak, r.peakMB)
	}
	names := make([]string, 0, len(by))
	for k := range by {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(by[b].files-by[a].files, strings.Compare(a, b)) })
	lines := []string{"format    files errors panics timeouts recall<0.8 >2s >500MB median_ms slowest_ms peak_MB"}
	for _, k := range names {
		a := by[k]
		slices.Sort(a.ms)
		lines = append(lines, fmt.Sprintf("%-9s %5d %6d %6d %8d %10d %3d %6d %9.0f %10.0f %7.1f",
			k, a.files, a.errs, a.panics, a.timeouts, a.low, a.slow, a.big, a.ms[len(a.ms)/2], a.slowest, a.peak))
	}
	return lines
}
