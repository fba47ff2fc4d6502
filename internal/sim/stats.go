package sim

import "sync/atomic"

// Fault is one kind of misbehaviour the simulator injects; Stats counts
// them by these names.
type Fault string

// Transport faults.
const (
	FaultStatus500 Fault = "status_500"
	FaultStatus503 Fault = "status_503"
	FaultStatus529 Fault = "status_529"
	FaultTimeout   Fault = "timeout"
	FaultDrop      Fault = "drop"
)

// Output faults.
const (
	FaultCodeFence       Fault = "code_fence"
	FaultProse           Fault = "prose"
	FaultTrailingComma   Fault = "trailing_comma"
	FaultSingleQuotes    Fault = "single_quotes"
	FaultMissingRequired Fault = "missing_required"
	FaultWrongType       Fault = "wrong_type"
	FaultEnumOutside     Fault = "enum_outside"
	FaultExtraField      Fault = "extra_field"
	FaultTruncation      Fault = "truncation"
	FaultRefusal         Fault = "refusal"
)

// Completion faults (prefill mode's /v1/completions and /api/generate; an
// enum value outside the list counts as FaultEnumOutside).
const (
	// FaultOverrunStop: the answer runs past a stop sequence the server
	// should have cut at.
	FaultOverrunStop Fault = "overrun_stop"
	// FaultNumberWords: a number written as words ("forty-two").
	FaultNumberWords Fault = "number_words"
)

// allFaults lists the faults in faultID order.
var allFaults = [...]Fault{
	FaultStatus500, FaultStatus503, FaultStatus529, FaultTimeout, FaultDrop,
	FaultCodeFence, FaultProse, FaultTrailingComma, FaultSingleQuotes,
	FaultMissingRequired, FaultWrongType, FaultEnumOutside, FaultExtraField,
	FaultTruncation, FaultRefusal, FaultOverrunStop, FaultNumberWords,
}

type faultID uint8

const (
	fStatus500 faultID = iota
	fStatus503
	fStatus529
	fTimeout
	fDrop
	fCodeFence
	fProse
	fTrailingComma
	fSingleQuotes
	fMissingRequired
	fWrongType
	fEnumOutside
	fExtraField
	fTruncation
	fRefusal
	fOverrunStop
	fNumberWords
	numFaults
)

func (f faultID) String() string { return string(allFaults[f]) }

// Route names used in Stats.ByRoute.
const (
	RouteOpenAI    = "openai"
	RouteAnthropic = "anthropic"
	RouteOllama    = "ollama"
	RouteGemini    = "gemini"
	RouteUnknown   = "unknown"
)

// Stats is what the simulator did since it started or was last reset.
type Stats struct {
	Requests int64 `json:"requests"`
	// ByRoute counts API requests by the API they addressed (RouteOpenAI…).
	ByRoute map[string]int64 `json:"by_route"`
	// ByStatus counts responses by HTTP status; dropped connections and
	// requests the client abandoned have none.
	ByStatus map[int]int64 `json:"by_status"`
	// Faults counts injected faults by kind (every kind is listed).
	Faults map[Fault]int64 `json:"faults"`
	// RateLimited counts 429 answers.
	RateLimited int64 `json:"rate_limited"`
	// Reasks counts requests that carried a failed answer and feedback.
	Reasks           int64 `json:"reasks"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// Batches counts batches created, OpenAI batches that failed (for the
	// enqueued-token limit or validation) included; BatchesRejected counts
	// batches refused for the enqueued-token limit (OpenAI: created as
	// failed; Anthropic: answered 429, not created).
	Batches         int64 `json:"batches"`
	BatchesRejected int64 `json:"batches_rejected"`
	// BatchRequests counts batch request lines answered (any outcome);
	// BatchExpired and BatchFailed those that expired or failed by the
	// profile's batch rates. Tokens and faults of batch lines count in the
	// fields above, as a chat call's do.
	BatchRequests int64 `json:"batch_requests"`
	BatchExpired  int64 `json:"batch_expired"`
	BatchFailed   int64 `json:"batch_failed"`
	// CachedPromptTokens and CacheCreationTokens are the parts of
	// PromptTokens the simulated prompt cache served and stored (cache.go).
	CachedPromptTokens  int64 `json:"cached_prompt_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
}

// knownStatuses are every status the simulator sends, in report order.
var knownStatuses = [...]int{200, 400, 404, 405, 413, 429, 500, 503, 504, 529}

// api is the API a request addressed.
type api uint8

const (
	apiOpenAI api = iota
	apiAnthropic
	apiOllama
	apiGemini
	apiUnknown
	numAPIs
)

var routeNames = [numAPIs]string{RouteOpenAI, RouteAnthropic, RouteOllama, RouteGemini, RouteUnknown}

// counters are lock-free so that counting never serialises requests.
type counters struct {
	requests    atomic.Int64
	byRoute     [numAPIs]atomic.Int64
	byStatus    [len(knownStatuses)]atomic.Int64
	faults      [numFaults]atomic.Int64
	rateLimited atomic.Int64
	reasks      atomic.Int64
	prompt      atomic.Int64
	completion  atomic.Int64

	batches         atomic.Int64
	batchesRejected atomic.Int64
	batchRequests   atomic.Int64
	batchExpired    atomic.Int64
	batchFailed     atomic.Int64
	// cachedPrompt and cacheCreation are the prompt cache's parts of prompt.
	cachedPrompt  atomic.Int64
	cacheCreation atomic.Int64
}

func (c *counters) status(code int) {
	for i, s := range knownStatuses {
		if s == code {
			c.byStatus[i].Add(1)
			return
		}
	}
}

func (c *counters) snapshot() Stats {
	s := Stats{
		Requests:            c.requests.Load(),
		ByRoute:             map[string]int64{},
		ByStatus:            map[int]int64{},
		Faults:              make(map[Fault]int64, numFaults),
		RateLimited:         c.rateLimited.Load(),
		Reasks:              c.reasks.Load(),
		PromptTokens:        c.prompt.Load(),
		CompletionTokens:    c.completion.Load(),
		Batches:             c.batches.Load(),
		BatchesRejected:     c.batchesRejected.Load(),
		BatchRequests:       c.batchRequests.Load(),
		BatchExpired:        c.batchExpired.Load(),
		BatchFailed:         c.batchFailed.Load(),
		CachedPromptTokens:  c.cachedPrompt.Load(),
		CacheCreationTokens: c.cacheCreation.Load(),
	}
	for i := range c.byRoute {
		if n := c.byRoute[i].Load(); n > 0 {
			s.ByRoute[routeNames[i]] = n
		}
	}
	for i, code := range knownStatuses {
		if n := c.byStatus[i].Load(); n > 0 {
			s.ByStatus[code] = n
		}
	}
	for i := range c.faults {
		s.Faults[allFaults[i]] = c.faults[i].Load()
	}
	return s
}

// reset zeroes every counter. Requests in flight may straddle the reset;
// that is fine for a test harness that resets between phases.
func (c *counters) reset() {
	c.requests.Store(0)
	for i := range c.byRoute {
		c.byRoute[i].Store(0)
	}
	for i := range c.byStatus {
		c.byStatus[i].Store(0)
	}
	for i := range c.faults {
		c.faults[i].Store(0)
	}
	c.rateLimited.Store(0)
	c.reasks.Store(0)
	c.prompt.Store(0)
	c.completion.Store(0)
	for _, b := range []*atomic.Int64{&c.batches, &c.batchesRejected, &c.batchRequests, &c.batchExpired, &c.batchFailed} {
		b.Store(0)
	}
	c.cachedPrompt.Store(0)
	c.cacheCreation.Store(0)
}
