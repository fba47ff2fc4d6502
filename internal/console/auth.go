package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// sessionCookie holds the id of a write session.
const sessionCookie = "extractq_ui_session"

// csrfField is the form field carrying the CSRF token.
const csrfField = "csrf"

// session returns the valid write session of r ("" when none).
func (s *Server) session(r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.sessions[c.Value]
	if !ok {
		return ""
	}
	if time.Now().After(exp) {
		delete(s.sessions, c.Value)
		return ""
	}
	return c.Value
}

// csrfToken is the CSRF token of a session: an HMAC of its id under a key
// that never leaves the process, so a page of another origin can neither
// read nor forge it.
func (s *Server) csrfToken(session string) string {
	if session == "" {
		return ""
	}
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("csrf:" + session))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// writes guards a handler that changes state or leads to a change: writes
// must be enabled and the request must carry a write session; without one a
// GET is sent to the login page, anything else refused.
func (s *Server) writes(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.cfg.AllowWrites {
			s.fail(w, r, http.StatusForbidden, "This console is read-only",
				"Start it with `extractq ui --allow-writes --token …` (or set EXTRACTQ_UI_TOKEN) to resubmit dead letters.")
			return
		}
		if s.session(r) == "" {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, s.cfg.BasePath+"/login?next="+urlQueryEscape(s.cfg.BasePath+r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.fail(w, r, http.StatusUnauthorized, "Log in first", "Writes need a session opened with the console's token.")
			return
		}
		h(w, r)
	}
}

// csrf checks the form's CSRF token against the session's.
func (s *Server) csrf(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4<<20)
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, http.StatusBadRequest, "Unreadable form", err.Error())
			return
		}
		sess := s.session(r)
		want := s.csrfToken(sess)
		got := r.PostForm.Get(csrfField)
		if sess == "" || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			s.fail(w, r, http.StatusForbidden, "Form expired or forged",
				"The form's CSRF token does not match your session: reload the page and submit it again.")
			return
		}
		h(w, r)
	}
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", map[string]any{"Next": safeNext(r.URL.Query().Get("next"), s.cfg.BasePath), "Error": ""})
}

// login opens a write session when the form's token matches.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "Unreadable form", err.Error())
		return
	}
	next := safeNext(r.PostForm.Get("next"), s.cfg.BasePath)
	if !s.cfg.AllowWrites {
		s.fail(w, r, http.StatusForbidden, "This console is read-only", "There is nothing to log in to: reading needs no login.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("token")), []byte(s.cfg.Token)) != 1 {
		time.Sleep(500 * time.Millisecond) // slows guessing
		s.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Next": next, "Error": "That is not the console's token."})
		return
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot open a session", err.Error())
		return
	}
	id := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	now := time.Now()
	for k, exp := range s.sessions { // forget expired sessions
		if now.After(exp) {
			delete(s.sessions, k)
		}
	}
	s.sessions[id] = now.Add(sessionTTL)
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: s.cookiePath(), MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: s.cookiePath(), MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, s.cfg.BasePath+"/", http.StatusSeeOther)
}

func (s *Server) cookiePath() string { return s.cfg.BasePath + "/" }

// safeNext keeps a redirect target inside the console: a path under base,
// never another host ("//evil", "/\evil", "https://…").
func safeNext(next, base string) string {
	home := base + "/"
	if !strings.HasPrefix(next, home) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return home
	}
	return next
}

// IsLoopback reports whether addr (host:port) binds only the local machine.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: listen on %s: %w (choose another address with --listen)", addr, err)
	}
	return ln, nil
}
