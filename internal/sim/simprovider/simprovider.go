// Package simprovider plugs the LLM simulator in as the provider family
// "sim": importing it (for its side effect, as commands, dev mode and tests
// do) makes "sim:PROFILE" and "sim:PROFILE/model" provider strings work
// everywhere a provider string is taken. The engine and the provider
// adapters never import the simulator; only what wants it does.
package simprovider

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
)

// Family is the provider family the simulator registers.
const Family = "sim"

// baseURL addresses the in-process simulator; no request leaves the
// process (its transport never dials), so the host is never resolved.
const baseURL = "http://sim.invalid/v1"

// defaultModel is the model name a "sim:PROFILE" provider sends.
const defaultModel = "sim"

// capabilities: the simulator serves every structured-output mode, prefill
// through its /v1/completions, and the OpenAI Batch API with OpenAI's
// limits. It reads PDFs as the vendors' APIs do (answering from the text
// layer); it reads pictures only when its simulator has an image reader
// (newProvider), so that without one a scan goes to OCR, not to an error.
var capabilities = llm.Capabilities{
	Modes: []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools, llm.ModePrefill},
	Batch: providers.OpenAIBatchLimits(),
	PDF:   true,
}

func init() {
	if err := providers.Register(Family, factory); err != nil {
		panic(err) // only a second registration of "sim" gets here: a build bug
	}
	providers.RegisterBatchLimits(Family, capabilities.Batch)
}

// factory makes "sim:PROFILE" or "sim:PROFILE/model", answering from the
// labels named by EXTRACTQ_SIM_ANSWERS when it is set. PROFILE is a built-in
// profile name or a profile file's path (which may itself contain slashes:
// the whole string is tried as a profile first). Each provider gets a
// simulator of its own; use New to share one.
func factory(rest string, s providers.Settings) (llm.Provider, error) {
	p, profile, model, err := loadSpec(rest)
	if err != nil {
		return nil, err
	}
	var opts []sim.Option
	if path := os.Getenv(AnswersEnv); path != "" {
		k, err := sim.CachedAnswerKey(path)
		if err != nil {
			return nil, fmt.Errorf("provider sim:%s: %s=%s: %w", rest, AnswersEnv, path, err)
		}
		opts = append(opts, sim.WithAnswers(k))
	}
	return newProvider(profile, model, sim.New(p, opts...), s)
}

// loadSpec reads "PROFILE" or "PROFILE/model" (after "sim:") and loads the
// profile.
func loadSpec(rest string) (p sim.Profile, profile, model string, err error) {
	profile, model = rest, defaultModel
	p, err = sim.LoadProfile(profile)
	if err != nil {
		i := strings.LastIndexByte(rest, '/')
		if i <= 0 || i == len(rest)-1 {
			return p, "", "", fmt.Errorf("provider sim:%s: %w", rest, err)
		}
		var err2 error
		if p, err2 = sim.LoadProfile(rest[:i]); err2 != nil {
			return p, "", "", fmt.Errorf("provider sim:%s: %w", rest, err2)
		}
		profile, model = rest[:i], rest[i+1:]
	}
	return p, profile, model, nil
}

// NewWith makes the provider for spec ("sim:PROFILE" or "sim:PROFILE/model")
// answered by a simulator of its own built with opts: an answer key, a
// seed.
func NewWith(spec string, opts ...sim.Option) (llm.Provider, error) {
	fam, rest, ok := strings.Cut(spec, ":")
	if !ok || fam != Family || rest == "" {
		return nil, fmt.Errorf("%w %q: want sim:PROFILE or sim:PROFILE/model", providers.ErrBadSpec, spec)
	}
	p, profile, model, err := loadSpec(rest)
	if err != nil {
		return nil, err
	}
	return newProvider(profile, model, sim.New(p, opts...), providers.Settings{})
}

// AnswersEnv names labels (a folder or JSONL, as `extractq eval` reads)
// that every "sim:…" provider of the process answers from: a labelled
// document gets its label, faults on top (sim.AnswerKey).
const AnswersEnv = "EXTRACTQ_SIM_ANSWERS"

// New makes the provider for spec ("sim:PROFILE" or "sim:PROFILE/model")
// answered by srv, so that several providers share one simulator and the
// caller can read its Stats. The profile in spec is then only a label.
func New(spec string, srv *sim.Server) (llm.Provider, error) {
	profile, model, err := splitSpec(spec)
	if err != nil {
		return nil, err
	}
	return newProvider(profile, model, srv, providers.Settings{})
}

// Remote makes the provider for spec ("sim:PROFILE" or "sim:PROFILE/model")
// answered by a simulator another process serves over HTTP at baseURL (the
// root `extractq sim serve` serves, or a dev mode's simulator URL; without
// /v1): what a command uses to reach the batches that simulator holds.
func Remote(spec, baseURL string) (llm.Provider, error) {
	profile, model, err := splitSpec(spec)
	if err != nil {
		return nil, err
	}
	name := Family + ":" + profile
	if model != defaultModel {
		name += "/" + model
	}
	c := capabilities
	c.ContextWindow, c.MaxOutput = sim.ContextWindow(model)
	return providers.NewOpenAICompatible(name, model, c, providers.Settings{BaseURL: strings.TrimRight(baseURL, "/") + "/v1"})
}

// splitSpec reads "sim:PROFILE" or "sim:PROFILE/model" without loading the
// profile: the simulator that answers is given, and the profile only names
// the provider.
func splitSpec(spec string) (profile, model string, err error) {
	fam, rest, ok := strings.Cut(spec, ":")
	if !ok || fam != Family || rest == "" {
		return "", "", fmt.Errorf("%w %q: want sim:PROFILE or sim:PROFILE/model", providers.ErrBadSpec, spec)
	}
	profile, model = rest, defaultModel
	if i := strings.LastIndexByte(rest, '/'); i > 0 && i < len(rest)-1 {
		profile, model = rest[:i], rest[i+1:]
	}
	return profile, model, nil
}

// newProvider speaks the OpenAI chat completions API over the simulator's
// in-process transport; a base URL or HTTP client in s does not apply.
func newProvider(profile, model string, srv *sim.Server, s providers.Settings) (llm.Provider, error) {
	name := Family + ":" + profile
	if model != defaultModel {
		name += "/" + model
	}
	s.BaseURL, s.HTTPClient, s.APIKey = baseURL, &http.Client{Transport: srv.Transport()}, ""
	c := capabilities
	c.ContextWindow, c.MaxOutput = sim.ContextWindow(model)
	c.Images = srv.ReadsImages()
	return providers.NewOpenAICompatible(name, model, c, s)
}
