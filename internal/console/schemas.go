package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/extractq/extractq/internal/audit"
)

type schemaGroup struct {
	Name     string
	Versions []audit.SchemaInfo // oldest first
}

func (s *Server) schemas(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	all, err := s.cfg.Store.Schemas(ctx)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the schemas", err.Error())
		return
	}
	var groups []schemaGroup
	for _, sc := range all {
		if len(groups) == 0 || groups[len(groups)-1].Name != sc.Name {
			groups = append(groups, schemaGroup{Name: sc.Name})
		}
		g := &groups[len(groups)-1]
		g.Versions = append(g.Versions, sc)
	}
	s.render(w, r, http.StatusOK, "schemas", groups)
}

type schemaData struct {
	Info     *audit.SchemaInfo
	Body     string
	Versions []int
}

func (s *Server) schema(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	q := r.URL.Query()
	version, _ := strconv.Atoi(q.Get("version"))
	info, err := s.cfg.Store.SchemaByName(ctx, q.Get("name"), version)
	if errors.Is(err, audit.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "No such schema", err.Error())
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the schema", err.Error())
		return
	}
	d := schemaData{Info: info, Body: canonicalJSON(info.Body)}
	if all, err := s.cfg.Store.Schemas(ctx); err == nil {
		for _, sc := range all {
			if sc.Name == info.Name {
				d.Versions = append(d.Versions, sc.Version)
			}
		}
	}
	s.render(w, r, http.StatusOK, "schema", d)
}

type diffData struct {
	Name     string
	From, To *audit.SchemaInfo
	Lines    []diffLine
	Added    int
	Removed  int
	Versions []int
}

func (s *Server) schemaDiff(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	q := r.URL.Query()
	name := q.Get("name")
	from, errA := strconv.Atoi(q.Get("from"))
	to, errB := strconv.Atoi(q.Get("to"))
	if errA != nil || errB != nil || from < 1 || to < 1 {
		s.fail(w, r, http.StatusBadRequest, "Which versions?", "The diff needs ?name=&from=&to= with two version numbers.")
		return
	}
	a, err := s.cfg.Store.SchemaByName(ctx, name, from)
	var b *audit.SchemaInfo
	if err == nil {
		b, err = s.cfg.Store.SchemaByName(ctx, name, to)
	}
	if errors.Is(err, audit.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "No such schema version", err.Error())
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the schema", err.Error())
		return
	}
	d := diffData{Name: name, From: a, To: b, Lines: diffLines(canonicalJSON(a.Body), canonicalJSON(b.Body))}
	for _, l := range d.Lines {
		switch l.Op {
		case '+':
			d.Added++
		case '-':
			d.Removed++
		}
	}
	if all, err := s.cfg.Store.Schemas(ctx); err == nil {
		for _, sc := range all {
			if sc.Name == name {
				d.Versions = append(d.Versions, sc.Version)
			}
		}
	}
	s.render(w, r, http.StatusOK, "diff", d)
}

// canonicalJSON indents a schema with its keys sorted, so two versions
// differ only where their content does.
func canonicalJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// diffLine is one line of a unified diff: Op is ' ', '+' or '-'.
type diffLine struct {
	Op   byte
	Text string
}

// OpString is Op as text, for templates.
func (d diffLine) OpString() string { return string(d.Op) }

// maxDiffCells bounds the LCS table (lines of a × lines of b); beyond it
// the diff shows the whole old text removed and the new one added.
const maxDiffCells = 4_000_000

// diffLines is a line diff of a and b by longest common subsequence.
func diffLines(a, b string) []diffLine {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(x)*len(y) > maxDiffCells {
		var out []diffLine
		for _, l := range x {
			out = append(out, diffLine{'-', l})
		}
		for _, l := range y {
			out = append(out, diffLine{'+', l})
		}
		return out
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			out = append(out, diffLine{' ', x[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{'-', x[i]})
			i++
		default:
			out = append(out, diffLine{'+', y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, diffLine{'-', x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, diffLine{'+', y[j]})
	}
	return out
}
