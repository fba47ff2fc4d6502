package eval

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Outcome is what one configuration made of one labelled document.
type Outcome struct {
	ID string `json:"id"`
	// Valid: a schema-valid value came back (Value holds it).
	Valid bool            `json:"valid"`
	Value json.RawMessage `json:"value,omitempty"`
	// Reason says why there is no value (dead letter, refusal, error).
	Reason string `json:"reason,omitempty"`
	// Calls counts the model calls made, Reasks those beyond the first.
	Calls  int `json:"calls"`
	Reasks int `json:"reasks"`
	// CostUSD is the list price of the calls; CostKnown is false when the
	// model is not in the price table.
	CostUSD   float64 `json:"cost_usd"`
	CostKnown bool    `json:"cost_known"`
	// Latency is the document's extraction time, first call to answer.
	Latency time.Duration `json:"latency_ns"`
	// Score is the comparison with the label, nil when not scored.
	Score *DocScore `json:"score,omitempty"`
}

// FieldStats sums one field over the documents of a configuration.
type FieldStats struct {
	Field string `json:"field"`
	// Compared counts the comparisons (a field in an array counts once per
	// item); Exact and Matched those that matched.
	Compared int `json:"compared"`
	Exact    int `json:"exact"`
	Matched  int `json:"matched"`
	// Items sums an array of objects' items: the label's, the answer's and
	// the matched pairs (zero for other fields).
	ItemsExpected int `json:"items_expected,omitempty"`
	ItemsGot      int `json:"items_got,omitempty"`
	ItemsMatched  int `json:"items_matched,omitempty"`
	// Examples holds a few mismatches, for the report.
	Examples []Example `json:"examples,omitempty"`
}

// Accuracy is the share of comparisons that matched after normalisation.
func (f FieldStats) Accuracy() float64 { return ratio(f.Matched, f.Compared) }

// ExactRate is the share that matched exactly.
func (f FieldStats) ExactRate() float64 { return ratio(f.Exact, f.Compared) }

// Precision and Recall of an array of objects' items.
func (f FieldStats) Precision() float64 { return ratio(f.ItemsMatched, f.ItemsGot) }

// Recall is the share of the labels' items matched.
func (f FieldStats) Recall() float64 { return ratio(f.ItemsMatched, f.ItemsExpected) }

// IsItems reports whether the field is an array of objects.
func (f FieldStats) IsItems() bool { return f.ItemsExpected+f.ItemsGot > 0 }

// Example is one mismatch: where, and the two values.
type Example struct {
	ID       string          `json:"id"`
	Pointer  string          `json:"pointer"`
	Expected json.RawMessage `json:"expected,omitempty"`
	Got      json.RawMessage `json:"got,omitempty"`
}

// examplesPerField bounds the mismatches kept per field.
const examplesPerField = 3

// Summary is one configuration's figures over the labelled documents.
type Summary struct {
	// Name names the configuration ("openai:gpt-4o-mini json", or a run).
	Name string `json:"name"`
	// Docs counts the labelled documents; Done those with an outcome.
	Docs int `json:"docs"`
	Done int `json:"done"`
	// Incomplete is set when the configuration stopped before every
	// document had an outcome; Error says why.
	Incomplete bool   `json:"incomplete,omitempty"`
	Error      string `json:"error,omitempty"`
	Valid      int    `json:"valid"`
	Correct    int    `json:"correct"`
	// Accuracy is the share of all field comparisons that matched
	// (normalised); ExactAccuracy the share that matched exactly.
	Accuracy      float64 `json:"accuracy"`
	ExactAccuracy float64 `json:"exact_accuracy"`
	Calls         int     `json:"calls"`
	Reasks        int     `json:"reasks"`
	CostUSD       float64 `json:"cost_usd"`
	// CostKnown is false when some call's model had no price.
	CostKnown bool `json:"cost_known"`
	// CostPerValid and CostPerCorrect divide the whole cost by the valid
	// and by the fully correct documents (NaN-free: 0 when there are none).
	CostPerValid   float64       `json:"cost_per_valid_usd"`
	CostPerCorrect float64       `json:"cost_per_correct_usd"`
	P50            time.Duration `json:"p50_ns"`
	P95            time.Duration `json:"p95_ns"`
	// Fields, worst accuracy first.
	Fields []FieldStats `json:"fields"`
}

// ValidRate is the share of documents with a valid value.
func (s *Summary) ValidRate() float64 { return ratio(s.Valid, s.Docs) }

// CorrectRate is the share of fully correct documents.
func (s *Summary) CorrectRate() float64 { return ratio(s.Correct, s.Docs) }

// ReaskRate is the re-asks per document with an outcome.
func (s *Summary) ReaskRate() float64 {
	if s.Done == 0 {
		return 0
	}
	return float64(s.Reasks) / float64(s.Done)
}

// Summarize sums a configuration's outcomes over docs labelled documents.
// Outcomes must already be scored.
func Summarize(name string, docs int, outcomes []Outcome) Summary {
	s := Summary{Name: name, Docs: docs, Done: len(outcomes), CostKnown: true}
	byField := map[string]*FieldStats{}
	var order []string
	field := func(name string) *FieldStats {
		f, ok := byField[name]
		if !ok {
			f = &FieldStats{Field: name}
			byField[name] = f
			order = append(order, name)
		}
		return f
	}
	var lat []time.Duration
	compared, exact, matched := 0, 0, 0
	for _, o := range outcomes {
		s.Calls += o.Calls
		s.Reasks += o.Reasks
		s.CostUSD += o.CostUSD
		s.CostKnown = s.CostKnown && (o.CostKnown || o.Calls == 0)
		if o.Latency > 0 {
			lat = append(lat, o.Latency)
		}
		if o.Valid {
			s.Valid++
		}
		if o.Score == nil {
			continue
		}
		if o.Valid && o.Score.Correct {
			s.Correct++
		}
		for _, r := range o.Score.Fields {
			f := field(r.Field)
			f.Compared++
			compared++
			if r.Exact {
				f.Exact++
				exact++
			}
			if r.Match {
				f.Matched++
				matched++
			} else if len(f.Examples) < examplesPerField {
				f.Examples = append(f.Examples, Example{ID: o.ID, Pointer: r.Pointer, Expected: r.Expected, Got: r.Got})
			}
		}
		for _, it := range o.Score.Items {
			f := field(it.Field)
			f.ItemsExpected += it.Expected
			f.ItemsGot += it.Got
			f.ItemsMatched += it.Matched
		}
	}
	s.Accuracy, s.ExactAccuracy = ratio(matched, compared), ratio(exact, compared)
	if compared == 0 {
		s.Accuracy, s.ExactAccuracy = 0, 0
	}
	if s.Valid > 0 {
		s.CostPerValid = s.CostUSD / float64(s.Valid)
	}
	if s.Correct > 0 {
		s.CostPerCorrect = s.CostUSD / float64(s.Correct)
	}
	slices.Sort(lat)
	s.P50, s.P95 = percentile(lat, 0.50), percentile(lat, 0.95)
	for _, name := range order {
		s.Fields = append(s.Fields, *byField[name])
	}
	slices.SortStableFunc(s.Fields, func(a, b FieldStats) int {
		return cmp.Or(cmp.Compare(fieldQuality(a), fieldQuality(b)), cmp.Compare(a.Field, b.Field))
	})
	return s
}

// fieldQuality ranks fields for "worst first": an array of objects by the
// lower of its precision and recall, others by accuracy.
func fieldQuality(f FieldStats) float64 {
	q := 1.0
	if f.Compared > 0 {
		q = f.Accuracy()
	}
	if f.IsItems() {
		q = math.Min(q, math.Min(f.Precision(), f.Recall()))
	}
	return q
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Regression is one figure that fell by more than allowed.
type Regression struct {
	// What names the figure: "accuracy", "correct documents", or a field.
	What     string  `json:"what"`
	Baseline float64 `json:"baseline"`
	Current  float64 `json:"current"`
}

func (r Regression) String() string {
	return fmt.Sprintf("%s fell from %.1f%% to %.1f%% (%.1f points)", r.What, 100*r.Baseline, 100*r.Current, 100*(r.Baseline-r.Current))
}

// Compare lists the figures of cur that fell below base by more than
// maxDrop (a share: 0.02 is two percentage points): overall accuracy, the
// share of fully correct documents, and each field compared in both.
func Compare(base, cur Summary, maxDrop float64) []Regression {
	var out []Regression
	check := func(what string, b, c float64) {
		if b-c > maxDrop+1e-12 {
			out = append(out, Regression{What: what, Baseline: b, Current: c})
		}
	}
	check("accuracy", base.Accuracy, cur.Accuracy)
	check("correct documents", base.CorrectRate(), cur.CorrectRate())
	baseFields := map[string]FieldStats{}
	for _, f := range base.Fields {
		baseFields[f.Field] = f
	}
	for _, f := range cur.Fields {
		b, ok := baseFields[f.Field]
		if !ok || b.Compared == 0 || f.Compared == 0 {
			continue
		}
		check("field "+f.Field, b.Accuracy(), f.Accuracy())
	}
	return out
}
