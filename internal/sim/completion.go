package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file serves the completion endpoints that prefill mode uses:
// OpenAI-compatible POST /v1/completions and Ollama's POST /api/generate
// with raw true. The prompt follows internal/prefill's convention: the
// instructions (schema between <json-schema> tags, the fenced document),
// then completionMarker, then the JSON written so far. The simulated model
// finds where that JSON stands (inside a string, after a key, after an
// array element), continues it from the value it would give for the whole
// document, and runs on past the value as a model does; the stop sequences
// cut it. The profile's Completion faults spoil some continuations.

// completionMarker separates the instructions from the JSON written so far.
const completionMarker = "\nJSON:\n"

// completionRequest is a completion request of either API.
type completionRequest struct {
	model     string
	prompt    string
	stop      []string
	maxTokens int
}

// isCompletionPath reports the completion routes.
func isCompletionPath(path string) bool {
	return path == "/v1/completions" || path == "/api/generate"
}

// stringList reads a string or a list of strings (OpenAI's prompt and
// stop accept both).
type oneOrMany []string

func (o *oneOrMany) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		*o = list
		return nil
	}
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s != nil {
		*o = []string{*s}
	}
	return nil
}

func parseCompletion(a api, body []byte) (*completionRequest, *apiError) {
	if a == apiOllama {
		var req struct {
			Model   string `json:"model"`
			Prompt  string `json:"prompt"`
			Raw     bool   `json:"raw"`
			Stream  *bool  `json:"stream"`
			Options struct {
				NumPredict int       `json:"num_predict"`
				Stop       oneOrMany `json:"stop"`
			} `json:"options"`
		}
		if e := decodeBody(body, &req); e != nil {
			return nil, e
		}
		switch {
		case req.Model == "":
			return nil, invalid("model is required")
		case !req.Raw:
			return nil, invalid("the simulator serves /api/generate with raw true only (prefill mode); use /api/chat for chat")
		case req.Stream == nil || *req.Stream:
			return nil, invalid("the simulator does not stream /api/generate; send stream false")
		}
		return &completionRequest{model: req.Model, prompt: req.Prompt, stop: req.Options.Stop, maxTokens: req.Options.NumPredict}, nil
	}
	var req struct {
		Model     string    `json:"model"`
		Prompt    oneOrMany `json:"prompt"`
		Stop      oneOrMany `json:"stop"`
		MaxTokens int       `json:"max_tokens"`
		Stream    bool      `json:"stream"`
	}
	if e := decodeBody(body, &req); e != nil {
		return nil, e
	}
	switch {
	case req.Model == "":
		return nil, invalid("you must provide a model parameter")
	case len(req.Prompt) != 1:
		return nil, invalid("the simulator answers one prompt per request")
	case req.Stream:
		return nil, invalid("the simulator does not stream completions; send stream false")
	case len(req.Stop) > 4:
		return nil, invalid("stop: at most 4 sequences")
	}
	return &completionRequest{model: req.Model, prompt: req.Prompt[0], stop: req.Stop, maxTokens: req.MaxTokens}, nil
}

// serveCompletion answers a completion request: continuation, rate
// limits, transport faults, latency, then the reply.
func (s *Server) serveCompletion(ctx context.Context, w http.ResponseWriter, a api, body []byte) {
	req, aerr := parseCompletion(a, body)
	if aerr != nil {
		s.fail(w, a, aerr, nil)
		return
	}
	now := s.now()
	instr, prefix, marked := cutLast(req.prompt, completionMarker)
	pr := readPrompt([]message{{role: roleUser, text: instr}})
	reask := strings.Contains(instr, "was rejected")
	if reask {
		s.c.reasks.Add(1)
	}
	// Keyed by what varies between a document's calls (the JSON so far and
	// any feedback after the document), not the fence's random nonce, so a
	// run is reproducible.
	key := mix(mix(s.seed, pr.docHash), fnv64a(afterFence(instr)+"\x00"+prefix))
	var try uint64
	if s.random {
		try = uint64(s.tries.peek(key))
	}
	r := newRNG(key, try)
	d := s.draw(r, reask)
	text := "I can only continue JSON after the marker line \"JSON:\"."
	var applied []faultID
	if marked {
		sh := &shape{}
		if pr.schemaText != "" {
			sh = s.shapes.getString(srcPrompt, pr.schemaText)
			if sh.err != nil {
				sh = s.generic
			}
		}
		truth, err := sh.value(s.seed, pr.docHash, pr.document)
		if err != nil {
			s.fail(w, a, invalid("%v", err), nil)
			return
		}
		fixed := reask && r.unit() < s.prof.FixProbability
		text, applied = s.continueJSON(prefix, truth, sh, r, fixed)
	}
	finish := "stop"
	if cut, ok := cutStops(text, req.stop); ok && !(len(applied) > 0 && applied[len(applied)-1] == fOverrunStop) {
		text = cut
	}
	promptTok := tokens(len(req.prompt))
	compTok := tokens(len(text))
	if req.maxTokens > 0 && compTok > req.maxTokens {
		text, finish, compTok = cutText(text, req.maxTokens*4), "length", req.maxTokens
	}
	var st *limitState
	if s.limits != nil {
		lst, ok := s.limits.take(now, promptTok+compTok)
		st = &lst
		if !ok {
			s.fail(w, a, rateLimitError(&lst, req.model, promptTok+compTok), st)
			return
		}
	}
	if s.random {
		s.tries.commit(key, uint32(try))
	}
	if s.transportFault(ctx, w, a, d.transport, st) {
		return
	}
	if lat := s.latency(compTok, r); lat > 0 {
		if err := s.wait(ctx, lat); err != nil {
			if errors.Is(err, errClosed) {
				s.fail(w, a, shuttingDown(), st)
			}
			return
		}
	}
	for _, f := range applied {
		s.c.faults[f].Add(1)
	}
	s.c.prompt.Add(int64(promptTok))
	s.c.completion.Add(int64(compTok))
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	var err error
	if a == apiOllama {
		err = marshal(buf, map[string]any{
			"model": req.model, "created_at": now.UTC().Format(time.RFC3339Nano), "response": text,
			"done": true, "done_reason": finish, "prompt_eval_count": promptTok, "eval_count": compTok,
		})
	} else {
		err = marshal(buf, map[string]any{
			"id": fmt.Sprintf("cmpl-%016x", mix(key, try)), "object": "text_completion", "created": now.Unix(), "model": req.model,
			"choices": []any{map[string]any{"index": 0, "text": text, "finish_reason": finish, "logprobs": nil}},
			"usage":   map[string]any{"prompt_tokens": promptTok, "completion_tokens": compTok, "total_tokens": promptTok + compTok},
		})
	}
	if err != nil {
		s.fail(w, a, &apiError{status: 500, kind: errServer, msg: "simulator could not encode its reply: " + err.Error()}, st)
		return
	}
	s.send(w, 200, "application/json", buf.Bytes(), st, now)
}

// afterFence is the instructions after the document's closing fence line.
func afterFence(instr string) string {
	i := strings.LastIndex(instr, "</document-")
	if i < 0 {
		return instr
	}
	rest := instr[i:]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		return rest[j+1:]
	}
	return ""
}

// cutLast splits s at the last occurrence of sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// cutStops cuts text at the first stop sequence, as a server does.
func cutStops(text string, stops []string) (string, bool) {
	best := -1
	for _, st := range stops {
		if st == "" {
			continue
		}
		if i := strings.Index(text, st); i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return text, false
	}
	return text[:best], true
}

// step is one step of a concrete path: an object key or an array index.
type step struct {
	key   string
	index int
	array bool
}

// position is where a partial JSON text stands.
type position struct {
	path []step
	// what comes next: a value, more string content, or an array's
	// separator (after an element, or right after "[").
	want    wantKind
	partial string // string content written so far (JSON-escaped form)
}

type wantKind uint8

const (
	wantOther  wantKind = iota
	wantValue           // after "key": or "," in an array
	wantString          // inside an open string value
	wantFirst           // right after "[": an element or "]"
	wantSep             // after an array element: "," or "]"
)

// locate scans a partial JSON text.
func locate(prefix string) position {
	type frame struct {
		array   bool
		key     string
		index   int
		haveKey bool
	}
	var stack []frame
	want := wantValue
	inString, isKey := false, false
	var str strings.Builder
	escape := false
	afterValue := func() {
		want = wantOther
		if n := len(stack); n > 0 && stack[n-1].array {
			want = wantSep
		}
	}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		if inString {
			switch {
			case escape:
				escape = false
				str.WriteByte(c)
			case c == '\\':
				escape = true
				str.WriteByte(c)
			case c == '"':
				inString = false
				if isKey {
					var k string
					_ = json.Unmarshal([]byte(`"`+str.String()+`"`), &k)
					stack[len(stack)-1].key, stack[len(stack)-1].haveKey = k, true
					want = wantOther
				} else {
					afterValue()
				}
			default:
				str.WriteByte(c)
			}
			continue
		}
		switch c {
		case '"':
			inString, escape = true, false
			str.Reset()
			isKey = len(stack) > 0 && !stack[len(stack)-1].array && !stack[len(stack)-1].haveKey
		case '{':
			stack = append(stack, frame{})
			want = wantOther
		case '[':
			stack = append(stack, frame{array: true})
			want = wantFirst
		case ':':
			want = wantValue
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].array {
					stack[n-1].index++
					want = wantValue
				} else {
					stack[n-1].haveKey = false
					want = wantOther
				}
			}
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			afterValue()
		case ' ', '\t', '\r', '\n':
		default:
			// a literal or number: skip to its end
			for i+1 < len(prefix) && !strings.ContainsRune(",}] \t\r\n", rune(prefix[i+1])) {
				i++
			}
			afterValue()
		}
	}
	var pos position
	for _, f := range stack {
		if f.array {
			pos.path = append(pos.path, step{index: f.index, array: true})
		} else if f.haveKey {
			pos.path = append(pos.path, step{key: f.key})
		}
	}
	switch {
	case inString && !isKey:
		pos.want, pos.partial = wantString, str.String()
	case (want == wantSep || want == wantFirst) && len(pos.path) == 0:
		pos.want = wantOther
	default:
		pos.want = want
	}
	return pos
}

// at finds the value at a concrete path; ok is false when it is absent.
func at(v any, path []step) (any, bool) {
	for _, st := range path {
		switch x := v.(type) {
		case map[string]any:
			nv, ok := x[st.key]
			if !ok || st.array {
				return nil, false
			}
			v = nv
		case []any:
			if !st.array || st.index >= len(x) {
				return nil, false
			}
			v = x[st.index]
		default:
			return nil, false
		}
	}
	return v, true
}

// continueJSON writes what the model continues the prefix with: the rest
// of the value it means, then on past it as a model does (the stop
// sequences are expected to cut there). The small model's faults apply
// unless fixed (a re-ask it got right).
func (s *Server) continueJSON(prefix string, truth any, sh *shape, r *rng, fixed bool) (string, []faultID) {
	pos := locate(prefix)
	c := s.prof.Completion
	u := [3]float64{r.unit(), r.unit(), r.unit()}
	var applied []faultID
	if !fixed && u[0] < c.OverrunStop {
		applied = append(applied, fOverrunStop)
	}
	const tail = `, "note": "see above"}`
	switch pos.want {
	case wantSep, wantFirst:
		// The path ends at the array's current element: index 0 right
		// after "[", the element just written after one.
		path := pos.path
		arr, _ := at(truth, path[:len(path)-1])
		list, _ := arr.([]any)
		next := path[len(path)-1].index
		if pos.want == wantSep {
			next++
		}
		if next >= len(list) {
			return "]" + tail, applied
		}
		el, _ := encodeJSON(list[next])
		if pos.want == wantSep {
			return ", " + el + tail, applied
		}
		return el + tail, applied
	case wantString:
		v, _ := at(truth, pos.path)
		str, ok := v.(string)
		if !ok {
			str = fmt.Sprint(v)
		}
		enc, _ := encodeJSON(str)
		body := enc[1 : len(enc)-1]
		body = strings.TrimPrefix(body, pos.partial)
		return body + `"` + tail, applied
	case wantValue:
		v, ok := at(truth, pos.path)
		if !ok {
			return " null" + tail, applied
		}
		if !fixed {
			if num, isNum := v.(json.Number); isNum && u[1] < c.NumberWords {
				if words, ok := numberWords(num); ok {
					return " " + words + tail, append(applied, fNumberWords)
				}
			}
			if str, isStr := v.(string); isStr && c.EnumOutside > 0 && u[2] < c.EnumOutside {
				for _, e := range sh.enums {
					if matchPath(pos.path, e.path) {
						alt := strings.ToLower(str) + "s"
						return " " + strconv.Quote(alt) + tail, append(applied, fEnumOutside)
					}
				}
			}
		}
		enc, _ := encodeJSON(v)
		return " " + enc + tail, applied
	}
	return "}", applied
}

// matchPath reports whether a concrete path is an enum field's path.
func matchPath(path []step, pattern []pathSeg) bool {
	if len(path) != len(pattern) {
		return false
	}
	for i, p := range pattern {
		if p.each != path[i].array || (!p.each && p.key != path[i].key) {
			return false
		}
	}
	return true
}

var (
	ones = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
		"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	tens = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
)

// numberWords writes a number as words, as small models sometimes do:
// "forty-two", "one thousand nine hundred", "twelve point five".
func numberWords(n json.Number) (string, bool) {
	whole, frac, _ := strings.Cut(n.String(), ".")
	i, err := strconv.Atoi(whole)
	if err != nil || i < 0 || i > 999999 {
		return "", false
	}
	w := intWords(i)
	if frac != "" && strings.Trim(frac, "0") != "" {
		w += " point"
		for _, d := range frac {
			w += " " + ones[d-'0']
		}
	}
	return w, true
}

func intWords(i int) string {
	switch {
	case i < 20:
		return ones[i]
	case i < 100:
		if i%10 == 0 {
			return tens[i/10]
		}
		return tens[i/10] + "-" + ones[i%10]
	case i < 1000:
		if i%100 == 0 {
			return ones[i/100] + " hundred"
		}
		return ones[i/100] + " hundred " + intWords(i%100)
	}
	if i%1000 == 0 {
		return intWords(i/1000) + " thousand"
	}
	return intWords(i/1000) + " thousand " + intWords(i%1000)
}
