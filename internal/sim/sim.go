// Package sim is an LLM simulator: a loopback HTTP server (or an in-process
// http.RoundTripper) that speaks the OpenAI chat completions, Anthropic
// messages, Ollama chat and Gemini generateContent APIs, so that extractq can
// be tested, benchmarked and demonstrated without a model.
//
// It reads the engine's prompt conventions: the document between
// <document-NONCE> and </document-NONCE>, the schema between <json-schema>
// tags or an example between <example> tags with the schema's field guide
// (schema.Schema.FieldGuide) between <field-guide> tags (unless the API
// carries the schema natively), and a re-ask as a conversation holding an
// assistant message followed by feedback. It answers as a careful model
// would: with a value valid against everything the request shows it (the
// constraints a provider form moved into descriptions included; for an
// example, what the field guide says), whose content is derived from the
// document, then spoils it as its Profile says:
// latency, rate limits (429 with the providers' headers), 5xx/529, timeouts,
// dropped connections, and malformed output of every common kind.
//
// Every random choice is seeded by (seed, document hash, attempt number,
// how many times that attempt was seen), never by arrival order, so a run is
// reproducible however requests interleave across documents.
package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a simulated LLM provider. It is safe for concurrent use.
type Server struct {
	prof   Profile
	seed   uint64
	rates  [numFaults]float64
	random bool // whether the profile draws anything at all
	now    func() time.Time

	shapes  *shapeCache
	cache   *promptCache
	generic *shape
	limits  *limiter // nil without rate limits
	tries   tryCounter
	raws    rawCache // the request reader's last schema (fastreq.go)
	c       counters
	batches *batchStore
	answers *AnswerKey // nil: values drawn from the text's words
	// images reads pictures in requests; nil refuses them.
	images ImageReader

	done      chan struct{}
	closeOnce sync.Once
	// count is the tokenizer usage is reported with (WithTokenCounter).
	count func(string) int
	// fnTokens caches the count of OpenAI tools' renderings.
	fnTokens fnTokenCache
	// headerTimeout bounds a request's head on Serve (WithHeaderTimeout).
	headerTimeout time.Duration
	// shutdownGrace is ShutdownGrace but in tests.
	shutdownGrace time.Duration
	// served counts Serve's requests answered on the fast path and its
	// connections handed to net/http (for tests; not in Stats, which stay
	// the same whichever path answered).
	served struct{ fast, handedOff atomic.Int64 }
}

// Option configures a Server.
type Option func(*Server)

// WithSeed sets the seed every random choice derives from (default 0).
func WithSeed(seed uint64) Option { return func(s *Server) { s.seed = seed } }

// WithClock replaces time.Now for the rate limiter and timestamps, so tests
// can step time instead of sleeping.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// WithTokenCounter makes the simulator count the tokens of every piece of
// a request and answer with count (a real tokenizer, e.g. a benchmark's
// o200k_base) instead of its estimate of about four characters a token.
// What is counted stays the same (see promptTokens).
func WithTokenCounter(count func(string) int) Option { return func(s *Server) { s.count = count } }

// New returns a simulator behaving as p says. p should be valid
// (LoadProfile and ParseProfile validate; see Profile.Validate).
func New(p Profile, opts ...Option) *Server {
	if p.Errors.TimeoutCap == 0 {
		p.Errors.TimeoutCap = defaultTimeoutCap
	}
	s := &Server{prof: p, now: time.Now, shapes: newShapeCache(), cache: newPromptCache(), generic: &shape{}, done: make(chan struct{}), batches: newBatchStore(), headerTimeout: defaultHeaderTimeout, shutdownGrace: ShutdownGrace}
	for _, o := range opts {
		o(s)
	}
	if s.count == nil {
		s.count = func(t string) int { return tokens(len(t)) }
	}
	s.rates = faultRates(p)
	for _, r := range s.rates {
		s.random = s.random || r > 0
	}
	s.random = s.random || p.Latency.Jitter > 0 || p.Batch.Expire > 0 || p.Batch.Fail > 0
	s.limits = newLimiter(p.RateLimits, s.now())
	return s
}

// FillLimits spends the rate-limit budgets as traffic arriving evenly at
// exactly the limits would have, so what follows starts with nothing in
// reserve: a token bucket is emptied, a sliding window holds a minute of
// evenly spaced admissions (the next unit frees up after 60 s / limit), a
// fixed window has used the part of the limit the elapsed part of its
// minute allows. Benchmarks call it to measure pacing in the harsh steady
// state rather than against a fresh budget. Without limits it does nothing.
func (s *Server) FillLimits() {
	if s.limits != nil {
		s.limits.fill(s.now())
	}
}

// Close releases every request the simulator is holding (latency, simulated
// timeouts); they end with a 503. The http.Server serving Handler, if any,
// belongs to the caller and is not stopped, nor is Serve (its context
// stops it).
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.done) }) }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats { return s.c.snapshot() }

// ResetStats zeroes the counters.
func (s *Server) ResetStats() { s.c.reset() }

// Handler serves the four APIs, the OpenAI and Anthropic batch APIs
// (batch.go), GET /stats and POST /stats/reset.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// maxBody caps a request body, as the providers do (413 above it).
const maxBody = 16 << 20

var errClosed = errors.New("simulator closed")

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/stats":
		s.serveStats(w, r)
		return
	case "/stats/reset":
		if r.Method != http.MethodPost {
			http.Error(w, "use POST /stats/reset", http.StatusMethodNotAllowed)
			return
		}
		s.ResetStats()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if s.serveBatch(w, r) {
		return
	}
	a, model, known := routeOf(r.URL.Path)
	s.c.requests.Add(1)
	if !known {
		s.c.byRoute[apiUnknown].Add(1)
		s.fail(w, a, &apiError{status: 404, kind: errNotFound, msg: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)}, nil)
		return
	}
	s.c.byRoute[a].Add(1)
	if r.Method != http.MethodPost {
		s.fail(w, a, &apiError{status: 405, kind: errMethod, msg: fmt.Sprintf("method %s not allowed; use POST %s", r.Method, r.URL.Path)}, nil)
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		s.fail(w, a, invalid("could not read the request body: %v", err), nil)
		return
	}
	if n > maxBody {
		s.fail(w, a, &apiError{status: 413, kind: errTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", maxBody)}, nil)
		return
	}
	s.serveAPI(r.Context(), w, a, model, r.URL.Path, buf.Bytes())
}

// serveAPI answers a POST to one of the APIs' known routes (routeOf) with
// its body read. The net/http handler and the fast server (serve.go)
// share it, so both answer with the same bytes.
func (s *Server) serveAPI(ctx context.Context, w http.ResponseWriter, a api, model, path string, body []byte) {
	if isCompletionPath(path) {
		s.serveCompletion(ctx, w, a, body)
		return
	}
	var req *chatRequest
	var aerr *apiError
	switch a {
	case apiOpenAI:
		req, aerr = parseOpenAI(body, &s.raws)
	case apiAnthropic:
		req, aerr = parseAnthropic(body)
	case apiOllama:
		req, aerr = parseOllama(body)
	case apiGemini:
		if model == "" {
			aerr = invalid("the model name is missing from the URL: use /v1beta/models/MODEL:generateContent")
		} else {
			req, aerr = parseGemini(model, body)
		}
	}
	if aerr == nil {
		aerr = s.refuse(a, body, req)
	}
	if aerr != nil {
		s.fail(w, a, aerr, nil)
		return
	}
	s.complete(ctx, w, a, req)
}

// routeOf maps a path to its API and, for Gemini, the model in the path.
// For an unknown path it still names the API whose error shape fits best.
func routeOf(path string) (a api, model string, known bool) {
	switch path {
	case "/v1/chat/completions":
		return apiOpenAI, "", true
	case "/v1/messages":
		return apiAnthropic, "", true
	case "/api/chat":
		return apiOllama, "", true
	case "/v1/completions": // prefill mode (completion.go)
		return apiOpenAI, "", true
	case "/api/generate":
		return apiOllama, "", true
	}
	for _, prefix := range []string{"/v1beta/models/", "/v1/models/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			if model, ok := strings.CutSuffix(rest, ":generateContent"); ok && !strings.Contains(model, "/") {
				return apiGemini, model, true
			}
			if prefix == "/v1beta/models/" {
				return apiGemini, "", false
			}
		}
	}
	switch {
	case strings.HasPrefix(path, "/v1/messages"):
		return apiAnthropic, "", false
	case strings.HasPrefix(path, "/api/"):
		return apiOllama, "", false
	case strings.HasPrefix(path, "/v1beta/"):
		return apiGemini, "", false
	}
	return apiOpenAI, "", false
}

// complete answers a well-formed request: generation, rate limits,
// transport faults, latency, then the reply.
func (s *Server) complete(ctx context.Context, w http.ResponseWriter, a api, req *chatRequest) {
	now := s.now()
	if aerr := s.readMedia(ctx, req); aerr != nil {
		s.fail(w, a, aerr, nil)
		return
	}
	g, aerr := s.generate(a, req)
	if aerr != nil {
		s.fail(w, a, aerr, nil)
		return
	}
	var st *limitState
	if s.limits != nil {
		lst, ok := s.limits.take(now, g.promptTok+g.compTok)
		st = &lst
		if !ok {
			s.fail(w, a, rateLimitError(&lst, req.model, g.promptTok+g.compTok), st)
			return
		}
	}
	// Only now does the try count: how many 429s came first depends on
	// timing, and must not change what the document draws next.
	s.commitTry(g)
	if s.transportFault(ctx, w, a, g.d.transport, st) {
		return
	}
	if lat := s.latency(g.compTok, g.r); lat > 0 {
		if err := s.wait(ctx, lat); err != nil {
			if errors.Is(err, errClosed) {
				s.fail(w, a, shuttingDown(), st)
			}
			return
		}
	}
	s.countAnswer(a, req, g)
	s.reply(w, a, g.reply(req, now), st)
}

// generated is one request's answer before it is sent: what the model
// says, the faults drawn, and what it costs in tokens.
type generated struct {
	key, try           uint64
	r                  *rng
	rv                 rng // what r points at: one allocation with g
	d                  draws
	ans                answer
	promptTok, compTok int
	cache              cacheUse
}

// generate answers a well-formed request as the model would, drawing its
// faults; nothing is sent or counted but re-asks. The chat routes and the
// batch endpoints share it, so a batch line is answered as a chat call is.
func (s *Server) generate(a api, req *chatRequest) (*generated, *apiError) {
	pr := readPrompt(req.messages)
	if pr.reask {
		s.c.reasks.Add(1)
	}
	sh := s.shapeFor(req, &pr)
	if sh.err != nil {
		return nil, invalid("invalid JSON schema in the request: %v", sh.err)
	}
	g := &generated{key: mix(mix(s.seed, pr.docHash), uint64(pr.attempt))}
	if s.random {
		g.try = uint64(s.tries.peek(g.key))
	}
	g.rv.p.Seed(g.key, g.try) // newRNG(g.key, g.try), in g
	g.r = &g.rv
	g.d = s.draw(g.r, pr.reask)
	ans, aerr := s.compose(a, req, &pr, sh, &g.d, g.r)
	if aerr != nil {
		return nil, aerr
	}
	// Text read from pictures is in the messages but is paid as the
	// pictures' own tokens (mediaTokens), not as text.
	g.promptTok = promptTokens(a, req, s.count, &s.fnTokens) + req.mediaTokens
	if req.mediaChars > 0 {
		g.promptTok -= tokens(req.mediaChars)
	}
	if window, _ := ContextWindow(req.model); window > 0 && g.promptTok+max(req.maxTokens, 0) > window {
		return nil, contextLength(a, req.model, window, g.promptTok+max(req.maxTokens, 0))
	}
	g.compTok = s.count(ans.text + ans.refusal)
	if req.maxTokens > 0 && g.compTok > req.maxTokens {
		ans.text, ans.truncated = cutText(ans.text, req.maxTokens*4), true
		g.compTok = req.maxTokens
	}
	g.ans = ans
	return g, nil
}

// commitTry records that g's try was used, so the next ask draws afresh.
func (s *Server) commitTry(g *generated) {
	if s.random {
		s.tries.commit(g.key, uint32(g.try))
	}
}

// countAnswer counts a delivered answer's faults and tokens, and its use
// of the prompt cache.
func (s *Server) countAnswer(a api, req *chatRequest, g *generated) {
	for f, on := range g.ans.applied {
		if on {
			s.c.faults[f].Add(1)
		}
	}
	// The cache is filled only by answered requests, as a provider's is.
	g.cache = s.cache.use(a, req, g.promptTok)
	s.c.prompt.Add(int64(g.promptTok))
	s.c.completion.Add(int64(g.compTok))
	s.c.cachedPrompt.Add(int64(g.cache.read))
	s.c.cacheCreation.Add(int64(g.cache.created))
}

func (g *generated) reply(req *chatRequest, now time.Time) *reply {
	return &reply{req: req, ans: &g.ans, promptTokens: g.promptTok, completionTokens: g.compTok, cache: g.cache, id: mix(g.key, g.try), now: now}
}

// transportFault fails the request as drawn (5xx, 529, a timeout, a
// dropped connection) and reports whether it did.
func (s *Server) transportFault(ctx context.Context, w http.ResponseWriter, a api, f faultID, st *limitState) bool {
	var e *apiError
	switch f {
	case fStatus500:
		e = &apiError{status: 500, kind: errServer, msg: "The server had an error while processing your request. Sorry about that!"}
	case fStatus503:
		e = &apiError{status: 503, kind: errUnavailable, msg: "The service is temporarily unavailable; retry shortly."}
	case fStatus529:
		e = &apiError{status: 529, kind: errOverloaded, msg: "Overloaded"}
	case fTimeout:
		switch err := s.wait(ctx, s.prof.Errors.TimeoutCap); {
		case err == nil:
			e = &apiError{status: 504, kind: errTimeout, msg: "The model did not answer in time."}
		case errors.Is(err, errClosed):
			e = shuttingDown()
		}
	case fDrop:
	default:
		return false
	}
	s.c.faults[f].Add(1)
	switch {
	case f == fDrop:
		drop(w)
	case e != nil:
		s.fail(w, a, e, st)
	} // else the client gave up waiting: there is no one to answer
	return true
}

func shuttingDown() *apiError {
	return &apiError{status: 503, kind: errUnavailable, msg: "The simulator is shutting down."}
}

// reply writes a successful answer in the shape of API a.
func (s *Server) reply(w http.ResponseWriter, a api, rep *reply, st *limitState) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	var err error
	contentType := "application/json"
	switch a {
	case apiOpenAI:
		buf.Write(appendOpenAIBody(buf.AvailableBuffer(), rep))
	case apiAnthropic:
		err = marshal(buf, anthropicBody(rep))
	case apiOllama:
		err = marshal(buf, ollamaBody(rep, s.now().Sub(rep.now))...)
		if rep.req.stream {
			contentType = "application/x-ndjson"
		}
	case apiGemini:
		err = marshal(buf, geminiBody(rep))
	}
	if err != nil {
		s.fail(w, a, &apiError{status: 500, kind: errServer, msg: "simulator could not encode its reply: " + err.Error()}, st)
		return
	}
	s.send(w, http.StatusOK, contentType, buf.Bytes(), st, rep.now)
}

func rateLimitError(st *limitState, model string, requested int) *apiError {
	e := &apiError{status: 429, kind: errRateLimit, scope: st.exceeded}
	switch {
	case st.tooLarge:
		e.msg = fmt.Sprintf("Request too large for %s on tokens per min (TPM): Limit %d, Requested %d. The input or output tokens must be reduced in order to run successfully.", model, st.tpm, requested)
	case st.exceeded == "requests":
		e.msg = fmt.Sprintf("Rate limit reached for %s on requests per min (RPM): Limit %d, Used %d, Requested 1. Please try again in %v.", model, st.rpm, st.rpm, st.retryAfter)
	default:
		e.msg = fmt.Sprintf("Rate limit reached for %s on tokens per min (TPM): Limit %d, Used %d, Requested %d. Please try again in %v.", model, st.tpm, st.tpm-st.remToks, requested, st.retryAfter)
	}
	return e
}

// shapeFor finds the schema: the API's own field first, then the prompt's
// <json-schema>, then its <example>.
func (s *Server) shapeFor(req *chatRequest, pr *prompt) *shape {
	switch {
	case req.schema != nil && req.geminiSchema:
		return s.shapes.get(srcGemini, req.schema)
	case req.schema != nil:
		return s.shapes.get(srcNative, req.schema)
	case pr.schemaText != "":
		return s.shapes.getString(srcPrompt, pr.schemaText)
	case pr.example != "":
		return s.shapes.getString(srcExample, pr.example+exampleGuideSep+pr.guide)
	}
	return s.generic
}

// latency is time to first token plus per-token time, with jitter.
func (s *Server) latency(completion int, r *rng) time.Duration {
	l := s.prof.Latency
	d := l.TTFT + time.Duration(completion)*l.PerToken
	if d <= 0 {
		return 0
	}
	if l.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + l.Jitter*(2*r.unit()-1)))
	}
	return d
}

// wait sleeps for d unless the client gives up or the simulator closes.
func (s *Server) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return errClosed
	}
}

// fail answers with an error in the shape of API a. st is the rate-limit
// state when the request reached the limiter, else nil (then peeked).
func (s *Server) fail(w http.ResponseWriter, a api, e *apiError, st *limitState) {
	now := s.now()
	if st == nil && s.limits != nil {
		lst := s.limits.peek(now)
		st = &lst
	}
	if e.kind == errRateLimit {
		s.c.rateLimited.Add(1)
	}
	var retryAfter time.Duration
	if st != nil {
		retryAfter = st.retryAfter
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if err := marshal(buf, errorBody(a, e, retryAfter)); err != nil {
		buf.Reset()
		buf.WriteString(`{"error":"simulator could not encode its error"}`)
	}
	s.send(w, e.httpStatus(a), "application/json", buf.Bytes(), st, now)
}

func (s *Server) send(w http.ResponseWriter, status int, contentType string, body []byte, st *limitState, now time.Time) {
	h := w.Header()
	if st != nil {
		st.writeHeaders(h, now)
	}
	set(h, "Content-Type", contentType)
	set(h, "Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client that went away is not the simulator's problem
	s.c.status(status)
}

func (s *Server) serveStats(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "use GET /stats", http.StatusMethodNotAllowed)
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if err := marshal(buf, s.Stats()); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	set(w.Header(), "Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}

// dropper is implemented by the in-process transport's response writer.
type dropper interface{ drop() }

// drop closes the connection without an answer. Over TCP the close is a
// reset (linger 0), as when a provider's load balancer gives up.
func drop(w http.ResponseWriter) {
	if d, ok := w.(dropper); ok {
		d.drop()
		return
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http's own way to abort a response
}

// tryCounter counts how often each (document, attempt) was asked, so that
// a retried request draws afresh while staying reproducible.
type tryCounter struct {
	shards [32]tryShard
}

type tryShard struct {
	mu sync.Mutex
	m  map[uint64]uint32
}

// triesPerShard bounds memory; a full shard starts over, which only
// repeats draws for documents asked long ago.
const triesPerShard = 1 << 14

func (t *tryCounter) shard(key uint64) *tryShard {
	return &t.shards[key%uint64(len(t.shards))]
}

// peek returns how many times key was answered.
func (t *tryCounter) peek(key uint64) uint32 {
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[key]
}

// commit records that try number n of key was answered.
func (t *tryCounter) commit(key uint64, n uint32) {
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m == nil || len(sh.m) >= triesPerShard {
		sh.m = make(map[uint64]uint32)
	}
	sh.m[key] = max(sh.m[key], n+1)
}
