package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/events"
)

// announceDone publishes the run's .done event once every job this
// submit followed is final: the waiting submit is what knows the run's
// jobs. Without the events stream (`worker migrate` creates it) it does
// nothing.
func announceDone(ctx context.Context, js jetstream.JetStream, run string, res waitResult) error {
	if res.Unfinished > 0 || res.TimedOut || res.Interrupted {
		return nil
	}
	if _, err := js.Stream(ctx, events.Stream); errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	msg, err := events.Message(events.Event{Kind: events.KindDone, Run: run, At: time.Now().UTC(), Total: res.Total, OK: res.Done, Failed: res.Failed})
	if err != nil {
		return err
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("events: publish %s: %w", msg.Subject, err)
	}
	return nil
}
