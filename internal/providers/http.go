package providers

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/extractq/extractq/internal/http1"
	"github.com/extractq/extractq/llm"
)

// DefaultMaxResponseBytes caps a response body: a chat answer is a few KiB,
// and a runaway or hostile server must not exhaust a worker's memory.
const DefaultMaxResponseBytes = 8 << 20

// newClient is the HTTP client of one provider instance talking to
// baseURL. It never follows redirects: Go forwards custom credential
// headers (x-api-key, x-goog-api-key) to any host a redirect names, and no
// API redirects a POST; the 3xx comes back as a fatal error instead.
func newClient(baseURL string, getenv func(string) string) *http.Client {
	return &http.Client{
		Transport:     transportFor(baseURL, getenv),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// http1Env is the environment variable that chooses between http1's lean
// transport and net/http's (see pickTransport): "off" (or 0, false, no)
// keeps every provider on net/http, "plain" only https ones.
const http1Env = "EXTRACTQ_HTTP1"

// transportFor picks the transport of a provider's own client. A base URL
// that no proxy applies to gets http1's lean HTTP/1.1 transport: the
// calling goroutine writes the request and reads the answer, where
// net/http hands both to goroutines of its own per connection, about a
// fifth of a worker's CPU. That is every hosted API over https (HTTP/1.1
// over TLS, as each of them serves) and an in-cluster vLLM, Ollama or
// LiteLLM, or the simulator, over plain http. A proxied URL, or
// EXTRACTQ_HTTP1=off, keeps net/http (proxies, HTTP/2);
// EXTRACTQ_HTTP1=plain keeps https on net/http. Any request http1 cannot
// send still goes to net/http, as does every request to an https server
// that refuses HTTP/1.1 in the handshake (an HTTP/2-only gateway).
func transportFor(baseURL string, getenv func(string) string) http.RoundTripper {
	return pickTransport(baseURL, getenv, http.ProxyFromEnvironment)
}

// pickTransport is transportFor with the proxy function given (net/http
// reads the proxy variables once per process; tests pass their own).
func pickTransport(baseURL string, getenv func(string) string, proxy func(*http.Request) (*url.URL, error)) http.RoundTripper {
	if getenv == nil {
		getenv = os.Getenv
	}
	plainOnly := false
	switch strings.ToLower(strings.TrimSpace(getenv(http1Env))) {
	case "off", "0", "false", "no": // as a user writes "off"
		return newTransport()
	case "plain":
		plainOnly = true
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && (u.Scheme != "https" || plainOnly)) {
		return newTransport()
	}
	if p, err := proxy(&http.Request{URL: u}); err != nil || p != nil {
		return newTransport()
	}
	return &http1.Transport{
		DialTimeout:         30 * time.Second,
		KeepAlive:           30 * time.Second,
		MaxIdleConnsPerHost: 256, // as newTransport: a fleet worker runs many calls to one host at once
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		Fallback:            newTransport(),
	}
}

// clientWith returns hc (the provider's own pooled client for baseURL
// when nil) with its transport wrapped by wrap when set; hc itself is not
// changed.
func clientWith(hc *http.Client, baseURL string, getenv func(string) string, wrap func(http.RoundTripper) http.RoundTripper) *http.Client {
	if hc == nil {
		hc = newClient(baseURL, getenv)
	}
	if wrap == nil {
		return hc
	}
	c := *hc
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = wrap(rt)
	return &c
}

// newTransport returns the pooled transport of one provider instance. Every
// call of that instance shares its connections; nothing is shared between
// instances. Compression stays on: the transport asks for gzip and
// decompresses transparently (the size cap applies after decompression).
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   256, // a fleet worker runs many calls to one host at once
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// base is what every adapter shares: identity, capabilities, the HTTP
// client, the redactor and the logger.
type base struct {
	name    string
	model   string
	caps    llm.Capabilities
	baseURL string
	apiKey  string // sent in a header only; never logged or formatted
	// keyHint names where the key comes from, for auth errors.
	keyHint string
	hc      *http.Client
	red     redactor
	log     *slog.Logger
	maxBody int64
	// learn holds what the server's refusals taught (learn.go).
	learn *learner
	// direct is hc's transport when hc is the provider's own client over
	// http1 (see do); nil otherwise.
	direct *http1.Transport
	// lastURL holds the last request URL parsed (see newRequest); nil
	// parses every time.
	lastURL *atomic.Pointer[parsedURL]
	// bearer is the API key's bearer header (bearerFor), built by the
	// constructors; nil (a base made without one) builds it per call.
	bearer http.Header
	// template holds the request template of the last URL sent to with
	// bearer (see httpRequest); nil makes every request anew.
	template *atomic.Pointer[requestTemplate]
}

// bearerFor is the header that carries key as a bearer token (none
// without a key).
func bearerFor(key string) http.Header {
	hdr := http.Header{}
	if key != "" {
		hdr.Set("Authorization", "Bearer "+key)
	}
	return hdr
}

// bearerHeader is the provider's bearer header, shared by every call:
// exchange copies its entries into each request, whose transport only
// reads them.
func (b *base) bearerHeader() http.Header {
	if b.bearer == nil {
		return bearerFor(b.apiKey)
	}
	return b.bearer
}

// Name is the provider string, e.g. "openai:gpt-4o-mini".
func (b *base) Name() string { return b.name }

// Model is the model name sent to the API.
func (b *base) Model() string { return b.model }

// Capabilities lists the modes this provider and model support.
func (b *base) Capabilities() llm.Capabilities { return b.caps }

// prepare checks a request before anything is sent and resolves ModeAuto
// (callers should resolve it; doing it here keeps a forgotten resolution
// from turning into an API error).
func (b *base) prepare(req llm.Request) (llm.Mode, error) {
	if len(req.Messages) == 0 {
		return "", b.localError("the request has no messages")
	}
	mode := req.Mode
	if mode == "" || mode == llm.ModeAuto {
		mode = b.caps.Auto()
		if req.Schema == nil && (mode == llm.ModeStrict || mode == llm.ModeTools) {
			// No schema to enforce: JSON mode where supported, else text.
			mode = llm.ModeText
			if b.caps.Supports(llm.ModeJSON) {
				mode = llm.ModeJSON
			}
		}
	}
	if mode != llm.ModeText && !b.caps.Supports(mode) {
		return "", b.localError(fmt.Sprintf("mode %q is not supported by %s (supported: %v); use mode auto", mode, b.name, b.caps.Modes))
	}
	if (mode == llm.ModeStrict || mode == llm.ModeTools) && req.Schema == nil {
		return "", b.localError(fmt.Sprintf("mode %q needs a schema", mode))
	}
	return mode, nil
}

// localError is a fatal error found before any call was made.
func (b *base) localError(msg string) *llm.Error {
	return &llm.Error{Provider: b.name, Class: llm.ClassInvalidRequest, Message: msg}
}

// reply is a 2xx exchange: the body is already capped and redacted.
type reply struct {
	status    int
	body      []byte
	rateLimit llm.RateLimit
}

// post sends body as JSON to url and returns the 2xx reply, or an *Error
// for everything else (non-2xx status, transport failure, cut or oversized
// body). hdr carries the credentials; they never reach an error or a log.
func (b *base) post(ctx context.Context, req llm.Request, url string, hdr http.Header, body any) (*reply, error) {
	var buf *[]byte
	if b.direct != nil { // only http1 is done with the body when the call returns (see exchangeBuf)
		buf = payloadPool.Get().(*[]byte)
	}
	var dst []byte
	if buf != nil {
		dst = *buf
	}
	payload, err := encodeBodyInto(dst, body)
	if err != nil {
		if buf != nil {
			payloadPool.Put(buf)
		}
		return nil, b.localError("cannot encode the request: " + err.Error())
	}
	parent := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	return b.exchangeBuf(ctx, parent, http.MethodPost, url, hdr, "application/json", payload, b.maxBody, buf)
}

// payloadPool holds request body buffers (*[]byte) for post: a chat body
// is a few KiB, allocated and dropped on every call.
var payloadPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledPayload keeps a rare huge body's buffer out of the pool.
const maxPooledPayload = 256 << 10

// exchange sends one request and returns the 2xx reply with its body capped
// at limit bytes and redacted, or an *Error (see post). parent is the
// caller's context, ctx may carry a per-call timeout; payload may be nil
// (GET).
func (b *base) exchange(ctx, parent context.Context, method, url string, hdr http.Header, contentType string, payload []byte, limit int64) (*reply, error) {
	return b.exchangeBuf(ctx, parent, method, url, hdr, contentType, payload, limit, nil)
}

// exchangeBuf is exchange for a payload in buf's buffer from payloadPool
// (buf nil: not pooled). The buffer goes back to the pool once http1 sent
// the request: its RoundTrip writes the whole body, replays it from
// GetBody if at all, and closes it before it returns. Any other transport
// may still read the body after RoundTrip returns (net/http's writes it
// from a goroutine of its own), so there the buffer is left to the
// garbage collector.
func (b *base) exchangeBuf(ctx, parent context.Context, method, url string, hdr http.Header, contentType string, payload []byte, limit int64, buf *[]byte) (*reply, error) {
	hreq, err := b.httpRequest(ctx, method, url, hdr, contentType, payload)
	if err != nil {
		return nil, &llm.Error{Provider: b.name, Class: llm.ClassInvalidRequest, Message: "bad base URL; check the base URL flag or variable", Err: b.red.Error(err)}
	}

	// The start is read only for the debug log: a disabled one costs
	// neither the clock nor the attributes.
	debug := b.log.Enabled(ctx, slog.LevelDebug)
	var start time.Time
	if debug {
		start = time.Now()
	}
	resp, direct, err := b.do(hreq)
	if buf != nil && direct && cap(payload) <= maxPooledPayload {
		*buf = payload[:0]
		payloadPool.Put(buf)
	}
	if err != nil {
		return nil, b.logged(ctx, start, b.transportError(parent, err, false))
	}
	defer resp.Body.Close()
	rl := rateLimitOf(resp.Header, time.Now)
	raw, err := readCapped(resp.Body, resp.ContentLength, limit)
	if err != nil {
		e := b.transportError(parent, err, true)
		e.Status, e.RateLimit, e.Raw = resp.StatusCode, rl, b.red.Bytes(raw)
		return nil, b.logged(ctx, start, e)
	}
	raw = b.red.Bytes(raw)
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if int64(len(raw)) > limit {
		raw = raw[:min(limit, b.maxBody)]
		if ok {
			// A complete 2xx that runs past the cap is a runaway answer,
			// not an outage: asking again buys the same one.
			return nil, b.logged(ctx, start, &llm.Error{
				Provider: b.name, Class: llm.ClassBadResponse, Status: resp.StatusCode, RateLimit: rl, Raw: raw,
				Message: fmt.Sprintf("the answer exceeds the %d-byte response cap; raise it with WithMaxResponseBytes or ask for less", limit),
			})
		}
	}
	if !ok { // an error body over the cap is classified by its status, from its first bytes
		ae := parseAPIError(raw)
		if rl.RetryAfter == 0 && ae.RetryDelay != "" {
			if d, ok := parseResetDuration(ae.RetryDelay, time.Time{}); ok {
				rl.RetryAfter = d
			}
		}
		e := &llm.Error{
			Provider: b.name, Class: classifyStatus(resp.StatusCode, ae), Status: resp.StatusCode,
			Type: b.red.String(ae.Type), Message: b.red.String(ae.Message), RateLimit: rl, Raw: raw,
		}
		if e.Class == llm.ClassAuth && b.keyHint != "" {
			e.Message += " (check the API key in " + b.keyHint + ")"
		}
		return nil, b.logged(ctx, start, e)
	}
	if debug {
		b.log.LogAttrs(ctx, slog.LevelDebug, "provider call",
			slog.String("provider", b.name), slog.Int("status", resp.StatusCode),
			slog.Duration("latency", time.Since(start)), slog.Int("bytes", len(raw)))
	}
	return &reply{status: resp.StatusCode, body: raw, rateLimit: rl}, nil
}

// jsonHeaderValue is the value of Accept and of a JSON body's Content-Type.
var jsonHeaderValue = []string{"application/json"}

// maxPrealloc bounds the buffer readCapped allocates from a response's
// announced length.
const maxPrealloc = 1 << 20

// readCapped reads r to its end, or to limit+1 bytes (the caller tells an
// answer over the cap by its length). With the body's length known
// (sizeHint ≥ 0, not past the cap) it reads into one buffer of that size
// plus the byte that sees the end, where io.ReadAll grew one from 512
// bytes, copying the body each time. What it allocates ahead is bounded
// by maxPrealloc: a server announcing a large body that does not come
// costs no more than that.
func readCapped(r io.Reader, sizeHint, limit int64) ([]byte, error) {
	n := int64(512)
	if sizeHint >= 0 && sizeHint <= limit {
		n = min(sizeHint+1, maxPrealloc)
	}
	b := make([]byte, 0, n)
	for { // reads at most limit+1 bytes, as io.LimitReader would, without allocating one
		if int64(len(b)) > limit {
			return b, nil
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as io.ReadAll does
		}
		end := cap(b)
		if room := limit - int64(len(b)) + 1; room > 0 && room < int64(end-len(b)) {
			end = len(b) + int(room)
		}
		m, err := r.Read(b[len(b):end])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// transportError builds the error of a call that got no complete response.
func (b *base) transportError(parent context.Context, err error, inBody bool) *llm.Error {
	class := classifyTransport(parent, err, inBody)
	msg := "no response"
	switch class {
	case llm.ClassCanceled:
		msg = "the caller canceled the call"
	case llm.ClassTimeout:
		msg = "the call timed out"
	case llm.ClassTruncatedBody:
		msg = "the response body ended early"
	case llm.ClassNetwork:
		msg = "network failure; check that the provider's base URL is reachable"
		var cv *tls.CertificateVerificationError
		if errors.As(err, &cv) {
			// Retried as any network failure (a proxy or a certificate
			// may be fixed while the pool waits), but named for what it is.
			msg = "the provider's TLS certificate is not trusted here; for a private CA, point SSL_CERT_FILE (or SSL_CERT_DIR) at its certificates"
		}
	}
	return &llm.Error{Provider: b.name, Class: class, Message: msg + ": " + b.red.String(err.Error()), Err: b.red.Error(err)}
}

// badResponse is a 2xx body the adapter cannot use.
func (b *base) badResponse(r *reply, what string, err error) *llm.Error {
	msg := what
	if err != nil {
		msg += ": " + b.red.String(err.Error())
	}
	return &llm.Error{Provider: b.name, Class: llm.ClassBadResponse, Status: r.status, Message: msg, RateLimit: r.rateLimit, Raw: r.body, Err: b.red.Error(err)}
}

// logged records a failed call (the error is already redacted) and returns
// it. A zero start: debug logging was off when the call began.
func (b *base) logged(ctx context.Context, start time.Time, e *llm.Error) *llm.Error {
	if start.IsZero() {
		return e
	}
	b.log.LogAttrs(ctx, slog.LevelDebug, "provider call failed",
		slog.String("provider", b.name), slog.Int("status", e.Status), slog.String("class", string(e.Class)),
		slog.Duration("latency", time.Since(start)), slog.String("error", e.Error()))
	return e
}

// marshal encodes without HTML escaping: prompts are full of "<" and ">"
// (the document fence), and escaping them only makes bodies larger.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// parsedURL is a request URL parsed once, as http.NewRequest parses it.
type parsedURL struct {
	raw string
	u   url.URL
}

// newRequest is http.NewRequestWithContext without parsing a URL the
// provider sent to before: its calls go to one or two fixed URLs, and
// parsing one was about 4% of a call's instructions. The last URL parsed is
// kept; a request gets its own copy of it. A URL that does not parse goes
// through NewRequestWithContext, whose error stands.
func (b *base) newRequest(ctx context.Context, method, rawURL string, body io.Reader) (*http.Request, error) {
	if b.lastURL == nil {
		return http.NewRequestWithContext(ctx, method, rawURL, body)
	}
	pu := b.lastURL.Load()
	if pu == nil || pu.raw != rawURL {
		u, err := url.Parse(rawURL)
		if err != nil {
			return http.NewRequestWithContext(ctx, method, rawURL, body)
		}
		u.Host = removeEmptyPort(u.Host)
		pu = &parsedURL{raw: rawURL, u: *u}
		b.lastURL.Store(pu)
	}
	// An empty URL parses into an empty url.URL at little cost; the
	// request's own copy of the parsed one goes there. Everything else
	// (the body, GetBody, ContentLength, Host) is NewRequestWithContext's.
	req, err := http.NewRequestWithContext(ctx, method, "", body)
	if err != nil {
		return nil, err
	}
	*req.URL = pu.u // User, a pointer, is shared: a Userinfo is immutable
	req.Host = req.URL.Host
	return req, nil
}

// httpRequest is the request exchangeBuf sends: newRequest's, with hdr's
// entries, the content type and Accept set. When the request goes to
// http1 directly with the provider's own bearer header, the request is
// made from the provider's template for that method, URL and content type
// (requestTemplate): the URL and the header map were made anew on every
// call (an allocation each and the header's four map writes), though
// http1 only reads them.
func (b *base) httpRequest(ctx context.Context, method, url string, hdr http.Header, contentType string, payload []byte) (*http.Request, error) {
	templated := b.template != nil && b.direct != nil && ctx != nil && b.bearer != nil && sameMap(hdr, b.bearer)
	if templated {
		if t := b.template.Load(); t != nil && t.method == method && t.url == url && t.contentType == contentType {
			return t.request(ctx, payload), nil
		}
	}
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	hreq, err := b.newRequest(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		hreq.Header[k] = vs
	}
	// Set by canonical key, JSON's value shared: Header.Set canonicalized
	// the key and allocated the value's slice on every call. A transport
	// wrapper that sets a header replaces the slice; none writes into it.
	switch contentType {
	case "":
	case "application/json":
		hreq.Header["Content-Type"] = jsonHeaderValue
	default:
		hreq.Header["Content-Type"] = []string{contentType}
	}
	hreq.Header["Accept"] = jsonHeaderValue
	if templated && hreq.URL.User == nil { // do sends a URL with userinfo through Client.Do
		b.template.Store(newRequestTemplate(hreq, method, url, contentType))
	}
	return hreq, nil
}

// sameMap reports whether h and g are one map, not merely equal ones.
func sameMap(h, g http.Header) bool {
	return reflect.ValueOf(h).UnsafePointer() == reflect.ValueOf(g).UnsafePointer()
}

// requestTemplate is what every request of a provider to one URL with its
// own bearer header shares: the method, the URL, the header and the host,
// as httpRequest made them for the first one. The URL and the header are
// the template's own copies; the requests made from it share them, read
// only: an http.RoundTripper must not change its request, and http1 does
// not.
type requestTemplate struct {
	method, url, contentType string // httpRequest's arguments it was made for
	req                      http.Request
}

// newRequestTemplate keeps hreq's method, URL, header and host, for
// requests to method, url with contentType.
func newRequestTemplate(hreq *http.Request, method, url, contentType string) *requestTemplate {
	t := &requestTemplate{method: method, url: url, contentType: contentType, req: *hreq.WithContext(context.Background())}
	u := *hreq.URL
	t.req.URL = &u
	t.req.Header = hreq.Header.Clone()
	t.req.Body, t.req.GetBody, t.req.ContentLength = nil, nil, 0
	return t
}

// request is the template's request with ctx, and payload as its body
// (none when nil) set as http.NewRequestWithContext sets a
// *bytes.Reader's.
func (t *requestTemplate) request(ctx context.Context, payload []byte) *http.Request {
	req := t.req.WithContext(ctx)
	if payload == nil {
		return req
	}
	r := bytes.NewReader(payload)
	req.Body = io.NopCloser(r)
	req.ContentLength = int64(r.Len())
	snapshot := *r
	req.GetBody = func() (io.ReadCloser, error) {
		r := snapshot
		return io.NopCloser(&r), nil
	}
	if req.ContentLength == 0 {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	return req
}

// removeEmptyPort drops the colon of a host with an empty port
// ("example.com:"), as http.NewRequest does (net/http's removeEmptyPort).
func removeEmptyPort(host string) string {
	if strings.LastIndex(host, ":") > strings.LastIndex(host, "]") {
		return strings.TrimSuffix(host, ":")
	}
	return host
}

// do sends hreq as b.hc.Do does. When the client is the provider's own
// (newClient) with http1's transport, the request goes to the transport
// directly: such a client has no cookie jar, no timeout and follows no
// redirect, so Client.Do only copied the header (for redirects it never
// follows) and wrapped errors. What it would still do is done here: a
// transport error is wrapped in the same *url.Error, a 3xx whose Location
// does not parse is the same error, and a URL with userinfo (basic auth)
// goes through Do.
//
// direct reports that http1 sent the request itself: then nothing reads
// the request body any more.
func (b *base) do(hreq *http.Request) (resp *http.Response, direct bool, err error) {
	if b.direct == nil || hreq.URL.User != nil {
		resp, err = b.hc.Do(hreq)
		return resp, false, err
	}
	resp, err = b.direct.RoundTrip(hreq)
	direct = b.direct.SentItself(hreq)
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch // as Client.send
		}
		return nil, direct, &url.Error{Op: urlErrorOp(hreq.Method), URL: hreq.URL.String(), Err: err}
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		// Client.do parses the Location of a redirect before asking
		// CheckRedirect, which keeps the response. (A 307 or 308 for a
		// body without GetBody is not redirected at all; every body here
		// has one, as NewRequest sets it for a bytes.Reader.)
		if loc := resp.Header.Get("Location"); loc != "" {
			if _, err := hreq.URL.Parse(loc); err != nil {
				_ = resp.Body.Close()
				return nil, direct, &url.Error{Op: urlErrorOp(hreq.Method), URL: hreq.URL.String(),
					Err: fmt.Errorf("failed to parse Location header %q: %v", loc, err)}
			}
		}
	}
	return resp, direct, nil
}

// urlErrorOp is the Op of Client.Do's *url.Error for a method ("Post").
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	for i := 0; i < len(method); i++ {
		if method[i] < ' ' || method[i] > '~' {
			return method
		}
	}
	return method[:1] + strings.ToLower(method[1:])
}

// directTransport is the http1 transport of a client newClient made, when
// it has one: exchange may call it without http.Client (see do).
func directTransport(hc *http.Client, own bool) *http1.Transport {
	if !own {
		return nil
	}
	t, _ := hc.Transport.(*http1.Transport)
	return t
}
