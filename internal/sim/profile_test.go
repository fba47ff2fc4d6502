package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoadProfile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yamlFile := write("slow.yaml", "latency:\n  ttft: 250ms\n  per_token: 2ms\n  jitter: 0.1\nrate_limits: {requests_per_minute: 30}\nfaults: {code_fence: 0.5}\nfix_probability: 0.9\n")
	jsonFile := write("p.json", `{"name": "from-json", "errors": {"status_529": 0.2, "timeout_cap": "3s"}}`)
	tests := []struct {
		in      string
		wantErr string // substring; "" for success
		check   func(Profile) bool
	}{
		{"clean", "", func(p Profile) bool { return p.Name == "clean" && p.FixProbability == 1 }},
		{"sloppy", "", func(p Profile) bool { return p.Faults.CodeFence > 0 && p.FaultModes == FaultModesAll }},
		{"flaky", "", func(p Profile) bool { return p.Errors.Status529 > 0 && p.Errors.Drop > 0 }},
		{"rate-limited", "", func(p Profile) bool { return p.RateLimits.RequestsPerMinute > 0 }},
		{"default", "", func(p Profile) bool { return p.Name == DefaultProfile && p.Latency.TTFT > 0 }},
		{yamlFile, "", func(p Profile) bool {
			return p.Name == yamlFile && p.Latency.TTFT == 250*time.Millisecond && p.RateLimits.RequestsPerMinute == 30 && p.Faults.CodeFence == 0.5
		}},
		{jsonFile, "", func(p Profile) bool { return p.Name == "from-json" && p.Errors.TimeoutCap == 3*time.Second }},
		{"no-such-profile", "neither a built-in profile", nil},
		{filepath.Join(dir, "missing.yaml"), "read", nil},
		{write("unknown.yaml", "faults: {code_fences: 0.5}"), "code_fences", nil},
		{write("rate.yaml", "faults: {prose: 1.5}"), "faults.prose", nil},
		{write("neg.yaml", "latency: {ttft: -1s}"), "latency.ttft", nil},
		{write("rpm.yaml", "rate_limits: {requests_per_minute: -1}"), "rate_limits.requests_per_minute", nil},
		{write("sum.yaml", "errors: {status_500: 0.6, drop: 0.6}"), "sum to at most 1", nil},
		{write("modes.yaml", "fault_modes: sometimes"), "fault_modes", nil},
		{write("fix.yaml", "fix_probability: 2"), "fix_probability", nil},
		{write("empty.yaml", "\n"), "empty", nil},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.in), func(t *testing.T) {
			p, err := LoadProfile(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidProfile) {
					t.Fatalf("error %v, want one mentioning %q and matching ErrInvalidProfile", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(p) {
				t.Errorf("profile = %+v", p)
			}
		})
	}
}

func TestBuiltinsAreValid(t *testing.T) {
	for _, name := range ProfileNames() {
		if err := builtins[name].Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// sequence sends three attempts for each document, interleaving documents
// in the given order, and returns every response body by document.
func sequence(t *testing.T, s *Server, docs []string, order []int) map[int][]string {
	_, raw := invoiceSchema(t)
	out := map[int][]string{}
	for range 3 {
		for _, i := range order {
			_, body := call(t, s, "/v1/chat/completions", openAIChat(raw, docs[i]))
			out[i] = append(out[i], string(body))
		}
	}
	return out
}

func TestDeterminism(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
	docs := make([]string, 6)
	for i := range docs {
		docs[i] = fmt.Sprintf("Invoice %d from Vendor %c Ltd, dated 2025-0%d-1%d, total %d.00 EUR", 100+i, 'A'+i, 1+i, i, 37*i)
	}
	sloppy := builtins["sloppy"]
	a := sequence(t, New(sloppy, WithSeed(42), WithClock(clock.now)), docs, []int{0, 1, 2, 3, 4, 5})
	b := sequence(t, New(sloppy, WithSeed(42), WithClock(clock.now)), docs, []int{5, 3, 1, 0, 4, 2})
	c := sequence(t, New(sloppy, WithSeed(43), WithClock(clock.now)), docs, []int{0, 1, 2, 3, 4, 5})
	differs := 0
	for i := range docs {
		for k := range a[i] {
			if a[i][k] != b[i][k] {
				t.Errorf("doc %d try %d: same seed, other interleaving, different answer:\n%s\n%s", i, k, a[i][k], b[i][k])
			}
			if a[i][k] != c[i][k] {
				differs++
			}
		}
	}
	if differs == 0 {
		t.Errorf("seeds 42 and 43 gave identical answers for every document")
	}
}

func TestConcurrentUseCountsEveryRequest(t *testing.T) {
	_, raw := invoiceSchema(t)
	s := New(builtins["sloppy"])
	var wg sync.WaitGroup
	const workers, each = 8, 25
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				call(t, s, "/v1/chat/completions", openAIChat(raw, fmt.Sprintf("%s %d %d", testDoc, w, i)))
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Requests != workers*each || st.ByStatus[200] != workers*each || st.ByRoute[RouteOpenAI] != workers*each {
		t.Errorf("stats = %+v", st)
	}
	var faults int64
	for _, n := range st.Faults {
		faults += n
	}
	if faults == 0 {
		t.Errorf("sloppy injected no faults in %d requests", workers*each)
	}
}

func TestStatsEndpoint(t *testing.T) {
	_, raw := invoiceSchema(t)
	s := New(mustProfile(t, "faults: {prose: 1}"))
	call(t, s, "/v1/chat/completions", openAIChat(raw, testDoc))
	client := s.Transport()
	get := func(method, path string) (int, map[string]any) {
		req, _ := httpRequest(method, "http://sim"+path)
		resp, err := client.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return resp.StatusCode, nil
		}
		var m map[string]any
		body, _ := readAll(resp)
		m = obj(t, body)
		return resp.StatusCode, m
	}
	_, m := get("GET", "/stats")
	if m["requests"] != 1.0 || dig(m, "faults", "prose") != 1.0 || dig(m, "by_status", "200") != 1.0 || dig(m, "by_route", "openai") != 1.0 {
		t.Errorf("/stats = %v", m)
	}
	if code, _ := get("POST", "/stats/reset"); code != 204 {
		t.Errorf("reset status %d", code)
	}
	if _, m = get("GET", "/stats"); m["requests"] != 0.0 || dig(m, "faults", "prose") != 0.0 {
		t.Errorf("after reset /stats = %v", m)
	}
	if code, _ := get("GET", "/stats/reset"); code != 405 {
		t.Errorf("GET /stats/reset status %d, want 405", code)
	}
}
