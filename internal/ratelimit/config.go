package ratelimit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/extractq/extractq/internal/providers"
)

// Bounds of a pool's settings: anything above is a typo, not a budget.
const (
	MaxRPM         = 10_000_000
	MaxTPM         = 1_000_000_000
	MaxConcurrency = 10_000
	// DefaultConcurrency is a pool's concurrency when its spec names none.
	DefaultConcurrency = 8
)

// ErrInvalidConfig is matched (errors.Is) by every configuration error.
var ErrInvalidConfig = errors.New("invalid rate-limit pool configuration")

// ConfigError is a refused pool setting. It names the pool, the setting and
// what to do.
type ConfigError struct {
	Pool    string // the pool as written, e.g. "openai:gpt-4o-mini"
	Setting string // e.g. "rpm", "provider", "pool"
	Value   string // the offending value as written
	Reason  string // what is wrong and how to fix it
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("rate-limit pool")
	if e.Pool != "" {
		fmt.Fprintf(&b, " %q", e.Pool)
	}
	if e.Setting != "" {
		fmt.Fprintf(&b, ": %s", e.Setting)
		if e.Value != "" {
			fmt.Fprintf(&b, "=%q", e.Value)
		}
	}
	b.WriteString(": " + e.Reason)
	return b.String()
}

// Is makes every ConfigError match ErrInvalidConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// PoolSpec is one configured pool: a provider and model with a fleet-wide
// budget. It is what a --pool flag or a config-file entry becomes.
type PoolSpec struct {
	// Name is "family:model", e.g. "openai:gpt-4o-mini": the pool's name
	// and the provider spec its calls go to.
	Name     string `json:"name" yaml:"name"`
	Provider string `json:"-" yaml:"-"` // family, e.g. "openai"
	Model    string `json:"-" yaml:"-"` // e.g. "gpt-4o-mini"
	Limits   Limits `json:"limits" yaml:"limits"`
}

// ParsePoolSpec reads "family:model=rpm:N,tpm:N,concurrency:N". Each setting
// may be omitted: rpm or tpm omitted means not limited, concurrency omitted
// means DefaultConcurrency. Settings that are zero, negative, above the
// Max* bounds, repeated or unknown are refused, as are provider families
// that providers.New does not know; errors are *ConfigError.
func ParsePoolSpec(s string) (PoolSpec, error) {
	name, settings, _ := strings.Cut(strings.TrimSpace(s), "=")
	spec := PoolSpec{Name: strings.TrimSpace(name), Limits: Limits{Concurrency: DefaultConcurrency}}
	if err := spec.splitName(); err != nil {
		return PoolSpec{}, err
	}
	if strings.TrimSpace(settings) == "" {
		return spec, nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(settings, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(kv), ":")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		if !ok || key == "" {
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: "settings", Value: kv, Reason: "want key:value pairs separated by commas, e.g. rpm:5000,tpm:2000000,concurrency:64"}
		}
		var field *int
		switch key {
		case "rpm":
			field = &spec.Limits.RPM
		case "tpm":
			field = &spec.Limits.TPM
		case "concurrency":
			field = &spec.Limits.Concurrency
		default:
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "unknown setting; known: rpm, tpm, concurrency"}
		}
		if seen[key] {
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "given twice; give it once"}
		}
		seen[key] = true
		n, err := strconv.Atoi(val)
		if err != nil {
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "not a whole number"}
		}
		*field = n
		if n == 0 && key != "concurrency" {
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "must be positive; omit " + key + " for no limit"}
		}
	}
	if err := spec.Limits.validate(spec.Name); err != nil {
		return PoolSpec{}, err
	}
	return spec, nil
}

// splitName checks Name and fills Provider and Model from it.
func (s *PoolSpec) splitName() error {
	family, model, ok := strings.Cut(s.Name, ":")
	family, model = strings.ToLower(strings.TrimSpace(family)), strings.TrimSpace(model)
	switch {
	case s.Name == "":
		return &ConfigError{Setting: "pool", Reason: "empty; want family:model=rpm:N,tpm:N,concurrency:N, e.g. openai:gpt-4o-mini=rpm:5000,tpm:2000000,concurrency:64"}
	case !ok || model == "":
		return &ConfigError{Pool: s.Name, Setting: "provider", Value: s.Name, Reason: "want family:model, e.g. openai:gpt-4o-mini"}
	case !slices.Contains(providers.KnownFamilies(), family):
		return &ConfigError{Pool: s.Name, Setting: "provider", Value: family, Reason: "unknown provider family; known: " + strings.Join(providers.KnownFamilies(), ", ")}
	}
	s.Provider, s.Model, s.Name = family, model, family+":"+model
	return nil
}

// validate checks the ranges of a pool's limits. RPM and TPM of zero mean
// "not limited" here (an omitted setting); explicit zeros are refused by
// ParsePoolSpec.
func (l Limits) validate(pool string) error {
	check := func(setting string, v, lo, hi int) error {
		switch {
		case v < lo:
			return &ConfigError{Pool: pool, Setting: setting, Value: strconv.Itoa(v), Reason: fmt.Sprintf("must be at least %d", max(lo, 1))}
		case v > hi:
			return &ConfigError{Pool: pool, Setting: setting, Value: strconv.Itoa(v), Reason: fmt.Sprintf("absurdly large (more than %d); check the units (per minute)", hi)}
		}
		return nil
	}
	return errors.Join(
		check("concurrency", l.Concurrency, 1, MaxConcurrency),
		check("rpm", l.RPM, 0, MaxRPM),
		check("tpm", l.TPM, 0, MaxTPM),
	)
}

// Validate checks a whole pool configuration, e.g. one read from a config
// file: each pool's provider and limits, and that no two pools name the same
// provider and model (one budget would be counted twice). It normalises each
// Name and fills Provider and Model. Errors are *ConfigError, joined.
func Validate(specs []PoolSpec) error {
	var errs []error
	seen := map[string]string{}
	for i := range specs {
		s := &specs[i]
		raw := s.Name
		if err := s.splitName(); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.Limits.validate(s.Name); err != nil {
			errs = append(errs, err)
		}
		if first, dup := seen[s.Name]; dup {
			errs = append(errs, &ConfigError{Pool: raw, Setting: "pool", Value: raw, Reason: fmt.Sprintf("overlaps pool %q: the same provider and model need one pool; merge their limits", first)})
			continue
		}
		seen[s.Name] = raw
	}
	return errors.Join(errs...)
}

// ParsePoolSpecs parses every --pool flag and validates them together.
func ParsePoolSpecs(flags []string) ([]PoolSpec, error) {
	specs := make([]PoolSpec, 0, len(flags))
	var errs []error
	for _, f := range flags {
		s, err := ParsePoolSpec(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		specs = append(specs, s)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := Validate(specs); err != nil {
		return nil, err
	}
	return specs, nil
}
