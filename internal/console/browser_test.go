package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/schema"
)

// chromium finds the browser: EXTRACTQ_CHROMIUM, else Debian's chromium.
// Missing, the browser test fails in CI (CI=true) and is skipped, loudly,
// elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EXTRACTQ_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "the browser test needs Chromium: apt-get install -y chromium (Debian), or set EXTRACTQ_CHROMIUM to a Chrome binary"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
	return ""
}

// screenshotDir is where the browser test saves its screenshots:
// EXTRACTQ_SCREENSHOTS, else artifacts/screenshots at the module root
// (git-ignored; CI keeps it as an artefact).
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("EXTRACTQ_SCREENSHOTS")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for root := wd; ; root = filepath.Dir(root) {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				dir = filepath.Join(root, "artifacts", "screenshots")
				break
			}
			if filepath.Dir(root) == root {
				t.Fatal("no go.mod above the working directory: set EXTRACTQ_SCREENSHOTS")
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBrowserResubmitDeadLetter drives the console in headless Chromium as
// an operator would: overview, a run, a dead letter with its violation
// marker next to the offending value, log in, resubmit it to another
// model, confirm, and watch the document turn into a result. Each page is
// saved as a screenshot.
func TestBrowserResubmitDeadLetter(t *testing.T) {
	exe := chromium(t)
	need(t)
	shots := screenshotDir(t)
	srv := httptest.NewServer(fx.console(t, true))
	t.Cleanup(srv.Close)

	target := fx.faultyIDs[5]
	seq := pendingLetters(t)[target]
	if seq == 0 {
		t.Fatalf("document %s has no dead letter to resubmit", target)
	}
	letter, err := jobs.NewDLQ(fx.js).Get(t.Context(), seq)
	if err != nil {
		t.Fatal(err)
	}
	violations := letter.Attempts[len(letter.Attempts)-1].Violations
	if len(violations) == 0 {
		t.Fatal("the letter's last attempt has no violation to look at")
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()

	type step = chromedp.Action[chromedp.Void]
	shot := func(name string) step {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(shots, name), png, 0o644)
		}
	}
	do := func(what string, steps ...step) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	value := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	do("open the overview",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`tr.run[data-run="faulty"]`)),
		chromedp.WaitVisible(css(`tr.pool[data-pool="sim_sloppy"]`)),
		shot("01-overview.png"),
	)
	// The vendored htmx loads under the console's Content Security Policy
	// and refreshes the pool panel in place.
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof htmx === 'object' && document.getElementById('pools').hasAttribute('hx-get')`)); err != nil || !ok {
		t.Errorf("htmx did not load on the overview (%v)", err)
	}
	do("follow the run",
		chromedp.Click(css(`tr.run[data-run="faulty"] a.runlink`)),
		chromedp.WaitVisible(css(`table.docs`)),
		shot("02-run.png"),
	)
	if loc := value("location", chromedp.Location()); !strings.Contains(loc, "/run?name=faulty") {
		t.Errorf("the run link led to %s", loc)
	}
	// Page through the run by its links, next to the end and previous
	// back to the start: each of the run's documents once, in id order.
	pageIDs := func() []string {
		t.Helper()
		var ids []string
		raw := value("the page's documents", chromedp.Evaluate[string](`JSON.stringify([...document.querySelectorAll('table.docs a.doclink')].map(a => new URL(a.href).searchParams.get('id')))`))
		if err := json.Unmarshal([]byte(raw), &ids); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	follow := func(rel string) bool {
		t.Helper()
		href := value("the "+rel+" link", chromedp.Evaluate[string](`(document.querySelector('.pager a[rel="`+rel+`"]') || {}).href || ''`))
		if href != "" {
			do(rel+" page of the run", chromedp.Navigate(href), chromedp.WaitVisible(css(`.pager`)))
		}
		return href != ""
	}
	first := pageIDs()
	listed := slices.Clone(first)
	for pages := 1; follow("next"); pages++ {
		if pages == 1 {
			do("screenshot a run's second page", shot("02b-run-page-2.png"))
		}
		if pages > len(fx.faultyIDs) {
			t.Fatal("the run's next links never end")
		}
		listed = append(listed, pageIDs()...)
	}
	want := slices.Clone(fx.faultyIDs)
	slices.Sort(want) // byte order, as the list's keyset
	if !slices.Equal(listed, want) {
		t.Errorf("paging through the run listed %q, want each document once in id order %q", listed, want)
	}
	for pages := 1; follow("prev"); pages++ {
		if pages > len(fx.faultyIDs) {
			t.Fatal("the run's previous links never end")
		}
	}
	if got := pageIDs(); !slices.Equal(got, first) || len(first) != 5 {
		t.Errorf("back at the first page: %q, first seen %q (want the 5 of a page)", got, first)
	}
	s := strconv.FormatUint(seq, 10)
	do("list the run's dead letters",
		chromedp.Navigate(srv.URL+"/dlq?run=faulty"),
		chromedp.WaitVisible(css(`table.letters`)),
		shot("03-dead-letters.png"),
	)
	// The list pages by five: find the letter's page the way a person would.
	for range 5 {
		found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('tr.letter[data-seq="`+s+`"] a.letterlink')`))
		if err != nil {
			t.Fatal(err)
		}
		if found {
			break
		}
		do("next page of letters", chromedp.Click(css(`.pager a:last-child`)), chromedp.WaitVisible(css(`table.letters`)))
	}
	do("open the letter",
		chromedp.Click(css(`tr.letter[data-seq="`+s+`"] a.letterlink`)),
		chromedp.WaitVisible(css(`#letter-reason`)),
		shot("04-dead-letter.png"),
	)

	// Each value box shows its first violation without scrolling.
	if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll('.box > .json')].every(b => {
		const bad = b.querySelector('.jl.bad');
		return !bad || (bad.offsetTop >= b.scrollTop && bad.offsetTop < b.scrollTop + b.clientHeight);
	})`)); err != nil || !ok {
		t.Errorf("a value box hides its first violation (%v)", err)
	}
	// Each violation marker must follow the value at its pointer, on that
	// pointer's line.
	var pinned []struct {
		Pointer     string `json:"pointer"`
		LinePointer string `json:"line"`
		Value       string `json:"value"`
		ValueClass  string `json:"value_class"`
	}
	raw := value("read the violation markers", chromedp.Evaluate[string](`JSON.stringify([...document.querySelectorAll('.attempt:last-of-type .viol')].map(v => ({
		pointer: v.dataset.pointer,
		line: v.closest('.jl') ? v.closest('.jl').dataset.pointer : null,
		value: v.previousElementSibling ? v.previousElementSibling.textContent : null,
		value_class: v.previousElementSibling ? v.previousElementSibling.className : null,
	})))`))
	if err := json.Unmarshal([]byte(raw), &pinned); err != nil {
		t.Fatal(err)
	}
	for _, v := range violations {
		found := false
		for _, p := range pinned {
			if p.Pointer != v.Pointer {
				continue
			}
			found = true
			if p.LinePointer != v.Pointer || !strings.HasPrefix(p.ValueClass, "v ") || (v.Value != "" && p.Value != v.Value) {
				t.Errorf("violation %s: marker on line %q next to %q (%s), want next to %s", v.Pointer, p.LinePointer, p.Value, p.ValueClass, v.Value)
			}
		}
		if !found {
			t.Errorf("violation %s (%s) has no marker on the page (markers: %s)", v.Pointer, v.Keyword, raw)
		}
	}

	do("log in",
		chromedp.Click(css(`header .who a`)),
		chromedp.WaitVisible(css(`#token`)),
		chromedp.SendKeys(css(`#token`), token),
		chromedp.Click(css(`#login`)),
		chromedp.WaitVisible(css(`header .who .pill.ok`)),
	)
	do("ask to resubmit it to another model",
		chromedp.Navigate(srv.URL+"/dlq/letter?seq="+s),
		chromedp.WaitVisible(css(`#resubmit-one`)),
		chromedp.SendKeys(css(`#resubmit-one input[name="provider"]`), "sim:clean"),
		chromedp.Click(css(`#resubmit-one button`)),
		chromedp.WaitVisible(css(`#plan-count`)),
		shot("05-confirm.png"),
	)
	count := value("planned letters", chromedp.Text(css(`#plan-count`)))
	cost := value("planned cost", chromedp.Text(css(`#plan-cost`)))
	if count != "1" || !strings.HasPrefix(cost, "$") {
		t.Errorf("confirmation says %q letters at %q, want 1 at a dollar estimate", count, cost)
	}
	do("confirm",
		chromedp.Click(css(`#confirm`)),
		chromedp.WaitVisible(css(`#resubmit-summary`)),
		shot("06-resubmitted.png"),
	)
	if queued := value("queued", chromedp.Text(css(`#queued`))); queued != "1" {
		t.Errorf("resubmission queued %q, want 1", queued)
	}
	waitResult(t, target)
	do("see the result on the document's page",
		chromedp.Navigate(srv.URL+"/document?id="+target),
		chromedp.WaitVisible(css(`.success`)),
		shot("07-document.png"),
	)
	if result := value("result", chromedp.Text(css(`.success`))); !strings.Contains(result, "Valid result") || !strings.Contains(result, "sim:clean") {
		t.Errorf("document page says %q, want a valid result from sim:clean", result)
	}
	// In its run the document is one row now: its latest job, ok, marked
	// as a resubmission.
	do("find the document in its run",
		chromedp.Navigate(srv.URL+"/run?name=faulty&q="+target),
		chromedp.WaitVisible(css(`table.docs`)),
		shot("07b-run-resubmitted.png"),
	)
	if row := value("the document's row", chromedp.Text(css(`table.docs tbody`))); strings.Count(row, target) != 1 ||
		!strings.Contains(row, "ok") || !strings.Contains(row, "resubmitted") {
		t.Errorf("the run lists %q for %s, want one row, ok, resubmitted", row, target)
	}
	// Pages to the end: a PDF's result shows each value's page and
	// snippet, and the dead letter of the same PDF the pages that failed.
	h, err := fx.store.History(t.Context(), pagedOK)
	if err != nil || len(h.Results) != 1 {
		t.Fatalf("history of %s: %d results, %v", pagedOK, len(h.Results), err)
	}
	src := audit.SourceList(h.Results[0].Sources)[0]
	do("see where the values are on a PDF's document page",
		chromedp.Navigate(srv.URL+"/document?id="+pagedOK),
		chromedp.WaitVisible(css(`.box.sources td.snippet`)),
		chromedp.ScrollIntoView(css(`.box.sources`)),
		shot("10-document-pages.png"),
	)
	// The text shows where each page starts, and a source's page number
	// links there.
	if mark := value("the text's second page mark", chromedp.Text(css(`#document-text #page-2`))); !strings.EqualFold(mark, "page 2") {
		t.Errorf("the document text marks %q where page 2 starts, want \"page 2\"", mark)
	}
	link, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`.box.sources tbody tr:first-child a[href^="#page-"]`), "href"))
	if err != nil {
		t.Fatalf("a source's page link: %v", err)
	}
	if href := link.Value; href != "#page-"+strconv.Itoa(src.Page) {
		t.Errorf("the first source's page links to %q, want #page-%d", href, src.Page)
	}
	row := value("the first source's row", chromedp.Text(css(`.box.sources tbody tr:first-child`)))
	if !strings.Contains(row, src.Field) || !strings.Contains(row, strconv.Itoa(src.Page)) || !strings.Contains(row, src.Snippet) {
		t.Errorf("first source row reads %q, want %s on page %d with %q", row, src.Field, src.Page, src.Snippet)
	}
	do("see the pages of a PDF's dead letter",
		chromedp.Navigate(srv.URL+"/dlq/letter?seq="+strconv.FormatUint(pagedLetter(t), 10)),
		chromedp.WaitVisible(css(`#letter-pages`)),
		shot("11-dead-letter-pages.png"),
	)
	if pages := value("the letter's pages", chromedp.Text(css(`#letter-pages`))); pages != "pages 1-2" {
		t.Errorf("the letter names %q, want pages 1-2", pages)
	}
	do("schemas",
		chromedp.Navigate(srv.URL+"/schemas"),
		chromedp.WaitVisible(css(`main table`)),
		shot("08-schemas.png"),
	)
	sc, err := schema.Compile([]byte(strings.Replace(fleettest.Schema, `"GBP"]`, `"GBP", "CHF"]`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := submit.New(fx.js, fx.store).RegisterSchema(t.Context(), "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	do("compare two schema versions",
		chromedp.Navigate(srv.URL+"/schema/diff?name=invoice&from=1&to="+strconv.Itoa(ref.Version)),
		chromedp.WaitVisible(css(`.diff .jl.add`)),
		shot("09-schema-diff.png"),
	)
	if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("the browser test ran out of time")
	}
	t.Logf("screenshots in %s", shots)
}
