package invoices_test

import (
	"errors"
	"strings"
	"testing"

	"example.com/custom/invoices"
	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/llm"
)

// The user's own code tested without a model: the scripted provider plays
// the answers, and the test asserts both the result and what was sent.
func TestExtractFeedsTheSumRuleBack(t *testing.T) {
	t.Parallel()
	p := extractqtest.New([]extractqtest.Reply{
		extractqtest.Text("Sure! ```json\n{\"vendor\": \"ACME\", \"lines\": [{\"item\": \"bolts\", \"amount\": 10}, {\"item\": \"nuts\", \"amount\": 2.5},], \"total\": 10}\n```"),
		extractqtest.Text(`{"vendor": "ACME", "lines": [{"item": "bolts", "amount": 10}, {"item": "nuts", "amount": 2.5}], "total": 12.5}`),
	})
	x, err := invoices.NewExtractor(p)
	if err != nil {
		t.Fatal(err)
	}
	inv, res, err := invoices.Extract(t.Context(), x, "ACME: bolts 10.00, nuts 2.50. Total 12.50")
	if err != nil {
		t.Fatal(err)
	}
	if inv.Total != 12.5 || len(inv.Lines) != 2 || len(res.Attempts) != 2 {
		t.Fatalf("invoice %+v after %d attempts", inv, len(res.Attempts))
	}
	if v := res.Attempts[0].Violations; len(v) != 1 || v[0].Keyword != "sum" || v[0].Pointer != "/total" {
		t.Fatalf("first attempt violations %+v", v)
	}
	feedback := p.Requests()[1].Messages
	if !strings.Contains(feedback[len(feedback)-1].Content, "the lines add up to 12.50") {
		t.Fatalf("the re-ask must carry the validator's message: %q", feedback[len(feedback)-1].Content)
	}
}

func TestExtractGivesUpWithAReadableError(t *testing.T) {
	t.Parallel()
	wrong := extractqtest.Text(`{"vendor": "ACME", "lines": [{"item": "bolts", "amount": 10}], "total": 99}`)
	p := extractqtest.New([]extractqtest.Reply{wrong, wrong})
	x, err := invoices.NewExtractor(p, extractq.WithMaxReasks(1))
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := invoices.Extract(t.Context(), x, "ACME: bolts 10.00")
	var e *llm.ExtractionError
	if !errors.Is(err, extractq.ErrExhausted) || !errors.As(err, &e) || e.Result != res || res.Outcome != llm.OutcomeExhausted {
		t.Fatalf("error %v (%T), outcome %v", err, err, res.Outcome)
	}
	if !strings.Contains(err.Error(), "/total") {
		t.Fatalf("the error must say where it failed: %v", err)
	}
}
