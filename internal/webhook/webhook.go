// Package webhook delivers a run's event to an HTTP endpoint: one POST of
// the event's JSON body, signed with HMAC-SHA256, retried with exponential
// backoff and jitter on network errors, 5xx and 429 (honouring
// Retry-After) within a bounded total time, every try recorded in a
// delivery log. A receiver checks a delivery with Verify.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/extractq/extractq/internal/retry"
)

// Headers of a delivery.
const (
	HeaderSignature = "X-Extractq-Signature" // "sha256=" + hex HMAC-SHA256 of Signed(timestamp, body)
	HeaderTimestamp = "X-Extractq-Timestamp" // Unix seconds when this try was sent; signed
	HeaderEvent     = "X-Extractq-Event"     // the event's kind, e.g. "done"
	HeaderDelivery  = "X-Extractq-Delivery"  // the delivery's id, the same on every try
)

// Signed is the content a delivery's signature covers: the timestamp
// header's value, a full stop, then the body as sent. Binding the
// timestamp lets a receiver reject replays of an old delivery.
func Signed(timestamp string, body []byte) []byte {
	b := make([]byte, 0, len(timestamp)+1+len(body))
	b = append(b, timestamp...)
	b = append(b, '.')
	return append(b, body...)
}

// Sign is the X-Extractq-Signature value for body sent at timestamp.
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(Signed(timestamp, body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("webhook: signature does not match (wrong secret, or the body or timestamp was changed)")
	ErrStale        = errors.New("webhook: timestamp outside the tolerance (a replay, or the clocks disagree)")
)

// Verify checks a delivery as its receiver would: the signature over the
// timestamp and body with secret, and a timestamp within tolerance of now.
func Verify(secret []byte, signature, timestamp string, body []byte, now time.Time, tolerance time.Duration) error {
	if !hmac.Equal([]byte(signature), []byte(Sign(secret, timestamp, body))) {
		return ErrBadSignature
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: %s %q is not Unix seconds: %w", HeaderTimestamp, timestamp, ErrStale)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	return nil
}

// Attempt is one try of a delivery, as the log records it.
type Attempt struct {
	DeliveryID string
	Run        string
	Event      string
	URL        string // without credentials, query or fragment (Redact)
	Attempt    int    // 1 for the first try
	StatusCode int    // 0: no response
	Error      string // empty when the receiver answered 2xx
	Duration   time.Duration
	CreatedAt  time.Time // when the try was sent
}

// Log records every try (the audit database's webhook_deliveries).
type Log interface {
	RecordWebhookAttempt(ctx context.Context, a Attempt) error
}

// LogFunc is a Log made of a function.
type LogFunc func(ctx context.Context, a Attempt) error

// RecordWebhookAttempt calls f.
func (f LogFunc) RecordWebhookAttempt(ctx context.Context, a Attempt) error { return f(ctx, a) }

// Result is how a delivery ended.
type Result struct {
	DeliveryID string `json:"delivery_id,omitempty"` // empty when nothing was sent
	Delivered  bool   `json:"delivered"`
	Attempts   int    `json:"attempts"`
	LastStatus int    `json:"last_status,omitempty"` // 0: no response
	// Error says why it was not delivered (empty when it was).
	Error string `json:"error,omitempty"`
	// LogError says why a try could not be recorded, if one could not.
	LogError string `json:"log_error,omitempty"`
}

// Sender delivers events to one URL. Set URL and Secret; the rest have
// defaults.
type Sender struct {
	URL    string
	Secret []byte
	// Timeout bounds the whole delivery, every try and wait included
	// (default 2m).
	Timeout time.Duration
	Client  *http.Client // default: no redirects followed, 30s per try
	Log     Log          // may be nil
	// BaseDelay is the wait before the second try, doubled for each next
	// one up to MaxDelay (defaults 1s, 30s); each wait is drawn uniformly
	// from its upper half (jitter).
	BaseDelay, MaxDelay time.Duration
	// Now, Sleep and Jitter stand in for the clock, the wait and the
	// random draw in tests.
	Now    func() time.Time
	Sleep  retry.Sleeper
	Jitter func() float64 // in [0, 1)
}

// Redact is u without user info, query or fragment: what the log, the
// messages and errors show of a URL that may carry a token.
func Redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.User, p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = nil, "", false, "", ""
	return p.String()
}

// Check says whether u can be delivered to: an absolute http or https URL.
func Check(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("webhook URL %q: want an absolute http:// or https:// URL", Redact(u))
	}
	return nil
}

// Send POSTs body as event of run until the receiver answers 2xx, a try
// may not be retried, or the time is spent. It never returns an error:
// the Result says what happened.
func (s *Sender) Send(ctx context.Context, run, event string, body []byte) Result {
	return s.Resume(ctx, run, event, newID(), 0, body)
}

// Resume is Send of delivery id after the tries the log already holds of
// it (done: 0 for a new delivery), numbering the next try done+1: a
// delivery interrupted by a crash goes on under the same id (a receiver
// de-duplicates on it) with a fresh Timeout.
func (s *Sender) Resume(ctx context.Context, run, event, id string, done int, body []byte) Result {
	s = s.withDefaults() // a copy: a Sender may send from several goroutines
	res := Result{DeliveryID: id, Attempts: done}
	where := Redact(s.URL)
	if err := Check(s.URL); err != nil {
		res.Error = err.Error()
		return res
	}
	deadline := s.Now().Add(s.Timeout) // on the sender's clock, so tests need not wait
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	for {
		res.Attempts++
		start := s.Now()
		status, wait, again, err := s.try(ctx, event, res.DeliveryID, body)
		took := s.Now().Sub(start)
		res.LastStatus = status
		a := Attempt{DeliveryID: res.DeliveryID, Run: run, Event: event, URL: where, Attempt: res.Attempts,
			StatusCode: status, Duration: took, CreatedAt: start}
		if err != nil {
			a.Error = err.Error()
		}
		if s.Log != nil {
			// The log's context outlives the delivery's deadline: the last
			// try is recorded even when it used up the time.
			lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if lerr := s.Log.RecordWebhookAttempt(lctx, a); lerr != nil {
				res.LogError = lerr.Error()
			}
			lcancel()
		}
		if err == nil {
			res.Delivered, res.Error = true, ""
			return res
		}
		res.Error = fmt.Sprintf("POST %s: %v", where, err)
		if !again {
			return res
		}
		if wait <= 0 {
			wait = s.backoff(res.Attempts)
		}
		if s.Now().Add(wait).After(deadline) {
			res.Error += fmt.Sprintf("; gave up after %d tries: the next in %s would pass the %s limit", res.Attempts, wait.Round(time.Millisecond), s.Timeout)
			return res
		}
		if serr := s.Sleep(ctx, wait); serr != nil {
			res.Error += fmt.Sprintf("; gave up after %d tries: %v", res.Attempts, serr)
			return res
		}
	}
}

// try is one POST: the status (0 without a response), how long the
// receiver asked to wait (Retry-After), whether another try may help,
// and why this one failed.
func (s *Sender) try(ctx context.Context, event, id string, body []byte) (status int, wait time.Duration, again bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, false, errors.New("cannot build the request (check the URL)")
	}
	ts := strconv.FormatInt(s.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "extractq-webhook")
	req.Header.Set(HeaderEvent, event)
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(s.Secret, ts, body))
	resp, err := s.Client.Do(req)
	if err != nil {
		// *url.Error quotes the whole URL, credentials and query included:
		// keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, 0, ctx.Err() == nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	status = resp.StatusCode
	switch {
	case status >= 200 && status < 300:
		return status, 0, false, nil
	case status == http.StatusTooManyRequests || status >= 500:
		return status, retryAfter(resp.Header.Get("Retry-After"), s.Now()), true, fmt.Errorf("receiver answered %s", resp.Status)
	default:
		return status, 0, false, fmt.Errorf("receiver answered %s (not retried: fix the receiver or the URL)", resp.Status)
	}
}

// retryAfter is a Retry-After value (seconds or an HTTP date) as a wait,
// 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if sec, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && sec >= 0 {
		return time.Duration(sec) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// backoff is the wait after try n: BaseDelay·2^(n-1), at most MaxDelay,
// drawn from its upper half so that senders do not retry in step.
func (s *Sender) backoff(n int) time.Duration {
	d := s.MaxDelay
	if n < 32 {
		d = min(s.MaxDelay, s.BaseDelay<<(n-1))
	}
	return d/2 + time.Duration(s.Jitter()*float64(d/2))
}

// withDefaults is a copy of s with its unset fields at their defaults.
func (s *Sender) withDefaults() *Sender {
	c := *s
	s = &c
	if s.Timeout <= 0 {
		s.Timeout = 2 * time.Minute
	}
	if s.Client == nil {
		s.Client = &http.Client{Timeout: 30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if s.BaseDelay <= 0 {
		s.BaseDelay = time.Second
	}
	if s.MaxDelay <= 0 {
		s.MaxDelay = 30 * time.Second
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Sleep == nil {
		s.Sleep = retry.Sleep
	}
	if s.Jitter == nil {
		s.Jitter = rand.Float64
	}
	return s
}

// newID is a delivery id: 16 random bytes in hex.
func newID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
