package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrNoExample is matched (errors.Is) when no valid instance of a schema
// can be built; the error says where in the schema and why.
var ErrNoExample = errors.New("no valid example")

// Example returns a typical instance of the schema to show a model ("answer
// like this"): the author's own examples/default where they are valid,
// otherwise values built from the constraints, with every declared
// property present. It is validated before it is returned; when no valid
// instance can be built the error (matching ErrNoExample) says why.
func (s *Schema) Example() (json.RawMessage, error) {
	s.example.once.Do(func() { s.example.doc, s.example.err = s.generate(true, 1) })
	return append(json.RawMessage(nil), s.example.doc...), s.example.err
}

// Instance returns a valid instance whose values vary with seed: optional
// properties come and go, array lengths, numbers, strings and enum choices
// change. The simulator answers with it. Errors match ErrNoExample.
func (s *Schema) Instance(seed uint64) (json.RawMessage, error) {
	return s.generate(false, seed)
}

// Generation limits: how deep values nest, how many alternatives and
// retries are tried, and how many values are built in all.
const (
	genSoftDepth  = 3 // below this depth only what is required is built
	genMaxDepth   = 24
	genAttempts   = 12
	genNodeBudget = 20000 // values built over all attempts
)

func (s *Schema) generate(typical bool, seed uint64) (json.RawMessage, error) {
	var lastErr error
	budget := genNodeBudget
	for attempt := range genAttempts {
		g := &generator{
			rng:     rand.New(rand.NewPCG(seed, uint64(attempt)*0x9e3779b97f4a7c15+1)),
			typical: typical && attempt == 0,
			base:    s.baseURL,
			doc:     s.doc,
			budget:  &budget,
		}
		v, err := g.value([]*jsonschema.Schema{s.compiled}, 0)
		if err != nil {
			lastErr = err
			var ge *genError
			if errors.As(err, &ge) && ge.final {
				break
			}
			continue
		}
		if vs := s.Validate(toPlain(v)); vs != nil {
			lastErr = &genError{msg: "the built value fails the schema: " + RenderFeedback(vs, 300)}
			continue
		}
		b, err := marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoExample, err)
		}
		return b, nil
	}
	var ge *genError
	if errors.As(lastErr, &ge) {
		where := ""
		if ge.ptr != "" {
			where = " at " + ge.ptr
		}
		return nil, fmt.Errorf("%w%s: %s", ErrNoExample, where, ge.msg)
	}
	return nil, fmt.Errorf("%w: %v", ErrNoExample, lastErr)
}

// genError says why no value could be built for a part of the schema;
// final means retrying with other random choices cannot help (the
// constraints contradict each other).
type genError struct {
	ptr   string // location in the schema
	msg   string
	final bool
}

func (e *genError) Error() string {
	if e.ptr == "" {
		return e.msg
	}
	return "at " + e.ptr + ": " + e.msg
}

type generator struct {
	rng     *rand.Rand
	typical bool
	base    string
	doc     any  // the ordered root document, for property order
	budget  *int // values left to build, shared by all attempts
}

// where gives a schema's location relative to the root document.
func (g *generator) where(s *jsonschema.Schema) string {
	loc := s.Location
	if rest, ok := strings.CutPrefix(loc, g.base+"#"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(loc, g.base); ok {
		return rest
	}
	return loc
}

func (g *generator) contradiction(s *jsonschema.Schema, format string, args ...any) error {
	return &genError{ptr: g.where(s), msg: fmt.Sprintf(format, args...), final: true}
}

// expand returns the schemas that all apply to one value: the given ones
// plus everything they pull in through $ref and allOf.
func expand(conj []*jsonschema.Schema) []*jsonschema.Schema {
	seen := map[*jsonschema.Schema]bool{}
	var out []*jsonschema.Schema
	var add func(s *jsonschema.Schema)
	add = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		add(s.Ref)
		add(s.RecursiveRef)
		if s.DynamicRef != nil {
			add(s.DynamicRef.Ref)
		}
		for _, a := range s.AllOf {
			add(a)
		}
	}
	for _, s := range conj {
		add(s)
	}
	return out
}

func validAll(conj []*jsonschema.Schema, v any) bool {
	v = toPlain(v)
	for _, s := range conj {
		if s.Validate(v) != nil {
			return false
		}
	}
	return true
}

// value builds a value that satisfies every schema in conj.
func (g *generator) value(conj []*jsonschema.Schema, depth int) (any, error) {
	*g.budget--
	if *g.budget < 0 {
		return nil, &genError{msg: "the schema needs too large a value", final: true}
	}
	all := expand(conj)
	if depth > genMaxDepth {
		return nil, &genError{ptr: g.where(all[0]), msg: "values nest too deeply (a recursive schema with no way to stop?)"}
	}
	for _, s := range all {
		if s.Bool != nil && !*s.Bool {
			return nil, &genError{ptr: g.where(s), msg: "no value is allowed here (false schema)", final: true}
		}
	}
	// Alternatives first: pick a branch of the first anyOf/oneOf/if.
	for _, s := range all {
		if len(s.AnyOf) == 0 && len(s.OneOf) == 0 && s.If == nil {
			continue
		}
		return g.branch(conj, s, depth)
	}
	return g.build(all, depth)
}

// branch tries the alternatives of s (anyOf, oneOf, if/then/else) in turn.
func (g *generator) branch(conj []*jsonschema.Schema, s *jsonschema.Schema, depth int) (any, error) {
	// A copy of s without the alternative being chosen stands in for it;
	// what it referenced is already in expand(conj).
	stripped := *s
	stripped.Ref, stripped.AllOf, stripped.DynamicRef, stripped.RecursiveRef = nil, nil, nil, nil
	var options [][]*jsonschema.Schema
	switch {
	case len(s.AnyOf) > 0:
		stripped.AnyOf = nil
		options = g.alternatives(s.AnyOf)
	case len(s.OneOf) > 0:
		stripped.OneOf = nil
		options = g.alternatives(s.OneOf)
	default:
		stripped.If, stripped.Then, stripped.Else = nil, nil, nil
		if s.Then != nil {
			options = append(options, []*jsonschema.Schema{s.If, s.Then})
		} else {
			options = append(options, []*jsonschema.Schema{s.If})
		}
		if s.Else != nil {
			options = append(options, []*jsonschema.Schema{s.Else})
		} else {
			options = append(options, nil) // a value "if" rejects (checked below)
		}
	}
	// The other schemas, already expanded: copies without their links, so
	// expanding again cannot bring s (and its alternatives) back.
	rest := make([]*jsonschema.Schema, 0, len(conj)+2)
	for _, c := range expand(conj) {
		if c != s {
			cc := *c
			cc.Ref, cc.AllOf, cc.DynamicRef, cc.RecursiveRef = nil, nil, nil, nil
			rest = append(rest, &cc)
		}
	}
	rest = append(rest, &stripped)

	var firstErr error
	for _, opt := range options {
		try := append(append([]*jsonschema.Schema(nil), rest...), opt...)
		// A value of this branch may match another one too (oneOf wants
		// exactly one): other random choices may not.
		for attempt := range 3 {
			saved := g.typical
			g.typical = g.typical && attempt == 0
			v, err := g.value(try, depth)
			g.typical = saved
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				break
			}
			if s.Validate(toPlain(v)) == nil {
				return v, nil
			}
			if firstErr == nil {
				firstErr = &genError{ptr: g.where(s), msg: "no alternative could be satisfied"}
			}
			if len(s.OneOf) == 0 {
				break
			}
		}
	}
	if firstErr == nil {
		firstErr = &genError{ptr: g.where(s), msg: "no alternative could be satisfied"}
	}
	return nil, firstErr
}

// alternatives orders anyOf/oneOf branches: as written for typical
// examples, shuffled otherwise, with a bare null branch usually last (a
// nullable field is mostly filled).
func (g *generator) alternatives(alts []*jsonschema.Schema) [][]*jsonschema.Schema {
	var opts, nulls [][]*jsonschema.Schema
	nullLast := !g.typical && g.rng.IntN(8) != 0
	for _, i := range g.order(len(alts)) {
		a := alts[i]
		if nullLast && a.Types != nil && a.Types.String() == "[null]" {
			nulls = append(nulls, []*jsonschema.Schema{a})
			continue
		}
		opts = append(opts, []*jsonschema.Schema{a})
	}
	return append(opts, nulls...)
}

// order lists n indexes: in order for typical examples, shuffled otherwise.
func (g *generator) order(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if !g.typical {
		g.rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	return idx
}

// build makes a value for a flat conjunction (no alternatives left).
func (g *generator) build(all []*jsonschema.Schema, depth int) (any, error) {
	// const and enum fix the value.
	for _, s := range all {
		if s.Const != nil {
			if validAll(all, *s.Const) {
				return *s.Const, nil
			}
			return nil, g.contradiction(s, "the const value %s contradicts the other constraints", jsonText(*s.Const, 60))
		}
	}
	for _, s := range all {
		if s.Enum == nil {
			continue
		}
		for _, i := range g.order(len(s.Enum.Values)) {
			if v := s.Enum.Values[i]; validAll(all, v) {
				return v, nil
			}
		}
		return nil, g.contradiction(s, "none of the enum values %s satisfies the other constraints", jsonText(s.Enum.Values, 80))
	}
	if g.typical {
		for _, s := range all {
			for _, e := range s.Examples {
				if validAll(all, e) {
					return e, nil
				}
			}
			if s.Default != nil && validAll(all, *s.Default) {
				return *s.Default, nil
			}
		}
	}
	types, err := g.pickType(all)
	if err != nil {
		return nil, err
	}
	// Keywords the builders do not aim at ("not", "propertyNames", …) are
	// checked here, so that another type can be tried.
	check := false
	for _, s := range all {
		if s.Not != nil || s.PropertyNames != nil || len(s.DependentSchemas) > 0 {
			check = true
			break
		}
	}
	var firstErr error
	for _, t := range types {
		v, err := g.buildType(t, all, depth)
		if err == nil && check && !validAll(all, v) {
			err = &genError{ptr: g.where(all[0]), msg: "no " + t + " meets every constraint"}
		}
		if err == nil {
			return v, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// buildType makes a value of JSON type t for a flat conjunction.
func (g *generator) buildType(t string, all []*jsonschema.Schema, depth int) (any, error) {
	switch t {
	case "null":
		return nil, nil
	case "boolean":
		if g.typical {
			return true, nil
		}
		return g.rng.IntN(2) == 0, nil
	case "integer", "number":
		return g.number(all, t == "integer")
	case "string":
		return g.str(all)
	case "array":
		return g.array(all, depth)
	default:
		return g.object(all, depth)
	}
}

var typePreference = []string{"object", "array", "string", "integer", "number", "boolean", "null"}

// pickType lists the JSON types every schema allows, the one to try first
// at the front: what the constraints describe (properties mean an object,
// items an array), then the other allowed types.
func (g *generator) pickType(all []*jsonschema.Schema) ([]string, error) {
	allowed := map[string]bool{}
	for _, t := range typePreference {
		allowed[t] = true
	}
	for _, s := range all {
		if s.Types == nil || s.Types.IsEmpty() {
			continue
		}
		ts := map[string]bool{}
		for _, t := range s.Types.ToStrings() {
			ts[t] = true
			if t == "number" {
				ts["integer"] = true
			}
		}
		for t := range allowed {
			if !ts[t] {
				delete(allowed, t)
			}
		}
		if len(allowed) == 0 {
			return nil, g.contradiction(s, "the allowed types %v contradict the other constraints", s.Types.ToStrings())
		}
	}
	// What the constraints hint at.
	hint := map[string]bool{}
	for _, s := range all {
		if len(s.Properties) > 0 || len(s.Required) > 0 || s.MinProperties != nil || s.AdditionalProperties != nil {
			hint["object"] = true
		}
		if s.Items != nil || s.Items2020 != nil || len(s.PrefixItems) > 0 || s.MinItems != nil || s.Contains != nil {
			hint["array"] = true
		}
		if s.MinLength != nil || s.MaxLength != nil || s.Pattern != nil || s.Format != nil {
			hint["string"] = true
		}
		if s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil {
			hint["number"] = true
		}
	}
	var cands []string
	for _, t := range typePreference {
		if allowed[t] && hint[t] {
			cands = append(cands, t)
		}
	}
	// The other allowed types, to fall back on.
	var rest []string
	for _, t := range []string{"string", "integer", "number", "boolean", "object", "array", "null"} {
		if allowed[t] && !hint[t] {
			rest = append(rest, t)
		}
	}
	first := func(i int, list []string) []string {
		out := []string{list[i]}
		for j, t := range list {
			if j != i {
				out = append(out, t)
			}
		}
		return out
	}
	if len(cands) == 0 {
		cands, rest = rest, nil
	}
	if len(allowed) == len(typePreference) && len(hint) == 0 {
		if g.typical {
			return first(0, cands), nil // an unconstrained value: show a string
		}
		any6 := []string{"string", "integer", "boolean", "object", "array", "null"}
		return first(g.rng.IntN(6), any6), nil
	}
	if !g.typical && len(cands) > 1 && cands[len(cands)-1] == "null" && g.rng.IntN(8) != 0 {
		cands = cands[:len(cands)-1] // null only now and then
		rest = append(rest, "null")
	}
	if g.typical || len(cands) == 1 {
		return append(cands, rest...), nil
	}
	return append(first(g.rng.IntN(len(cands)), cands), rest...), nil
}

// number picks a value within the bounds and multipleOf.
func (g *generator) number(all []*jsonschema.Schema, integer bool) (any, error) {
	var lo, hi *big.Rat
	loEx, hiEx := false, false
	var mult []*big.Rat
	var origin *jsonschema.Schema
	tighten := func(s *jsonschema.Schema, r *big.Rat, ex, isLo bool) {
		if r == nil {
			return
		}
		if isLo {
			if lo == nil || r.Cmp(lo) > 0 || (r.Cmp(lo) == 0 && ex) {
				lo, loEx, origin = r, ex, s
			}
		} else if hi == nil || r.Cmp(hi) < 0 || (r.Cmp(hi) == 0 && ex) {
			hi, hiEx, origin = r, ex, s
		}
	}
	for _, s := range all {
		tighten(s, s.Minimum, false, true)
		tighten(s, s.ExclusiveMinimum, true, true)
		tighten(s, s.Maximum, false, false)
		tighten(s, s.ExclusiveMaximum, true, false)
		if s.MultipleOf != nil {
			mult = append(mult, s.MultipleOf)
		}
		if origin == nil {
			origin = s
		}
	}
	if lo != nil && hi != nil {
		if c := lo.Cmp(hi); c > 0 || (c == 0 && (loEx || hiEx)) {
			return nil, g.contradiction(origin, "the lower bound %s is not below the upper bound %s", ratText(lo), ratText(hi))
		}
	}
	// The step every candidate is a multiple of.
	var step *big.Rat
	if integer {
		step = big.NewRat(1, 1)
	}
	for _, m := range mult {
		if m.Sign() <= 0 {
			continue
		}
		if step == nil {
			step = new(big.Rat).Set(m)
			continue
		}
		step = ratLCM(step, m)
		if step == nil {
			return nil, g.contradiction(origin, "the multipleOf values have no common multiple that is easy to find")
		}
	}
	// A starting point: the lower bound, the upper bound, or something
	// ordinary; random offsets for varied instances.
	var start *big.Rat
	switch {
	case lo != nil && hi != nil:
		start = new(big.Rat).Set(lo)
		if !g.typical {
			span := new(big.Rat).Sub(hi, lo)
			f := new(big.Rat).SetFloat64(g.rng.Float64())
			start.Add(start, span.Mul(span, f))
		}
	case lo != nil:
		start = new(big.Rat).Set(lo)
		if !g.typical {
			start.Add(start, big.NewRat(int64(g.rng.IntN(1000)), 1))
		}
	case hi != nil:
		start = new(big.Rat).Set(hi)
		if !g.typical {
			start.Sub(start, big.NewRat(int64(g.rng.IntN(1000)), 1))
		}
	default:
		start = big.NewRat(1, 1)
		if !g.typical {
			start = big.NewRat(int64(g.rng.IntN(2000))-200, 1)
		}
	}
	in := func(r *big.Rat) bool {
		if lo != nil {
			if c := r.Cmp(lo); c < 0 || (c == 0 && loEx) {
				return false
			}
		}
		if hi != nil {
			if c := r.Cmp(hi); c > 0 || (c == 0 && hiEx) {
				return false
			}
		}
		return true
	}
	if step == nil { // any real number: nudge off exclusive bounds
		v := start
		if !in(v) {
			switch {
			case lo != nil && hi != nil:
				v = new(big.Rat).Add(lo, hi)
				v.Quo(v, big.NewRat(2, 1))
			case lo != nil:
				v = new(big.Rat).Add(lo, big.NewRat(1, 1))
			default:
				v = new(big.Rat).Sub(hi, big.NewRat(1, 1))
			}
		}
		return json.Number(ratDecimal(v)), nil
	}
	// Round start up to a multiple of step, then walk within the bounds.
	k := new(big.Rat).Quo(start, step)
	kInt := new(big.Int).Quo(k.Num(), k.Denom())
	if k.Sign() > 0 && !k.IsInt() {
		kInt.Add(kInt, big.NewInt(1))
	}
	for i := 0; i < 4; i++ {
		for _, d := range []int64{0, 1, -1} {
			cand := new(big.Rat).Mul(new(big.Rat).SetInt(new(big.Int).Add(kInt, big.NewInt(d+int64(i)))), step)
			if in(cand) {
				return json.Number(ratDecimal(cand)), nil
			}
		}
	}
	return nil, g.contradiction(origin, "no %s between %s and %s is a multiple of %s", map[bool]string{true: "integer", false: "number"}[integer], boundText(lo), boundText(hi), ratText(step))
}

func boundText(r *big.Rat) string {
	if r == nil {
		return "the open end"
	}
	return ratText(r)
}

// ratLCM is the least common multiple of two positive rationals.
func ratLCM(a, b *big.Rat) *big.Rat {
	// lcm(p/q, r/s) = lcm(p*s, r*q) / (q*s)
	ps := new(big.Int).Mul(a.Num(), b.Denom())
	rq := new(big.Int).Mul(b.Num(), a.Denom())
	gcd := new(big.Int).GCD(nil, nil, ps, rq)
	if gcd.Sign() == 0 {
		return nil
	}
	l := new(big.Int).Mul(ps, rq)
	l.Quo(l, gcd)
	return new(big.Rat).SetFrac(l, new(big.Int).Mul(a.Denom(), b.Denom()))
}

// ratDecimal writes r as a JSON number (exact for terminating decimals).
func ratDecimal(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	s := strings.TrimRight(r.FloatString(15), "0")
	return strings.TrimSuffix(s, ".")
}

var formatValues = map[string][]string{
	"date-time":             {"2024-01-31T09:30:00Z", "2023-06-15T14:05:10+02:00", "2025-11-02T23:59:59Z"},
	"date":                  {"2024-01-31", "2023-06-15", "2025-11-02"},
	"time":                  {"09:30:00Z", "14:05:10+02:00", "23:59:59Z"},
	"duration":              {"P3D", "PT4H30M", "P1Y2M"},
	"email":                 {"ada@example.com", "grace@example.org", "alan@example.net"},
	"idn-email":             {"ada@example.com", "grace@example.org"},
	"hostname":              {"example.com", "api.example.org", "docs.example.net"},
	"idn-hostname":          {"example.com", "api.example.org"},
	"ipv4":                  {"192.0.2.1", "198.51.100.7", "203.0.113.42"},
	"ipv6":                  {"2001:db8::1", "2001:db8:0:1::7", "fe80::1"},
	"uri":                   {"https://example.com/", "https://example.org/docs/a", "urn:isbn:0451450523"},
	"uri-reference":         {"https://example.com/", "/docs/a", "../b"},
	"iri":                   {"https://example.com/", "https://example.org/docs/a"},
	"iri-reference":         {"https://example.com/", "/docs/a"},
	"uri-template":          {"https://example.com/{id}", "/items/{item}"},
	"uuid":                  {"123e4567-e89b-12d3-a456-426614174000", "9b2f4b4e-7d1c-4a55-8a43-0c1f9a6f2d11"},
	"json-pointer":          {"/a/b", "/items/0", ""},
	"relative-json-pointer": {"0/a", "1", "2#"},
	"regex":                 {"^[a-z]+$", "\\d{3}"},
	"period":                {"2024-01-01T00:00:00Z/P1D"},
	"semver":                {"1.2.3", "0.9.0"},
}

var words = []string{"alpha", "amber", "birch", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel", "lumen", "meadow", "nimbus", "orchid", "pebble", "quartz", "river", "saffron", "tundra", "umber", "violet", "willow"}

// str builds a string meeting format, pattern and length constraints.
func (g *generator) str(all []*jsonschema.Schema) (any, error) {
	minLen, maxLen := 0, -1
	var patterns []string
	format := ""
	var origin *jsonschema.Schema
	for _, s := range all {
		if s.MinLength != nil && *s.MinLength > minLen {
			minLen, origin = *s.MinLength, s
		}
		if s.MaxLength != nil && (maxLen < 0 || *s.MaxLength < maxLen) {
			maxLen, origin = *s.MaxLength, s
		}
		if s.Pattern != nil {
			patterns = append(patterns, s.Pattern.String())
		}
		if s.Format != nil && format == "" {
			format = s.Format.Name
		}
		if origin == nil {
			origin = s
		}
	}
	if maxLen >= 0 && minLen > maxLen {
		return nil, g.contradiction(origin, "minLength %d is greater than maxLength %d", minLen, maxLen)
	}
	fits := func(c string) bool {
		n := utf8.RuneCountInString(c)
		return n >= minLen && (maxLen < 0 || n <= maxLen) && validAll(all, c)
	}
	var cands []string
	if vals, ok := formatValues[format]; ok {
		for _, i := range g.order(len(vals)) {
			cands = append(cands, vals[i])
		}
	}
	for _, p := range patterns {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			continue
		}
		re = re.Simplify()
		for i := range 30 {
			var b strings.Builder
			rg := regexGen{rng: g.rng, typical: g.typical && i == 0, budget: 4096}
			if rg.gen(&b, re) {
				cands = append(cands, b.String())
			}
		}
	}
	if format == "" && len(patterns) == 0 {
		w := "example"
		if !g.typical {
			w = words[g.rng.IntN(len(words))] + " " + words[g.rng.IntN(len(words))]
		}
		cands = append(cands, w)
	}
	for _, c := range cands {
		if fits(c) {
			return c, nil
		}
		// Pad or cut to the length bounds (a pattern-free string only).
		if len(patterns) == 0 && format == "" {
			r := []rune(c)
			for len(r) < minLen {
				r = append(r, 'x')
			}
			if maxLen >= 0 && len(r) > maxLen {
				r = r[:maxLen]
			}
			if fits(string(r)) {
				return string(r), nil
			}
		}
	}
	switch {
	case len(patterns) > 0:
		return nil, &genError{ptr: g.where(origin), msg: fmt.Sprintf("cannot build a string matching the pattern %s within the length and format limits", strings.Join(patterns, " and "))}
	case format != "":
		if _, ok := formatValues[format]; !ok {
			return nil, &genError{ptr: g.where(origin), msg: fmt.Sprintf("cannot build a value of the format %q", format), final: true}
		}
		return nil, g.contradiction(origin, "no %s fits the length limits %d..%d", format, minLen, maxLen)
	}
	return nil, &genError{ptr: g.where(origin), msg: "cannot build a string meeting the constraints"}
}

// array builds an array meeting item, count, uniqueness and contains
// constraints.
func (g *generator) array(all []*jsonschema.Schema, depth int) (any, error) {
	minItems, maxItems := 0, -1
	unique := false
	var prefix [][]*jsonschema.Schema
	var rest []*jsonschema.Schema
	restForbidden := false
	var contains []*jsonschema.Schema
	minContains, maxContains := -1, -1
	var origin *jsonschema.Schema
	addPrefix := func(i int, s *jsonschema.Schema) {
		for len(prefix) <= i {
			prefix = append(prefix, nil)
		}
		prefix[i] = append(prefix[i], s)
	}
	for _, s := range all {
		if origin == nil {
			origin = s
		}
		if s.MinItems != nil && *s.MinItems > minItems {
			minItems, origin = *s.MinItems, s
		}
		if s.MaxItems != nil && (maxItems < 0 || *s.MaxItems < maxItems) {
			maxItems, origin = *s.MaxItems, s
		}
		unique = unique || s.UniqueItems
		for i, p := range s.PrefixItems {
			addPrefix(i, p)
		}
		if s.Items2020 != nil {
			rest = append(rest, s.Items2020)
		}
		switch it := s.Items.(type) {
		case *jsonschema.Schema:
			rest = append(rest, it)
		case []*jsonschema.Schema:
			for i, p := range it {
				addPrefix(i, p)
			}
			switch ai := s.AdditionalItems.(type) {
			case bool:
				restForbidden = restForbidden || !ai
			case *jsonschema.Schema:
				rest = append(rest, ai)
			}
		}
		if s.Contains != nil {
			contains = append(contains, s.Contains)
			if s.MinContains != nil && *s.MinContains > minContains {
				minContains = *s.MinContains
			}
			if s.MaxContains != nil && (maxContains < 0 || *s.MaxContains < maxContains) {
				maxContains = *s.MaxContains
			}
		}
	}
	if len(contains) > 0 && minContains < 0 {
		minContains = 1
	}
	for _, r := range rest {
		if r.Bool != nil && !*r.Bool {
			restForbidden = true
		}
	}
	if maxItems >= 0 && minItems > maxItems {
		return nil, g.contradiction(origin, "minItems %d is greater than maxItems %d", minItems, maxItems)
	}
	if restForbidden && minItems > len(prefix) {
		return nil, g.contradiction(origin, "minItems %d needs more items than the %d the schema allows", minItems, len(prefix))
	}
	n := minItems
	switch {
	case depth >= genSoftDepth: // deep (often recursive): the minimum
	case g.typical:
		n = max(n, 1)
	default:
		n += g.rng.IntN(4)
	}
	if maxContains >= 0 && minContains > maxContains {
		return nil, g.contradiction(origin, "minContains %d is greater than maxContains %d", minContains, maxContains)
	}
	if len(contains) > 0 {
		n = max(n, minContains)
		if maxContains >= 0 { // extra items might match "contains" too
			n = max(minItems, minContains)
		}
	}
	if maxItems >= 0 && n > maxItems {
		n = maxItems
	}
	if restForbidden && n > len(prefix) {
		n = len(prefix)
	}
	out := make([]any, 0, n)
	seen := map[string]bool{}
	itemConj := func(i int) []*jsonschema.Schema {
		if i < len(prefix) {
			return prefix[i]
		}
		return rest
	}
	for i := 0; i < n; i++ {
		v, err := g.item(itemConj(i), unique, seen, depth)
		if err != nil {
			if i >= minItems {
				break // optional items: stop here
			}
			return nil, err
		}
		out = append(out, v)
	}
	if minContains <= 0 {
		return out, nil
	}
	// Make the first minContains items (or as many as may change) match
	// "contains".
	matched := 0
	for _, v := range out {
		if validAll(contains, v) {
			matched++
		}
	}
	for i := 0; i < len(out) && matched < minContains; i++ {
		if validAll(contains, out[i]) {
			continue
		}
		conj := append(append([]*jsonschema.Schema(nil), itemConj(i)...), contains...)
		if v, err := g.item(conj, unique, seen, depth); err == nil {
			out[i] = v
			matched++
		}
	}
	if matched < minContains {
		return nil, &genError{ptr: g.where(origin), msg: "no item can satisfy \"contains\" together with the item schemas"}
	}
	return out, nil
}

// item builds one array item; with unique it differs from those in seen.
func (g *generator) item(conj []*jsonschema.Schema, unique bool, seen map[string]bool, depth int) (any, error) {
	for try := range 12 {
		saved := g.typical
		if try > 0 {
			g.typical = false // typical mode makes the same value each time
		}
		v, err := g.value(conj, depth+1)
		g.typical = saved
		if err != nil {
			return nil, err
		}
		key := jsonText(v, -1)
		if !unique || !seen[key] {
			seen[key] = true
			return v, nil
		}
	}
	return nil, &genError{msg: "cannot build enough distinct items for uniqueItems"}
}

// object builds an object with every required property and (for typical
// examples) every declared one, or a random choice of the optional ones.
func (g *generator) object(all []*jsonschema.Schema, depth int) (any, error) {
	props := map[string][]*jsonschema.Schema{}
	var names []string
	required := map[string]bool{}
	var reqOrder []string
	closed := false
	var additional []*jsonschema.Schema
	minProps, maxProps := 0, -1
	var origin *jsonschema.Schema
	for _, s := range all {
		if origin == nil {
			origin = s
		}
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, ok := props[k]; !ok {
				names = append(names, k)
			}
			props[k] = append(props[k], s.Properties[k])
		}
		for _, r := range s.Required {
			if !required[r] {
				required[r] = true
				reqOrder = append(reqOrder, r)
			}
		}
		switch ap := s.AdditionalProperties.(type) {
		case bool:
			closed = closed || !ap
		case *jsonschema.Schema:
			if ap.Bool != nil && !*ap.Bool {
				closed = true
			} else {
				additional = append(additional, ap)
			}
		}
		if s.MinProperties != nil && *s.MinProperties > minProps {
			minProps = *s.MinProperties
		}
		if s.MaxProperties != nil && (maxProps < 0 || *s.MaxProperties < maxProps) {
			maxProps = *s.MaxProperties
		}
	}
	if maxProps >= 0 && minProps > maxProps {
		return nil, g.contradiction(origin, "minProperties %d is greater than maxProperties %d", minProps, maxProps)
	}
	if maxProps >= 0 && len(reqOrder) > maxProps {
		return nil, g.contradiction(origin, "%d properties are required but maxProperties is %d", len(reqOrder), maxProps)
	}
	// Keep the author's order where the source shows it.
	names = g.declaredOrder(all, names)
	out := map[string]any{}
	build := func(name string, conj []*jsonschema.Schema, req bool) error {
		v, err := g.value(conj, depth+1)
		if err != nil {
			if req {
				return err
			}
			return nil
		}
		out[name] = v
		return nil
	}
	for _, name := range reqOrder {
		conj := props[name]
		if conj == nil {
			if closed {
				return nil, g.contradiction(origin, "property %q is required but not allowed (additionalProperties is false)", name)
			}
			conj = additional
		}
		if err := build(name, conj, true); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		if required[name] {
			continue
		}
		if maxProps >= 0 && len(out) >= maxProps {
			break
		}
		include := depth < genSoftDepth && (g.typical || g.rng.IntN(2) == 0)
		if !include && len(out) >= minProps {
			continue
		}
		if err := build(name, props[name], false); err != nil {
			return nil, err
		}
	}
	for i := 1; len(out) < minProps && !closed && i < minProps+10; i++ {
		name := "extra" + strconv.Itoa(i)
		if _, ok := out[name]; ok {
			continue
		}
		if err := build(name, additional, false); err != nil {
			return nil, err
		}
	}
	if len(out) < minProps {
		return nil, g.contradiction(origin, "minProperties %d cannot be met with the properties allowed", minProps)
	}
	// Dependent requirements: add what present properties pull in.
	for _, s := range all {
		for p, deps := range s.DependentRequired {
			if _, ok := out[p]; !ok {
				continue
			}
			for _, d := range deps {
				if _, ok := out[d]; ok {
					continue
				}
				conj := props[d]
				if conj == nil {
					conj = additional
				}
				if err := build(d, conj, true); err != nil {
					return nil, err
				}
			}
		}
	}
	o := newObject()
	for _, name := range names {
		if v, ok := out[name]; ok {
			o.set(name, v)
		}
	}
	extra := make([]string, 0, len(out))
	for name := range out {
		if _, ok := o.get(name); !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		o.set(name, out[name])
	}
	return o, nil
}

// declaredOrder sorts names as the schema source lists them (compiled
// schemas keep properties in a map; the ordered source remembers).
func (g *generator) declaredOrder(all []*jsonschema.Schema, names []string) []string {
	rank := map[string]int{}
	for _, s := range all {
		rest, ok := strings.CutPrefix(s.Location, g.base+"#")
		if !ok {
			continue
		}
		node, ok := resolveOrdered(g.doc, rest)
		if !ok {
			continue
		}
		o, _ := node.(*object)
		if o == nil {
			continue
		}
		ps, _ := o.vals["properties"].(*object)
		if ps == nil {
			continue
		}
		for _, k := range ps.keys {
			if _, ok := rank[k]; !ok {
				rank[k] = len(rank)
			}
		}
	}
	sort.SliceStable(names, func(i, j int) bool {
		ri, iok := rank[names[i]]
		rj, jok := rank[names[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return false
	})
	return names
}

// resolveOrdered walks a JSON pointer through an ordered document.
func resolveOrdered(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, t := range strings.Split(ptr[1:], "/") {
		t = unescapeToken(t)
		switch x := doc.(type) {
		case *object:
			v, ok := x.get(t)
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			doc = x[i]
		default:
			return nil, false
		}
	}
	return doc, true
}
