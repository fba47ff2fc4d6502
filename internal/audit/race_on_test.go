//go:build race

package audit

// raceEnabled: the race detector is on. Its sync.Pool drops a random
// quarter of what is put back, so a recycled value is sometimes new.
const raceEnabled = true
