// Package llm holds the types every part of extractq shares: the Provider
// contract with its Request, Response, Message, Usage, Capabilities and
// Mode; the provider Error with its ErrorClass; Adjustment and
// CapabilityStore, what adapters learn from the requests a server refuses
// and how a fleet shares it; and what an extraction produces: Result,
// Attempt, Outcome, Repair and Violation.
//
// It is a leaf: it imports only the schema package, so a user's own
// provider, validator or observer depends on nothing internal. The root
// package extractq takes and returns these types directly.
//
// Implement Provider to plug in a model extractq does not ship an adapter
// for:
//
//	type myProvider struct{}
//
//	func (myProvider) Name() string                   { return "myco:small" }
//	func (myProvider) Model() string                  { return "small" }
//	func (myProvider) Capabilities() llm.Capabilities { return llm.Capabilities{Modes: []llm.Mode{llm.ModeJSON}} }
//	func (myProvider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
//		// call the model; return *llm.Error on failure so the engine knows
//		// whether to retry (ErrorClass.Retryable) or stop.
//	}
package llm
