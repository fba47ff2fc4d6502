// Package console is extractq's web console (`extractq ui`, also served by
// `extractq dev`): server-rendered pages over the audit database and
// JetStream for runs, documents and their attempts, dead letters and their
// resubmission, and schemas. Pages are html/template with embedded assets
// and work without JavaScript; a vendored htmx (static/) only refreshes the
// pool panel. Every text from documents and model answers is untrusted and
// reaches the page through html/template's contextual escaping only.
//
// The console reads unless Config.AllowWrites is set; writes (resubmitting
// dead letters) then need a session opened with Config.Token and a CSRF
// token on every form, and cross-origin POSTs are refused.
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// MinTokenLength is the shortest write token Config accepts.
const MinTokenLength = 16

// Config is what a console serves.
type Config struct {
	Store *audit.Store
	JS    jetstream.JetStream
	// AllowWrites enables resubmission; Token is then required.
	AllowWrites bool
	// Token opens a write session (at least MinTokenLength characters).
	Token string
	// BasePath is the path prefix the console is mounted under ("" or
	// e.g. "/ui"); its links carry it.
	BasePath string
	// PageSize is how many rows a list shows (default 50).
	PageSize int
	// RequestTimeout bounds the queries of one page (default 15s).
	RequestTimeout time.Duration
	// AllowedHosts are the host names (no port) the console answers to
	// besides localhost and IP addresses, e.g. the name of a reverse proxy
	// in front of it. A request for any other Host is refused: reading
	// needs no login, so a page that rebinds its own DNS name to this
	// machine (DNS rebinding) could otherwise read documents through a
	// local browser.
	AllowedHosts []string
	Log          *slog.Logger
}

// ErrConfig matches errors for a console configuration that cannot work.
var ErrConfig = errors.New("invalid console configuration")

// Server is a console. It is an http.Handler.
type Server struct {
	cfg   Config
	pages *pages
	mux   *http.ServeMux
	h     http.Handler

	key      []byte // signs CSRF tokens; new per process
	mu       sync.Mutex
	sessions map[string]time.Time // session id → expiry
}

// sessionTTL is how long a write session lasts.
const sessionTTL = 12 * time.Hour

// New checks cfg and builds the console.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.JS == nil {
		return nil, fmt.Errorf("%w: the console needs the audit store and JetStream", ErrConfig)
	}
	if cfg.AllowWrites && len(cfg.Token) < MinTokenLength {
		return nil, fmt.Errorf("%w: writes need a token of at least %d characters (--token or EXTRACTQ_UI_TOKEN)", ErrConfig, MinTokenLength)
	}
	cfg.BasePath = strings.TrimRight(cfg.BasePath, "/")
	if cfg.BasePath != "" && !strings.HasPrefix(cfg.BasePath, "/") {
		return nil, fmt.Errorf("%w: base path %q must start with /", ErrConfig, cfg.BasePath)
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 50
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 15 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p, err := loadPages(cfg.BasePath)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, pages: p, mux: http.NewServeMux(), key: make([]byte, 32), sessions: map[string]time.Time{}}
	if _, err := rand.Read(s.key); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	m := s.mux
	m.Handle("GET /static/", http.StripPrefix("/static/", immutable(http.FileServerFS(static))))
	m.HandleFunc("GET /{$}", s.overview)
	m.HandleFunc("GET /partials/pools", s.poolsPartial)
	m.HandleFunc("GET /run", s.run)
	m.HandleFunc("GET /document", s.document)
	m.HandleFunc("GET /dlq", s.deadLetters)
	m.HandleFunc("GET /dlq/letter", s.letter)
	m.HandleFunc("GET /dlq/resubmit", s.writes(s.confirmResubmit))
	m.HandleFunc("POST /dlq/resubmit", s.writes(s.csrf(s.resubmit)))
	m.HandleFunc("GET /schemas", s.schemas)
	m.HandleFunc("GET /schema", s.schema)
	m.HandleFunc("GET /schema/diff", s.schemaDiff)
	m.HandleFunc("GET /login", s.loginForm)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.csrf(s.logout))
	// Browsers mark cross-site requests (Sec-Fetch-Site, Origin): refuse
	// them on every state-changing method before any handler runs.
	s.h = securityHeaders(allowHosts(cfg.AllowedHosts, http.NewCrossOriginProtection().Handler(m)))
	return s, nil
}

// allowHosts answers only requests whose Host is localhost, an IP address
// or one of names; others get 421 Misdirected Request saying how to allow
// the name.
func allowHosts(names []string, h http.Handler) http.Handler {
	allowed := map[string]bool{"localhost": true}
	for _, n := range names {
		allowed[strings.ToLower(strings.TrimSuffix(strings.TrimSpace(n), "."))] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
		if !allowed[host] && !strings.HasSuffix(host, ".localhost") {
			if _, err := netip.ParseAddr(host); err != nil {
				http.Error(w, fmt.Sprintf("421 this console does not answer to host %q: open it by IP address or localhost, or allow the name with --allow-host or EXTRACTQ_UI_ALLOWED_HOSTS", host), http.StatusMisdirectedRequest)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the console.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }

// Serve runs the console on addr until ctx ends, then shuts it down
// gracefully; ready, when not nil, is called with the bound address.
func (s *Server) Serve(ctx context.Context, addr string, ready func(addr string)) error {
	ln, err := listen(addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-done:
		return fmt.Errorf("console on %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-done
	return err
}

// securityHeaders forbids inline scripts, framing and sniffing on every
// response: the last line of defence should an escape ever be missed.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, r)
	})
}

// immutable lets browsers cache the embedded assets for a day.
func immutable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		h.ServeHTTP(w, r)
	})
}

// ctx bounds a page's queries.
func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
}
