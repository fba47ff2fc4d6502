// Package providers talks to LLM chat APIs: one adapter per API family
// (OpenAI-compatible, Anthropic, Ollama, Gemini), one error taxonomy and one
// rate-limit state for all of them.
package providers
