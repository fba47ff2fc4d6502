// Package retry runs the validate-and-reprompt loop: it asks a provider for
// JSON, finds and repairs it, validates it against the user's schema and, when
// it is wrong, asks again with precise feedback until the answer is valid or a
// budget is spent. Transport failures and validation failures have separate
// budgets that never mix.
package retry
