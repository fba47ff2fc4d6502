package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Version describes the running binary from its build information: the
// module version, the commit it was built from (with "+dirty" when the
// tree had changes), the commit time and the Go version. A binary built
// outside a repository (go install) has a module version and no commit.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build information)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{v}
	if rev := settings["vcs.revision"]; rev != "" {
		c := "commit " + rev[:min(12, len(rev))]
		if settings["vcs.modified"] == "true" {
			c += "+dirty"
		}
		if t := settings["vcs.time"]; t != "" {
			c += " (" + t + ")"
		}
		parts = append(parts, c)
	}
	parts = append(parts, bi.GoVersion)
	if p := bi.Main.Path; p != "" {
		parts = append(parts, fmt.Sprintf("module %s", p))
	}
	return strings.Join(parts, ", ")
}
