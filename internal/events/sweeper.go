package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/webhook"
)

// Store is what announcing a run needs of the audit store (*audit.Store).
type Store interface {
	RunDoneState(ctx context.Context, run string) (audit.RunDone, bool, error)
	ClaimRunDone(ctx context.Context, d audit.RunDone, event []byte, by string) (bool, error)
	MarkRunPublished(ctx context.Context, run string, gen int) error
}

// DoneEvent is the done event of d's latest generation: the run's jobs,
// all final, those ok and those failed. Documents a submission found
// already final (done by an earlier run) are not the run's jobs.
func DoneEvent(d audit.RunDone, at time.Time) Event {
	return Event{Kind: KindDone, Run: d.Run, At: at.UTC(), Generation: d.Sealed,
		Total: int(d.Final), OK: int(d.OK), Failed: int(d.Final - d.OK)}
}

// Announce announces d's latest generation when it is done: it claims it
// in the audit store (exactly one caller does, whether a waiting submit or
// a sweeper), then publishes the done event. It returns the event's body
// and whether this caller claimed it; nil and false when the run is not
// done or another caller announced it.
func Announce(ctx context.Context, st Store, js jetstream.JetStream, d audit.RunDone, by string) ([]byte, bool, error) {
	if !d.Done() {
		return nil, false, nil
	}
	body, err := json.Marshal(DoneEvent(d, time.Now()))
	if err != nil {
		return nil, false, fmt.Errorf("events: %w", err)
	}
	claimed, err := st.ClaimRunDone(ctx, d, body, by)
	if err != nil || !claimed {
		return nil, false, err
	}
	return body, true, publishDone(ctx, st, js, d.Run, d.Sealed, body, false)
}

// publishDone publishes a claimed done event and records it published.
// Without the events stream there is nothing to publish. again is a
// publish resumed after its publisher stopped (crashed, or its ack timed
// out): the Nats-Msg-Id de-duplicates it on the stream, but a core NATS
// subscriber (`nats sub`) sees every publish, so an event already on the
// stream (the last of its subject, under its id) is only marked published.
func publishDone(ctx context.Context, st Store, js jetstream.JetStream, run string, gen int, body []byte, again bool) error {
	var e Event
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("events: the done event of run %q in the audit: %w", run, err)
	}
	msg, err := Message(e)
	if err != nil {
		return err
	}
	// The stored body, not a re-encoding: a subscriber sees what a webhook
	// receiver sees.
	msg.Data = body
	if s, err := js.Stream(ctx, Stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("events: %w", err)
	} else if err == nil {
		if again {
			switch last, err := s.GetLastMsgForSubject(ctx, msg.Subject); {
			case err == nil && last.Header.Get(jetstream.MsgIDHeader) == msg.Header.Get(jetstream.MsgIDHeader):
				return st.MarkRunPublished(ctx, run, gen)
			case err != nil && !errors.Is(err, jetstream.ErrMsgNotFound):
				return fmt.Errorf("events: %w", err)
			}
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			return fmt.Errorf("events: publish %s: %w", msg.Subject, err)
		}
	}
	return st.MarkRunPublished(ctx, run, gen)
}

// ClaimGrace is how long the sweeper leaves a claimed done event to its
// claimer (a waiting submit, or the sweeper that lost its lock) before
// publishing it itself: a claimer publishes within seconds, and publishing
// beside it would deliver the event twice to core NATS subscribers, which
// the stream's de-duplication does not cover.
const ClaimGrace = 30 * time.Second

// LockKey is the advisory lock that keeps one sweeper active at a time.
const LockKey = "extractq.events.sweeper"

// Sweeper announces the runs no waiting submit announces (submitted
// without --wait, or its submit stopped waiting or died): every Every it
// reads the few sealed runs not announced from the audit store, announces
// those whose jobs are all final, and delivers their registered webhooks.
// One sweeper is active at a time across the fleet (an advisory lock; a
// killed holder's lock ends with its connection), the others stand by.
type Sweeper struct {
	Store *audit.Store
	JS    jetstream.JetStream
	// ID is who announces (the worker's id), in run_done.announced_by.
	ID string
	// Secret is EXTRACTQ_WEBHOOK_SECRET: it opens the registered URLs and
	// signs the deliveries. Without it (or with another secret than the
	// submitter's) webhooks stay pending and a warning says why.
	Secret []byte
	Every  time.Duration // default 5s
	Log    *slog.Logger  // default: discarded
	Client *http.Client  // the webhooks' (default: webhook.Sender's)
	// DeadLetterLag is how old a dead letter must be before it is
	// delivered to a webhook that receives them (default 5s): one whose
	// transaction commits late is not passed over.
	DeadLetterLag time.Duration

	mu       sync.Mutex
	inflight map[string]bool // kind and run of the deliveries under way
	// ended holds the keys whose delivery ended since the sweep last began
	// reading its pending work: that read may show such a delivery's work
	// pending still (its mark committed after the read's snapshot), and
	// the sweep must not start it again.
	ended  map[string]bool
	warned map[string]bool // runs whose webhook this process cannot open

	afterRead func(kind string) // tests: called once a sweep read its pending deliveries of kind
}

// Run sweeps until ctx ends, then waits for the deliveries it started.
func (s *Sweeper) Run(ctx context.Context) error {
	every := s.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	s.inflight, s.ended, s.warned = map[string]bool{}, map[string]bool{}, map[string]bool{}
	lock := s.Store.NewLock(LockKey)
	var (
		wg   sync.WaitGroup
		lead context.Context
		stop context.CancelFunc = func() {}
	)
	defer func() {
		stop()
		wg.Wait()
		lock.Close()
	}()
	leading := false
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		held, err := lock.TryLock(ctx)
		switch {
		case held && !leading:
			var cancel context.CancelFunc
			lead, cancel = context.WithCancel(ctx)
			stop = cancel
		case !held && leading:
			// Deliveries stop with the leadership: the next leader resumes them.
			s.Log.Warn("run sweeper: lost its lock; standing by", "err", err)
			stop()
			wg.Wait()
		case err != nil && ctx.Err() == nil:
			s.Log.Warn("run sweeper: cannot take its lock", "err", err)
		}
		if leading = held; leading {
			s.sweep(lead, &wg)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// sweep announces the runs done and starts the pending deliveries.
func (s *Sweeper) sweep(ctx context.Context, wg *sync.WaitGroup) {
	runs, err := s.Store.OpenRuns(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Warn("run sweeper: read the open runs", "err", err)
		}
		return
	}
	for _, d := range runs {
		if d.Announced > d.Published { // claimed, then the publisher stopped?
			if d.ClaimAge < ClaimGrace {
				continue // or is publishing now: a second publish reaches core subscribers too
			}
			err = publishDone(ctx, s.Store, s.JS, d.Run, d.Announced, d.DoneEvent, true)
		} else {
			_, _, err = Announce(ctx, s.Store, s.JS, d, s.ID)
		}
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("run sweeper: announce run done", "run", d.Run, "err", err)
		}
	}
	s.beginRead()
	hooks, err := s.Store.PendingRunWebhooks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Warn("run sweeper: read the pending webhooks", "err", err)
		}
		return
	}
	if s.afterRead != nil {
		s.afterRead(KindDone)
	}
	for _, h := range hooks {
		s.start(wg, KindDone+" "+h.Run, func() { s.deliver(ctx, h) })
	}
	lag := s.DeadLetterLag
	if lag == 0 {
		lag = 5 * time.Second
	}
	s.beginRead()
	letters, dlHooks, err := s.Store.PendingDeadLetters(ctx, lag, 100)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Warn("run sweeper: read the dead letters to deliver", "err", err)
		}
		return
	}
	if s.afterRead != nil {
		s.afterRead(KindDeadLetter)
	}
	for _, h := range dlHooks {
		s.start(wg, KindDeadLetter+" "+h.Run, func() { s.deliverDeadLetters(ctx, h, letters[h.Run]) })
	}
}

// beginRead is called before the sweep reads pending work: start then
// knows which deliveries ended since, whose work the read may show stale.
func (s *Sweeper) beginRead() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.ended)
}

// start runs deliver in a goroutine unless one for key still runs or
// ended since the sweep began reading what deliver holds: that delivery
// marked its work done after the read's snapshot, which may then show it
// pending still, and delivering it again would send it twice. The next
// sweep reads afresh and starts what is left.
func (s *Sweeper) start(wg *sync.WaitGroup, key string, deliver func()) {
	s.mu.Lock()
	busy := s.inflight[key] || s.ended[key]
	if !busy {
		s.inflight[key] = true
	}
	s.mu.Unlock()
	if busy {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, key)
			s.ended[key] = true
			s.mu.Unlock()
		}()
		deliver()
	}()
}

// open is the sender of a registered webhook, or nil after warning (once
// per run) that this process cannot open it.
func (s *Sweeper) open(h audit.RunWebhook) *webhook.Sender {
	hook, err := OpenWebhook(h, s.Secret)
	if err != nil {
		s.mu.Lock()
		first := !s.warned[h.Run]
		s.warned[h.Run] = true
		s.mu.Unlock()
		if first {
			s.Log.Warn("run webhook not delivered: it stays pending until a worker holding the submitter's secret sweeps", "run", h.Run, "url", h.URLRedacted, "err", err)
		}
		return nil
	}
	hook.Client = s.Client
	return hook
}

// deliverDeadLetters POSTs a run's dead letters, in order, each under its
// own delivery id, each marked once delivered or given up on.
func (s *Sweeper) deliverDeadLetters(ctx context.Context, h audit.RunWebhook, letters []audit.RunDeadLetter) {
	hook := s.open(h)
	if hook == nil {
		return
	}
	hook.Log = webhook.LogFunc(func(ctx context.Context, a webhook.Attempt) error {
		return s.Store.RecordWebhookAttempt(ctx, audit.WebhookAttempt(a))
	})
	for _, l := range letters {
		body, err := json.Marshal(Event{Kind: KindDeadLetter, Run: h.Run, JobID: l.JobID, DocumentID: l.DocumentID,
			Schema: l.Schema, SchemaVersion: l.SchemaVersion, Reason: l.Reason, At: l.CreatedAt.UTC()})
		if err != nil {
			s.Log.Warn("run webhook: dead letter", "run", h.Run, "job", l.JobID, "err", err)
			return
		}
		id := webhook.DeadLetterDeliveryID(h.Run, l.JobID)
		done, err := s.Store.WebhookTries(ctx, id)
		if err != nil {
			s.Log.Warn("run webhook: dead letter", "run", h.Run, "job", l.JobID, "err", err)
			return
		}
		r := hook.Resume(ctx, h.Run, KindDeadLetter, id, done, body)
		if ctx.Err() != nil && !r.Delivered {
			return // stopped: the next sweeper resumes here
		}
		if !r.Delivered {
			s.Log.Warn("run webhook: dead letter not delivered; given up", "run", h.Run, "url", h.URLRedacted, "job", l.JobID, "delivery", id, "err", r.Error)
		}
		if err := s.Store.MarkDeadLetterDelivered(context.WithoutCancel(ctx), h.Run, l); err != nil {
			s.Log.Warn("run webhook: dead letter", "run", h.Run, "job", l.JobID, "err", err)
			return
		}
	}
}

// deliver POSTs a run's done event to its registered webhook, resuming
// the delivery's tries after a crash, and marks it delivered or given up.
func (s *Sweeper) deliver(ctx context.Context, h audit.RunWebhook) {
	hook := s.open(h)
	if hook == nil {
		return
	}
	r, err := DeliverDone(ctx, s.Store, hook, h.Run, h.DoneGeneration, h.DoneEvent)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.Log.Warn("run webhook", "run", h.Run, "url", h.URLRedacted, "err", err)
		}
	case !r.Delivered:
		s.Log.Warn("run webhook not delivered; given up", "run", h.Run, "url", h.URLRedacted, "delivery", r.DeliveryID, "tries", r.Attempts, "err", r.Error)
	}
}

// OpenWebhook is the sender of a registered webhook: its URL opened with
// secret (EXTRACTQ_WEBHOOK_SECRET), which also signs.
func OpenWebhook(h audit.RunWebhook, secret []byte) (*webhook.Sender, error) {
	if len(secret) == 0 {
		return nil, errors.New("EXTRACTQ_WEBHOOK_SECRET is not set in this process")
	}
	if id := webhook.KeyID(secret); id != h.KeyID {
		return nil, fmt.Errorf("registered with the secret of key id %s, this process holds key id %s: %w", h.KeyID, id, webhook.ErrWrongSecret)
	}
	u, err := webhook.OpenURL(secret, h.URLSealed)
	if err != nil {
		return nil, err
	}
	return &webhook.Sender{URL: u, Secret: secret, Timeout: h.Timeout}, nil
}

// Deliveries is what delivering a run's webhook needs of the audit store
// (*audit.Store).
type Deliveries interface {
	RecordWebhookAttempt(ctx context.Context, a audit.WebhookAttempt) error
	WebhookTries(ctx context.Context, deliveryID string) (int, error)
	MarkRunWebhookDelivered(ctx context.Context, run string, gen int) error
}

// DeliverDone delivers generation gen's done event of run with hook, every
// try in the delivery log, under the generation's delivery id and after
// the tries already logged (a delivery cut short by a crash goes on), then
// marks the generation delivered, or given up on. The error is the audit
// store's; the Result says how the delivery went.
func DeliverDone(ctx context.Context, st Deliveries, hook *webhook.Sender, run string, gen int, body []byte) (webhook.Result, error) {
	id := webhook.DoneDeliveryID(run, gen)
	done, err := st.WebhookTries(ctx, id)
	if err != nil {
		return webhook.Result{}, err
	}
	hook.Log = webhook.LogFunc(func(ctx context.Context, a webhook.Attempt) error {
		return st.RecordWebhookAttempt(ctx, audit.WebhookAttempt(a))
	})
	r := hook.Resume(ctx, run, KindDone, id, done, body)
	if ctx.Err() != nil && !r.Delivered {
		return r, context.Cause(ctx) // stopped, not given up: the next sweeper resumes it
	}
	return r, st.MarkRunWebhookDelivered(context.WithoutCancel(ctx), run, gen)
}
