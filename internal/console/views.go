package console

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/schema"
)

// attemptView is one model call as the document and dead-letter pages show
// it: the timeline entry, the raw answer with its repairs marked, the value
// with its violations pinned, and the feedback those violations make.
type attemptView struct {
	// ID is the attempt's element id, unique on its page, so that a link
	// to an attempt lands on it: attempt-<job>-<delivery>-<n>.
	ID    string
	JobID string
	// Run, Schema ("invoice v2") and Identity (the job's model identity
	// with its variant, e.g. "sim:sloppy@r0") label the attempt on a page
	// that mixes jobs of several runs and schema versions.
	Run, Schema, Identity string
	Delivery              int
	N                     int
	StartedAt             time.Time
	Latency               time.Duration
	LatencyPct            float64 // of the slowest attempt on the page, for the bar
	PromptTokens          int
	CompletionTokens      int
	Provider, Model       string
	Mode                  string
	FinishReason          string
	Class                 string
	Error                 string
	TransportRetries      int
	Worker                string
	OK                    bool
	Transport             bool // a provider failure, not a bad answer
	Raw                   []segment
	Repairs               []Repair
	Value                 jsonView
	HasValue              bool
	Violations            []Violation
	Feedback              string
	// Where is the part of a long document and the prefill step the
	// attempt worked on, e.g. "chunk 3 · characters 1460–2048"; "" for
	// neither.
	Where string
}

// wireAttempt is an attempt's JSON form (llm.Attempt as dead letters
// carry it), decoded by field names so the console does not depend on where
// the Go type lives.
type wireAttempt struct {
	N            int             `json:"n"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	Mode         string          `json:"mode"`
	StartedAt    time.Time       `json:"started_at"`
	Latency      time.Duration   `json:"latency_ns"`
	Usage        wireUsage       `json:"usage"`
	FinishReason string          `json:"finish_reason"`
	Raw          string          `json:"raw"`
	Value        json.RawMessage `json:"value"`
	Repairs      []Repair        `json:"repairs"`
	Violations   []Violation     `json:"violations"`
	Class        string          `json:"class"`
	Error        string          `json:"error"`
	Retries      int             `json:"transport_retries"`
	Chunk        *wireSpan       `json:"chunk"`
	Pointer      string          `json:"pointer"`
	Step         string          `json:"step"`
}

// wireSpan is a part of a long document: its 0-based index and [start,
// end) character offsets.
type wireSpan struct {
	Index int `json:"index"`
	Start int `json:"start"`
	End   int `json:"end"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// transportClasses are the attempt classes of provider failures (the
// answer never came): they are shown as such, not as bad answers.
var transportClasses = map[string]bool{
	"rate_limited": true, "overloaded": true, "server_error": true, "timeout": true, "network": true,
	"truncated_body": true, "bad_response": true, "invalid_request": true, "context_length": true, "auth": true,
	"permission": true, "not_found": true, "too_large": true, "quota_exhausted": true, "canceled": true,
}

func newAttemptView(jobID string, delivery int, a wireAttempt, worker string) attemptView {
	v := attemptView{
		JobID: jobID, Delivery: delivery, N: a.N, StartedAt: a.StartedAt, Latency: a.Latency,
		PromptTokens: a.Usage.PromptTokens, CompletionTokens: a.Usage.CompletionTokens,
		Provider: a.Provider, Model: a.Model, Mode: a.Mode, FinishReason: a.FinishReason,
		Class: a.Class, Error: a.Error, TransportRetries: a.Retries, Worker: worker,
		OK: a.Class == "", Transport: transportClasses[a.Class],
		Raw: rawSegments(a.Raw, a.Repairs), Repairs: a.Repairs, Violations: a.Violations,
		HasValue: len(a.Value) > 0 && string(a.Value) != "null",
	}
	var where []string
	if c := a.Chunk; c != nil {
		where = append(where, fmt.Sprintf("chunk %d · characters %d–%d", c.Index+1, c.Start, c.End))
	}
	if a.Step != "" {
		p := a.Pointer
		if p == "" {
			p = "/"
		}
		where = append(where, fmt.Sprintf("prefill %s at %s", a.Step, p))
	}
	v.Where = strings.Join(where, " · ")
	if v.HasValue || len(a.Violations) > 0 {
		v.Value = buildJSONView(inModelOrder(a.Value, a.Raw), a.Violations, a.Repairs)
	}
	if len(a.Violations) > 0 {
		vs := make([]schema.Violation, len(a.Violations))
		for i, x := range a.Violations {
			vs[i] = schema.Violation{Pointer: x.Pointer, Keyword: x.Keyword, Message: x.Message, Value: x.Value, Want: x.Want}
		}
		v.Feedback = schema.RenderFeedback(vs, 0)
	}
	return v
}

// attemptFromAudit converts a stored attempt.
func attemptFromAudit(a audit.AttemptInfo) attemptView {
	w := wireAttempt{
		N: a.N, Provider: a.Provider, Model: a.Model, Mode: a.Mode, StartedAt: a.StartedAt, Latency: a.Latency,
		Usage: wireUsage{a.PromptTokens, a.CompletionTokens}, FinishReason: a.FinishReason, Raw: a.Raw, Value: a.Value,
		Class: a.ErrorClass, Error: a.ErrorMessage, Retries: a.TransportRetries, Pointer: a.Pointer, Step: a.Step,
	}
	if c := a.Chunk; c != nil {
		w.Chunk = &wireSpan{Index: c.Index, Start: c.Start, End: c.End}
	}
	_ = json.Unmarshal(a.Repairs, &w.Repairs)
	_ = json.Unmarshal(a.Violations, &w.Violations)
	v := newAttemptView(a.JobID, a.Delivery, w, a.WorkerID)
	v.Run, v.Schema = a.Run, fmt.Sprintf("%s v%d", a.SchemaName, a.SchemaVersion)
	return v
}

// labelAttempts gives each attempt its element id, unique on the page: a
// document's jobs under several runs share deliveries and attempt numbers.
func labelAttempts(views []attemptView) {
	seen := map[string]int{}
	for i := range views {
		v := &views[i]
		job := v.JobID
		if len(job) > 8 {
			job = job[:8]
		}
		id := fmt.Sprintf("attempt-%s-%d-%d", job, v.Delivery, v.N)
		if n := seen[id]; n > 0 {
			seen[id]++
			id = fmt.Sprintf("%s-%d", id, n+1)
		} else {
			seen[id] = 1
		}
		v.ID = id
	}
}

// scaleLatencies sets each attempt's latency bar relative to the slowest.
func scaleLatencies(as []attemptView) {
	var most time.Duration
	for _, a := range as {
		most = max(most, a.Latency)
	}
	for i := range as {
		if most > 0 {
			as[i].LatencyPct = float64(as[i].Latency) * 100 / float64(most)
		}
	}
}

// chart is a server-rendered SVG bar chart of jobs finished over time.
type chart struct {
	Width, Height float64
	Bars          []bar
	Max           int64
	From, To      time.Time
	Step          time.Duration // the time one bar covers
	Label         string        // what the chart shows, for screen readers
}

type bar struct {
	X, W         float64
	OKY, OKH     float64
	FailY, FailH float64
	Title        string
	OK, Failed   int64
	HasOK        bool
	HasFailed    bool
}

// newChart lays buckets out in a width×height box (failed stacked on ok).
func newChart(bs []fleetview.Bucket, width, height float64) chart {
	c := chart{Width: width, Height: height}
	if len(bs) == 0 {
		return c
	}
	for _, b := range bs {
		c.Max = max(c.Max, b.OK+b.Failed)
	}
	c.From, c.To, c.Step = bs[0].Start, bs[len(bs)-1].Start.Add(bs[len(bs)-1].Width), bs[0].Width
	// A short run has few buckets: keep its bars narrow rather than one
	// block across the chart.
	slot := min(width/float64(len(bs)), max(6, height/3))
	gap := min(2, slot/5)
	for i, b := range bs {
		x := bar{X: float64(i)*slot + gap/2, W: max(1, slot-gap), OK: b.OK, Failed: b.Failed}
		if c.Max > 0 {
			okH := float64(b.OK) / float64(c.Max) * (height - 2)
			failH := float64(b.Failed) / float64(c.Max) * (height - 2)
			x.OKY, x.OKH = height-okH, okH
			x.FailY, x.FailH = height-okH-failH, failH
		}
		x.HasOK, x.HasFailed = b.OK > 0, b.Failed > 0
		x.Title = b.Start.UTC().Format("15:04") + " +" + b.Width.String() + ": " + strconv.FormatInt(b.OK, 10) + " ok, " + strconv.FormatInt(b.Failed, 10) + " failed"
		c.Bars = append(c.Bars, x)
	}
	c.Label = "jobs finished per " + bs[0].Width.String() + ", " + formatTime(c.From) + " to " + formatTime(c.To)
	return c
}

// Cursors travel in URLs as opaque base64url text.

func encodeCursor(parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, "\x00")))
}

var errCursor = errors.New("this page link is malformed: start again from the first page")

func decodeCursor(s string, n int) ([]string, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errCursor
	}
	parts := strings.Split(string(b), "\x00")
	if len(parts) != n {
		return nil, errCursor
	}
	return parts, nil
}

func runCursor(c *fleetview.RunCursor) string {
	if c == nil {
		return ""
	}
	return encodeCursor(strconv.FormatInt(c.Started.UnixMicro(), 10), c.Name)
}

func parseRunCursor(s string) (*fleetview.RunCursor, error) {
	if s == "" {
		return nil, nil
	}
	p, err := decodeCursor(s, 2)
	if err != nil {
		return nil, err
	}
	us, err := strconv.ParseInt(p[0], 10, 64)
	if err != nil {
		return nil, errCursor
	}
	return &fleetview.RunCursor{Started: time.UnixMicro(us), Name: p[1]}, nil
}

func docCursor(c *fleetview.DocCursor) string {
	if c == nil {
		return ""
	}
	return encodeCursor(c.DocumentID, c.JobID)
}

func parseDocCursor(s string) (*fleetview.DocCursor, error) {
	if s == "" {
		return nil, nil
	}
	p, err := decodeCursor(s, 2)
	if err != nil {
		return nil, err
	}
	return &fleetview.DocCursor{DocumentID: p[0], JobID: p[1]}, nil
}

func letterCursor(c *fleetview.LetterCursor) string {
	if c == nil {
		return ""
	}
	return encodeCursor(strconv.FormatInt(c.CreatedAt.UnixMicro(), 10), c.JobID)
}

func parseLetterCursor(s string) (*fleetview.LetterCursor, error) {
	if s == "" {
		return nil, nil
	}
	p, err := decodeCursor(s, 2)
	if err != nil {
		return nil, err
	}
	us, err := strconv.ParseInt(p[0], 10, 64)
	if err != nil {
		return nil, errCursor
	}
	return &fleetview.LetterCursor{CreatedAt: time.UnixMicro(us), JobID: p[1]}, nil
}
