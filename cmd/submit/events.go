package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/webhook"
)

// announceDone publishes the run's .done event once every job this
// submit followed is final: the waiting submit is what knows the run's
// jobs. Without the events stream (`worker migrate` creates it) it
// publishes nothing. It returns the event's body (nil while the run is
// not done), which the webhook delivers as is.
func announceDone(ctx context.Context, js jetstream.JetStream, run string, res waitResult) ([]byte, error) {
	if res.Unfinished > 0 || res.TimedOut || res.Interrupted {
		return nil, nil
	}
	msg, err := events.Message(events.Event{Kind: events.KindDone, Run: run, At: time.Now().UTC(), Total: res.Total, OK: res.Done, Failed: res.Failed})
	if err != nil {
		return nil, err
	}
	if _, err := js.Stream(ctx, events.Stream); errors.Is(err, jetstream.ErrStreamNotFound) {
		return msg.Data, nil
	} else if err != nil {
		return msg.Data, fmt.Errorf("events: %w", err)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return msg.Data, fmt.Errorf("events: publish %s: %w", msg.Subject, err)
	}
	return msg.Data, nil
}

// webhookSender is the sender of --webhook (else EXTRACTQ_WEBHOOK_URL),
// nil without one. The environment's URL is used only with --wait, so
// that it may be set for every submit.
func webhookSender(fl *pflag.FlagSet, f *submitFlags, getenv func(string) string) (*webhook.Sender, error) {
	u := f.webhook
	if u == "" && f.wait {
		u = getenv("EXTRACTQ_WEBHOOK_URL")
	}
	switch {
	case u == "" && fl.Changed("webhook-timeout"):
		return nil, cli.Usage(errors.New("--webhook-timeout bounds --webhook: add --webhook URL (or EXTRACTQ_WEBHOOK_URL), or leave it out"))
	case u == "":
		return nil, nil
	case !f.wait:
		return nil, cli.Usage(errors.New("--webhook is sent when the run is done: add --wait"))
	case f.webhookTimeout <= 0:
		return nil, cli.Usage(fmt.Errorf("--webhook-timeout %s: must be positive", f.webhookTimeout))
	}
	if err := webhook.Check(u); err != nil {
		return nil, cli.Usage(fmt.Errorf("--webhook: %w", err))
	}
	secret := getenv("EXTRACTQ_WEBHOOK_SECRET")
	if secret == "" {
		return nil, cli.Usage(errors.New("--webhook needs a signing secret: set EXTRACTQ_WEBHOOK_SECRET (the receiver checks X-Extractq-Signature with it; see doc/etl.md)"))
	}
	return &webhook.Sender{URL: u, Secret: []byte(secret), Timeout: f.webhookTimeout}, nil
}

// deliverDone POSTs the done event's body to the webhook, warning on
// errw when it was not delivered: the extraction's outcome (the exit
// code) does not depend on it.
func deliverDone(ctx context.Context, hook *webhook.Sender, run string, body []byte, errw io.Writer) *webhook.Result {
	if body == nil {
		return &webhook.Result{Error: "not sent: the run is not done"}
	}
	r := hook.Send(ctx, run, events.KindDone, body)
	if !r.Delivered {
		fmt.Fprintf(errw, "submit: warning: the run's webhook was not delivered (%d tries, delivery %s): %s\n", r.Attempts, r.DeliveryID, r.Error)
	}
	if r.LogError != "" {
		fmt.Fprintln(errw, "submit: warning: the webhook's delivery log is incomplete:", r.LogError)
	}
	return &r
}

// hookResult is the webhook's outcome for --json, nil without one.
func hookResult(wait *waitResult) *webhook.Result {
	if wait == nil {
		return nil
	}
	return wait.Webhook
}
