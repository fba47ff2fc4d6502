package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/extractq/extractq/internal/settings"
)

// durationValue is a duration flag that also takes days ("7d", "1d12h").
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := settings.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return settings.FormatDuration(time.Duration(*d)) }
func (d *durationValue) Type() string   { return "duration" }

// DurationVar defines a duration flag that accepts days as well as Go
// durations (30s, 15m, 24h, 7d, 1d12h). Every extractq command uses it
// for its durations.
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}
