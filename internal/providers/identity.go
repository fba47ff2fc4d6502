package providers

import (
	"fmt"
	"strings"
)

// Identity is the model identity of a provider spec: what the fleet keys
// results and job ids by, so that a document counts as already done only
// for the same model. It holds everything that changes the answers: the
// family (openai:llama3 and groq:llama3 are different deployments), the
// model, the simulator profile (sim:clean and sim:realistic answer
// differently), and variant, a label the user gives to tell apart what the
// spec cannot show (another server behind OPENAI_BASE_URL, a fine-tune
// served under the same name): "family:model", "sim:PROFILE[/model]", with
// "@variant" appended when set. No call is made and no key is needed.
func Identity(spec, variant string) (string, error) {
	p, err := New(spec, WithAPIKey("identity-makes-no-call"))
	if err != nil {
		return "", err
	}
	id := p.Name()
	if v := strings.TrimSpace(variant); v != "" {
		if strings.ContainsAny(v, " \t\n@") {
			return "", fmt.Errorf("variant %q: use a short label without spaces or @, e.g. eu-proxy", variant)
		}
		id += "@" + v
	}
	return id, nil
}
