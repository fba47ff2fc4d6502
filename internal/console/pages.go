package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/llm"
)

// runsPerPage is the overview's page of runs.
const runsPerPage = 20

// maxDocumentChars bounds the document text a page shows.
const maxDocumentChars = 200_000

type runRow struct {
	fleetview.Run
	Chart chart
}

type poolsView struct {
	Pools []fleetview.Pool
	Err   string
	Now   time.Time
}

type overviewData struct {
	Runs  []runRow
	First bool   // the newest runs
	Next  string // cursor of the next page ("" on the last)
	Pools poolsView
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	after, err := parseRunCursor(r.URL.Query().Get("after"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad page link", err.Error())
		return
	}
	db := s.cfg.Store.Pool()
	runs, next, err := fleetview.Runs(ctx, db, runsPerPage, after)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the runs", err.Error())
		return
	}
	names := make([]string, len(runs))
	for i, run := range runs {
		names[i] = run.Name
	}
	tp, err := fleetview.Throughput(ctx, db, names, 40)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the throughput", err.Error())
		return
	}
	data := overviewData{First: after == nil, Next: runCursor(next), Pools: s.poolsView(ctx)}
	for _, run := range runs {
		data.Runs = append(data.Runs, runRow{Run: run, Chart: newChart(tp[run.Name], 160, 28)})
	}
	s.render(w, r, http.StatusOK, "overview", data)
}

// poolsView reads the pools; an error shows in the panel, not as a failed
// page (the runs are still worth seeing when NATS is down).
func (s *Server) poolsView(ctx context.Context) poolsView {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pools, err := fleetview.Pools(ctx, s.cfg.JS)
	v := poolsView{Pools: pools, Now: time.Now()}
	if err != nil {
		v.Err = err.Error()
	}
	return v
}

func (s *Server) poolsPartial(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	s.renderPartial(w, "pools", s.poolsView(ctx))
}

// outcomes are the run page's outcome filter choices.
var outcomes = []string{"", fleetview.OutcomeOK, fleetview.OutcomeFailed, fleetview.OutcomeUnextractable, fleetview.OutcomeInProgress,
	"exhausted", "budget_exceeded", "fatal", "transport", "canceled"}

type runData struct {
	Run      fleetview.Run
	Chart    chart
	Filter   fleetview.DocFilter
	Query    string // the id text searched
	Contains bool   // searched anywhere in the id, not as a prefix
	Outcomes []string
	Rows     []fleetview.DocRow
	Prev     string
	Next     string
	Jobs     string // the jobs parameter the page links keep: "" or "all"
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	q := r.URL.Query()
	if !q.Has("name") {
		http.Redirect(w, r, s.cfg.BasePath+"/", http.StatusSeeOther)
		return
	}
	f := fleetview.DocFilter{Run: q.Get("name"), Outcome: q.Get("outcome"), Model: q.Get("model")}
	switch q.Get("jobs") {
	case "", "latest":
	case "all":
		f.EveryJob = true
	default:
		s.fail(w, r, http.StatusBadRequest, "Unknown job list", `jobs: "latest" (each document's latest job) or "all"`)
		return
	}
	switch q.Get("match") {
	case "", "prefix":
		f.IDPrefix = q.Get("q")
	case "contains":
		f.IDContains = q.Get("q")
	default:
		s.fail(w, r, http.StatusBadRequest, "Unknown id match", `match: "prefix" or "contains"`)
		return
	}
	if !slices.Contains(outcomes, f.Outcome) {
		s.fail(w, r, http.StatusBadRequest, "Unknown outcome", fmt.Sprintf("outcome %q: choose one of the filter's values", f.Outcome))
		return
	}
	if v := q.Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, r, http.StatusBadRequest, "Bad schema version", fmt.Sprintf("version %q: want a whole number from 1", v))
			return
		}
		f.SchemaVersion = n
	}
	after, err := parseDocCursor(q.Get("after"))
	if err == nil {
		var before *fleetview.DocCursor
		if before, err = parseDocCursor(q.Get("before")); err == nil {
			s.runPage(ctx, w, r, f, after, before)
			return
		}
	}
	s.fail(w, r, http.StatusBadRequest, "Bad page link", err.Error())
}

func (s *Server) runPage(ctx context.Context, w http.ResponseWriter, r *http.Request, f fleetview.DocFilter, after, before *fleetview.DocCursor) {
	db := s.cfg.Store.Pool()
	run, ok, err := fleetview.RunByName(ctx, db, f.Run)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the run", err.Error())
		return
	}
	if !ok {
		s.fail(w, r, http.StatusNotFound, "No such run", fmt.Sprintf("The audit has no jobs of run %q.", f.Run))
		return
	}
	page, err := fleetview.Documents(ctx, db, f, after, before, s.cfg.PageSize)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the run's documents", err.Error())
		return
	}
	tp, err := fleetview.Throughput(ctx, db, []string{f.Run}, 90)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the throughput", err.Error())
		return
	}
	s.render(w, r, http.StatusOK, "run", runData{
		Run: run, Chart: newChart(tp[f.Run], 900, 90), Filter: f, Outcomes: outcomes[1:], Rows: page.Rows,
		Query: f.IDPrefix + f.IDContains, Contains: f.IDContains != "",
		Prev: docCursor(page.Prev), Next: docCursor(page.Next), Jobs: map[bool]string{true: "all"}[f.EveryJob],
	})
}

type documentData struct {
	ID  string
	Doc *audit.Document
	// Pages is the stored text cut at its pages (one part, numbered 0, for
	// a text without pages), at most maxDocumentChars in all.
	Pages       []textPage
	Truncated   bool
	Jobs        []audit.JobInfo
	Results     []audit.ResultInfo
	DeadLetters []audit.DeadLetterInfo
	Attempts    []attemptView
}

func (s *Server) document(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	id := r.URL.Query().Get("id")
	if id == "" {
		s.fail(w, r, http.StatusBadRequest, "Which document?", "Open a document from a run or a dead letter (the page needs ?id=).")
		return
	}
	h, err := s.cfg.Store.History(ctx, id)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the document", err.Error())
		return
	}
	if h.Empty() {
		s.fail(w, r, http.StatusNotFound, "No such document", fmt.Sprintf("The audit holds nothing about document %q.", id))
		return
	}
	d := documentData{ID: id, Doc: h.Document, Jobs: h.Jobs, Results: h.Results, DeadLetters: h.DeadLetters}
	if h.Document != nil {
		d.Pages, d.Truncated = splitPages(h.Document.Text, h.Document.Pages, maxDocumentChars)
	}
	identity := map[string]string{} // job → model identity, variant included
	for _, j := range h.Jobs {
		identity[j.JobID] = j.Model
	}
	valid := map[string]string{} // job → the raw answer of its valid attempt
	for _, a := range h.Attempts {
		v := attemptFromAudit(a)
		v.Identity = identity[a.JobID]
		d.Attempts = append(d.Attempts, v)
		if v.OK && a.Raw != "" {
			valid[a.JobID] = a.Raw
		}
	}
	// A result shows its members in the order the model wrote them.
	d.Results = slices.Clone(d.Results)
	for i, r := range d.Results {
		d.Results[i].Value = inModelOrder(r.Value, valid[r.JobID])
	}
	labelAttempts(d.Attempts)
	scaleLatencies(d.Attempts)
	s.render(w, r, http.StatusOK, "document", d)
}

type deadLettersData struct {
	Filter fleetview.LetterFilter
	Rows   []fleetview.LetterRow
	Next   string // cursor of the older page, "" on the last
	Prev   string // cursor of the newer page, "" on the first
	First  bool
}

func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	q := r.URL.Query()
	f := fleetview.LetterFilter{Run: q.Get("run"), RunPrefix: strings.TrimSpace(q.Get("prefix")), All: q.Get("all") != ""}
	after, err := parseLetterCursor(q.Get("after"))
	if err == nil && after == nil {
		if after, err = parseLetterCursor(q.Get("before")); after != nil {
			after.Back = true
		}
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Bad page link", err.Error())
		return
	}
	page, err := fleetview.DeadLetters(ctx, s.cfg.Store.Pool(), f, after, s.cfg.PageSize)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the dead letters", err.Error())
		return
	}
	s.render(w, r, http.StatusOK, "deadletters", deadLettersData{Filter: f, Rows: page.Rows, Next: letterCursor(page.Next), Prev: letterCursor(page.Prev), First: page.Prev == nil})
}

type letterData struct {
	Letter   *jobs.Letter
	Attempts []attemptView
	Versions []int // registered versions of the letter's schema, for resubmission
	// Text is the document the job ran on (the letter's inline text, else
	// the audit's version of it), cut at maxDocumentChars; "" when neither
	// holds it.
	Text      string
	Truncated bool
	// Places are the pages of the part that failed and the invalid values
	// of the last answer with their pages and snippets.
	Places fleetview.LetterPlaces
	// Publishing: the letter is recorded in the audit and not yet on the
	// dead-letter stream; Letter is made from the audit (Seq 0).
	Publishing bool
}

func (s *Server) letter(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	q := r.URL.Query()
	if job := q.Get("job"); job != "" && (q.Get("seq") == "" || q.Get("seq") == "0") {
		s.recordedLetter(ctx, w, r, job, q.Get("document"))
		return
	}
	seq, err := strconv.ParseUint(q.Get("seq"), 10, 64)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Which dead letter?", "The page needs ?seq= with the letter's sequence number.")
		return
	}
	l, err := jobs.NewDLQ(s.cfg.JS).Get(ctx, seq)
	if errors.Is(err, jobs.ErrLetterNotFound) {
		s.fail(w, r, http.StatusNotFound, "Dead letter gone",
			fmt.Sprintf("%s holds no letter %d: it was resubmitted or has expired. The document's page keeps its history.", jobs.DLQStream, seq))
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the dead letter", err.Error())
		return
	}
	d := letterData{Letter: l}
	for _, a := range l.Attempts {
		b, _ := json.Marshal(a)
		var wa wireAttempt
		_ = json.Unmarshal(b, &wa)
		v := newAttemptView(l.Job.JobID, l.Deliveries, wa, l.WorkerID)
		v.Run, v.Schema, v.Identity = l.Job.Run, fmt.Sprintf("%s v%d", l.Job.Schema.Name, l.Job.Schema.Version), l.Job.Model
		d.Attempts = append(d.Attempts, v)
	}
	d.Text = l.Job.Text
	s.renderLetter(ctx, w, r, d)
}

// recordedLetter shows job's dead letter as the audit recorded it. A
// worker records a letter (sequence 0) before it publishes it to the
// dead-letter stream (migration 015); the lists link a letter without a
// sequence here, so that in between the page says it is being published
// instead of a 404. Once published, it redirects to the letter.
func (s *Server) recordedLetter(ctx context.Context, w http.ResponseWriter, r *http.Request, job, document string) {
	h, err := s.cfg.Store.History(ctx, document)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the dead letter", err.Error())
		return
	}
	var dl *audit.DeadLetterInfo
	for i := range h.DeadLetters {
		if h.DeadLetters[i].JobID == job {
			dl = &h.DeadLetters[i]
		}
	}
	if dl == nil {
		s.fail(w, r, http.StatusNotFound, "No such dead letter",
			fmt.Sprintf("The audit records no dead letter of job %q of document %q.", job, document))
		return
	}
	if dl.Seq > 0 {
		http.Redirect(w, r, s.cfg.BasePath+"/dlq/letter?seq="+strconv.FormatUint(dl.Seq, 10), http.StatusSeeOther)
		return
	}
	l := &jobs.Letter{Time: dl.CreatedAt}
	l.Job = jobs.Envelope{JobID: job, DocumentID: dl.DocumentID, Run: dl.Run,
		Schema: jobs.SchemaRef{Name: dl.SchemaName, Version: dl.SchemaVersion}}
	l.Reason, l.Source = dl.Reason, "recorded"
	for _, j := range h.Jobs {
		if j.JobID == job {
			l.Job.DocumentHash, l.Job.Schema.Fingerprint = j.ContentHash, j.SchemaFingerprint
			l.Job.Provider, l.Job.Model, l.Job.Pool = j.Provider, j.Model, j.Pool
			l.Outcome, l.Deliveries = llm.Outcome(j.Status), j.Deliveries
		}
	}
	// The attempts of the last delivery, as a published letter holds them.
	var last []audit.AttemptInfo
	for _, a := range h.Attempts {
		switch {
		case a.JobID != job:
		case len(last) > 0 && a.Delivery > last[0].Delivery:
			last = []audit.AttemptInfo{a}
		case len(last) == 0 || a.Delivery == last[0].Delivery:
			last = append(last, a)
		}
	}
	d := letterData{Letter: l, Publishing: true}
	for _, a := range last {
		v := attemptFromAudit(a)
		v.Identity = l.Job.Model
		d.Attempts = append(d.Attempts, v)
		l.WorkerID = a.WorkerID
		l.Usage.PromptTokens += a.PromptTokens
		l.Usage.CompletionTokens += a.CompletionTokens
	}
	s.renderLetter(ctx, w, r, d)
}

// renderLetter completes d (the document's text when the letter has none,
// where its misread values are, the schema's versions) and shows it.
func (s *Server) renderLetter(ctx context.Context, w http.ResponseWriter, r *http.Request, d letterData) {
	l := d.Letter
	labelAttempts(d.Attempts)
	scaleLatencies(d.Attempts)
	if d.Text == "" {
		if doc, err := s.cfg.Store.DocumentVersion(ctx, l.Job.DocumentID, l.Job.DocumentHash); err == nil {
			d.Text = doc.Text
		}
	}
	d.Places = fleetview.PlaceLetter(&l.DeadLetter, d.Text)
	if r := []rune(d.Text); len(r) > maxDocumentChars {
		d.Text, d.Truncated = string(r[:maxDocumentChars]), true
	}
	if schemas, err := s.cfg.Store.Schemas(ctx); err == nil {
		for _, sc := range schemas {
			if sc.Name == l.Job.Schema.Name {
				d.Versions = append(d.Versions, sc.Version)
			}
		}
	}
	s.render(w, r, http.StatusOK, "letter", d)
}

// textPage is a part of a document's text as the document page shows it:
// N is its page number, 0 for a text without pages.
type textPage struct {
	N    int
	Text string
}

// splitPages cuts text at the starts of its pages (byte ranges, as the
// reader recorded them; what lies between two pages stays with the page
// before), keeping at most maxRunes runes in all. Ranges that do not fit
// the text (out of order, past its end, inside a character) leave it one
// part: the text is shown whole rather than cut in the wrong places.
func splitPages(text string, pages []audit.PageRange, maxRunes int) (parts []textPage, truncated bool) {
	prev := 0
	for _, p := range pages {
		if p[0] < prev || p[0] > p[1] || p[1] > len(text) || (p[0] < len(text) && !utf8.RuneStart(text[p[0]])) {
			pages = nil
			break
		}
		prev = p[0]
	}
	if len(pages) == 0 {
		parts = []textPage{{Text: text}}
	} else {
		for i, p := range pages {
			start, end := p[0], len(text)
			if i == 0 {
				start = 0
			}
			if i+1 < len(pages) {
				end = pages[i+1][0]
			}
			parts = append(parts, textPage{N: i + 1, Text: text[start:end]})
		}
	}
	left := maxRunes
	for i := range parts {
		n := utf8.RuneCountInString(parts[i].Text)
		if n <= left {
			left -= n
			continue
		}
		cut := 0
		for range left {
			_, size := utf8.DecodeRuneInString(parts[i].Text[cut:])
			cut += size
		}
		if cut == 0 {
			return parts[:i], true
		}
		parts[i].Text = parts[i].Text[:cut]
		return parts[:i+1], true
	}
	return parts, false
}
