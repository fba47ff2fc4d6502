package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Draft is the JSON Schema dialect a schema without "$schema" is read as.
type Draft string

// Supported drafts. A schema naming draft 4, 6 or 2019-09 in "$schema" is
// accepted too.
const (
	Draft7    Draft = "7"
	Draft2020 Draft = "2020-12"
)

// ParseDraft reads "7", "draft7", "2020-12" or "draft2020-12".
func ParseDraft(s string) (Draft, error) {
	switch strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "draft"), "-") {
	case "7", "07":
		return Draft7, nil
	case "2020-12", "2020":
		return Draft2020, nil
	}
	return "", fmt.Errorf("unknown draft %q: use 7 or 2020-12", s)
}

// Option configures compilation.
type Option func(*options)

type options struct {
	draft       Draft
	refDirs     []refDir
	formatsOff  bool
	file        string // where the schema came from, for messages and relative refs
	yamlHint    bool
	forceSchema bool   // never read the document as compact notation
	file2URL    string // the schema file's own URL (file://...), base for relative refs
}

type refDir struct{ prefix, dir string }

// WithDraft sets what a schema without "$schema" means (default 2020-12).
func WithDraft(d Draft) Option { return func(o *options) { o.draft = d } }

// WithRefDir resolves "$ref"s whose URL starts with prefix from files under
// dir: "https://example.com/schemas/" mapped to "./schemas" reads
// https://example.com/schemas/a/b.json from ./schemas/a/b.json. The network
// is never used; a reference that no mapping covers is an error naming it.
func WithRefDir(prefix, dir string) Option {
	return func(o *options) { o.refDirs = append(o.refDirs, refDir{prefix: prefix, dir: dir}) }
}

// WithFormatAssertion(false) leaves "format" to the dialect's own default
// (an assertion in draft 7, an annotation only in 2020-12), as the
// JSON-Schema-Test-Suite's required cases expect. By default extractq
// asserts formats in every draft: a "date" field must hold a date.
func WithFormatAssertion(on bool) Option { return func(o *options) { o.formatsOff = !on } }

// WithJSONSchema reads the document as a bare JSON Schema: no wrapper is
// removed and it is never taken for compact notation.
func WithJSONSchema() Option { return func(o *options) { o.forceSchema = true } }

// WithFileName names the schema's source in error messages (CompileFile
// sets it).
func WithFileName(name string) Option { return func(o *options) { o.file = name } }

// Schema is a compiled schema. It is immutable and safe for concurrent use.
type Schema struct {
	doc         any    // normalised JSON Schema, ordered
	plain       any    // the same as map[string]any, as the validator sees it
	body        []byte // doc as JSON
	fingerprint string
	name        string
	compiled    *jsonschema.Schema
	quick       *quick         // nil unless the schema is of the plain kind quick checks
	external    map[string]any // documents loaded through WithRefDir, by URL
	baseURL     string
	example     struct { // built once, on first use
		once sync.Once
		doc  json.RawMessage
		err  error
	}
	forms   sync.Map   // Form -> formResult, built on first use
	aliases aliasTable // x-aliases by schema location
	guide   struct {   // FieldGuide, built once
		once sync.Once
		text string
	}
}

// ErrInvalidSchema is matched (errors.Is) by every error that means the
// schema itself is wrong, as opposed to an instance failing it.
var ErrInvalidSchema = errors.New("invalid schema")

// Error is a problem with a schema: where it is (file and JSON pointer into
// the schema document) and what is wrong. errors.Is(err, ErrInvalidSchema)
// holds for every *Error.
type Error struct {
	File    string // the schema's source, "" when compiled from memory
	Pointer string // location inside the schema document, "" for the root
	Ref     string // the "$ref" that could not be resolved, if that is the problem
	Message string
	Err     error // the underlying cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Pointer != "" {
		b.WriteString("at ")
		b.WriteString(e.Pointer)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidSchema) true.
func (e *Error) Is(target error) bool { return target == ErrInvalidSchema }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// CompileFile compiles the schema in path (JSON or YAML; JSON Schema, a
// wrapper or compact notation). Relative "$ref"s resolve from the file's
// own folder.
func CompileFile(path string, opts ...Option) (*Schema, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Message: fmt.Sprintf("cannot read the schema file: %v", errors.Unwrap(err)), Err: err}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Message: err.Error(), Err: err}
	}
	ext := strings.ToLower(filepath.Ext(path))
	pre := []Option{WithFileName(path), func(o *options) {
		o.yamlHint = ext == ".yaml" || ext == ".yml"
		o.baseFile(abs)
	}}
	return Compile(src, append(pre, opts...)...)
}

// baseFile remembers the absolute path of the schema file; its folder is
// mapped so relative refs work.
func (o *options) baseFile(abs string) {
	dirURL := fileURL(filepath.Dir(abs)) + "/"
	o.refDirs = append(o.refDirs, refDir{prefix: dirURL, dir: filepath.Dir(abs)})
	o.file2URL = fileURL(abs)
}

func fileURL(abs string) string {
	return "file://" + filepath.ToSlash(abs)
}

// Compile compiles a schema: JSON or YAML holding a JSON Schema (draft 7 or
// 2020-12), OpenAI's response_format wrapper, a {name, schema, strict}
// wrapper, or compact notation (see doc.go).
func Compile(src []byte, opts ...Option) (*Schema, error) {
	o := options{draft: Draft2020}
	for _, f := range opts {
		f(&o)
	}
	fail := func(ptr, msg string, cause error) error {
		return &Error{File: o.file, Pointer: ptr, Message: msg, Err: cause}
	}
	doc, err := parseDocument(src, o.yamlHint)
	if err != nil {
		return nil, fail("", err.Error(), err)
	}
	u := unwrapped{body: doc}
	if !o.forceSchema {
		u = unwrap(doc)
	}
	body := u.body
	if o.forceSchema || looksLikeJSONSchema(body) {
		s, err := compileSchema(body, u, &o)
		if err == nil || o.forceSchema {
			return s, err
		}
		// Field names that happen to be keywords ({"items": [...]}):
		// the compact reading may be the intended one.
		if c, cerr := fromCompact(body); cerr == nil {
			if s, cerr := compileDoc(c, u, &o); cerr == nil {
				return s, nil
			}
		}
		return nil, err
	}
	c, err := fromCompact(body)
	if err != nil {
		var ce *compactError
		if errors.As(err, &ce) {
			return nil, fail(u.pointer+ce.pointer, "compact notation: "+ce.msg, err)
		}
		return nil, fail(u.pointer, err.Error(), err)
	}
	return compileDoc(c, u, &o)
}

// compileSchema compiles a document read as JSON Schema.
func compileSchema(body any, u unwrapped, o *options) (*Schema, error) {
	switch body.(type) {
	case *object, bool:
	default:
		return nil, &Error{File: o.file, Pointer: u.pointer, Message: fmt.Sprintf("a schema must be an object or a boolean, got %s", jsonText(body, 40))}
	}
	if obj, ok := body.(*object); ok && o.draft == Draft7 && !hasKey(obj, "$schema") {
		// Make the normalised schema self-describing.
		obj = clone(obj).(*object)
		obj.keys = append([]string{"$schema"}, obj.keys...)
		obj.vals["$schema"] = "http://json-schema.org/draft-07/schema#"
		body = obj
	}
	return compileDoc(body, u, o)
}

// maxSubschemas bounds the size of a schema: the validator's compile time
// grows with the square of it, and an extraction schema this large is a
// mistake (OpenAI allows 5000 properties in all).
const maxSubschemas = 10000

func countObjects(v any) int {
	switch t := v.(type) {
	case *object:
		n := 1
		for _, e := range t.vals {
			n += countObjects(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range t {
			n += countObjects(e)
		}
		return n
	}
	return 0
}

func compileDoc(body any, u unwrapped, o *options) (*Schema, error) {
	if n := countObjects(body); n > maxSubschemas {
		return nil, &Error{File: o.file, Pointer: u.pointer, Message: fmt.Sprintf("the schema is too large: %d objects, at most %d are accepted; split it or share definitions through $ref", n, maxSubschemas)}
	}
	plain := toPlain(body)
	base := o.file2URL
	if base == "" {
		base = memURL
	}
	ld := &localLoader{dirs: o.refDirs, loaded: map[string]any{}}
	c := jsonschema.NewCompiler()
	c.UseLoader(ld)
	c.UseRegexpEngine(compileRegexp)
	if !o.formatsOff {
		c.AssertFormat()
	}
	if o.draft == Draft7 {
		c.DefaultDraft(jsonschema.Draft7)
	} else {
		c.DefaultDraft(jsonschema.Draft2020)
	}
	if err := c.AddResource(base, plain); err != nil {
		return nil, compileError(err, plain, base, u.pointer, o.file)
	}
	compiled, err := c.Compile(base)
	if err != nil {
		return nil, compileError(err, plain, base, u.pointer, o.file)
	}
	bodyJSON, err := marshal(body)
	if err != nil {
		return nil, &Error{File: o.file, Message: err.Error(), Err: err}
	}
	aliases := aliasTable{}
	if err := collectAliases(plain, base, aliases); err != nil {
		e := err.(*Error)
		e.File, e.Pointer = o.file, u.pointer+e.Pointer
		return nil, e
	}
	for url, d := range ld.loaded {
		if err := collectAliases(d, url, aliases); err != nil {
			e := err.(*Error)
			e.File, e.Message = o.file, fmt.Sprintf("referenced document %s: at %s: %s", url, e.Pointer, e.Message)
			e.Pointer = ""
			return nil, e
		}
	}
	s := &Schema{
		aliases:  aliases,
		doc:      body,
		plain:    plain,
		body:     bodyJSON,
		compiled: compiled,
		external: ld.loaded,
		quick:    quickOf(plain, 0),
		baseURL:  base,
	}
	s.fingerprint = fingerprint(plain, ld.loaded)
	s.name = schemaName(u.name, body, o.file)
	return s, nil
}

const memURL = "mem:///schema.json"

// fingerprint hashes the canonical JSON (encoding/json sorts map keys) of
// the schema and of every document it references, so a change to a
// referenced file changes the fingerprint too.
func fingerprint(plain any, external map[string]any) string {
	h := sha256.New()
	b, _ := json.Marshal(plain)
	h.Write(b)
	urls := make([]string, 0, len(external))
	for u := range external {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	for _, u := range urls {
		eb, _ := json.Marshal(external[u])
		fmt.Fprintf(h, "\n%s\n%s", u, eb)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

var nameRe = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// schemaName picks the wrapper's name, else the schema's title, else the
// file's base name, made safe for provider APIs ([a-zA-Z0-9_-], at most 64).
func schemaName(wrapper string, body any, file string) string {
	cands := []string{wrapper}
	if o, ok := body.(*object); ok {
		cands = append(cands, stringOf(o, "title"))
	}
	if file != "" {
		base := filepath.Base(file)
		cands = append(cands, strings.TrimSuffix(base, filepath.Ext(base)))
	}
	for _, c := range cands {
		n := strings.Trim(nameRe.ReplaceAllString(c, "_"), "_")
		if len(n) > 64 {
			n = n[:64]
		}
		if n != "" {
			return n
		}
	}
	return "response"
}

// JSON returns the normalised JSON Schema: unwrapped, compact notation
// converted, the author's key order kept.
func (s *Schema) JSON() []byte { return s.body }

// Fingerprint is a canonical hash of the normalised schema and the
// documents it references, insensitive to key order and whitespace, e.g.
// "sha256:3f…".
func (s *Schema) Fingerprint() string { return s.fingerprint }

// Name is a provider-safe name for the schema ([a-zA-Z0-9_-], at most 64
// characters): the wrapper's name, else the title, else the file's base
// name, else "response".
func (s *Schema) Name() string { return s.name }

// WantsArray reports whether the schema expects a top-level array.
func (s *Schema) WantsArray() bool {
	sch := s.compiled
	for range 32 { // follow a chain of root $refs
		if sch.Types != nil && !sch.Types.IsEmpty() {
			array := false
			for _, t := range sch.Types.ToStrings() {
				switch t {
				case "array":
					array = true
				case "null":
				default:
					return false
				}
			}
			return array
		}
		if sch.Ref == nil {
			break
		}
		sch = sch.Ref
	}
	return sch.Items2020 != nil || sch.PrefixItems != nil || sch.Items != nil
}

// compileRegexp compiles a pattern with Go's RE2 engine, whose matching
// time is linear in the input. Patterns RE2 cannot express (lookaround,
// backreferences: ECMA 262 features JSON Schema allows) fall back to an
// ECMAScript-compatible backtracking engine whose every match is bounded by
// a timeout, so a hostile pattern cannot stall a worker.
func compileRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(s)
	if err == nil {
		return re, nil
	}
	re2, err2 := regexp2.Compile(s, regexp2.ECMAScript)
	if err2 != nil {
		return nil, errors.New(regexErr(err))
	}
	re2.MatchTimeout = regexMatchTimeout
	return ecmaRegexp{re2}, nil
}

// regexMatchTimeout bounds one match of a backtracking pattern; a match
// that runs out of time counts as no match.
const regexMatchTimeout = 100 * time.Millisecond

type ecmaRegexp struct{ re *regexp2.Regexp }

func (r ecmaRegexp) MatchString(s string) bool {
	ok, err := r.re.MatchString(s)
	return ok && err == nil
}

func (r ecmaRegexp) String() string { return r.re.String() }

// regexErr shortens Go's regexp error to its reason.
func regexErr(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

// compileError turns the validator's compile errors into *Error with the
// location inside the schema document.
func compileError(err error, doc any, base, wrapPtr, file string) error {
	e := &Error{File: file, Err: err}
	where := func(u string) string {
		_, frag, _ := strings.Cut(u, "#")
		return wrapPtr + frag
	}
	var (
		sve  *jsonschema.SchemaValidationError
		rxe  *jsonschema.InvalidRegexError
		lue  *jsonschema.LoadURLError
		jpe  *jsonschema.JSONPointerNotFoundError
		ane  *jsonschema.AnchorNotFoundError
		ude  *jsonschema.UnsupportedDraftError
		dide *jsonschema.DuplicateIDError
		pue  *jsonschema.ParseURLError
		pide *jsonschema.ParseIDError
	)
	switch {
	case errors.As(err, &sve):
		e.Message = "not a valid JSON Schema"
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			var inst any
			if u, _, _ := strings.Cut(sve.URL, "#"); u == base {
				inst = doc // the values are quoted from the schema itself
			}
			vs := violations(ve, inst, nil)
			if len(vs) > 0 {
				e.Pointer = wrapPtr + vs[0].Pointer
				parts := make([]string, 0, len(vs))
				for i, v := range vs {
					if i == 4 {
						parts = append(parts, fmt.Sprintf("and %d more", len(vs)-i))
						break
					}
					p := v.Message
					if i > 0 || wrapPtr+v.Pointer != e.Pointer {
						p = "at " + wrapPtr + v.Pointer + ": " + p
					}
					if v.Value != "" && v.Keyword != "required" {
						p += " (got " + v.Value + ")"
					}
					parts = append(parts, p)
				}
				e.Message = strings.Join(parts, "; ")
			}
		}
		if !strings.HasPrefix(sve.URL, base) {
			e.Message = fmt.Sprintf("referenced document %s: %s", sve.URL, e.Message)
		}
	case errors.As(err, &rxe):
		e.Pointer = where(rxe.URL)
		e.Message = fmt.Sprintf("bad regular expression %q: %v", rxe.Regex, rxe.Err)
	case errors.As(err, &lue):
		e.Ref = lue.URL
		if p, ok := findRef(doc, lue.URL, ""); ok {
			e.Pointer = wrapPtr + p
		}
		e.Message = fmt.Sprintf("cannot resolve $ref %q: %v", lue.URL, lue.Err)
	case errors.As(err, &jpe):
		e.Ref = jpe.URL
		if p, ok := findRef(doc, jpe.URL, ""); ok {
			e.Pointer = wrapPtr + p
		}
		e.Message = fmt.Sprintf("cannot resolve $ref %q: no such location in the document", refText(jpe.URL, base))
	case errors.As(err, &ane):
		e.Ref = ane.Reference
		e.Message = fmt.Sprintf("cannot resolve $ref %q: no such anchor", refText(ane.Reference, base))
	case errors.As(err, &ude):
		e.Message = fmt.Sprintf("unsupported $schema %q: use draft 7 or 2020-12", ude.URL)
	case errors.As(err, &dide):
		e.Pointer = wrapPtr + dide.Ptr1
		e.Message = fmt.Sprintf("duplicate $id %q (also at %s)", dide.ID, wrapPtr+dide.Ptr2)
	case errors.As(err, &pue):
		e.Message = fmt.Sprintf("bad URL %q: %v", pue.URL, pue.Err)
	case errors.As(err, &pide):
		e.Message = fmt.Sprintf("bad $id %q", pide.URL)
	default:
		e.Message = strings.ReplaceAll(err.Error(), base, "schema")
	}
	return e
}

// findRef finds where the schema holds a "$ref" that resolves to url, to
// locate an unresolvable reference.
func findRef(doc any, url, ptr string) (string, bool) {
	switch t := doc.(type) {
	case map[string]any:
		if r, ok := t["$ref"].(string); ok && refMatches(r, url) {
			return joinPointer(ptr, "$ref"), true
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := findRef(t[k], url, joinPointer(ptr, k)); ok {
				return p, true
			}
		}
	case []any:
		for i, e := range t {
			if p, ok := findRef(e, url, joinPointer(ptr, strconv.Itoa(i))); ok {
				return p, true
			}
		}
	}
	return "", false
}

// refMatches reports whether the reference r (as written) may resolve to url.
func refMatches(r, url string) bool {
	target, tfrag, _ := strings.Cut(url, "#")
	rdoc, rfrag, _ := strings.Cut(r, "#")
	if rdoc != "" {
		return strings.HasSuffix(target, rdoc) && (tfrag == "" || tfrag == rfrag)
	}
	return tfrag != "" && tfrag == rfrag
}

// refText shows a reference relative to the schema when it points into it.
func refText(u, base string) string {
	if rest, ok := strings.CutPrefix(u, base); ok {
		return rest
	}
	return u
}

// localLoader serves referenced documents from mapped folders only.
type localLoader struct {
	dirs   []refDir
	loaded map[string]any
}

// Load implements jsonschema.URLLoader.
func (l *localLoader) Load(url string) (any, error) {
	best := -1
	for i, d := range l.dirs {
		if strings.HasPrefix(url, d.prefix) && (best < 0 || len(d.prefix) > len(l.dirs[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return nil, fmt.Errorf("no local folder is mapped for it; map its URL prefix to a folder with --ref-dir PREFIX=DIR (schema.WithRefDir); extractq never fetches schemas over the network")
	}
	d := l.dirs[best]
	rel := strings.TrimPrefix(url, d.prefix)
	rel, _, _ = strings.Cut(rel, "#")
	rel, _, _ = strings.Cut(rel, "?")
	path := filepath.Join(d.dir, filepath.FromSlash(rel))
	if r, err := filepath.Rel(d.dir, path); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("resolves outside the folder %s mapped for %s", d.dir, d.prefix)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mapped to %s, which cannot be read: %w", path, err)
	}
	ext := strings.ToLower(filepath.Ext(path))
	doc, err := parseDocument(src, ext == ".yaml" || ext == ".yml")
	if err != nil {
		return nil, fmt.Errorf("mapped to %s: %w", path, err)
	}
	plain := toPlain(doc)
	l.loaded[url] = plain
	return plain, nil
}

// ValidateJSON parses data and validates it. The error is non-nil only when
// data is not JSON.
func (s *Schema) ValidateJSON(data []byte) ([]Violation, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v), nil
}

// Validate validates a value decoded from JSON with numbers as json.Number
// (as jsonschema.UnmarshalJSON or a json.Decoder with UseNumber produce).
// A nil result means valid.
func (s *Schema) Validate(v any) []Violation {
	if s.quick != nil && s.quick.valid(v) {
		return nil
	}
	err := s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Keyword: "error", Message: "cannot be validated: " + err.Error()}}
	}
	return violations(ve, v, s)
}
