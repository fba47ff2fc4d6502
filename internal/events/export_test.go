package events

// SetAfterRead makes s call f each time a sweep has read its pending
// deliveries of kind (KindDone, KindDeadLetter), before it starts them:
// a test can end a delivery under way there, after the read.
func SetAfterRead(s *Sweeper, f func(kind string)) { s.afterRead = f }

// InFlight reports whether s's delivery of kind for run is under way.
func InFlight(s *Sweeper, kind, run string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[kind+" "+run]
}
