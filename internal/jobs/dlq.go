package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/extractq/extractq/llm"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetterVersion is the version of the dead-letter body this build writes.
const DeadLetterVersion = 1

// DeadLetter is a job that will not be retried, with everything needed to
// understand why: the original job and the extraction's Result for its
// last delivery (outcome, reason, every attempt, usage; earlier
// deliveries' attempts are in the audit store).
type DeadLetter struct {
	V          int      `json:"v"`
	Job        Envelope `json:"job"`
	JobSeq     uint64   `json:"job_seq"` // stream sequence on EXTRACTQ_JOBS
	Deliveries int      `json:"deliveries"`

	// Result's fields (outcome, reason, attempts, usage, provider, model,
	// mode) are the letter's own in JSON.
	llm.Result

	// ChunkFailure names the part of a long document whose extraction
	// failed (extractq.WithChunking); nil when the document was not split
	// or no part failed. Result's FailedChunk and Chunks say the same as
	// spans; this adds the part's own reason.
	ChunkFailure *ChunkFailure `json:"chunk_failure,omitempty"`

	WorkerID string `json:"worker_id"`
	// Trimmed says what was cut to fit the server's max payload (raw
	// answers, the inline document, the attempts) and where the full
	// diagnostics are: the audit store keeps every attempt in full.
	Trimmed string `json:"trimmed,omitempty"`
	// Source is "worker" when a worker gave up on the job, "advisory" when
	// the max-deliveries advisory moved it (the worker died on its last
	// delivery), "decode" when the job could not be read at all,
	// "recorded" when a delivery published the letter an earlier one
	// recorded in the audit and died before publishing (its attempts are
	// in the audit store).
	Source     string    `json:"source"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at"`
}

// ChunkFailure is the part of a long document that failed: its number
// among the parts, its [Start, End) character (code point) offsets in the
// document, and why its extraction failed.
type ChunkFailure struct {
	Index  int    `json:"index"` // 0-based, in document order
	Of     int    `json:"of"`    // the parts the document was split into
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Reason string `json:"reason"`
}

// String is the part as people read it, e.g. `chunk 3 of 7 (characters
// 1200-1800): no valid answer after 4 attempts…`.
func (c *ChunkFailure) String() string {
	return fmt.Sprintf("chunk %d of %d (characters %d-%d): %s", c.Index+1, c.Of, c.Start, c.End, c.Reason)
}

// ChunkFailureOf is the failed part of a chunked extraction's result, or
// nil when no part failed. The part's own reason is what r.Reason says
// after naming the part (the engine writes "chunk I of N (characters S-E)
// failed: REASON", possibly after a prefix of the worker's); a reason in
// another form is taken whole.
func ChunkFailureOf(r *llm.Result) *ChunkFailure {
	if r == nil || r.FailedChunk == nil {
		return nil
	}
	sp := r.FailedChunk
	c := &ChunkFailure{Index: sp.Index, Of: max(len(r.Chunks), sp.Index+1), Start: sp.Start, End: sp.End, Reason: r.Reason}
	named := fmt.Sprintf("chunk %d of %d (characters %d-%d) failed: ", sp.Index+1, len(r.Chunks), sp.Start, sp.End)
	if _, after, ok := strings.Cut(r.Reason, named); ok {
		c.Reason = after
	}
	return c
}

// Letter is a dead letter as stored on EXTRACTQ_DLQ.
type Letter struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	DeadLetter
}

// ErrLetterNotFound is returned for a sequence with no dead letter.
var ErrLetterNotFound = errors.New("dead letter not found")

// DLQ publishes, browses and deletes dead letters.
type DLQ struct {
	js jetstream.JetStream
}

// NewDLQ returns access to EXTRACTQ_DLQ on js.
func NewDLQ(js jetstream.JetStream) *DLQ { return &DLQ{js: js} }

// LetterRawCap bounds each attempt's raw answer and error in a dead letter:
// a longer one keeps its first and last halves of this with a note of the
// cut between them. The audit store keeps the full text.
const LetterRawCap = 16 << 10

// letterHeadroom is what a letter leaves of the server's max payload for
// the message's headers and subject.
const letterHeadroom = 4 << 10

// Publish stores a dead letter and returns its sequence. The letter always
// fits the server's max payload (see fitLetter); what was cut is named in
// its Trimmed field, and dl itself is left as it was. The message id is
// the job id, so publishing the same job's letter again (a worker crashed
// before terminating the job) stores nothing new and returns the first
// letter's sequence.
func (d *DLQ) Publish(ctx context.Context, dl *DeadLetter) (uint64, error) {
	dl.V = DeadLetterVersion
	body, err := fitLetter(dl, int(d.js.Conn().MaxPayload())-letterHeadroom)
	if err != nil {
		return 0, err
	}
	pool := dl.Job.Pool
	if ValidatePool(pool) != nil {
		pool = "unknown"
	}
	msg := nats.NewMsg(DLQSubject(pool))
	msg.Data = body
	msg.Header.Set(jetstream.MsgIDHeader, "dlq-"+dl.Job.JobID)
	ack, err := d.js.PublishMsg(ctx, msg)
	if err != nil {
		return 0, fmt.Errorf("publish dead letter of job %s to %s: %w", dl.Job.JobID, DLQStream, err)
	}
	return ack.Sequence, nil
}

// fitLetter encodes dl in at most limit bytes. Raw answers and errors are
// always capped per attempt (LetterRawCap), and values longer than that
// left out: one runaway answer must not make a letter the server refuses,
// which would leave its job never final. If the letter is still too large,
// the inline document text goes, then every attempt and the rest of a
// long reason (a minimal letter that names the job and points at the
// audit rows), then, last, the metadata: resubmission takes the text, and
// metadata a letter lost, back from the audit's document.
func fitLetter(dl *DeadLetter, limit int) ([]byte, error) {
	c := *dl
	var cut []string
	c.Attempts = make([]llm.Attempt, len(dl.Attempts))
	raws, values := 0, 0
	for i, a := range dl.Attempts {
		if len(a.Raw) > LetterRawCap || len(a.Error) > LetterRawCap {
			raws++
		}
		a.Raw, a.Error = capText(a.Raw, "answer"), capText(a.Error, "error")
		if len(a.Value) > LetterRawCap {
			a.Value = nil
			values++
		}
		c.Attempts[i] = a
	}
	if len(c.Value) > LetterRawCap {
		c.Value = nil
		values++
	}
	if raws > 0 {
		cut = append(cut, fmt.Sprintf("%d raw %s cut to %d bytes (head and tail)", raws, plural(raws, "answer", "answers"), LetterRawCap))
	}
	if values > 0 {
		cut = append(cut, fmt.Sprintf("%d %s over %d bytes left out", values, plural(values, "value", "values"), LetterRawCap))
	}
	where := fmt.Sprintf("the full attempts are in the audit store (`extractq history %s`, job %s, delivery %d)", c.Job.DocumentID, c.Job.JobID, c.Deliveries)
	encode := func() ([]byte, error) {
		c.Trimmed = ""
		if len(cut) > 0 {
			c.Trimmed = strings.Join(cut, "; ") + "; " + where
		}
		b, err := json.Marshal(&c)
		if err != nil {
			return nil, fmt.Errorf("encode dead letter of job %s: %w", c.Job.JobID, err)
		}
		return b, nil
	}
	body, err := encode()
	if err != nil || len(body) <= limit {
		return body, err
	}
	if c.Job.Text != "" {
		c.Job.Text = ""
		cut = append(cut, "inline document text left out (the audit store has the document)")
		if body, err = encode(); err != nil || len(body) <= limit {
			return body, err
		}
	}
	c.Attempts, c.Value = nil, nil
	c.Reason = capText(c.Reason, "reason")
	// A long document's spans and sources grow with it; the failed part
	// stays named.
	c.Chunks, c.Sources, c.Ungrounded = nil, nil, nil
	if c.ChunkFailure != nil {
		cf := *c.ChunkFailure
		cf.Reason = capText(cf.Reason, "reason")
		c.ChunkFailure = &cf
	}
	cut = append(cut, fmt.Sprintf("minimal letter: %d %s left out", len(dl.Attempts), plural(len(dl.Attempts), "attempt", "attempts")))
	if body, err = encode(); err != nil || len(body) <= limit {
		return body, err
	}
	if len(c.Job.Metadata) > 0 {
		c.Job.Metadata = nil
		cut = append(cut, "metadata left out (the audit store has the document's)")
		if body, err = encode(); err != nil || len(body) <= limit {
			return body, err
		}
	}
	return nil, fmt.Errorf("dead letter of job %s: %d bytes even without its text, attempts and metadata, over the server's max payload (%d bytes); raise max_payload", c.Job.JobID, len(body), limit+letterHeadroom)
}

// capText keeps the first and last LetterRawCap/2 bytes of s (on character
// boundaries) with a note of how much was cut between them.
func capText(s, what string) string {
	if len(s) <= LetterRawCap {
		return s
	}
	head, tail := LetterRawCap/2, len(s)-LetterRawCap/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return fmt.Sprintf("%s\n[… %d of %d bytes of this %s cut; the audit store has it in full …]\n%s", s[:head], tail-head, len(s), what, s[tail:])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (d *DLQ) stream(ctx context.Context) (jetstream.Stream, error) {
	s, err := d.js.Stream(ctx, DLQStream)
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w (run `worker migrate`)", DLQStream, err)
	}
	return s, nil
}

// Get returns the dead letter at seq.
func (d *DLQ) Get(ctx context.Context, seq uint64) (*Letter, error) {
	s, err := d.stream(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("%w: %s has no message %d (list them with `extractq dlq list`)", ErrLetterNotFound, DLQStream, seq)
	}
	if err != nil {
		return nil, fmt.Errorf("get dead letter %d: %w", seq, err)
	}
	return decodeLetter(m.Sequence, m.Time, m.Data)
}

func decodeLetter(seq uint64, t time.Time, data []byte) (*Letter, error) {
	l := &Letter{Seq: seq, Time: t}
	if err := json.Unmarshal(data, &l.DeadLetter); err != nil {
		return nil, fmt.Errorf("decode dead letter %d: %w", seq, err)
	}
	return l, nil
}

// ListFilter selects dead letters.
type ListFilter struct {
	Pool string // "" for every pool
	Run  string // "" for every run
}

// List calls fn for every dead letter matching f, oldest first, until fn
// returns an error (returned as is).
func (d *DLQ) List(ctx context.Context, f ListFilter, fn func(*Letter) error) error {
	s, err := d.stream(ctx)
	if err != nil {
		return err
	}
	subject := dlqSubjectPrefix + ">"
	if f.Pool != "" {
		subject = DLQSubject(f.Pool)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return fmt.Errorf("browse %s: %w", DLQStream, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("browse %s: %w", DLQStream, err)
	}
	left := info.NumPending
	for left > 0 {
		batch, err := c.Fetch(int(min(left, 256)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return fmt.Errorf("browse %s: %w", DLQStream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			left--
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("browse %s: %w", DLQStream, err)
			}
			l, err := decodeLetter(md.Sequence.Stream, md.Timestamp, m.Data())
			if err != nil {
				return err
			}
			if f.Run != "" && l.Job.Run != f.Run {
				continue
			}
			if err := fn(l); err != nil {
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("browse %s: %w", DLQStream, err)
		}
		if n == 0 { // letters deleted while we browsed
			break
		}
	}
	return nil
}

// Delete removes the dead letter at seq (after it was resubmitted).
// Deleting one that is already gone is not an error.
func (d *DLQ) Delete(ctx context.Context, seq uint64) error {
	s, err := d.stream(ctx)
	if err != nil {
		return err
	}
	return deleteMsg(ctx, s, seq)
}

// DeleteJob removes the job at seq from EXTRACTQ_JOBS (one the
// max-deliveries advisory moved to the DLQ). A job already gone is not an
// error.
func DeleteJob(ctx context.Context, js jetstream.JetStream, seq uint64) error {
	s, err := js.Stream(ctx, JobsStream)
	if err != nil {
		return fmt.Errorf("open stream %s: %w", JobsStream, err)
	}
	return deleteMsg(ctx, s, seq)
}

func deleteMsg(ctx context.Context, s jetstream.Stream, seq uint64) error {
	// The client keeps only the text of the server's "not found" errors
	// (sequence not found, no message found).
	if err := s.DeleteMsg(ctx, seq); err != nil && !strings.Contains(err.Error(), "not found") {
		return fmt.Errorf("delete message %d from %s: %w", seq, s.CachedInfo().Config.Name, err)
	}
	return nil
}

// MaxDeliveriesEvent is the server's max-deliveries advisory.
type MaxDeliveriesEvent struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries int    `json:"deliveries"`
}
