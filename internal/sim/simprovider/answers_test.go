package simprovider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/eval"
	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// labelSchema has optional fields, so strict forms send nulls for them.
const labelSchema = `{"type":"object","additionalProperties":false,"required":["vendor","total"],
 "properties":{"vendor":{"type":"string"},"total":{"type":"number"},"po":{"type":"string"},
 "items":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["sku"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}}}}`

// labelled makes n documents whose labels hold values the text does not
// state plainly, so only an answer key can give them.
func labelled(n int) (docs []string, labels []json.RawMessage) {
	for i := range n {
		docs = append(docs, fmt.Sprintf("Supplier letter %d. We bill you for the work done in spring; see the attached list.", i))
		labels = append(labels, json.RawMessage(fmt.Sprintf(`{"vendor":"Vendor %d GmbH","total":%d.25,"items":[{"sku":"S-%d","qty":%d}]}`, i, 100+i, i, i+1)))
	}
	return docs, labels
}

func TestAnswerKey(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(labelSchema))
	if err != nil {
		t.Fatal(err)
	}
	docs, labels := labelled(20)
	key := sim.NewAnswerKey()
	for i := range docs {
		key.Add(docs[i], labels[i])
	}
	cases := []struct {
		profile string
		mode    llm.Mode
		key     *sim.AnswerKey
		// minCorrect is the least share of documents whose value equals
		// the label.
		minCorrect, maxCorrect float64
	}{
		{"clean", llm.ModeText, key, 1, 1},
		{"clean", llm.ModeStrict, key, 1, 1},
		{"clean", llm.ModeTools, key, 1, 1},
		{"sloppy", llm.ModeText, key, 0.8, 1},
		{"clean", llm.ModeText, nil, 0, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/key=%v", c.profile, c.mode, c.key != nil), func(t *testing.T) {
			t.Parallel()
			prof, err := sim.LoadProfile(c.profile)
			if err != nil {
				t.Fatal(err)
			}
			var opts []sim.Option
			if c.key != nil {
				opts = append(opts, sim.WithAnswers(c.key))
			}
			p, err := simprovider.New("sim:"+c.profile, sim.New(prof, opts...))
			if err != nil {
				t.Fatal(err)
			}
			correct := 0
			for i, doc := range docs {
				res, err := extractq.Extract(t.Context(), doc, s, extractq.WithProvider(p), extractq.WithMode(c.mode), extractq.WithMaxReasks(3))
				if err != nil {
					continue
				}
				sc, err := eval.Score(labels[i], res.Value, s, eval.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if sc.Correct {
					correct++
				}
			}
			share := float64(correct) / float64(len(docs))
			if share < c.minCorrect || share > c.maxCorrect {
				t.Errorf("%d of %d documents correct (%.0f%%), want between %.0f%% and %.0f%%", correct, len(docs), 100*share, 100*c.minCorrect, 100*c.maxCorrect)
			}
		})
	}
}

func TestAnswerKeyFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	docs, labels := labelled(1)
	line, _ := json.Marshal(map[string]any{"id": "a", "text": docs[0], "expected": labels[0]})
	path := dir + "/labels.jsonl"
	if err := writeFile(path, line); err != nil {
		t.Fatal(err)
	}
	t.Setenv(simprovider.AnswersEnv, path)
	s, _ := schema.Compile([]byte(labelSchema))
	p := mustNew(t, "sim:clean")
	res, err := extractq.Extract(t.Context(), docs[0], s, extractq.WithProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := eval.Score(labels[0], res.Value, s, eval.Options{}); !sc.Correct {
		t.Errorf("value %s, want the label %s", res.Value, labels[0])
	}
	t.Setenv(simprovider.AnswersEnv, dir+"/missing.jsonl")
	if _, err := mustNewErr("sim:clean"); err == nil {
		t.Error("a missing answer key file must fail the provider")
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

func mustNewErr(spec string) (llm.Provider, error) { return providers.New(spec) }
