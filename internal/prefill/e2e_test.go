package prefill_test

import (
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/prefill"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/retry"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestSmallModelOverHTTP runs the examples' invoices and abstracts through
// the real adapters (vLLM-style /v1/completions and Ollama's raw
// /api/generate) against the simulator's small-model profile over HTTP:
// prefill must get nearly every document right where text mode mostly
// fails, and its attempts must name the fields.
func TestSmallModelOverHTTP(t *testing.T) {
	t.Parallel()
	prof, err := sim.LoadProfile("small-model")
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.New(prof, sim.WithSeed(7))
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	// The clean profile with the same seed answers what the small model
	// means: prefill must return exactly that, never a valid but wrong value.
	clean, _ := sim.LoadProfile("clean")
	truthSrv := sim.New(clean, sim.WithSeed(7))
	t.Cleanup(truthSrv.Close)
	truthHS := httptest.NewServer(truthSrv.Handler())
	t.Cleanup(truthHS.Close)
	truthP, err := providers.New("vllm:small", providers.WithBaseURL(truthHS.URL+"/v1"))
	if err != nil {
		t.Fatal(err)
	}

	sets := []struct{ schema, glob string }{
		{"../../examples/invoice.schema.json", "../../examples/invoices/*.txt"},
		{"../../examples/abstract.schema.yaml", "../../examples/abstracts/*.txt"},
	}
	specs := []struct{ spec, base string }{
		{"vllm:small", hs.URL + "/v1"},
		{"ollama:small", hs.URL},
	}
	for _, set := range sets {
		s, err := schema.CompileFile(set.schema)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(set.glob)
		if len(files) < 10 {
			t.Fatalf("%s: %d documents", set.glob, len(files))
		}
		for _, sp := range specs {
			p, err := providers.New(sp.spec, providers.WithBaseURL(sp.base))
			if err != nil {
				t.Fatal(err)
			}
			ok := map[llm.Mode]int{}
			for _, mode := range []llm.Mode{llm.ModePrefill, llm.ModeText} {
				for _, f := range files {
					doc, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					cfg := retry.DefaultConfig()
					cfg.Mode = mode
					res, err := retry.Run(t.Context(), p, string(doc), s, cfg)
					if res == nil {
						t.Fatalf("%s %s: %v", sp.spec, mode, err)
					}
					if err == nil {
						ok[mode]++
						if vs := s.Validate(decode(t, res.Value)); vs != nil {
							t.Errorf("%s: accepted value fails the schema: %v", f, vs)
						}
						if mode == llm.ModePrefill {
							tc := retry.DefaultConfig()
							tc.Mode, tc.SchemaIn = llm.ModeText, retry.SchemaInSchema // the schema as prefill shows it
							truth, err := retry.Run(t.Context(), truthP, string(doc), s, tc)
							if err != nil {
								t.Fatal(err)
							}
							if !reflect.DeepEqual(decode(t, truth.Value), decode(t, res.Value)) {
								t.Errorf("%s %s: prefill value differs from what the model means:\n%s\n%s", sp.spec, f, res.Value, truth.Value)
							}
						}
					}
					if mode == llm.ModePrefill {
						for _, a := range res.Attempts {
							if a.Mode != llm.ModePrefill || a.Step == "" || a.Usage.PromptTokens == 0 {
								t.Fatalf("%s: attempt without step or usage: %+v", f, a)
							}
						}
						if err != nil && !strings.Contains(res.Reason, "/") {
							t.Errorf("%s: a failed prefill does not name the field: %s", f, res.Reason)
						}
					}
				}
			}
			t.Logf("%s %s: prefill %d/%d, text %d/%d", set.schema, sp.spec, ok[llm.ModePrefill], len(files), ok[llm.ModeText], len(files))
			if ok[llm.ModePrefill] < len(files)*8/10 {
				t.Errorf("%s %s: prefill valid for %d of %d documents, want at least 80%%", set.schema, sp.spec, ok[llm.ModePrefill], len(files))
			}
			if ok[llm.ModePrefill] <= ok[llm.ModeText] {
				t.Errorf("%s %s: prefill %d not better than text %d", set.schema, sp.spec, ok[llm.ModePrefill], ok[llm.ModeText])
			}
		}
	}
	st := srv.Stats()
	for _, f := range []sim.Fault{sim.FaultOverrunStop, sim.FaultNumberWords, sim.FaultEnumOutside} {
		if st.Faults[f] == 0 {
			t.Errorf("the small-model profile never injected %s", f)
		}
	}
}

func TestPrefillRefusedWhereNoPrefix(t *testing.T) {
	t.Parallel()
	p, err := providers.New("openai:gpt-4o-mini", providers.WithAPIKey("k"), providers.WithBaseURL("http://127.0.0.1:1/v1"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := schema.Compile([]byte(`{"type":"integer"}`))
	cfg := retry.DefaultConfig()
	cfg.Mode = llm.ModePrefill
	res, err := retry.Run(t.Context(), p, "doc", s, cfg)
	if res != nil || !errors.Is(err, retry.ErrConfig) || !strings.Contains(err.Error(), "cannot continue a prefix") {
		t.Fatalf("res %v err %v, want ErrConfig saying the provider cannot continue a prefix", res, err)
	}
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	v, err := prefill.DecodeNumber(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
