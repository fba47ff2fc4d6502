package console

import (
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs"
)

// pagedLetter is the sequence of the paged run's dead letter.
func pagedLetter(t *testing.T) uint64 {
	t.Helper()
	var seq uint64
	err := jobs.NewDLQ(fx.js).List(t.Context(), jobs.ListFilter{Run: pagedRun}, func(l *jobs.Letter) error {
		seq = l.Seq
		return nil
	})
	if err != nil || seq == 0 {
		t.Fatalf("the paged run's dead letter: %d, %v", seq, err)
	}
	return seq
}

// TestPagesOnDocumentAndLetterPages: the document page of a PDF's result
// lists each value's page, characters within the page and snippet, as the
// audit stored them; the dead letter of the same PDF names the pages that
// failed. A document without sources shows no table.
func TestPagesOnDocumentAndLetterPages(t *testing.T) {
	need(t)
	c := newClient(t, fx.console(t, false))
	h, err := fx.store.History(t.Context(), pagedOK)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Results) != 1 || len(h.Results[0].Sources) == 0 {
		t.Fatalf("the paged result has no sources in the audit: %+v", h.Results)
	}
	code, body, _ := c.get("/document?id=" + url.QueryEscape(pagedOK))
	if code != http.StatusOK {
		t.Fatalf("%d\n%s", code, body)
	}
	table := section(t, body, `<div class="box sources">`, "</table>")
	list := audit.SourceList(h.Results[0].Sources)
	if n := strings.Count(table, "<tr><td"); n != len(list) {
		t.Errorf("%d sources listed, the audit has %d", n, len(list))
	}
	for _, f := range list {
		row := `<td class="mono">` + html.EscapeString(f.Field) + `</td><td class="num"><a href="#page-` + strconv.Itoa(f.Page) + `">` + strconv.Itoa(f.Page) + `</a></td><td class="num">` +
			strconv.Itoa(f.Start) + "–" + strconv.Itoa(f.End) + `</td><td class="snippet">` + html.EscapeString(f.Snippet) + "</td>"
		if !strings.Contains(table, row) {
			t.Errorf("source %s not shown as %s", f.Field, row)
		}
	}
	// The text marks each page's start, which the page numbers link to.
	for _, n := range []string{"1", "2"} {
		if !strings.Contains(body, `<span class="pagebreak" id="page-`+n+`">page `+n+`</span>`) {
			t.Errorf("the document text does not mark page %s:\n%s", n, section(t, body, `id="document-text"`, "</pre>"))
		}
	}
	if _, plain, _ := c.get("/document?id=" + url.QueryEscape(fx.faultyIDs[0])); strings.Contains(plain, `class="box sources"`) {
		t.Error("a document without sources shows a sources table")
	}

	code, body, _ = c.get("/dlq/letter?seq=" + strconv.FormatUint(pagedLetter(t), 10))
	if code != http.StatusOK {
		t.Fatalf("letter: %d", code)
	}
	if !strings.Contains(body, `<dd id="letter-pages">pages 1-2</dd>`) {
		t.Errorf("the letter of a two-page PDF does not name its pages:\n%s", section(t, body, "<h2>Why</h2>", "</section>"))
	}
}
