package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/e2e/fleettest"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/ratelimit"
	"github.com/extractq/extractq/schema"
)

// pendingLetters are the dead letters of run "faulty" still on the stream,
// by document id.
func pendingLetters(t *testing.T) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := jobs.NewDLQ(fx.js).List(t.Context(), jobs.ListFilter{Run: faultyRun}, func(l *jobs.Letter) error {
		out[l.Job.DocumentID] = l.Seq
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFixtureRanForReal(t *testing.T) {
	need(t)
	// Every page test below leans on this: the faulty run's documents
	// were all dead-lettered for a currency outside the enum, the clean
	// run's all succeeded.
	var ok, dead int
	if err := fx.store.Pool().QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE status = 'ok' AND run = $1),
		count(*) FILTER (WHERE status = 'exhausted' AND run = $2) FROM jobs`, cleanRun, faultyRun).Scan(&ok, &dead); err != nil {
		t.Fatal(err)
	}
	if ok != cleanDocs || dead != faultyDocs {
		t.Fatalf("clean ok %d (want %d), faulty exhausted %d (want %d)", ok, cleanDocs, dead, faultyDocs)
	}
}

func TestOverviewShowsRunsAndPools(t *testing.T) {
	need(t)
	c := newClient(t, fx.console(t, false))
	code, body, hdr := c.get("/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy %q: want scripts from the console only", csp)
	}
	runs, _, err := fleetview.Runs(t.Context(), fx.store.Pool(), 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		row := section(t, body, `<tr class="run" data-run="`+run.Name+`">`, "</tr>")
		wants := []string{formatInt(run.Documents), formatInt(run.OK), formatInt(run.Failed), usdText(run)}
		if run.Resubmitted > 0 {
			wants = append(wants, formatInt(run.Resubmitted)+" resubmitted, "+formatInt(run.ResubmittedOK)+" now ok")
		}
		for _, want := range wants {
			if !strings.Contains(row, want) {
				t.Errorf("run %s row lacks %q:\n%s", run.Name, want, row)
			}
		}
		if !strings.Contains(row, "<svg class=\"chart\"") {
			t.Errorf("run %s row has no throughput chart", run.Name)
		}
	}
	// Newest first: in the order of their first job's start.
	last := -1
	for i, run := range runs {
		if i > 0 && run.FirstStarted.After(runs[i-1].FirstStarted) {
			t.Errorf("run %s started after %s but is listed below it", run.Name, runs[i-1].Name)
		}
		at := strings.Index(body, `data-run="`+run.Name+`"`)
		if at < last {
			t.Errorf("run %s is not in newest-first order on the page", run.Name)
		}
		last = at
	}
	for _, pool := range []string{"sim_sloppy", "sim_clean"} {
		row := section(t, body, `<tr class="pool" data-pool="`+pool+`">`, "</tr>")
		if !strings.Contains(row, workerID) || !strings.Contains(row, "concurrency 4") {
			t.Errorf("pool %s row does not list the live worker and its share:\n%s", pool, row)
		}
	}
	if row := section(t, body, `data-pool="sim_sloppy">`, "</tr>"); !strings.Contains(row, `<a href="/dlq">`) {
		t.Errorf("pool sim_sloppy shows no dead letters:\n%s", row)
	}
	code, part, _ := c.get("/partials/pools")
	if code != http.StatusOK || !strings.HasPrefix(strings.TrimSpace(part), `<section class="panel flush" id="pools"`) || strings.Contains(part, "<html") {
		t.Errorf("pools partial: %d, want the panel alone:\n%.300s", code, part)
	}
}

func usdText(r fleetview.Run) string { return formatUSD(r.CostUSD, r.CostComplete) }

// TestRunTotalsMatchJobs checks the counters migration 2 keeps against the
// jobs table they summarise.
func TestRunTotalsMatchJobs(t *testing.T) {
	need(t)
	runs, _, err := fleetview.Runs(t.Context(), fx.store.Pool(), 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 2 {
		t.Fatalf("%d runs, want at least faulty and clean", len(runs))
	}
	for _, r := range runs {
		var jobs, ok, attempts, pt int64
		if err := fx.store.Pool().QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE status = 'ok'),
			sum(attempts), sum(prompt_tokens) FROM jobs WHERE run = $1`, r.Name).Scan(&jobs, &ok, &attempts, &pt); err != nil {
			t.Fatal(err)
		}
		if r.Jobs != jobs || r.OK != ok || r.Attempts != attempts || r.PromptTokens != pt {
			t.Errorf("run %s: totals %d jobs %d ok %d attempts %d tokens, jobs table %d %d %d %d", r.Name, r.Jobs, r.OK, r.Attempts, r.PromptTokens, jobs, ok, attempts, pt)
		}
		if r.Rate() <= 0 {
			t.Errorf("run %s: rate %v", r.Name, r.Rate())
		}
	}
	tp, err := fleetview.Throughput(t.Context(), fx.store.Pool(), []string{faultyRun}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var failed int64
	for _, b := range tp[faultyRun] {
		failed += b.Failed
	}
	if failed < faultyDocs {
		t.Errorf("throughput of run faulty counts %d failed jobs, want at least %d", failed, faultyDocs)
	}
}

// latestJob keeps, of the jobs table, each document's latest job in its
// run, as the run page lists them by default; written here without
// run_resubmitted: no later job of the document and schema in the run
// started after it ended.
const latestJob = `NOT (status <> 'retrying' AND EXISTS (SELECT 1 FROM jobs k WHERE k.run = jobs.run
	AND k.document_id = jobs.document_id AND k.schema_name = jobs.schema_name AND k.job_id <> jobs.job_id
	AND k.started_at >= jobs.finished_at))`

// TestRunPagesByKeyset walks a run's documents page by page, forward and
// back, with the console's page size of 5, and finds each exactly once in
// id order: a resubmitted document (other tests resubmit letters of run
// "faulty") shows its latest job only.
func TestRunPagesByKeyset(t *testing.T) {
	need(t)
	c := newClient(t, fx.console(t, false))
	var want []string
	rows, err := fx.store.Pool().Query(t.Context(), `SELECT document_id FROM jobs WHERE run = $1 AND `+latestJob+`
		ORDER BY document_id COLLATE "C", job_id COLLATE "C"`, faultyRun)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		want = append(want, id)
	}
	docLink := regexp.MustCompile(`class="doclink mono" href="/document\?id=([^"]+)"`)
	next := regexp.MustCompile(`rel="next" href="([^"]+)"`)
	prev := regexp.MustCompile(`rel="prev" href="([^"]+)"`)
	ids := func(body string) []string {
		var out []string
		for _, m := range docLink.FindAllStringSubmatch(body, -1) {
			v, err := url.ParseQuery("id=" + html.UnescapeString(m[1]))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v.Get("id"))
		}
		return out
	}
	var got []string
	var pages []string
	path := "/run?name=" + faultyRun
	for range 10 {
		code, body, _ := c.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		pages = append(pages, path)
		got = append(got, ids(body)...)
		m := next.FindStringSubmatch(body)
		if m == nil {
			break
		}
		path = html.UnescapeString(m[1])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("pages forward gave\n%q\nwant\n%q", got, want)
	}
	if len(pages) != (len(want)+4)/5 {
		t.Errorf("%d pages for %d documents at 5 a page", len(pages), len(want))
	}
	// Back from the last page to the first.
	var back []string
	code, body, _ := c.get(pages[len(pages)-1])
	if code != http.StatusOK {
		t.Fatal(code)
	}
	back = append(ids(body), back...)
	for range 10 {
		m := prev.FindStringSubmatch(body)
		if m == nil {
			break
		}
		code, body, _ = c.get(html.UnescapeString(m[1]))
		if code != http.StatusOK {
			t.Fatal(code)
		}
		back = append(ids(body), back...)
	}
	if strings.Join(back, "\n") != strings.Join(want, "\n") {
		t.Errorf("pages backward gave\n%q\nwant\n%q", back, want)
	}
}

func TestRunFilters(t *testing.T) {
	need(t)
	c := newClient(t, fx.console(t, false))
	// Each filter against the same selection in SQL, at test time (other
	// tests resubmit letters into run "faulty").
	tests := []struct {
		name, query string
		where       string // over jobs, $1 = the run
		run         string
	}{
		{"failed outcome", "outcome=failed", "status NOT IN ('ok', 'unextractable', 'retrying')", faultyRun},
		{"ok outcome", "outcome=ok", "status = 'ok'", faultyRun},
		{"exact status", "outcome=exhausted", "status = 'exhausted'", faultyRun},
		{"id prefix", "q=faulty-01", "starts_with(document_id, 'faulty-01')", faultyRun},
		{"id prefix is case sensitive", "q=FAULTY", "starts_with(document_id, 'FAULTY')", faultyRun},
		{"id prefix is literal, not a LIKE pattern", "q=f%25", "starts_with(document_id, 'f%')", faultyRun},
		{"id contains, any case", "q=ULTY-01&match=contains", "document_id ILIKE '%ulty-01%'", faultyRun},
		{"id contains is literal, not a LIKE pattern", "q=%25&match=contains", `document_id LIKE '%\%%'`, faultyRun},
		{"model filter", "model=sim", "model = 'sim'", cleanRun},
		{"unknown model", "model=gpt-9", "model = 'gpt-9'", cleanRun},
		{"schema version", "version=1", "schema_version = 1", cleanRun},
		{"failed outcome, every job", "outcome=failed&jobs=all", "status NOT IN ('ok', 'unextractable', 'retrying')", faultyRun},
		{"every job", "jobs=all", "true", faultyRun},
	}
	link := regexp.MustCompile(`class="doclink mono" href="/document\?id=([^"]+)"`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			where := tc.where
			if !strings.Contains(tc.query, "jobs=all") {
				where += " AND " + latestJob
			}
			rows, err := fx.store.Pool().Query(t.Context(), "SELECT document_id FROM jobs WHERE run = $1 AND "+where+
				` ORDER BY document_id COLLATE "C", job_id COLLATE "C" LIMIT 5`, tc.run)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for rows.Next() {
				var id string
				_ = rows.Scan(&id)
				want = append(want, url.QueryEscape(id))
			}
			code, body, _ := c.get("/run?name=" + tc.run + "&" + tc.query)
			if code != http.StatusOK {
				t.Fatalf("%d\n%s", code, body)
			}
			var got []string
			for _, m := range link.FindAllStringSubmatch(body, -1) {
				got = append(got, html.UnescapeString(m[1]))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("listed %q, want %q", got, want)
			}
		})
	}
	if !t.Failed() {
		_, body, _ := c.get("/run?name=" + faultyRun + "&q=ULTY-01&match=contains")
		if n := strings.Count(body, `class="doclink`); n != 2 {
			t.Errorf("id search faulty-01x lists %d documents, want 2", n)
		}
	}
	for _, bad := range []string{"/run?name=faulty&outcome=nope", "/run?name=faulty&version=x", "/run?name=faulty&after=!!", "/run?name=faulty&match=regex", "/run?name=faulty&jobs=some"} {
		if code, _, _ := c.get(bad); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, code)
		}
	}
	if code, _, _ := c.get("/run?name=no-such-run"); code != http.StatusNotFound {
		t.Errorf("unknown run: %d, want 404", code)
	}
}

// TestDocumentPage checks a dead-lettered document's page: its text, each
// attempt on the timeline, the violation pinned next to the value at its
// pointer, the feedback and the dead-letter reason.
func TestDocumentPage(t *testing.T) {
	need(t)
	c := newClient(t, fx.console(t, false))
	id := fx.faultyIDs[0]
	h, err := fx.store.History(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ := c.get("/document?id=" + url.QueryEscape(id))
	if code != http.StatusOK {
		t.Fatalf("%d\n%s", code, body)
	}
	if !strings.Contains(body, html.EscapeString(h.Document.Text)) {
		t.Error("the document's text is not on its page")
	}
	if n := strings.Count(body, `<div class="attempt`); n != len(h.Attempts) || n < 2 {
		t.Errorf("%d attempts on the timeline, the audit has %d (want at least 2: one re-ask)", n, len(h.Attempts))
	}
	for _, a := range h.Attempts {
		if !strings.Contains(body, fmt.Sprintf("Delivery %d · attempt %d", a.Delivery, a.N)) {
			t.Errorf("attempt %d/%d missing from the timeline", a.Delivery, a.N)
		}
	}
	checkAttemptIDs(t, body, len(h.Attempts))
	if !strings.Contains(body, `<span class="label-run">run <a href="/run?name=`+url.QueryEscape(h.Attempts[0].Run)) {
		t.Error("the attempts do not name their run")
	}
	checkPinned(t, body, h.Attempts[0].Violations)
	if !strings.Contains(body, "/currency: must be one of") {
		t.Error("no feedback rendered for the enum violation")
	}
	if len(h.DeadLetters) != 1 || !strings.Contains(body, html.EscapeString(h.DeadLetters[0].Reason)) {
		t.Errorf("dead-letter reason not shown (%d letters)", len(h.DeadLetters))
	}
	if !strings.Contains(body, "invoice v1") {
		t.Error("schema version not shown")
	}
	if code, _, _ := c.get("/document?id=nobody"); code != http.StatusNotFound {
		t.Errorf("unknown document: %d, want 404", code)
	}
}

// checkPinned asserts that each violation's marker directly follows the
// value at its pointer, on the line of that pointer.
func checkPinned(t *testing.T, body string, raw []byte) {
	t.Helper()
	vs := decodeViolations(t, raw)
	if len(vs) == 0 {
		t.Fatal("the attempt recorded no violation")
	}
	for _, v := range vs {
		// <div class="jl bad" data-pointer="/currency">  <span class="k">&#34;currency&#34;</span>: <span class="v str">&#34;other&#34;</span>,<span class="viol" data-pointer="/currency"
		re := regexp.MustCompile(`<div class="jl bad" data-pointer="` + regexp.QuoteMeta(v.Pointer) + `">[^\n]*?<span class="v [a-z]+">([^<]*)</span>,?<span class="viol" data-pointer="` + regexp.QuoteMeta(v.Pointer) + `"`)
		m := re.FindStringSubmatch(body)
		if m == nil {
			t.Errorf("violation %s (%s) is not pinned next to its value", v.Pointer, v.Keyword)
			continue
		}
		if got := html.UnescapeString(m[1]); v.Value != "" && got != v.Value {
			t.Errorf("violation %s pinned next to %s, the offending value is %s", v.Pointer, got, v.Value)
		}
	}
}

func decodeViolations(t *testing.T, raw []byte) []schema.Violation {
	t.Helper()
	var vs []schema.Violation
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestUntrustedTextIsEscaped: a document whose id, text and model answers
// hold HTML and scripts is shown as text on every page that shows them.
func TestUntrustedTextIsEscaped(t *testing.T) {
	need(t)
	c := newClient(t, fx.console(t, true))
	c.login()
	seq := strconv.FormatUint(pendingLetters(t)[hostileID], 10)
	// Pages and whether the hostile document is on them (the overview and
	// the first page of letters may not show it, but must not break).
	pages := map[string]bool{
		"/": false, "/dlq": false,
		"/run?name=" + faultyRun + "&q=evil":         true,
		"/document?id=" + url.QueryEscape(hostileID): true,
		"/dlq/letter?seq=" + seq:                     true,
		"/dlq/resubmit?seq=" + seq:                   true,
	}
	for p, shown := range pages {
		code, body, _ := c.get(p)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", p, code)
			continue
		}
		for _, bad := range []string{"<script>alert", "<b>Evil</b>", "<img src=x", "<i>doc</i>", "onerror=alert(2)>"} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: raw %q in the page", p, bad)
			}
		}
		if shown && !strings.Contains(body, "&lt;script&gt;alert") {
			t.Errorf("GET %s: the script is not shown as text", p)
		}
	}
	_, body, _ := c.get("/document?id=" + url.QueryEscape(hostileID))
	if !strings.Contains(body, `<pre class="doc" id="document-text">`+html.EscapeString(hostileText)) {
		t.Errorf("document text not shown verbatim as escaped text:\n%s", section(t, body, `id="document-text"`, "</pre>"))
	}
}

func TestDeadLetterPages(t *testing.T) {
	need(t)
	ro := newClient(t, fx.console(t, false))
	code, body, _ := ro.get("/dlq?run=" + faultyRun)
	if code != http.StatusOK {
		t.Fatal(code)
	}
	pending := pendingLetters(t)
	if n := strings.Count(body, `<tr class="letter"`); n != min(len(pending), 5) {
		t.Errorf("%d letters listed, want a page of %d", n, min(len(pending), 5))
	}
	if strings.Contains(body, `type="checkbox" name="seq"`) || strings.Contains(body, "Resubmit selected") {
		t.Error("a read-only console offers resubmission")
	}
	seq := pending[fx.faultyIDs[1]]
	code, body, _ = ro.get("/dlq/letter?seq=" + strconv.FormatUint(seq, 10))
	if code != http.StatusOK {
		t.Fatalf("letter %d: %d", seq, code)
	}
	l, err := jobs.NewDLQ(fx.js).Get(t.Context(), seq)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, html.EscapeString(l.Reason)) || strings.Count(body, `<div class="attempt`) != len(l.Attempts) {
		t.Errorf("letter page lacks the reason or its %d attempts", len(l.Attempts))
	}
	b, _ := json.Marshal(l.Attempts[len(l.Attempts)-1].Violations)
	checkPinned(t, body, b)
	doc, err := fx.store.Document(t.Context(), l.Job.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `<pre class="doc" id="letter-text">`+html.EscapeString(doc.Text)) {
		t.Error("the letter page does not show the document's text")
	}
	for path, want := range map[string]int{"/dlq/letter?seq=999999": 404, "/dlq/letter?seq=x": 400, "/dlq/resubmit?seq=" + strconv.FormatUint(seq, 10): 403} {
		if code, _, _ := ro.get(path); code != want {
			t.Errorf("read-only GET %s: %d, want %d", path, code, want)
		}
	}
	rw := newClient(t, fx.console(t, true))
	rw.login()
	_, body, _ = rw.get("/dlq?run=" + faultyRun)
	if !strings.Contains(body, `type="checkbox" name="seq"`) || !strings.Contains(body, "Resubmit the run") {
		t.Error("a writable console offers no resubmission")
	}
}

// TestResubmitNeedsTokenAndCSRF: every way around the token or the CSRF
// token is refused, and nothing leaves the dead-letter stream.
func TestResubmitNeedsTokenAndCSRF(t *testing.T) {
	need(t)
	seq := pendingLetters(t)[fx.faultyIDs[2]]
	if seq == 0 {
		t.Fatal("no pending letter for the test")
	}
	s := strconv.FormatUint(seq, 10)
	anon := newClient(t, fx.console(t, true))
	if code, _, hdr := anon.get("/dlq/resubmit?seq=" + s); code != http.StatusSeeOther || !strings.HasPrefix(hdr.Get("Location"), "/login?next=") {
		t.Errorf("confirmation without a session: %d %q, want a redirect to the login", code, hdr.Get("Location"))
	}
	if code, _, _ := anon.post("/dlq/resubmit", url.Values{"seqs": {s}}); code != http.StatusUnauthorized {
		t.Errorf("POST without a session: %d, want 401", code)
	}
	if code, _, _ := anon.post("/login", url.Values{"token": {"wrong-token-wrong-token"}}); code != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: %d, want 401", code)
	}
	anon.login()
	if code, _, _ := anon.post("/dlq/resubmit", url.Values{"seqs": {s}}); code != http.StatusForbidden {
		t.Errorf("POST without a CSRF token: %d, want 403", code)
	}
	if code, _, _ := anon.post("/dlq/resubmit", url.Values{"seqs": {s}, "csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("POST with a forged CSRF token: %d, want 403", code)
	}
	// A cross-site form post is refused before the handler runs.
	req, _ := http.NewRequest(http.MethodPost, anon.base+"/dlq/resubmit", strings.NewReader("seqs="+s))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := anon.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", resp.StatusCode)
	}
	if _, err := jobs.NewDLQ(fx.js).Get(t.Context(), seq); err != nil {
		t.Errorf("letter %d left the stream after refused requests: %v", seq, err)
	}
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil"} {
		if got := safeNext(next, ""); got != "/" {
			t.Errorf("safeNext(%q) = %q, want /", next, got)
		}
	}
	if _, err := New(Config{Store: fx.store, JS: fx.js, AllowWrites: true, Token: "short"}); err == nil {
		t.Error("a short token was accepted")
	}
}

// TestResubmitToAnotherModel resubmits one dead letter to sim:clean through
// the confirmation page and watches it become a result.
func TestResubmitToAnotherModel(t *testing.T) {
	need(t)
	id := fx.faultyIDs[4]
	seq := pendingLetters(t)[id]
	if seq == 0 {
		t.Fatal("no pending letter for the test")
	}
	c := newClient(t, fx.console(t, true))
	c.login()
	s := strconv.FormatUint(seq, 10)
	code, body, _ := c.get("/dlq/resubmit?seq=" + s + "&provider=sim:clean")
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", code, body)
	}
	plan, err := fleetview.PlanResubmit(t.Context(), fx.js, submit.ResubmitRequest{FromDLQ: true, Seqs: []uint64{seq}, Provider: "sim:clean"})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Letters != 1 || plan.PromptTokens == 0 || !plan.CostComplete {
		t.Fatalf("plan %+v: want one letter with its tokens priced", plan)
	}
	if !strings.Contains(body, `<b id="plan-count">1</b>`) || !strings.Contains(body, formatUSD(plan.CostUSD, true)) || !strings.Contains(body, "sim:clean") {
		t.Errorf("confirmation does not say how many, on which provider, at what cost:\n%s", section(t, body, `id="plan"`, "</div>"))
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	seqs := regexp.MustCompile(`name="seqs" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil || seqs == nil || seqs[1] != s {
		t.Fatalf("confirmation form lacks the CSRF token or names other letters (%v)", seqs)
	}
	code, body, _ = c.post("/dlq/resubmit", url.Values{"csrf": {html.UnescapeString(csrf[1])}, "seqs": {seqs[1]}, "provider": {"sim:clean"}})
	if code != http.StatusOK || !strings.Contains(body, `<b id="queued">1</b>`) {
		t.Fatalf("resubmission: %d\n%s", code, section(t, body, "<main>", "</main>"))
	}
	if _, err := jobs.NewDLQ(fx.js).Get(t.Context(), seq); err == nil {
		t.Error("the letter is still on the dead-letter stream")
	}
	waitResult(t, id)
	_, body, _ = c.get("/document?id=" + url.QueryEscape(id))
	if !strings.Contains(body, "Valid result under") || !strings.Contains(body, "Resubmitted") {
		t.Error("the document page does not show the new result and the resubmitted letter")
	}
	// The run counts the document once, by its latest outcome (ok), and
	// names the resubmission on a line of its own (other tests resubmit
	// more of the run's letters meanwhile: at least this one is counted).
	r, _, err := fleetview.RunByName(t.Context(), fx.store.Pool(), faultyRun)
	if err != nil {
		t.Fatal(err)
	}
	if r.Documents != faultyDocs || r.Jobs <= faultyDocs || r.Resubmitted < 1 || r.ResubmittedOK < 1 || r.OK+r.Failed+r.Unextractable+r.InProgress != r.Documents {
		t.Errorf("run %s after a resubmission: %d documents (want %d), %d jobs, %d resubmitted, %d now ok, %d ok + %d failed + %d unextractable + %d in progress",
			faultyRun, r.Documents, faultyDocs, r.Jobs, r.Resubmitted, r.ResubmittedOK, r.OK, r.Failed, r.Unextractable, r.InProgress)
	}
	if _, page, _ := c.get("/run?name=" + url.QueryEscape(faultyRun)); !strings.Contains(page, "<b>"+formatInt(faultyDocs)+"</b><span>documents</span>") || !strings.Contains(page, "now ok") {
		t.Errorf("run page does not count documents or name the resubmission:\n%s", section(t, page, `<div class="stats">`, "</section>"))
	}
	// Two jobs (the run's and the resubmission's) both have a delivery 1,
	// attempt 1: each still has its own element id and says its run.
	h, err := fx.store.History(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	checkAttemptIDs(t, body, len(h.Attempts))
	runs := map[string]bool{}
	for _, a := range h.Attempts {
		runs[a.Run] = true
	}
	for run := range runs {
		if !strings.Contains(body, `<span class="label-run">run <a href="/run?name=`+url.QueryEscape(run)) {
			t.Errorf("no attempt labelled with run %q", run)
		}
	}
}

// checkAttemptIDs asserts that the page has n attempts, each with its own
// element id and a link to it, so that a link to an attempt lands on it.
func checkAttemptIDs(t *testing.T, body string, n int) {
	t.Helper()
	ids := regexp.MustCompile(`<div class="attempt[^"]*" id="(attempt-[^"]+)"`).FindAllStringSubmatch(body, -1)
	seen := map[string]bool{}
	for _, m := range ids {
		if seen[m[1]] {
			t.Errorf("element id %s appears twice", m[1])
		}
		seen[m[1]] = true
		if !strings.Contains(body, `href="#`+m[1]+`"`) {
			t.Errorf("no link to %s", m[1])
		}
	}
	if len(ids) != n {
		t.Errorf("%d attempts with an id, want %d", len(ids), n)
	}
}

func waitResult(t testing.TB, id string) audit.ResultInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		h, err := fx.store.History(ctx, id)
		if err == nil && len(h.Results) > 0 {
			return h.Results[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("document %s has no result a minute after its resubmission", id)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestSchemaPagesAndDiff(t *testing.T) {
	need(t)
	// A second version: currency gains CHF, paid is no longer required.
	v2 := strings.Replace(strings.Replace(fleettest.Schema, `"GBP"]`, `"GBP", "CHF"]`, 1), `, "paid"]`, `]`, 1)
	sc, err := schema.Compile([]byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := submit.New(fx.js, fx.store).RegisterSchema(t.Context(), "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	v := strconv.Itoa(ref.Version)
	c := newClient(t, fx.console(t, false))
	code, body, _ := c.get("/schemas")
	if code != http.StatusOK || !strings.Contains(body, "v1</a>") || !strings.Contains(body, "v"+v+"</a>") {
		t.Fatalf("schemas page: %d, want v1 and v%s listed", code, v)
	}
	code, body, _ = c.get("/schema/diff?name=invoice&from=1&to=" + v)
	if code != http.StatusOK {
		t.Fatalf("diff: %d", code)
	}
	added := regexp.MustCompile(`<div class="jl add"><span class="sign">(?:\+|&#43;)</span>([^<]*)</div>`).FindAllStringSubmatch(body, -1)
	removed := regexp.MustCompile(`<div class="jl del"><span class="sign">-</span>([^<]*)</div>`).FindAllStringSubmatch(body, -1)
	var add, del []string
	for _, m := range added {
		add = append(add, strings.TrimSpace(html.UnescapeString(m[1])))
	}
	for _, m := range removed {
		del = append(del, strings.TrimSpace(html.UnescapeString(m[1])))
	}
	if !contains(add, `"CHF"`) || !contains(del, `"paid"`) {
		t.Errorf("diff v1→v%s: added %q, removed %q; want CHF added and paid no longer required", v, add, del)
	}
	if code, _, _ := c.get("/schema?name=invoice&version=9"); code != http.StatusNotFound {
		t.Errorf("unknown version: %d, want 404", code)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// section returns body from the first start to the following end.
func section(t testing.TB, body, start, end string) string {
	t.Helper()
	i := strings.Index(body, start)
	if i < 0 {
		t.Fatalf("page has no %q", start)
	}
	j := strings.Index(body[i:], end)
	if j < 0 {
		return body[i:]
	}
	return body[i : i+j+len(end)]
}

// TestResubmitUnderNewerSchemaVersion resubmits a letter under version 2 of
// its schema (named by version only: the letter's schema is implied) and
// finds the result made under v2.
func TestResubmitUnderNewerSchemaVersion(t *testing.T) {
	need(t)
	v2 := strings.Replace(fleettest.Schema, `"GBP"]`, `"GBP", "CHF"]`, 1)
	sc, err := schema.Compile([]byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := submit.New(fx.js, fx.store).RegisterSchema(t.Context(), "invoice", sc)
	if err != nil {
		t.Fatal(err)
	}
	id := fx.faultyIDs[6]
	seq := pendingLetters(t)[id]
	if seq == 0 {
		t.Fatal("no pending letter for the test")
	}
	c := newClient(t, fx.console(t, true))
	c.login()
	s := strconv.FormatUint(seq, 10)
	v := strconv.Itoa(ref.Version)
	code, body, _ := c.get("/dlq/resubmit?seq=" + s + "&provider=sim:clean&to_version=" + v)
	if code != http.StatusOK || !strings.Contains(body, "under <b>invoice v"+v+"</b>") {
		t.Fatalf("confirmation: %d, want it to name invoice v%s\n%s", code, v, section(t, body, "<main>", "</main>"))
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)[1]
	code, body, _ = c.post("/dlq/resubmit", url.Values{"csrf": {html.UnescapeString(csrf)}, "seqs": {s}, "provider": {"sim:clean"},
		"schema": {"invoice"}, "to_version": {v}})
	if code != http.StatusOK || !strings.Contains(body, `<b id="queued">1</b>`) {
		t.Fatalf("resubmission: %d\n%s", code, section(t, body, "<main>", "</main>"))
	}
	if r := waitResult(t, id); r.SchemaVersion != ref.Version {
		t.Errorf("result made under v%d, want v%d", r.SchemaVersion, ref.Version)
	}
	if code, body, _ := c.get("/dlq/resubmit?seq=" + s + "&to_version=99"); code != http.StatusNotFound && code != http.StatusBadRequest {
		t.Errorf("a gone letter or an unknown version: %d\n%s", code, body)
	}
}

// TestConfirmARunsLetters: resubmitting "a run's letters" confirms exactly
// the letters of that run still on the stream, by sequence.
func TestConfirmARunsLetters(t *testing.T) {
	need(t)
	pending := pendingLetters(t)
	c := newClient(t, fx.console(t, true))
	c.login()
	code, body, _ := c.get("/dlq/resubmit?run=" + faultyRun)
	if code != http.StatusOK {
		t.Fatalf("confirmation: %d", code)
	}
	if !strings.Contains(body, `<b id="plan-count">`+strconv.Itoa(len(pending))+`</b>`) {
		t.Errorf("confirmation does not count the run's %d letters:\n%s", len(pending), section(t, body, `id="plan"`, "</div>"))
	}
	seqs := regexp.MustCompile(`name="seqs" value="([^"]+)"`).FindStringSubmatch(body)
	if seqs == nil || len(strings.Split(seqs[1], ",")) != len(pending) {
		t.Errorf("the form names %v, want the run's %d letters", seqs, len(pending))
	}
	for _, bad := range []string{"/dlq/resubmit", "/dlq/resubmit?seq=abc", "/dlq/resubmit?seq=1&provider=nosuch:model"} {
		if code, _, _ := c.get(bad); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, code)
		}
	}
	// On a pool no live worker serves, the confirmation warns; once a
	// worker heartbeats for it, it does not.
	onOpenAI := "/dlq/resubmit?run=" + faultyRun + "&provider=openai:gpt-4o-mini"
	if _, body, _ := c.get(onOpenAI); !strings.Contains(body, `id="no-worker">No live worker serves pool <b>openai_gpt-4o-mini</b>`) {
		t.Errorf("no warning for a pool no worker serves:\n%s", section(t, body, `id="plan"`, "</form>"))
	}
	m, err := ratelimit.StartMembership(t.Context(), fx.js, "w-heartbeat", []*ratelimit.Pool{ratelimit.NewPool("openai:gpt-4o-mini", ratelimit.Limits{Concurrency: 1})})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	if _, body, _ := c.get(onOpenAI); strings.Contains(body, `id="no-worker"`) {
		t.Error("a warning though a worker serves the pool")
	}
}

// TestDeadLetterListPrefixAndPages: the dead-letter list filters by the
// start of a run's name, and pages both ways: "older" then "newer" shows
// the first page again.
func TestDeadLetterListPrefixAndPages(t *testing.T) {
	need(t)
	c := newClient(t, fx.console(t, false))
	var total int
	if err := fx.store.Pool().QueryRow(t.Context(), "SELECT count(*) FROM dead_letters WHERE run LIKE 'fault%'").Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total <= 5 {
		t.Fatalf("the fixture has %d dead letters in run faulty, want more than a page (5)", total)
	}
	rowsOf := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<tr class="letter" data-seq="(\d+)"`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	link := func(body, rel string) string {
		m := regexp.MustCompile(`<a rel="` + rel + `" href="([^"]+)"`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return html.UnescapeString(m[1])
	}
	_, first, _ := c.get("/dlq?prefix=fault&all=1")
	page1 := rowsOf(first)
	if len(page1) != 5 {
		t.Fatalf("prefix fault: %d letters on the first page, want 5", len(page1))
	}
	if _, none, _ := c.get("/dlq?prefix=zz&all=1"); len(rowsOf(none)) != 0 || !strings.Contains(none, "in runs starting with zz") {
		t.Error("a prefix no run has lists letters")
	}
	if _, odd, _ := c.get("/dlq?prefix=fa%25&all=1"); len(rowsOf(odd)) != 0 {
		t.Error("% in a prefix is a wildcard")
	}
	next := link(first, "next")
	if next == "" || link(first, "prev") != "" {
		t.Fatalf("first page: next %q, prev %q; want only an older link", next, link(first, "prev"))
	}
	_, second, _ := c.get(next)
	page2 := rowsOf(second)
	if len(page2) == 0 || slices.Contains(page1, page2[0]) {
		t.Fatalf("second page %v overlaps the first %v", page2, page1)
	}
	prev := link(second, "prev")
	if prev == "" {
		t.Fatal("the second page has no link to the newer one")
	}
	_, back, _ := c.get(prev)
	if got := rowsOf(back); !slices.Equal(got, page1) || link(back, "prev") != "" {
		t.Errorf("newer from the second page: %v (prev %q), want the first page %v", got, link(back, "prev"), page1)
	}
}
