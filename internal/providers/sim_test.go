package providers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/schema"
)

// simPrompt follows the engine's prompt conventions, with the schema
// embedded for modes where the provider does not enforce it.
func simPrompt(s *schema.Schema, doc string) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "Extract the fields. Answer with JSON only."},
		{Role: llm.RoleUser, Content: "<json-schema>" + string(s.JSON()) + "</json-schema>\n<document-00112233aabbccdd>" + doc + "</document-00112233aabbccdd>"},
	}
}

// nativePrompt is simPrompt without the schema.
func nativePrompt(doc string) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "Extract the fields."},
		{Role: llm.RoleUser, Content: "<document-00112233aabbccdd>" + doc + "</document-00112233aabbccdd>"},
	}
}

// simOpenAI is the OpenAI adapter talking to an in-process simulator with
// the named built-in profile (the "sim" family itself lives in
// internal/sim/simprovider, which this package must not import).
func simOpenAI(t testing.TB, profile string) llm.Provider {
	t.Helper()
	prof, err := sim.LoadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.New(prof)
	t.Cleanup(srv.Close)
	p, err := New("openai:sim", WithBaseURL("http://sim.invalid/v1"), WithAPIKey("sk-sim-test-key-000"),
		WithHTTPClient(&http.Client{Transport: srv.Transport()}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func assertValid(t *testing.T, s *schema.Schema, text string) {
	t.Helper()
	vs, err := s.ValidateJSON([]byte(text))
	if err != nil || vs != nil {
		t.Fatalf("answer %q is not valid: %v %+v", text, err, vs)
	}
}

// TestAdaptersAgainstSimulator runs every adapter over real HTTP against
// the simulator in every mode it supports, and checks the answers
// validate.
func TestAdaptersAgainstSimulator(t *testing.T) {
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(prof)
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	sch := testSchema(t)
	specs := []struct{ spec, base string }{
		{"openai:gpt-4o-mini", hs.URL + "/v1"},
		{"groq:llama-3.1-8b-instant", hs.URL + "/v1"},
		{"anthropic:claude-haiku-4-5", hs.URL},
		{"anthropic:claude-3-5-haiku-latest", hs.URL},
		{"ollama:llama3.1:8b", hs.URL},
		{"gemini:gemini-2.5-flash", hs.URL},
	}
	for _, sp := range specs {
		p := mustNew(t, sp.spec, env{}, WithBaseURL(sp.base), WithAPIKey("sk-sim-test-key-000"))
		for _, mode := range p.Capabilities().Modes {
			t.Run(sp.spec+"/"+string(mode), func(t *testing.T) {
				msgs := simPrompt(sch, "Invoice from ACME, total 12.50, paid.")
				if mode == llm.ModeStrict || mode == llm.ModeTools {
					// The engine leaves the schema out of the prompt when the
					// provider enforces it: the native field must carry it.
					msgs = nativePrompt("Invoice from ACME, total 12.50, paid.")
				}
				resp, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Mode: mode, Schema: sch, MaxTokens: 1000})
				if err != nil {
					t.Fatal(err)
				}
				assertValid(t, sch, resp.Text)
				if resp.FinishReason != llm.FinishStop && resp.FinishReason != llm.FinishToolCall {
					t.Fatalf("finish %s", resp.FinishReason)
				}
			})
		}
	}
}

// TestAdaptersClassifySimulatorFaults runs every adapter against a
// simulator that fails often, and checks each failure's class against what
// the simulator reports it did. Timing decides nothing: the mixed faults
// are answered at once and the calls get a timeout no loaded machine
// reaches on loopback, so every error is the simulator's; timeouts are
// checked apart, against a simulator that hangs every request far longer
// than the call's timeout.
func TestAdaptersClassifySimulatorFaults(t *testing.T) {
	const (
		// slowest is a bound no answered call comes near, even with -race on
		// a shared, loaded machine: a call that reaches it is a failure of
		// the test's premise, reported as an unexpected timeout.
		slowest = 30 * time.Second
		// hangFor is how long the hanging simulator holds a request; its
		// calls time out after callTimeout, far sooner.
		hangFor     = 10 * time.Minute
		callTimeout = 500 * time.Millisecond
	)
	dir := t.TempDir()
	load := func(name, yaml string) sim.Profile {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		prof, err := sim.LoadProfile(path)
		if err != nil {
			t.Fatal(err)
		}
		return prof
	}
	faulty := load("faulty", `name: faulty
errors: {status_500: 0.15, status_503: 0.1, status_529: 0.1, drop: 0.1}
faults: {truncation: 0.2, refusal: 0.1}
`)
	hanging := load("hanging", fmt.Sprintf("name: hanging\nerrors: {timeout: 1, timeout_cap: %s}\n", hangFor))
	sch := testSchema(t)
	serve := func(t *testing.T, prof sim.Profile, spec string) (*sim.Server, *httptest.Server, llm.Provider) {
		t.Helper()
		s := sim.New(prof, sim.WithSeed(42))
		t.Cleanup(s.Close)
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		base := hs.URL
		if strings.HasPrefix(spec, "openai:") {
			base += "/v1"
		}
		return s, hs, mustNew(t, spec, env{}, WithBaseURL(base))
	}
	call := func(ctx context.Context, p llm.Provider, i int, timeout time.Duration) (*llm.Response, error) {
		return p.Chat(ctx, llm.Request{
			Messages: nativePrompt(fmt.Sprintf("Invoice %d from ACME", i)), Mode: llm.ModeStrict, Schema: sch,
			Timeout: timeout,
		})
	}
	for _, spec := range []string{"openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "ollama:llama3.1:8b", "gemini:gemini-2.5-flash"} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			s, _, p := serve(t, faulty, spec)
			classes := map[llm.ErrorClass]int{}
			statuses := map[int]int{}
			finishes := map[llm.FinishReason]int{}
			const calls = 150
			for i := 0; i < calls; i++ {
				resp, err := call(t.Context(), p, i, slowest)
				if err != nil {
					var pe *llm.Error
					if !errors.As(err, &pe) || !pe.Retryable() {
						t.Fatalf("call %d: %v is not a retryable *Error", i, err)
					}
					classes[pe.Class]++
					statuses[pe.Status]++
					continue
				}
				finishes[resp.FinishReason]++
			}
			st := s.Stats()
			overloaded := st.ByStatus[503] + st.ByStatus[529]
			if int64(classes[llm.ClassServer]) != st.ByStatus[500] || int64(classes[llm.ClassOverloaded]) != overloaded {
				t.Errorf("server %d / overloaded %d errors, simulator sent %d×500 and %d×503/529", classes[llm.ClassServer], classes[llm.ClassOverloaded], st.ByStatus[500], overloaded)
			}
			if int64(statuses[529]) != st.ByStatus[529] {
				t.Errorf("%d errors with status 529, simulator sent %d", statuses[529], st.ByStatus[529])
			}
			if int64(classes[llm.ClassNetwork]) != st.Faults[sim.FaultDrop] {
				t.Errorf("%d network errors, simulator dropped %d connections", classes[llm.ClassNetwork], st.Faults[sim.FaultDrop])
			}
			for _, c := range []llm.ErrorClass{llm.ClassServer, llm.ClassOverloaded, llm.ClassNetwork} {
				if classes[c] == 0 {
					t.Errorf("no %s error in %d calls (classes %v, stats %+v)", c, calls, classes, st)
				}
			}
			if classes[llm.ClassTimeout] != 0 {
				t.Errorf("%d calls timed out after %v though nothing hangs (classes %v)", classes[llm.ClassTimeout], slowest, classes)
			}
			if finishes[llm.FinishLength] == 0 {
				t.Errorf("no truncated answer reported as length (finishes %v)", finishes)
			}
			// Only OpenAI's API reports a refusal apart from the text.
			if strings.HasPrefix(spec, "openai:") && finishes[llm.FinishRefusal] == 0 {
				t.Errorf("no refusal reported (finishes %v)", finishes)
			}

			// Timeouts: every request hangs for hangFor, so each call
			// must give up at its own timeout, as a retryable timeout.
			hs, hhs, hp := serve(t, hanging, spec)
			const hangs = 2
			for i := 0; i < hangs; i++ {
				start := time.Now()
				_, err := call(t.Context(), hp, i, callTimeout)
				var pe *llm.Error
				if !errors.As(err, &pe) || pe.Class != llm.ClassTimeout || !pe.Retryable() {
					t.Errorf("hung call %d: %v, want a retryable %s *Error", i, err, llm.ClassTimeout)
				}
				if d := time.Since(start); d >= hangFor {
					t.Errorf("hung call %d returned after %v: the call timeout of %v did not end it", i, d, callTimeout)
				}
			}
			hhs.Close() // waits for the handlers, which count the hang once the client is gone
			if got := hs.Stats().Faults[sim.FaultTimeout]; got != hangs {
				t.Errorf("the simulator counted %d hung requests, want %d", got, hangs)
			}
		})
	}
}
