package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/extractq/extractq/internal/audit"
)

// pages are the parsed templates, one set per page (each page defines
// "title" and "content", rendered inside layout.html).
type pages struct {
	sets map[string]*template.Template
}

// pageNames are the templates/NAME.html files that are whole pages.
var pageNames = []string{"overview", "run", "document", "deadletters", "letter", "confirm", "resubmitted",
	"schemas", "schema", "diff", "login", "error"}

// partialNames are fragments served alone (htmx) as well as inside pages.
var partialNames = []string{"pools"}

func loadPages(base string) (*pages, error) {
	funcs := templateFuncs(base)
	p := &pages{sets: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/parts.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.sets[name] = t
	}
	for _, name := range partialNames {
		t, err := template.New("parts.html").Funcs(funcs).ParseFS(templateFS, "templates/parts.html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.sets["partial:"+name] = t
	}
	return p, nil
}

// view is what every page template gets: the page's own data in Data and
// what the layout needs.
type view struct {
	Base     string
	Writes   bool   // writes are enabled
	LoggedIn bool   // the request has a write session
	CSRF     string // the session's CSRF token, for forms
	Now      time.Time
	Data     any
}

// render writes page name with data; the whole page is rendered before the
// first byte is sent, so a template error becomes a clean 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t, ok := s.pages.sets[name]
	if !ok {
		http.Error(w, "unknown page "+name, http.StatusInternalServerError)
		return
	}
	sess := s.session(r)
	v := view{Base: s.cfg.BasePath, Writes: s.cfg.AllowWrites, LoggedIn: sess != "", CSRF: s.csrfToken(sess), Now: time.Now(), Data: data}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		s.cfg.Log.Error("console: render", "page", name, "err", err)
		http.Error(w, "console: cannot render this page (see the console's log)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// renderPartial writes one fragment of parts.html (for htmx refreshes).
func (s *Server) renderPartial(w http.ResponseWriter, name string, data any) {
	t := s.pages.sets["partial:"+name]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		s.cfg.Log.Error("console: render", "partial", name, "err", err)
		http.Error(w, "console: cannot render this fragment", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// failure is the error page's data.
type failure struct {
	Status  int
	Title   string
	Message string
}

// fail renders the error page.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	if status >= 500 {
		s.cfg.Log.Error("console: "+title, "path", r.URL.Path, "err", msg)
	}
	s.render(w, r, status, "error", failure{Status: status, Title: title, Message: msg})
}

func templateFuncs(base string) template.FuncMap {
	return template.FuncMap{
		"base": func() string { return base },
		// u builds a console URL: path under base plus query pairs.
		"u":        func(path string, kv ...any) string { return buildURL(base, path, kv...) },
		"n":        formatInt,
		"usd":      formatUSD,
		"dur":      formatDuration,
		"ts":       formatTime,
		"ago":      formatAgo,
		"rate":     func(f float64) string { return strconv.FormatFloat(f, 'f', rateDigits(f), 64) },
		"pct":      pct,
		"pretty":   prettyJSON,
		"orDash":   func(s string) string { return orDefault(s, "—") },
		"runName":  func(s string) string { return orDefault(s, "(no run)") },
		"short":    shorten,
		"add":      func(a, b int) int { return a + b },
		"statusOf": statusClass,
		// sourceList orders a result's sources for the page (audit.SourceList).
		"sourceList": audit.SourceList,
		"runURL":     func(name string) string { return buildURL(base, "/run", "name!", name) },
		"indent":     func(n int) string { return strings.Repeat("  ", n) },
		"orRoot":     func(p string) string { return orDefault(p, "/ (the whole value)") },
		"latw":       func(pct float64) float64 { return max(2, pct*0.8) },
		"minutes": func(d time.Duration) string {
			if m := int(d / time.Minute); m != 1 {
				return strconv.Itoa(m) + " minutes"
			}
			return "minute"
		},
		"matchParam": func(contains bool) string {
			if contains {
				return "contains"
			}
			return ""
		},
	}
}

func buildURL(base, path string, kv ...any) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		k := fmt.Sprint(kv[i])
		// "key!" keeps the pair even when its value is empty (a run may be
		// named "").
		if name, always := strings.CutSuffix(k, "!"); always {
			q.Add(name, fmt.Sprint(kv[i+1]))
			continue
		}
		var v string
		switch x := kv[i+1].(type) {
		case string:
			v = x
		case int:
			if x == 0 {
				continue
			}
			v = strconv.Itoa(x)
		case uint64:
			v = strconv.FormatUint(x, 10)
		case bool:
			if !x {
				continue
			}
			v = "1"
		default:
			v = fmt.Sprint(x)
		}
		if v != "" {
			q.Add(k, v)
		}
	}
	if len(q) == 0 {
		return base + path
	}
	return base + path + "?" + q.Encode()
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// formatInt writes an integer with thousands separators.
func formatInt(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		n = int64(min(x, math.MaxInt64))
	case int32:
		n = int64(x)
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatUSD prints a cost; an incomplete one (a price unknown) gets "+?".
func formatUSD(usd float64, complete bool) string {
	var s string
	switch {
	case usd == 0 && !complete:
		return "unknown price"
	case usd < 0.01:
		s = fmt.Sprintf("$%.4f", usd)
	default:
		s = fmt.Sprintf("$%.2f", usd)
	}
	if !complete {
		s += "+?"
	}
	return s
}

func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return "<1 ms"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func formatAgo(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
}

func rateDigits(f float64) int {
	if f >= 100 {
		return 0
	}
	if f >= 1 {
		return 1
	}
	return 2
}

func pct(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return math.Round(float64(part)*1000/float64(whole)) / 10
}

// prettyJSON indents JSON for reading; anything else is returned as is.
func prettyJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// shorten cuts s to n runes with an ellipsis.
func shorten(n int, s string) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// statusClass is the CSS class of a job status.
func statusClass(status string) string {
	switch status {
	case "ok":
		return "ok"
	case "retrying":
		return "busy"
	case "unextractable":
		return "warn"
	default:
		return "bad"
	}
}
