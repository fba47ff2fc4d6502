package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ErrInterrupted is the cause of a context Interruptible canceled on the
// first Ctrl-C (SIGINT) or SIGTERM.
var ErrInterrupted = errors.New("interrupted")

// Interruptible returns a context that the first SIGINT or SIGTERM cancels
// with ErrInterrupted, after calling first (which says what happens now,
// e.g. "finishing 4 running documents; Ctrl-C again to quit at once"). A
// second signal calls second, which normally ends the process at once
// (os.Exit(130)) after making sure nothing half-written is left. stop
// releases the signals; call it when the command ends.
func Interruptible(parent context.Context, first, second func()) (ctx context.Context, stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	ctx, release := interruptible(parent, ch, first, second)
	return ctx, func() {
		signal.Stop(ch)
		release()
	}
}

// interruptible is Interruptible on a channel of signals, for tests.
func interruptible(parent context.Context, signals <-chan os.Signal, first, second func()) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		n := 0
		for {
			select {
			case <-done:
				return
			case <-signals:
				n++
				if n == 1 {
					if first != nil {
						first()
					}
					cancel(ErrInterrupted)
					continue
				}
				if second != nil {
					second()
				}
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			<-exited
			cancel(nil)
		})
	}
}

// WasInterrupted reports whether ctx ended because of Ctrl-C.
func WasInterrupted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrInterrupted)
}
