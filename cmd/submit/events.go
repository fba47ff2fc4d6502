package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/webhook"
)

// sealRun registers the webhook with the run, if any, and seals the run
// (the library counted its jobs as they were queued: fleet.KeepRunOpen),
// returning its generation: a worker's sweeper then announces the run done
// once its jobs are final, even if this submit does not wait or dies
// while waiting. A submission that stops before queueing everything seals
// nothing: its jobs stay counted, and the same command run again seals it.
func sealRun(ctx context.Context, client *fleet.Client, store *audit.Store, run string, hook *webhook.Sender, hookEvents []string) (int, error) {
	if hook != nil {
		if err := registerWebhook(ctx, store, run, hook, hookEvents); err != nil {
			return 0, err
		}
	}
	return client.SealRun(ctx, run)
}

// webhookFlags are the flags of a run's webhook.
type webhookFlags struct {
	url     string
	timeout time.Duration
	events  []string
}

func (h *webhookFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&h.url, "webhook", "", "POST the run's done event to this URL once the run is done, signed with EXTRACTQ_WEBHOOK_SECRET (with --wait: default $EXTRACTQ_WEBHOOK_URL); without --wait a worker delivers it")
	cli.DurationVar(fl, &h.timeout, "webhook-timeout", 2*time.Minute, "with --webhook: give up delivering after this long, retries included")
	fl.StringSliceVar(&h.events, "webhook-events", []string{events.KindDone}, "with --webhook: the events it receives: done, dead_letter (each of the run's dead letters, delivered by a worker)")
}

// forDone is s when the webhook receives done events, else nil.
func (h *webhookFlags) forDone(s *webhook.Sender) *webhook.Sender {
	if !slices.Contains(h.events, events.KindDone) {
		return nil
	}
	return s
}

// hookEvents are the events a webhook may receive.
var hookEvents = []string{events.KindDone, events.KindDeadLetter}

// webhookSender is the sender of --webhook (else EXTRACTQ_WEBHOOK_URL),
// nil without one. The environment's URL is used only with --wait, so
// that it may be set for every submit.
func webhookSender(fl *pflag.FlagSet, h *webhookFlags, wait bool, getenv func(string) string) (*webhook.Sender, error) {
	u := h.url
	if u == "" && wait {
		u = getenv("EXTRACTQ_WEBHOOK_URL")
	}
	switch {
	case u == "" && (fl.Changed("webhook-timeout") || fl.Changed("webhook-events")):
		return nil, cli.Usage(errors.New("--webhook-timeout and --webhook-events shape --webhook: add --webhook URL (or EXTRACTQ_WEBHOOK_URL with --wait), or leave them out"))
	case u == "":
		return nil, nil
	case h.timeout <= 0:
		return nil, cli.Usage(fmt.Errorf("--webhook-timeout %s: must be positive", h.timeout))
	}
	for _, e := range h.events {
		if !slices.Contains(hookEvents, e) {
			return nil, cli.Usage(fmt.Errorf("--webhook-events %q: want %s", e, strings.Join(hookEvents, ", ")))
		}
	}
	if err := webhook.Check(u); err != nil {
		return nil, cli.Usage(fmt.Errorf("--webhook: %w", err))
	}
	secret := getenv("EXTRACTQ_WEBHOOK_SECRET")
	if secret == "" {
		return nil, cli.Usage(errors.New("--webhook needs a signing secret: set EXTRACTQ_WEBHOOK_SECRET (the receiver checks X-Extractq-Signature with it, and the workers that deliver it need the same; see doc/etl.md)"))
	}
	return &webhook.Sender{URL: u, Secret: []byte(secret), Timeout: h.timeout}, nil
}

// registerWebhook registers hook with run, its URL sealed with the secret
// (the secret itself is not stored): a worker holding the same secret
// delivers it if this submit does not.
func registerWebhook(ctx context.Context, st *audit.Store, run string, hook *webhook.Sender, kinds []string) error {
	sealed, err := webhook.SealURL(hook.Secret, hook.URL)
	if err != nil {
		return err
	}
	return st.RegisterRunWebhook(ctx, audit.RunWebhook{Run: run, URLRedacted: webhook.Redact(hook.URL), URLSealed: sealed,
		KeyID: webhook.KeyID(hook.Secret), Events: kinds, Timeout: hook.Timeout})
}

// announceDone announces the run done once every job this submit followed
// is final: it claims the run's generation (a worker's sweeper may have
// claimed it first: then it publishes and delivers, not this submit),
// publishes extractq.events.<run>.done, and delivers the webhook. The run
// is done when every submission's jobs are: one whose jobs still run
// leaves the announcement to the sweeper. It returns the webhook's
// outcome, nil without a webhook.
func announceDone(ctx context.Context, sess *session, run string, gen int, res waitResult, hook *webhook.Sender, errw io.Writer) *webhook.Result {
	if res.Unfinished > 0 || res.TimedOut || res.Interrupted || gen == 0 {
		return notSent(hook, "not sent: the run is not done")
	}
	var (
		body    []byte
		claimed bool
		d       audit.RunDone
		err     error
	)
	// A submit with a webhook delivers it itself (the sweeper leaves it
	// alone meanwhile); one without leaves a webhook an earlier submission
	// registered with the run to the sweeper at once.
	by := audit.AnnouncedBySubmit
	if hook == nil {
		by = "submit without a webhook"
	}
	// The jobs' rows and the run's counters are written together; a few
	// looks cover a run_totals row a moment behind a job state.
	for try := 0; try < 3 && err == nil; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return notSent(hook, "not sent: interrupted")
			case <-time.After(500 * time.Millisecond):
			}
		}
		if d, _, err = sess.store.RunDoneState(ctx, run); err != nil || d.Announced >= gen {
			break
		}
		if body, claimed, err = events.Announce(ctx, sess.store, sess.js, d, by); claimed {
			break
		}
	}
	switch {
	case err != nil:
		fmt.Fprintln(errw, "submit: warning: the run's done event was not published (a worker announces it):", err)
		if !claimed {
			return notSent(hook, "not sent: "+err.Error())
		}
	case !claimed && d.Announced >= gen:
		return notSent(hook, "announced by a worker, which delivers the webhook (see webhook_deliveries)")
	case !claimed:
		return notSent(hook, "not sent: other submissions' jobs of the run are not final yet; a worker announces it when they are")
	}
	if hook == nil {
		return nil
	}
	r, err := events.DeliverDone(ctx, sess.store, hook, run, gen, body)
	if err != nil {
		r.LogError = err.Error()
	}
	if !r.Delivered {
		fmt.Fprintf(errw, "submit: warning: the run's webhook was not delivered (%d tries, delivery %s): %s\n", r.Attempts, r.DeliveryID, r.Error)
	}
	if r.LogError != "" {
		fmt.Fprintln(errw, "submit: warning: the webhook's delivery log is incomplete:", r.LogError)
	}
	return &r
}

func notSent(hook *webhook.Sender, why string) *webhook.Result {
	if hook == nil {
		return nil
	}
	return &webhook.Result{Error: why}
}

// hookResult is the webhook's outcome for --json, nil without one.
func hookResult(wait *waitResult) *webhook.Result {
	if wait == nil {
		return nil
	}
	return wait.Webhook
}
