package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/llm"
)

const extractSchema = `{"type":"object","properties":{"vendor":{"type":"string"},"total":{"type":"number"}},"required":["vendor","total"],"additionalProperties":false}`

var fence = regexp.MustCompile(`<document-([0-9]{12})>`)

// documentOf returns the fenced document of a request's task message.
func documentOf(req llm.Request) string {
	task := req.Messages[1].Content
	nonce := fence.FindStringSubmatch(task)[1]
	_, doc, _ := strings.Cut(task, "\n<document-"+nonce+">\n")
	doc, _, _ = strings.Cut(doc, "\n</document-"+nonce+">")
	return doc
}

// model answers like a model with habits: a fenced answer, a re-ask
// needed for documents saying "sloppy", unextractable for recipes.
func model(call int, req llm.Request) extractqtest.Reply {
	doc := documentOf(req)
	vendor, _, _ := strings.Cut(doc, " ")
	switch {
	case strings.Contains(doc, "recipe"):
		return extractqtest.Text(`{"_unextractable": "a recipe"}`)
	case strings.Contains(doc, "sloppy") && len(req.Messages) == 2:
		return extractqtest.Text(`{"vendor": "` + vendor + `"}`)
	}
	return extractqtest.Text("```json\n{\"vendor\": \"" + vendor + "\", \"total\": \"12.5\"}\n```")
}

// gated holds the call for the document "slow" until the document "last"
// has been answered, so that completion order differs from input order.
type gated struct {
	*extractqtest.Provider
	gate chan struct{}
}

func (g *gated) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	doc := documentOf(req)
	if strings.HasPrefix(doc, "slow") {
		select {
		case <-g.gate:
		case <-ctx.Done():
		}
	}
	resp, err := g.Provider.Chat(ctx, req)
	if strings.HasPrefix(doc, "last") {
		close(g.gate)
	}
	return resp, err
}

type cmdRun struct {
	code           int
	stdout, stderr string
	lines          []map[string]any
	specs          []string
}

func runExtractCmd(t *testing.T, p llm.Provider, env map[string]string, stdin string, args ...string) cmdRun {
	t.Helper()
	var r cmdRun
	deps := extractDeps{
		newProvider: func(spec string) (llm.Provider, error) { r.specs = append(r.specs, spec); return p, nil },
		getenv:      func(k string) string { return env[k] },
		exit:        func(code int) { t.Errorf("the command tried to exit %d", code) },
	}
	cmd := cli.Prepare(newExtractCmdWith(deps)) // as under the root command
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	var ee *cli.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.Code
		if ee.Err != nil {
			errb.WriteString(ee.Err.Error())
		}
	default:
		r.code = 2
		errb.WriteString(err.Error())
	}
	r.stdout, r.stderr = out.String(), errb.String()
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("output line %q is not JSON: %v", l, err)
		}
		r.lines = append(r.lines, m)
	}
	return r
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestExtractCmdInputsInOrder(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"schema.json":        extractSchema,
		"one.txt":            "slow Ltd invoice",
		"folder/a.txt":       "sloppy Co invoice",
		"folder/b/c.txt":     "Pancake recipe",
		"folder/.hidden.txt": "never read",
		"batch.jsonl":        `{"id": 7, "text": "mid Inc invoice"}` + "\n\n" + `{"text": "last GmbH invoice"}` + "\n" + `not json` + "\n",
	})
	p := &gated{Provider: extractqtest.New(nil, extractqtest.WithResponder(model)), gate: make(chan struct{})}
	r := runExtractCmd(t, p, nil, "", "--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m", "--concurrency", "3",
		filepath.Join(dir, "one.txt"), filepath.Join(dir, "folder"), filepath.Join(dir, "batch.jsonl"))
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (a recipe is unextractable, a line is bad)\nstderr: %s", r.code, r.stderr)
	}
	want := []struct {
		id, outcome, vendor string
		attempts            float64
	}{
		{filepath.Join(dir, "one.txt"), "ok", "slow", 1},
		{filepath.Join(dir, "folder/a.txt"), "ok", "sloppy", 2},
		{filepath.Join(dir, "folder/b/c.txt"), "unextractable", "", 1},
		{"7", "ok", "mid", 1},
		{filepath.Join(dir, "batch.jsonl") + ":3", "ok", "last", 1},
		{filepath.Join(dir, "batch.jsonl") + ":4", "bad_input", "", 0},
	}
	if len(r.lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(r.lines), len(want), r.stdout)
	}
	for i, w := range want {
		l := r.lines[i]
		id, _ := json.Marshal(l["id"])
		if strings.Trim(string(id), `"`) != w.id || l["outcome"] != w.outcome || l["attempts"] != w.attempts {
			t.Errorf("line %d = %v, want id %s outcome %s attempts %v", i+1, l, w.id, w.outcome, w.attempts)
		}
		if w.outcome == "ok" {
			v, _ := l["value"].(map[string]any)
			if v["vendor"] != w.vendor || v["total"] != 12.5 || l["error"] != nil || l["tokens"].(float64) <= 0 {
				t.Errorf("line %d value %v", i+1, l)
			}
		} else if l["value"] != nil || l["error"] == nil {
			t.Errorf("line %d: a failed document must have an error and no value: %v", i+1, l)
		}
	}
	// 6 attempts over 5 readable documents (one re-asked), 4 valid; the
	// scripted provider answers in text mode.
	for _, s := range []string{"6 documents", "4 ok", "1 failed", "1 unextractable", "6 attempts", "estimated cost",
		"mode json: 6 requests, 4 valid documents; tokens per request "} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("summary lacks %q:\n%s", s, r.stderr)
		}
	}
}

func TestExtractCmd(t *testing.T) {
	dir := writeFiles(t, map[string]string{"schema.json": extractSchema, "bad.json": `{"type": "objekt"}`, "doc.txt": "ACME invoice"})
	sch := filepath.Join(dir, "schema.json")
	tests := []struct {
		name     string
		script   []extractqtest.Reply
		env      map[string]string
		stdin    string
		args     []string
		code     int
		ids      []string
		inStderr string
		spec     string
	}{
		{name: "stdin JSONL, provider from the environment", env: map[string]string{"EXTRACTQ_PROVIDER": "sim:clean"},
			stdin: `{"id":"x","text":"ACME invoice"}` + "\n" + `{"id":"y","text":"Bolt invoice"}`,
			args:  []string{"--schema", sch, "-"}, code: 0, ids: []string{"x", "y"}, inStderr: "2 ok", spec: "sim:clean"},
		{name: "stdin text is one document", stdin: "ACME invoice\nsecond line", args: []string{"--schema", sch, "--provider", "openai:gpt-4o", "--model", "gpt-4o-mini", "-"},
			code: 0, ids: []string{"stdin"}, spec: "openai:gpt-4o-mini"},
		{name: "no provider", args: []string{"--schema", sch, "-"}, code: 2, inStderr: "EXTRACTQ_PROVIDER"},
		{name: "no input", args: []string{"--schema", sch, "--provider", "fake:m"}, code: 2, inStderr: "no input"},
		{name: "bad schema", args: []string{"--schema", filepath.Join(dir, "bad.json"), "--provider", "fake:m", "-"}, code: 2, inStderr: "bad.json"},
		{name: "missing input file", args: []string{"--schema", sch, "--provider", "fake:m", filepath.Join(dir, "nope.txt")}, code: 2, inStderr: "nope.txt"},
		{name: "bad ref-dir", args: []string{"--schema", sch, "--provider", "fake:m", "--ref-dir", "schemas", "-"}, code: 2, inStderr: "PREFIX=DIR"},
		{name: "bad flag value", args: []string{"--schema", sch, "--provider", "fake:m", "--history", "most", "-"}, code: 2, inStderr: "use last or full"},
		// submit's usage test asserts the same messages (cmd/submit).
		{name: "chunk 0", args: []string{"--schema", sch, "--provider", "fake:m", "--chunk", "0", "-"}, code: 2,
			inStderr: `--chunk: invalid extraction config: chunking "0": want auto, off, or a chunk size of at least 100 tokens`},
		{name: "negative chunk", args: []string{"--schema", sch, "--provider", "fake:m", "--chunk", "-5", "-"}, code: 2,
			inStderr: `--chunk: invalid extraction config: chunking "-5": want auto, off, or a chunk size of at least 100 tokens`},
		{name: "chunk banana", args: []string{"--schema", sch, "--provider", "fake:m", "--chunk", "banana", "-"}, code: 2,
			inStderr: `--chunk: invalid extraction config: chunking "banana": want auto, off, or a chunk size of at least 100 tokens`},
		{name: "auth failure stops the run", script: []extractqtest.Reply{extractqtest.Fail(llm.ClassAuth, 0)},
			args: []string{"--schema", sch, "--provider", "fake:m", "--concurrency", "1", filepath.Join(dir, "doc.txt"), filepath.Join(dir, "doc.txt")},
			code: 2, ids: []string{filepath.Join(dir, "doc.txt")}, inStderr: "check the API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []extractqtest.Option{}
			if tt.script == nil {
				opts = append(opts, extractqtest.WithResponder(model))
			}
			r := runExtractCmd(t, extractqtest.New(tt.script, opts...), tt.env, tt.stdin, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			if len(r.lines) != len(tt.ids) {
				t.Fatalf("%d lines, want %d: %s", len(r.lines), len(tt.ids), r.stdout)
			}
			for i, id := range tt.ids {
				if r.lines[i]["id"] != id {
					t.Errorf("line %d id %v, want %s", i+1, r.lines[i]["id"], id)
				}
			}
			if !strings.Contains(r.stderr, tt.inStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.inStderr, r.stderr)
			}
			if tt.spec != "" && (len(r.specs) != 1 || r.specs[0] != tt.spec) {
				t.Errorf("provider specs %v, want %s", r.specs, tt.spec)
			}
		})
	}
}

func TestExtractCmdOutFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{"schema.json": extractSchema, "docs/a.txt": "A invoice", "docs/b.txt": "B invoice"})
	out := filepath.Join(dir, "out.jsonl")
	r := runExtractCmd(t, extractqtest.New(nil, extractqtest.WithResponder(model)), nil, "",
		"--schema", filepath.Join(dir, "schema.json"), "--provider", "fake:m", "--out", out, filepath.Join(dir, "docs"))
	b, err := os.ReadFile(out)
	if r.code != 0 || err != nil || r.stdout != "" || strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), `"vendor":"A"`) {
		t.Fatalf("exit %d, stdout %q, file %q (%v)", r.code, r.stdout, b, err)
	}
}
