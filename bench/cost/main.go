// Command cost measures what a valid document costs: it runs the same
// documents through extractq in each mode and through an established
// extraction library (instructor-js, pinned, run by node) against the same
// simulator endpoint, with the same profile, seed and concurrency, and
// prints calls, input tokens (cached apart), output tokens, valid documents
// and the notional cost per valid document of each.
//
//	go run ./bench/cost                          # 400 invoices, realistic output faults, seed 1, concurrency 8
//	go run ./bench/cost -peer=false              # extractq only
//	go run ./bench/cost -peer-dir /tmp/peer      # reuse (or keep) the peer's npm install
//	go run ./bench/cost -tokenizer estimate      # the simulator's ~4 characters a token instead of o200k_base
//	go run ./bench/cost -dump /tmp/bodies         # also write each engine's first request for the first document
//	go run ./bench/cost -labels=false            # values drawn from the text instead of each invoice's label
//
// The simulator counts what providers count (tool definitions and
// response formats as OpenAI renders them, message framing; see
// internal/sim/tokens.go), by default with OpenAI's o200k_base tokenizer
// (gpt-4o-mini's, tables embedded: nothing is downloaded).
//
// Each invoice with a label (NAME.expected.json) is answered with it, by
// both engines' simulator: a model reading the document writes its values
// whatever form the schema takes, and so the output tokens compare.
//
// The peer is installed with npm into a temporary directory; where the
// registry or node cannot be reached it is skipped with a message and
// extractq's rows are still printed. Every run gets a fresh simulator, so
// no run profits from another's prompt cache. Costs use the simulator's
// notional price (providers.SimInputPrice…), which no one charges: compare
// rows, not dollars.
package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

//go:embed peer.mjs
var peerScript []byte

// Pinned versions of the peer and what it needs.
const (
	peerPackage = "@instructor-ai/instructor@1.7.0"
	peerOpenAI  = "openai@4.104.0"
	peerZod     = "zod@3.25.76"
)

// pairs are the modes compared: extractq's mode and instructor's closest.
// instructor's JSON_SCHEMA sends the schema in a json_object response
// format (not enforced by OpenAI's API); it is the nearest to strict.
var pairs = []struct {
	mode llm.Mode
	peer string
}{
	{llm.ModeText, "MD_JSON"},
	{llm.ModeJSON, "JSON"},
	{llm.ModeStrict, "JSON_SCHEMA"},
	{llm.ModeTools, "TOOLS"},
}

type config struct {
	dir, schemaPath, profile, peerDir string
	schemaIn                          string
	docs, conc, reasks                int
	seed                              uint64
	peer, faultsOnly                  bool
	npmTimeout                        time.Duration
	tokenizer                         string
	dump                              string           // directory for each run's first request body; empty: none
	count                             func(string) int // the simulator's token counter
	labels                            bool
	key                               *sim.AnswerKey // the labels the simulator answers with; nil: none
}

func main() {
	var c config
	flag.StringVar(&c.dir, "dir", "examples/invoices", "folder of .txt documents, cycled to -docs documents")
	flag.StringVar(&c.schemaPath, "schema", "examples/invoice.schema.json", "JSON Schema every document is extracted with")
	flag.StringVar(&c.profile, "profile", "realistic", "simulator profile (built-in name or file): the output faults every run meets")
	flag.BoolVar(&c.faultsOnly, "faults-only", true, "drop the profile's latency and transport errors, keeping its output faults (what decides cost)")
	flag.IntVar(&c.docs, "docs", 400, "documents per run")
	flag.IntVar(&c.conc, "c", 8, "documents in flight")
	flag.StringVar(&c.schemaIn, "schema-in", "auto", "extractq's schema placement in the prompt: auto, example, schema or none")
	flag.IntVar(&c.reasks, "reasks", 3, "re-asks after an invalid answer, for extractq and the peer alike")
	flag.Uint64Var(&c.seed, "seed", 1, "simulator seed")
	flag.BoolVar(&c.peer, "peer", true, "also run the peer (instructor-js via node and npm)")
	flag.StringVar(&c.peerDir, "peer-dir", "", "directory for the peer's npm install (kept; reused when already installed); empty: a temporary one")
	flag.DurationVar(&c.npmTimeout, "npm-timeout", 3*time.Minute, "how long npm install may take")
	flag.StringVar(&c.tokenizer, "tokenizer", "o200k", "how the simulator counts tokens: o200k (OpenAI's o200k_base, gpt-4o-mini's, embedded) or estimate (its own ~4 characters a token)")
	flag.BoolVar(&c.labels, "labels", true, "answer each labelled document (NAME.expected.json beside its .txt) with its label, as a model reading it would; false: values drawn from the text, which depend on the form the schema is sent in")
	flag.StringVar(&c.dump, "dump", "", "directory to write each run's first request for the first document to (ENGINE-MODE.json), to compare what the engines send")
	flag.Parse()
	if err := run(context.Background(), c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cost:", err)
		os.Exit(1)
	}
}

type doc struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// expected is the document's label (NAME.expected.json beside its
	// .txt), nil when it has none; not sent to the peer.
	expected json.RawMessage
}

// row is one run's figures.
type row struct {
	engine, mode string
	calls        int64
	usage        llm.Usage
	valid, docs  int
	elapsed      time.Duration
}

func run(ctx context.Context, c config, out io.Writer) error {
	if c.docs < 1 || c.conc < 1 || c.reasks < 0 {
		return errors.New("-docs and -c must be positive and -reasks not negative")
	}
	s, err := schema.CompileFile(c.schemaPath)
	if err != nil {
		return fmt.Errorf("schema: %w (run from the repository root, or pass -schema)", err)
	}
	docs, err := loadDocs(c.dir, c.docs)
	if err != nil {
		return err
	}
	prof, err := sim.LoadProfile(c.profile)
	if err != nil {
		return err
	}
	if c.faultsOnly {
		prof.Latency, prof.Errors, prof.RateLimits = sim.Latency{}, sim.ErrorRates{}, sim.RateLimits{}
	}
	if c.count, err = tokenCounter(c.tokenizer); err != nil {
		return err
	}
	if c.labels {
		c.key = answerKey(docs)
	}
	fmt.Fprintf(out, "bench/cost: %d documents from %s (%d answered with their labels), profile %s (faults only: %v), seed %d, concurrency %d, %d re-asks, tokens counted by %s\n\n",
		len(docs), c.dir, labelled(c.key), prof.Name, c.faultsOnly, c.seed, c.conc, c.reasks, c.tokenizer)
	var rows []row
	for _, p := range pairs {
		r, err := runExtractq(ctx, c, prof, s, docs, p.mode)
		if err != nil {
			return fmt.Errorf("extractq %s: %w", p.mode, err)
		}
		rows = append(rows, r)
	}
	var peerNote string
	if c.peer {
		dir, cleanup, err := installPeer(ctx, c)
		if err != nil {
			peerNote = "instructor-js skipped: " + err.Error()
		} else {
			defer cleanup()
			for _, p := range pairs {
				r, err := runPeer(ctx, c, prof, s, docs, dir, p.peer)
				if err != nil {
					return fmt.Errorf("instructor-js %s: %w", p.peer, err)
				}
				rows = append(rows, r)
			}
		}
	}
	printTable(out, rows)
	if peerNote != "" {
		fmt.Fprintln(out, "\n"+peerNote)
	}
	return nil
}

// loadDocs cycles the folder's documents to n, each with its own id line
// so that every document is distinct (its own simulator draws), and with
// its label where the folder has one.
func loadDocs(dir string, n int) ([]doc, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no .txt documents in %s (run from the repository root, or pass -dir): %v", dir, err)
	}
	sort.Strings(files)
	bodies := make([]string, len(files))
	labels := make([]json.RawMessage, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		bodies[i] = strings.TrimSpace(string(b))
		if l, err := os.ReadFile(strings.TrimSuffix(f, ".txt") + ".expected.json"); err == nil {
			labels[i] = l
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	docs := make([]doc, n)
	for i := range docs {
		id := fmt.Sprintf("doc-%04d", i+1)
		docs[i] = doc{ID: id, Text: bodies[i%len(bodies)] + "\n\nScan reference " + id + ".", expected: labels[i%len(bodies)]}
	}
	return docs, nil
}

// answerKey makes the simulator answer every labelled document with its
// label, as a model reading it would, whatever form the schema is sent in:
// without it the simulator draws values from the text's words, seeded by
// the schema's shape, so two engines sending the same schema in different
// forms would get answers of different lengths. nil when no document is
// labelled.
func answerKey(docs []doc) *sim.AnswerKey {
	k := sim.NewAnswerKey()
	for _, d := range docs {
		if d.expected != nil {
			k.Add(d.Text, d.expected)
		}
	}
	if k.Len() == 0 {
		return nil
	}
	return k
}

// newSim starts a fresh simulator on loopback HTTP: a fresh prompt cache
// and fresh counters for every run. With -dump, the run's first request
// body is written to DIR/name.json.
func newSim(prof sim.Profile, c config, name, firstDoc string) (*sim.Server, *httptest.Server, error) {
	s := sim.New(prof, sim.WithSeed(c.seed), sim.WithTokenCounter(c.count), sim.WithAnswers(c.key))
	h := s.Handler()
	if c.dump != "" {
		if err := os.MkdirAll(c.dump, 0o755); err != nil {
			return nil, nil, fmt.Errorf("-dump: %w", err)
		}
		h = firstBody(h, filepath.Join(c.dump, name+".json"), firstDoc)
	}
	return s, httptest.NewServer(h), nil
}

// firstBody passes every request to h and writes the body of the first
// one that carries the document id (the same document for every engine),
// indented, to path; a failure to write is reported on stderr (the run's
// figures do not depend on it).
func firstBody(h http.Handler, path, id string) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if err == nil && bytes.Contains(b, []byte(id)) {
			once.Do(func() {
				var out bytes.Buffer
				if err = json.Indent(&out, b, "", "  "); err == nil {
					err = os.WriteFile(path, out.Bytes(), 0o644)
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "bench/cost: -dump %s: %v\n", path, err)
				}
			})
		}
		h.ServeHTTP(w, r)
	})
}

func runExtractq(ctx context.Context, c config, prof sim.Profile, s *schema.Schema, docs []doc, mode llm.Mode) (row, error) {
	srv, hs, err := newSim(prof, c, "extractq-"+string(mode), docs[0].ID)
	if err != nil {
		return row{}, err
	}
	defer srv.Close()
	defer hs.Close()
	p, err := extractq.NewProvider("openai:gpt-4o-mini", extractq.WithProviderBaseURL(hs.URL+"/v1"),
		extractq.WithProviderAPIKey("sk-sim-bench"))
	if err != nil {
		return row{}, err
	}
	x, err := extractq.New(extractq.WithProvider(p), extractq.WithMode(mode), extractq.WithMaxReasks(c.reasks),
		extractq.WithSchemaIn(extractq.SchemaIn(c.schemaIn)))
	if err != nil {
		return row{}, err
	}
	start := time.Now()
	valid := make([]bool, len(docs))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range c.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res, err := x.Extract(ctx, docs[i].Text, s)
				valid[i] = err == nil && isValid(s, res.Value)
			}
		}()
	}
	for i := range docs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return finish("extractq", string(mode), srv, valid, time.Since(start)), nil
}

func isValid(s *schema.Schema, v json.RawMessage) bool {
	if len(v) == 0 {
		return false
	}
	vs, err := s.ValidateJSON(v)
	return err == nil && len(vs) == 0
}

// finish reads the simulator's counters: every engine is measured the
// same way, by what the endpoint served.
func finish(engine, mode string, srv *sim.Server, valid []bool, elapsed time.Duration) row {
	st := srv.Stats()
	r := row{engine: engine, mode: mode, calls: st.Requests, docs: len(valid), elapsed: elapsed,
		usage: llm.Usage{PromptTokens: int(st.PromptTokens), CompletionTokens: int(st.CompletionTokens),
			CachedPromptTokens: int(st.CachedPromptTokens), CacheCreationTokens: int(st.CacheCreationTokens)}}
	for _, v := range valid {
		if v {
			r.valid++
		}
	}
	return r
}

// installPeer installs the pinned peer with npm, or reuses -peer-dir.
func installPeer(ctx context.Context, c config) (dir string, cleanup func(), err error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", nil, errors.New("node is not installed (the peer runs on node 18 or later)")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", nil, errors.New("npm is not installed")
	}
	cleanup = func() {}
	if dir = c.peerDir; dir == "" {
		if dir, err = os.MkdirTemp("", "extractq-bench-peer-"); err != nil {
			return "", nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "peer.mjs"), peerScript, 0o644); err != nil {
		cleanup()
		return "", nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@instructor-ai", "instructor", "package.json")); err == nil {
		return dir, cleanup, nil
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true, "type": "module"}`), 0o644); err != nil {
		cleanup()
		return "", nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, c.npmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ictx, "npm", "install", "--no-audit", "--no-fund", "--save-exact", peerPackage, peerOpenAI, peerZod)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("npm install %s %s %s failed (is the npm registry reachable?): %w: %s",
			peerPackage, peerOpenAI, peerZod, err, lastLine(stderr.String()))
	}
	return dir, cleanup, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func runPeer(ctx context.Context, c config, prof sim.Profile, s *schema.Schema, docs []doc, dir, mode string) (row, error) {
	srv, hs, err := newSim(prof, c, "instructor-"+mode, docs[0].ID)
	if err != nil {
		return row{}, err
	}
	defer srv.Close()
	defer hs.Close()
	input := filepath.Join(dir, "docs.jsonl")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return row{}, err
		}
	}
	if err := os.WriteFile(input, b.Bytes(), 0o644); err != nil {
		return row{}, err
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "node", "peer.mjs", hs.URL+"/v1", mode, fmt.Sprint(c.conc), fmt.Sprint(c.reasks), input)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return row{}, fmt.Errorf("node peer.mjs: %w: %s", err, lastLine(stderr.String()))
	}
	byID := map[string]int{}
	for i, d := range docs {
		byID[d.ID] = i
	}
	valid := make([]bool, len(docs))
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 1<<24)
	seen := 0
	for sc.Scan() {
		var l struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return row{}, fmt.Errorf("peer output line %q: %w", sc.Text(), err)
		}
		if i, ok := byID[l.ID]; ok {
			valid[i] = isValid(s, l.Value)
			seen++
		}
	}
	if seen != len(docs) {
		return row{}, fmt.Errorf("the peer reported %d of %d documents", seen, len(docs))
	}
	return finish("instructor-js 1.7.0", mode, srv, valid, time.Since(start)), nil
}

func printTable(out io.Writer, rows []row) {
	fmt.Fprintln(out, "| engine | mode | calls | input tokens (cached) | output tokens | valid | input / valid doc | output / valid doc | cost / valid doc |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		usd, _ := providers.EstimateCost("sim", r.usage)
		per := func(n int) string {
			if r.valid == 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f", float64(n)/float64(r.valid))
		}
		cost := "-"
		if r.valid > 0 {
			cost = fmt.Sprintf("$%.4f per 1k", usd/float64(r.valid)*1000)
		}
		fmt.Fprintf(out, "| %s | %s | %d | %d (%d) | %d | %d/%d (%.1f%%) | %s | %s | %s |\n",
			r.engine, r.mode, r.calls, r.usage.PromptTokens, r.usage.CachedPromptTokens, r.usage.CompletionTokens,
			r.valid, r.docs, 100*float64(r.valid)/float64(r.docs), per(r.usage.PromptTokens), per(r.usage.CompletionTokens), cost)
	}
}

// tokenCounter returns the simulator's token counter for -tokenizer.
// o200k_base is what OpenAI counts gpt-4o-mini's tokens with; its tables
// are embedded (tiktoken-go-loader), so nothing is downloaded.
func tokenCounter(name string) (func(string) int, error) {
	switch name {
	case "estimate":
		return nil, nil // the simulator's own
	case "o200k":
		tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
		enc, err := tiktoken.GetEncoding("o200k_base")
		if err != nil {
			return nil, fmt.Errorf("-tokenizer o200k: %w", err)
		}
		return func(s string) int { return len(enc.EncodeOrdinary(s)) }, nil
	}
	return nil, fmt.Errorf("-tokenizer %q: want o200k or estimate", name)
}

// labelled counts the documents the key answers.
func labelled(k *sim.AnswerKey) int {
	if k == nil {
		return 0
	}
	return k.Len()
}
