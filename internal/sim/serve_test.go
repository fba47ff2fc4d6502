package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveBoth starts two simulators made alike (profile, seed, a clock that
// does not move, so rate-limit headers agree): one behind a plain
// http.Server running Handler, the reference, and one on Serve.
func serveBoth(t *testing.T, p Profile, opts ...Option) (ref, fast string, fastSim *Server) {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts = append([]Option{WithSeed(11), WithClock(func() time.Time { return at })}, opts...)
	a, b := New(p, opts...), New(p, opts...)
	t.Cleanup(a.Close)
	lnA := listen(t)
	hs := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(lnA) }()
	t.Cleanup(func() { _ = hs.Close() })
	return lnA.Addr().String(), startServe(t, b), b
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// startServe runs s.Serve on a loopback port until the test ends, and
// checks that it then returns nil.
func startServe(t testing.TB, s *Server) string {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		s.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// rawPost is a request as Go's client sends it.
func rawPost(path, body string, extra ...string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nAuthorization: Bearer sk-test\r\nContent-Type: application/json\r\n" + strings.Join(extra, "") + "Accept-Encoding: gzip\r\n\r\n" + body
}

var dateLine = regexp.MustCompile(`\r\nDate: [^\r]*\r\n`)

// exchange sends each request in reqs on one connection to addr (all at
// once when pipelined, else one after the other) and returns the raw
// responses, Date blanked; a connection that closes is reported as such
// and the next request goes on a new one.
func exchange(t *testing.T, addr string, reqs []string, pipelined bool) []string {
	t.Helper()
	var out []string
	var c net.Conn
	var br *bufio.Reader
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	dial := func() {
		var err error
		if c, err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		br = bufio.NewReader(c)
	}
	if pipelined {
		dial()
		if _, err := io.WriteString(c, strings.Join(reqs, "")); err != nil {
			t.Fatal(err)
		}
		for range reqs {
			r, err := readRawResponse(br)
			if err != nil {
				out = append(out, "<closed>")
				break
			}
			out = append(out, r)
		}
		return out
	}
	for _, req := range reqs {
		if c == nil {
			dial()
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		r, err := readRawResponse(br)
		if err != nil {
			out = append(out, "<closed>")
			c.Close()
			c = nil
			continue
		}
		out = append(out, r)
		if strings.Contains(r, "\r\nConnection: close\r\n") {
			c.Close()
			c = nil
		}
	}
	return out
}

// readRawResponse reads one response as it came: the head, then a
// Content-Length body or a chunked one.
func readRawResponse(br *bufio.Reader) (string, error) {
	var b strings.Builder
	length, chunked := -1, false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		b.WriteString(line)
		if line == "\r\n" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if line == "Transfer-Encoding: chunked\r\n" {
			chunked = true
		}
	}
	s := b.String()
	if strings.HasPrefix(s, "HTTP/1.1 100 ") {
		rest, err := readRawResponse(br)
		return s + rest, err
	}
	switch {
	case chunked:
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return "", err
			}
			b.WriteString(line)
			n, _ := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
			chunk := make([]byte, n+2)
			if _, err := io.ReadFull(br, chunk); err != nil {
				return "", err
			}
			b.Write(chunk)
			if n == 0 {
				break
			}
		}
	case length > 0:
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			return "", err
		}
		b.Write(body)
	}
	return dateLine.ReplaceAllString(b.String(), "\r\nDate: -\r\n"), nil
}

// serveRequests is every kind of request the tests of the simulator and
// the fleet send, on every API, plus what the fast path must hand off.
func serveRequests(t *testing.T) []string {
	t.Helper()
	_, invRaw := invoiceSchema(t)
	doc := "INVOICE INV-4711\nFrom: ACME GmbH\nTotal due: 1,234.50 EUR\nStatus: paid\n"
	prompt := promptWithSchema(invRaw, doc)
	bare := fence(doc)
	reqs := []string{
		rawPost("/v1/chat/completions", string(fleetRequest(1))),
		rawPost("/v1/chat/completions", jsonOf(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": prompt}}})),
		rawPost("/v1/chat/completions", jsonOf(map[string]any{"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 30, "messages": []any{map[string]any{"role": "system", "content": "x"}, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}}})),
		rawPost("/v1/chat/completions", jsonOf(map[string]any{"model": "gpt-4o-mini", "messages": []any{map[string]any{"role": "user", "content": bare}},
			"tools":       []any{map[string]any{"type": "function", "function": map[string]any{"name": "record_invoice", "parameters": json.RawMessage(invRaw)}}},
			"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "record_invoice"}}})),
		rawPost("/v1/messages", jsonOf(map[string]any{"model": "claude-haiku-4-5", "max_tokens": 2048, "temperature": 0, "system": "You extract data.", "messages": []any{map[string]any{"role": "user", "content": prompt}}})),
		rawPost("/v1/messages", jsonOf(map[string]any{"model": "claude-haiku-4-5", "max_tokens": 2048, "messages": []any{map[string]any{"role": "user", "content": bare}},
			"tools":       []any{map[string]any{"name": "record_invoice", "input_schema": json.RawMessage(invRaw)}},
			"tool_choice": map[string]any{"type": "tool", "name": "record_invoice"}})),
		rawPost("/api/chat", jsonOf(map[string]any{"model": "llama3.1:8b", "stream": false, "messages": []any{map[string]any{"role": "user", "content": bare}}, "format": json.RawMessage(invRaw)})),
		rawPost("/api/chat", jsonOf(map[string]any{"model": "llama3.1:8b", "messages": []any{map[string]any{"role": "user", "content": prompt}}, "format": "json"})),
		rawPost("/v1beta/models/gemini-2.5-flash:generateContent", jsonOf(map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": bare}}}},
			"generationConfig": map[string]any{"responseMimeType": "application/json", "responseSchema": json.RawMessage(geminiInvoice)}})),
		rawPost("/v1beta/models/:generateContent", `{}`),
		rawPost("/v1/completions", jsonOf(map[string]any{"model": "gpt-4o-mini", "prompt": prompt + "\n{", "max_tokens": 200})),
		rawPost("/api/generate", jsonOf(map[string]any{"model": "llama3.1:8b", "prompt": prompt, "stream": false})),
		rawPost("/v1/chat/completions", `{"model":`),       // bad JSON: 400
		rawPost("/v1/chat/completions", ``),                // empty body
		rawPost("/v1/chat/completions", `{"messages":[]}`), // no messages
		rawPost("/v1/chat/completions", string(fleetRequest(2)), "Connection: keep-alive\r\n", "X-Stainless-Lang: go\r\n"),
		// Handed off:
		rawPost("/v1/nope", `{}`),
		rawPost("/v1/chat/completions?x=1", string(fleetRequest(3))),
		rawPost("/v1/chat%2Fcompletions", `{}`),
		"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /stats HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}",
		"POST /v1/chat/completions HTTP/1.1\nHost: x\nContent-Length: 2\n\n{}",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/chat/completions HTTP/1.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
		"GARBAGE\r\n\r\n",
		rawPost("/v1/chat/completions", string(fleetRequest(4)), "Connection: close\r\n"),
	}
	for i := 5; i < 40; i++ {
		reqs = append(reqs, rawPost("/v1/chat/completions", string(fleetRequest(i))))
	}
	return append(reqs, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n")
}

// fleetFaulty is bench/fleet's and the e2e tests' faulty profile
// (fleettest.FaultyProfile, which imports this package).
var fleetFaulty = Profile{
	Name:   "fleet-faulty",
	Errors: ErrorRates{Status500: 0.06, Drop: 0.03},
	Faults: FaultRates{
		CodeFence: 0.1, Prose: 0.05, TrailingComma: 0.05, SingleQuotes: 0.03,
		MissingRequired: 0.12, WrongType: 0.12, EnumOutside: 0.05, ExtraField: 0.03,
		Truncation: 0.03, Refusal: 0.02,
	},
	FixProbability: 0.3,
	FaultModes:     FaultModesAll,
}

// TestServeMatchesHandler sends the same requests to Serve and to an
// http.Server running Handler, one by one on a keep-alive connection and
// all pipelined at once, and compares the raw responses (but Date) and
// which ones closed the connection (dropped-connection faults).
func TestServeMatchesHandler(t *testing.T) {
	t.Parallel()
	profiles := []Profile{builtins["clean"], builtins["sloppy"], builtins["rate-limited"], builtins["claude-fable-5-1"],
		builtins["openai-o1-mini"], builtins["gemini-2.0"], builtins["groq-tool-use-failed"], builtins["small-model"], fleetFaulty,
		{Name: "dropping", Errors: ErrorRates{Drop: 0.3, Status529: 0.2, Status503: 0.1}, FixProbability: 1}}
	reqs := serveRequests(t)
	for _, p := range profiles {
		for _, pipelined := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pipelined=%v", p.Name, pipelined), func(t *testing.T) {
				t.Parallel()
				ref, fast, fs := serveBoth(t, p)
				want := exchange(t, ref, reqs, pipelined)
				got := exchange(t, fast, reqs, pipelined)
				if len(got) != len(want) {
					t.Fatalf("%d responses, want %d", len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("request %d (%.60q):\n got %q\nwant %q", i, reqs[i], got[i], want[i])
					}
				}
				if !pipelined && fs.served.fast.Load() < 30 {
					t.Errorf("the fast path answered %d requests, want most of them", fs.served.fast.Load())
				}
			})
		}
	}
}

// TestServeKeepAlive sends many requests one after the other on one
// connection, all on the fast path.
func TestServeKeepAlive(t *testing.T) {
	t.Parallel()
	s := New(builtins["clean"])
	addr := startServe(t, s)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	const n = 500
	for i := range n {
		if _, err := io.WriteString(c, rawPost("/v1/chat/completions", string(fleetRequest(i)))); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Close || !bytes.Contains(body, []byte(`"chat.completion"`)) {
			t.Fatalf("request %d: %d close=%v %s", i, resp.StatusCode, resp.Close, body)
		}
	}
	if got := s.served.fast.Load(); got != n {
		t.Errorf("fast path answered %d of %d", got, n)
	}
	if got := s.Stats().Requests; got != n {
		t.Errorf("stats count %d requests, want %d", got, n)
	}
}

// TestServeHandoffKeepsConnection: after a request the fast path hands
// off, the next one on the connection is net/http's.
func TestServeHandoffKeepsConnection(t *testing.T) {
	t.Parallel()
	s := New(builtins["clean"])
	addr := startServe(t, s)
	reqs := []string{
		rawPost("/v1/chat/completions", string(fleetRequest(1))),
		"GET /stats HTTP/1.1\r\nHost: x\r\n\r\n",
		rawPost("/v1/chat/completions", string(fleetRequest(2))),
		rawPost("/v1/chat/completions", string(fleetRequest(3))),
	}
	for _, r := range exchange(t, addr, reqs, true) {
		if !strings.HasPrefix(r, "HTTP/1.1 200 OK\r\n") {
			t.Fatalf("response %q", r)
		}
	}
	if fast, handed := s.served.fast.Load(), s.served.handedOff.Load(); fast != 1 || handed != 1 {
		t.Errorf("fast path answered %d, handed off %d connections; want 1 and 1", fast, handed)
	}
}

// TestServeClientGone: a client that leaves mid-head or mid-body, or
// while a simulated timeout holds its request, frees what served it.
func TestServeClientGone(t *testing.T) {
	t.Parallel()
	held := Profile{Name: "held", Errors: ErrorRates{Timeout: 1, TimeoutCap: time.Hour}, FixProbability: 1}
	tests := []struct {
		name string
		p    Profile
		send string
		// want400: the handler's "could not read the request body" status
		// is counted as net/http's path counts it.
		want400 bool
	}{
		{"mid-head", builtins["clean"], "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le", false},
		{"mid-body", builtins["clean"], "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"model\":", true},
		{"held by a timeout", held, rawPost("/v1/chat/completions", string(fleetRequest(1))), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := New(tt.p)
			ln := listen(t)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- s.Serve(ctx, ln) }()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(c, tt.send); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // the request is being read, or held
			c.Close()
			deadline := time.Now().Add(5 * time.Second)
			for s.Stats().ByStatus[400] == 0 && tt.want400 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := s.Stats().ByStatus[400]; tt.want400 && got != 1 {
				t.Errorf("400s counted: %d, want 1", got)
			}
			// Without Close: only a request still held would keep Serve
			// from returning at once.
			start := time.Now()
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Serve took %v to return: a connection was still held", d)
			}
		})
	}
}

// TestServeSlowClient: a client that sends half a head and stalls is cut
// off after the header timeout, as http.Server's ReadHeaderTimeout does.
func TestServeSlowClient(t *testing.T) {
	t.Parallel()
	for _, partial := range []string{
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{",
	} {
		s := New(builtins["clean"], WithHeaderTimeout(100*time.Millisecond))
		addr := startServe(t, s)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, partial); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		_, err = io.ReadAll(c)
		if isTimeout(err) || time.Since(start) > 3*time.Second {
			t.Errorf("%q: the connection was still open after %v (%v)", partial, time.Since(start), err)
		}
	}
}

// TestServeShutdown: an idle connection is closed, a held request is
// answered (503, Connection: close) once Close releases it, and no
// goroutine of Serve's is left.
func TestServeShutdown(t *testing.T) {
	// Not parallel: it counts goroutines.
	s := New(Profile{Name: "slow", Latency: Latency{TTFT: time.Hour}, FixProbability: 1})
	ln := listen(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}
	idle, busy, handed := dial(), dial(), dial()
	defer idle.Close()
	defer busy.Close()
	defer handed.Close()
	if _, err := io.WriteString(busy, rawPost("/v1/chat/completions", string(fleetRequest(1)))); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(handed, "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(handed), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /stats: %v", err)
	}
	for s.served.fast.Load()+int64(s.c.requests.Load()) == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	if n, err := idle.Read(make([]byte, 1)); err == nil {
		t.Errorf("the idle connection read %d bytes, want it closed", n)
	}
	if n, err := handed.Read(make([]byte, 1)); err == nil {
		t.Errorf("the handed-off connection read %d bytes, want it closed", n)
	}
	s.Close()
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || !resp.Close {
		t.Errorf("held request: %d, close %v; want 503 and Connection: close", resp.StatusCode, resp.Close)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if left := serveGoroutines(); left != "" {
		t.Errorf("goroutines left after Serve returned:\n%s", left)
	}
}

// serveGoroutines returns the stacks of goroutines in serve.go's code,
// waiting a little for those on their way out.
func serveGoroutines() string {
	var left string
	for range 100 {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		left = ""
		for g := range strings.SplitSeq(string(buf), "\n\n") {
			if strings.Contains(g, "internal/sim/serve.go") && !strings.Contains(g, "serveGoroutines") {
				left += g + "\n\n"
			}
		}
		if left == "" {
			return ""
		}
		time.Sleep(10 * time.Millisecond)
	}
	return left
}

// TestServeShutdownGrace: without Close, a request held past the grace
// period ends unanswered, its connection is closed, and Serve says so.
func TestServeShutdownGrace(t *testing.T) {
	t.Parallel()
	s := New(Profile{Name: "slow", Latency: Latency{TTFT: time.Hour}, FixProbability: 1})
	s.shutdownGrace = 100 * time.Millisecond
	defer s.Close()
	ln := listen(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, rawPost("/v1/chat/completions", string(fleetRequest(1)))); err != nil {
		t.Fatal(err)
	}
	for s.served.fast.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Serve returned nil with a request still held")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the grace period")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("the held connection read %d bytes (%v), want it closed", n, err)
	}
}

// TestServeStopsOnListenerError: Serve returns the listener's error.
func TestServeStopsOnListenerError(t *testing.T) {
	t.Parallel()
	ln := listen(t)
	ln.Close()
	err := New(builtins["clean"]).Serve(t.Context(), ln)
	if !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve on a closed listener: %v", err)
	}
}

// FuzzParseHead: a head the fast path takes is read by net/http as the
// same method, path, protocol, Host, length and body, with nothing that
// would make net/http answer it otherwise.
func FuzzParseHead(f *testing.F) {
	f.Add([]byte(rawPost("/v1/chat/completions", `{"a":1}`)))
	f.Add([]byte(rawPost("/v1beta/models/g:generateContent", `{}`, "Connection: keep-alive\r\n")))
	f.Add([]byte("POST /v1/messages HTTP/1.1\r\nHost: [::1]:80\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("POST /api/chat HTTP/1.1\r\nHost: x\r\nX-A:\t b \r\nContent-Length: 3\r\n\r\nabc"))
	f.Add([]byte("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, done, fast := parseHead(data)
		if !done || !fast {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatalf("fast path took %q; net/http: %v", data, err)
		}
		// RawPath is not compared: net/http keeps the path as sent there when
		// it holds a character its EscapedPath would escape ("!"), and the
		// handler, like the fast path, reads Path.
		if req.Method != http.MethodPost || req.URL.Path != h.path || req.URL.RawQuery != "" || req.RequestURI != h.path ||
			req.Proto != "HTTP/1.1" || req.Close || len(req.TransferEncoding) > 0 || req.Host == "" || req.ContentLength != h.contentLength ||
			req.Header.Get("Expect") != "" || req.Header.Get("Upgrade") != "" {
			t.Fatalf("fast path took %q as %+v; net/http read %s %s %s host %q length %d close %v te %v", data, h, req.Method, req.RequestURI, req.Proto, req.Host, req.ContentLength, req.Close, req.TransferEncoding)
		}
		if a, model, known := routeOf(req.URL.Path); !known || a != h.a || model != h.model {
			t.Fatalf("route of %q: %v %q %v, fast path %v %q", req.URL.Path, a, model, known, h.a, h.model)
		}
		if want := data[h.size:]; int64(len(want)) >= h.contentLength {
			body, err := io.ReadAll(req.Body)
			if err != nil || !bytes.Equal(body, want[:h.contentLength]) {
				t.Fatalf("body %q (%v), fast path's %q", body, err, want[:h.contentLength])
			}
		}
	})
}
