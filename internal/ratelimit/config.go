package ratelimit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	// Kind is how the pool's calls are made: online (the default, "") or
	// batch (the provider's batch API, at its discount).
	Kind Kind `json:"kind,omitempty" yaml:"kind,omitempty"`
	// Batch configures a batch pool; it must be zero on an online pool.
	Batch BatchSettings `json:"batch,omitzero" yaml:"batch,omitempty"`
}

// Kind is how a pool calls its provider.
type Kind string

// Pool kinds.
const (
	KindOnline Kind = "online" // one chat call per request, paced by rpm/tpm/concurrency
	KindBatch  Kind = "batch"  // requests gathered into provider batches
)

// IsBatch reports whether the pool is a batch pool.
func (s PoolSpec) IsBatch() bool { return s.Kind == KindBatch }

// DefaultBatchMaxWait is how long a batch pool gathers requests when its
// spec names no max_wait.
const DefaultBatchMaxWait = 10 * time.Minute

// BatchSettings bound one batch of a batch pool: a batch is submitted when
// it holds MaxRequests requests (or the provider's size limit), or when
// MaxWait has passed since its first request, whichever comes first.
type BatchSettings struct {
	// MaxRequests defaults to the provider's limit and may not exceed it.
	MaxRequests int `json:"max_requests,omitempty" yaml:"max_requests,omitempty"`
	// MaxWait defaults to DefaultBatchMaxWait.
	MaxWait time.Duration `json:"max_wait,omitempty" yaml:"max_wait,omitempty"`
}

// ParsePoolSpec reads "family:model=rpm:N,tpm:N,concurrency:N" (an online
// pool) or "family:model=batch,max_requests:N,max_wait:DURATION" (a batch
// pool). Each setting may be omitted: rpm or tpm omitted means not limited,
// concurrency omitted means DefaultConcurrency, max_requests the provider's
// batch limit, max_wait DefaultBatchMaxWait. Settings that are zero,
// negative, above the Max* bounds, repeated, unknown or of the other kind
// are refused, as are provider families that providers.New does not know
// (and, for a batch pool, families without a batch API); errors are
// *ConfigError.
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
		if k := Kind(strings.ToLower(strings.TrimSpace(kv))); k == KindBatch || k == KindOnline {
			if spec.Kind != "" {
				return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: "kind", Value: string(k), Reason: "given twice; give batch or online once"}
			}
			spec.Kind = k
			continue
		}
		key, val, ok := strings.Cut(strings.TrimSpace(kv), ":")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		if !ok || key == "" {
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: "settings", Value: kv, Reason: "want key:value pairs separated by commas, e.g. rpm:5000,tpm:2000000,concurrency:64, or batch,max_requests:20000,max_wait:10m"}
		}
		if seen[key] {
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "given twice; give it once"}
		}
		seen[key] = true
		if key == "max_wait" {
			d, err := time.ParseDuration(val)
			if err != nil {
				return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "not a duration; write e.g. 10m or 90s"}
			}
			if d <= 0 {
				return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "must be positive; omit max_wait for the default (" + DefaultBatchMaxWait.String() + ")"}
			}
			spec.Batch.MaxWait = d
			continue
		}
		var field *int
		switch key {
		case "rpm":
			field = &spec.Limits.RPM
		case "tpm":
			field = &spec.Limits.TPM
		case "concurrency":
			field = &spec.Limits.Concurrency
		case "max_requests":
			field = &spec.Batch.MaxRequests
		default:
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "unknown setting; known: rpm, tpm, concurrency, and for batch pools max_requests, max_wait"}
		}
		n, err := strconv.Atoi(val)
		if err != nil {
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "not a whole number"}
		}
		*field = n
		switch {
		case n == 0 && key == "max_requests":
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "must be positive; omit max_requests for the provider's limit"}
		case n == 0 && key != "concurrency":
			return PoolSpec{}, &ConfigError{Pool: spec.Name, Setting: key, Value: val, Reason: "must be positive; omit " + key + " for no limit"}
		}
	}
	if spec.Kind == KindBatch && !seen["concurrency"] {
		spec.Limits.Concurrency = 0 // the batch default, set by validate
	}
	if err := spec.validate(); err != nil {
		return PoolSpec{}, err
	}
	return spec, nil
}

// validate checks limits and the kind's settings, and fills the batch
// defaults of a batch pool. Name must be split already.
func (s *PoolSpec) validate() error {
	limits := s.Limits
	if s.Kind == KindBatch {
		limits.Concurrency = 1 // a batch pool's is jobs held, bounded below
	}
	if err := limits.validate(s.Name); err != nil {
		return err
	}
	switch s.Kind {
	case "", KindOnline:
		if s.Batch != (BatchSettings{}) {
			return &ConfigError{Pool: s.Name, Setting: "max_requests/max_wait", Reason: "batch settings on an online pool; add batch to the pool's settings (kind: batch in a file) or remove them"}
		}
		return nil
	case KindBatch:
	default:
		return &ConfigError{Pool: s.Name, Setting: "kind", Value: string(s.Kind), Reason: "unknown pool kind; use online or batch"}
	}
	lim, ok := providers.BatchLimitsFor(s.Provider)
	if !ok {
		return &ConfigError{Pool: s.Name, Setting: "kind", Value: string(KindBatch), Reason: fmt.Sprintf("provider family %s has no batch API; batch pools support %s", s.Provider, strings.Join(providers.BatchFamilies(), ", "))}
	}
	// A batch is queued by the provider as a whole: per-minute pacing does
	// not apply (its quota is enqueued tokens, which the worker meets by
	// splitting).
	if s.Limits.RPM != 0 || s.Limits.TPM != 0 {
		return &ConfigError{Pool: s.Name, Setting: "rpm/tpm", Reason: "a batch pool is not paced per minute; remove rpm and tpm (the provider queues whole batches)"}
	}
	switch b := &s.Batch; {
	case b.MaxRequests < 0:
		return &ConfigError{Pool: s.Name, Setting: "max_requests", Value: strconv.Itoa(b.MaxRequests), Reason: "must be positive; omit max_requests for the provider's limit"}
	case b.MaxRequests > lim.MaxRequests:
		return &ConfigError{Pool: s.Name, Setting: "max_requests", Value: strconv.Itoa(b.MaxRequests), Reason: fmt.Sprintf("above %s's limit of %d requests per batch; use at most %d", s.Provider, lim.MaxRequests, lim.MaxRequests)}
	case b.MaxWait < 0:
		return &ConfigError{Pool: s.Name, Setting: "max_wait", Value: b.MaxWait.String(), Reason: "must be positive; omit max_wait for the default (" + DefaultBatchMaxWait.String() + ")"}
	case b.MaxWait > MaxBatchWait:
		return &ConfigError{Pool: s.Name, Setting: "max_wait", Value: b.MaxWait.String(), Reason: "longer than " + MaxBatchWait.String() + "; a batch waits for requests, then up to 24h for the provider"}
	}
	if s.Batch.MaxRequests == 0 {
		s.Batch.MaxRequests = lim.MaxRequests
	}
	if s.Batch.MaxWait == 0 {
		s.Batch.MaxWait = DefaultBatchMaxWait
	}
	// A batch pool's concurrency is the jobs one worker holds while they
	// wait for their batches: by default two batches' worth, so the next
	// batch gathers while one runs.
	if s.Limits.Concurrency == 0 {
		s.Limits.Concurrency = min(2*s.Batch.MaxRequests, MaxBatchHeld)
	}
	if c := s.Limits.Concurrency; c < 1 || c > MaxBatchHeld {
		return &ConfigError{Pool: s.Name, Setting: "concurrency", Value: strconv.Itoa(c), Reason: fmt.Sprintf("a batch pool holds 1 to %d jobs at once; omit it for twice max_requests", MaxBatchHeld)}
	}
	return nil
}

// MaxBatchHeld bounds the jobs one worker holds in a batch pool.
const MaxBatchHeld = 200_000

// MaxBatchWait bounds max_wait: gathering requests longer than this is a
// typo (hours for minutes), not a plan.
const MaxBatchWait = 24 * time.Hour

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
		s.Kind = Kind(strings.ToLower(strings.TrimSpace(string(s.Kind))))
		if err := s.validate(); err != nil {
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
