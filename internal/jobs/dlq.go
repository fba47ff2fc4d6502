package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq"
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
	extractq.Result

	WorkerID string `json:"worker_id"`
	// Source is "worker" when a worker gave up on the job, "advisory" when
	// the max-deliveries advisory moved it (the worker died on its last
	// delivery), "decode" when the job could not be read at all.
	Source     string    `json:"source"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at"`
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

// Publish stores a dead letter and returns its sequence. The message id is
// the job id, so publishing the same job's letter again (a worker crashed
// before terminating the job) stores nothing new and returns the first
// letter's sequence.
func (d *DLQ) Publish(ctx context.Context, dl *DeadLetter) (uint64, error) {
	dl.V = DeadLetterVersion
	body, err := json.Marshal(dl)
	if err != nil {
		return 0, fmt.Errorf("encode dead letter of job %s: %w", dl.Job.JobID, err)
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
