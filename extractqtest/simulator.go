package extractqtest

import (
	"github.com/extractq/extractq/internal/providers"
	// Registers the "sim" provider family, so that extractq.NewProvider
	// ("sim:sloppy") also works in a test that imports this package.
	_ "github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/llm"
)

// Simulator returns the bundled LLM simulator as a provider, in process (no
// port, no network): it answers from the document with values that validate
// and misbehaves as the profile says. Built-in profiles: "clean" (every
// answer valid), "sloppy" (code fences, prose, broken syntax, missing
// fields, wrong types), "flaky" (5xx, timeouts, dropped connections),
// "rate-limited", "realistic"; or a profile file's path. "PROFILE/model"
// names the model it reports. It is seeded: the same documents give the
// same answers on every run.
func Simulator(profile string) (llm.Provider, error) {
	return providers.New("sim:" + profile)
}
