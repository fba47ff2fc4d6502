//go:build !unix

package schema

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
