package retry

import "errors"

// Sentinel errors, one per failed outcome, so callers can branch with
// errors.Is on the *Error a failed extraction returns.
var (
	ErrExhausted      = errors.New("extraction exhausted its re-asks")
	ErrUnextractable  = errors.New("document unextractable")
	ErrBudgetExceeded = errors.New("token budget exceeded")
	ErrFatal          = errors.New("fatal provider error")
	ErrTransport      = errors.New("provider unavailable")
	ErrCanceled       = errors.New("extraction canceled")
)

// sentinel is the error matching outcome o (nil for ok).
func sentinel(o Outcome) error {
	switch o {
	case OutcomeExhausted:
		return ErrExhausted
	case OutcomeUnextractable:
		return ErrUnextractable
	case OutcomeBudgetExceeded:
		return ErrBudgetExceeded
	case OutcomeFatal:
		return ErrFatal
	case OutcomeTransport:
		return ErrTransport
	case OutcomeCanceled:
		return ErrCanceled
	}
	return nil
}

// Error is a failed extraction. It carries the whole Result: every attempt
// with its raw answer, repairs, violations, error class, latency and tokens.
// It matches (errors.Is) the sentinel of its outcome, and unwraps to the
// cause: the provider's error, or the context's.
type Error struct {
	Result *Result
}

// Error is one readable paragraph, e.g. `no valid answer after 4 attempts;
// the last failed at /items/2/price: expected number, got "12,50"; 2 syntax
// repairs applied`.
func (e *Error) Error() string { return e.Result.Reason }

// Is matches the sentinel of the outcome.
func (e *Error) Is(target error) bool { return target != nil && sentinel(e.Result.Outcome) == target }

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Result.Cause }
