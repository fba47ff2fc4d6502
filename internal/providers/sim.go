package providers

import "fmt"

// newSim will make the in-process simulator provider once internal/sim
// offers its server; until then "sim:" is refused with a clear error.
func newSim(name, spec string, _ config) (Provider, error) {
	return nil, fmt.Errorf("provider %s: the simulator (internal/sim) is not available in this build yet", name)
}
