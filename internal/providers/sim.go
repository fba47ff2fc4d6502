package providers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/sim"
)

// simBaseURL addresses the in-process simulator; no request leaves the
// process (its transport never dials), so the host is never resolved.
const simBaseURL = "http://sim.invalid/v1"

// simDefaultModel is the model name a "sim:PROFILE" provider sends.
const simDefaultModel = "sim"

// WithSimServer makes a "sim:" provider use s instead of a simulator of its
// own, so that several providers share one simulator and the caller can
// read its Stats. The profile named in the provider string is then only a
// label.
func WithSimServer(s *sim.Server) Option { return func(c *config) { c.simServer = s } }

// newSim makes the in-process simulator provider for "sim:PROFILE" or
// "sim:PROFILE/model". PROFILE is a built-in profile name or a profile
// file's path (which may itself contain slashes: the whole string is tried
// as a profile first). It speaks the OpenAI chat completions API over the
// simulator's in-process transport; WithBaseURL and WithHTTPClient do not
// apply.
func newSim(rest string, cfg config) (llm.Provider, error) {
	profile, model := rest, simDefaultModel
	srv := cfg.simServer
	if srv == nil {
		p, err := sim.LoadProfile(profile)
		if err != nil {
			i := strings.LastIndexByte(rest, '/')
			if i <= 0 || i == len(rest)-1 {
				return nil, fmt.Errorf("provider sim:%s: %w", rest, err)
			}
			var err2 error
			if p, err2 = sim.LoadProfile(rest[:i]); err2 != nil {
				return nil, fmt.Errorf("provider sim:%s: %w", rest, err2)
			}
			profile, model = rest[:i], rest[i+1:]
		}
		srv = sim.New(p)
	} else if i := strings.LastIndexByte(rest, '/'); i > 0 && i < len(rest)-1 {
		profile, model = rest[:i], rest[i+1:]
	}
	name := "sim:" + profile
	if model != simDefaultModel {
		name += "/" + model
	}
	return &openAIProvider{base: base{
		name:    name,
		model:   model,
		caps:    capabilitiesFor("sim", model),
		baseURL: simBaseURL,
		hc:      &http.Client{Transport: srv.Transport()},
		red:     newRedactor(),
		log:     cfg.logger,
		maxBody: cfg.maxBody,
	}}, nil
}
