package main

import (
	"bytes"
	"encoding/json"
	"html/template"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/extractq/extractq/eval"
)

// evalHTML is the HTML report: the combinations side by side, then each
// one's fields worst first, with example mismatches beside the part of the
// document that holds the expected value.
var evalHTML = template.Must(template.New("eval").Funcs(template.FuncMap{
	"pct": pct,
	"usd": usd,
	"raw": func(b json.RawMessage) string { return orNone(b) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>extractq eval — {{.Report.Schema}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}.bad{background:#fde8e8}.ok{background:#e8f6e8}
pre{white-space:pre-wrap;background:#f6f6f6;padding:6px;margin:0;max-width:60em}mark{background:#ffe58a}
.ex{display:grid;grid-template-columns:22em 1fr;gap:8px;margin:4px 0 12px 0}
</style></head><body>
<h1>extractq eval</h1>
<p>Schema <code>{{.Report.Schema}}</code>, {{.Report.Labels}} labelled documents.
{{with .Report.Unlabelled}}Without a label (not scored): {{len .}}.{{end}}
{{with .Report.Orphans}}Labels without a document (not run): {{len .}}.{{end}}</p>
<table><tr><th>combination</th><th>docs</th><th>valid</th><th>correct</th><th>accuracy</th><th>exact</th><th>re-asks/doc</th><th>$ per 1k valid</th><th>$ per 1k correct</th><th>p50</th><th>p95</th></tr>
{{range .Report.Combinations}}<tr{{if .Incomplete}} class="bad"{{end}}><td>{{.Name}}{{if .Incomplete}} (incomplete){{end}}</td><td>{{.Docs}}</td><td>{{pct .ValidRate}}</td><td>{{pct .CorrectRate}}</td><td>{{pct .Accuracy}}</td><td>{{pct .ExactAccuracy}}</td><td>{{printf "%.2f" .ReaskRate}}</td><td>{{usd . .CostPerValid}}</td><td>{{usd . .CostPerCorrect}}</td><td>{{.P50}}</td><td>{{.P95}}</td></tr>
{{end}}</table>
{{with .Report.Regressions}}<h2>Regressions against {{$.Report.Baseline}}</h2><ul>{{range .}}<li>{{.Combination}}: {{.Text}}</li>{{end}}</ul>{{end}}
{{range $c := .Report.Combinations}}<h2>{{.Name}}</h2>{{with .Error}}<p class="bad">{{.}}</p>{{end}}
<table><tr><th>field</th><th>compared</th><th>accuracy</th><th>exact</th><th>items precision</th><th>items recall</th></tr>
{{range .Fields}}<tr class="{{if lt .Matched .Compared}}bad{{else}}ok{{end}}"><td><code>{{.Field}}</code></td><td>{{.Compared}}</td><td>{{pct .Accuracy}}</td><td>{{pct .ExactRate}}</td><td>{{if .IsItems}}{{pct .Precision}}{{end}}</td><td>{{if .IsItems}}{{pct .Recall}}{{end}}</td></tr>
{{end}}</table>
{{range .Fields}}{{$f := .}}{{range .Examples}}<div class="ex"><div><code>{{.ID}}{{.Pointer}}</code><br>want <code>{{raw .Expected}}</code><br>got <code>{{raw .Got}}</code></div><pre>{{index $.Snippets (printf "%s\x00%s" .ID (raw .Expected))}}</pre></div>
{{end}}{{end}}{{end}}
</body></html>
`))

func writeEvalHTML(path string, rep *evalReport, labels []eval.Label) error {
	text := map[string]string{}
	for _, l := range labels {
		text[l.ID] = l.Text
	}
	snippets := map[string]template.HTML{}
	for _, c := range rep.Combinations {
		for _, f := range c.Fields {
			for _, ex := range f.Examples {
				snippets[ex.ID+"\x00"+orNone(ex.Expected)] = snippet(text[ex.ID], ex.Expected)
			}
		}
	}
	var b bytes.Buffer
	if err := evalHTML.Execute(&b, struct {
		Report   *evalReport
		Snippets map[string]template.HTML
	}{rep, snippets}); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// snippetRadius is how much of the document shows either side of the
// expected value.
const snippetRadius = 120

// snippet is the part of the document around the expected value, the
// value marked; the document's start when the value is not in it.
func snippet(doc string, expected json.RawMessage) template.HTML {
	var v any
	_ = json.Unmarshal(expected, &v)
	needle := ""
	switch x := v.(type) {
	case string:
		needle = x
	case float64:
		needle = string(expected)
	}
	i := -1
	if needle != "" {
		i = strings.Index(strings.ToLower(doc), strings.ToLower(needle))
	}
	if i < 0 {
		return template.HTML(template.HTMLEscapeString(cut(doc, 0, 2*snippetRadius)))
	}
	lo, hi := max(0, i-snippetRadius), min(len(doc), i+len(needle)+snippetRadius)
	for lo > 0 && !utf8.RuneStart(doc[lo]) {
		lo--
	}
	for hi < len(doc) && !utf8.RuneStart(doc[hi]) {
		hi++
	}
	return template.HTML(template.HTMLEscapeString(doc[lo:i]) + "<mark>" + template.HTMLEscapeString(doc[i:i+len(needle)]) + "</mark>" + template.HTMLEscapeString(doc[i+len(needle):hi]))
}

func cut(s string, lo, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[lo:n] + "…"
}
