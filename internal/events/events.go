// Package events tells downstream pipelines what became of a run's jobs,
// so that they subscribe instead of polling the audit: on the JetStream
// stream EXTRACTQ_EVENTS, subject extractq.events.<run>.result when a
// job's result is durable, .dead_letter when its dead letter is, and .done
// when the run's last job is final (announced once, by a waiting submit
// or by the Sweeper a worker runs).
//
// Events are published asynchronously: the worker hands one over with a
// channel send and goes on; a goroutine owned by the Publisher publishes
// them in batches and waits for the server's acks. Each event carries a
// Nats-Msg-Id (job id and kind), so a redelivered job does not announce
// its result twice within the stream's duplicate window.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/llm"
)

// Stream and subjects.
const (
	Stream        = "EXTRACTQ_EVENTS"
	SubjectPrefix = "extractq.events."
)

// Kinds of events: the last token of the subject.
const (
	KindResult     = "result"
	KindDeadLetter = "dead_letter"
	KindDone       = "done"
)

// Event is one event's body (JSON).
type Event struct {
	Kind          string    `json:"kind"`
	Run           string    `json:"run"`
	JobID         string    `json:"job_id,omitempty"`
	DocumentID    string    `json:"document_id,omitempty"`
	Schema        string    `json:"schema,omitempty"`
	SchemaVersion int       `json:"schema_version,omitempty"`
	Model         string    `json:"model,omitempty"`
	Reason        string    `json:"reason,omitempty"` // a dead letter's
	At            time.Time `json:"at"`
	// Done's totals.
	Total  int `json:"total,omitempty"`
	OK     int `json:"ok,omitempty"`
	Failed int `json:"failed,omitempty"`
	// Generation numbers a run's done events: 1, then 2 after another
	// submission into the run reopened it, and so on.
	Generation int `json:"generation,omitempty"`
}

// Subject is where an event of kind for run is published. A run name's
// characters that NATS subjects reserve (. * > and whitespace) become _;
// the body carries the run as given.
func Subject(run, kind string) string {
	return SubjectPrefix + token(run) + "." + kind
}

func token(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '*' || r == '>' || r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// StreamConfig is the events stream: limits retention (a week), so any
// number of subscribers read it, and a duplicate window for redeliveries.
func StreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: Stream, Description: "extractq run events: results, dead letters, runs done",
		Subjects: []string{SubjectPrefix + ">"}, Retention: jetstream.LimitsPolicy,
		MaxAge: 7 * 24 * time.Hour, Duplicates: 10 * time.Minute, Storage: jetstream.FileStorage, Replicas: max(1, replicas),
	}
}

// Ensure creates or updates the events stream (`worker migrate`).
func Ensure(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if _, err := js.CreateOrUpdateStream(ctx, StreamConfig(replicas)); err != nil {
		return fmt.Errorf("events: stream %s: %w", Stream, err)
	}
	return nil
}

// Publisher publishes events in the background. Create it with
// NewPublisher, stop it with Close.
type Publisher struct {
	js      jetstream.JetStream
	queue   chan Event
	done    chan struct{}
	onError func(error)
	mu      sync.Mutex
	closed  bool
}

// NewPublisher starts a publisher holding up to buffer events waiting;
// onError (may be nil) hears of events the server refused.
func NewPublisher(js jetstream.JetStream, buffer int, onError func(error)) *Publisher {
	if onError == nil {
		onError = func(error) {}
	}
	p := &Publisher{js: js, queue: make(chan Event, max(1, buffer)), done: make(chan struct{}), onError: onError}
	go p.run()
	return p
}

// ErrClosed: Emit after Close.
var ErrClosed = errors.New("events: publisher closed")

// Emit hands e over to be published. It waits only when the buffer is
// full (the server is slower than the fleet), until ctx ends.
func (p *Publisher) Emit(ctx context.Context, e Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	select {
	case p.queue <- e:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// run publishes what is queued: every event waiting is published at once
// (asynchronously) and their acks awaited together.
func (p *Publisher) run() {
	defer close(p.done)
	var batch []Event
	for e := range p.queue {
		batch = append(batch[:0], e)
	more:
		for len(batch) < 256 {
			select {
			case e, ok := <-p.queue:
				if !ok {
					break more
				}
				batch = append(batch, e)
			default:
				break more
			}
		}
		p.publish(batch)
	}
}

func (p *Publisher) publish(batch []Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	futures := make([]jetstream.PubAckFuture, 0, len(batch))
	for _, e := range batch {
		msg, err := Message(e)
		if err != nil {
			p.onError(err)
			continue
		}
		f, err := p.js.PublishMsgAsync(msg)
		if err != nil {
			p.onError(fmt.Errorf("events: publish %s: %w", msg.Subject, err))
			continue
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			p.onError(fmt.Errorf("events: publish %s: %w", f.Msg().Subject, err))
		case <-ctx.Done():
			p.onError(fmt.Errorf("events: no ack within 30s: %w", ctx.Err()))
			return
		}
	}
}

// Message is e as published: on its subject, as JSON, with a
// Nats-Msg-Id of the job id and the kind (for done: the run, the kind and
// the generation).
func Message(e Event) (*nats.Msg, error) {
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	msg := &nats.Msg{Subject: Subject(e.Run, e.Kind), Data: body, Header: nats.Header{}}
	id := e.JobID + "." + e.Kind
	if e.Kind == KindDone {
		id = e.Run + "." + e.Kind + "." + strconv.Itoa(e.Generation)
	}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	return msg, nil
}

// Close publishes what is queued and stops, or gives up when ctx ends.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.queue)
	}
	p.mu.Unlock()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("events: %d events not published at shutdown: %w", len(p.queue), context.Cause(ctx))
	}
}

// Writer is an audit writer that announces each job made final: after
// the next writer has made its record durable, a result or dead letter
// event is handed to the publisher. The worker writes through it, so
// every path to a final state (result, dead letter, max deliveries) is
// covered without the worker knowing of events.
type Writer struct {
	Next audit.Writer
	Pub  *Publisher
}

// Write writes rec, then emits its event when rec is final.
func (w *Writer) Write(ctx context.Context, rec *audit.Record) error {
	if err := w.Next.Write(ctx, rec); err != nil || !rec.Final {
		return err
	}
	e := Event{Kind: KindResult, Run: rec.Run, JobID: rec.JobID, DocumentID: rec.DocumentID,
		Schema: rec.SchemaName, SchemaVersion: rec.SchemaVersion, Model: rec.Model, At: rec.FinishedAt.UTC()}
	switch {
	case rec.DeadLetter != nil:
		e.Kind, e.Reason = KindDeadLetter, rec.DeadLetter.Reason
	case rec.Outcome != llm.OutcomeOK:
		return nil // final without a result or a letter: nothing to announce
	}
	// The record is durable: a failure to announce it must not fail the job.
	_ = w.Pub.Emit(ctx, e)
	return nil
}
