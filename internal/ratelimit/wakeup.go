package ratelimit

// wakeup wakes every waiter of a Pool or Breaker to look again. Its
// channel is made for the first waiter since the last broadcast and
// closed by the next one: a change nobody waits for allocates nothing (a
// channel per broadcast was an allocation on every release). The owner's
// mutex guards it.
type wakeup struct {
	ch chan struct{} // nil while nobody waits
}

// broadcast wakes every waiter of the channel handed out since the last
// broadcast.
func (w *wakeup) broadcast() {
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// channel is closed by the next broadcast.
func (w *wakeup) channel() <-chan struct{} {
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}
