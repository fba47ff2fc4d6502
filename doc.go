// Package extractq extracts structured data from documents with LLMs and
// never returns malformed JSON: it asks a model for JSON matching a JSON
// Schema, finds and repairs the JSON in the answer, validates it, and when it
// is wrong re-asks with precise feedback (by JSON pointer: expected, got)
// until the answer is valid or a budget is spent.
//
// A Result with OutcomeOK always holds a value that validated against the
// caller's schema and was read from the answer without guessing; any other
// outcome comes with an *Error that carries every attempt and matches one
// of ErrExhausted, ErrUnextractable, ErrBudgetExceeded, ErrFatal,
// ErrTransport or ErrCanceled. The one exception is opt-in:
// WithAcceptLossy(true) lets an extraction whose re-asks ran out return a
// valid value that needed a lossy repair, with OutcomeLossy and no error.
//
// Two budgets never mix: an invalid answer spends a re-ask (WithMaxReasks);
// a transport failure (429, 5xx, 529, timeout, reset) is retried with
// backoff inside the call (WithTransport) and spends none. WithTokenBudget
// bounds the tokens one document may cost.
//
//	p, err := extractq.NewProvider("openai:gpt-4o-mini")
//	...
//	s, err := schema.Compile([]byte(`{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`))
//	...
//	res, err := extractq.Extract(ctx, invoiceText, s, extractq.WithProvider(p))
//	if errors.Is(err, extractq.ErrUnextractable) { ... }
package extractq
