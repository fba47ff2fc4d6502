package sim

import (
	"bytes"
	"testing"
	"time"
)

// TestAppendOpenAIBodyMatchesMarshal: the OpenAI reply written by hand is
// the bytes encoding/json writes for it, for every kind of answer and for
// strings needing every kind of escape.
func TestAppendOpenAIBodyMatchesMarshal(t *testing.T) {
	texts := []string{"", `{"a":"b \"q\" \\ / <>&"}`, "tab\tnl\nret\rbs\bff\f\x00\x1f\x7f", "é😀\u2028\u2029 bad\xff\xfe utf8 \xe2\x80", "plain"}
	now := time.Unix(1764000000, 0)
	for _, text := range texts {
		for _, c := range []struct {
			tool, refusal string
			truncated     bool
		}{{}, {tool: "extract"}, {tool: "t\u2028\"x"}, {refusal: text + "no"}, {truncated: true}, {tool: "x", truncated: true}} {
			ans := &answer{text: text, refusal: c.refusal, truncated: c.truncated}
			req := &chatRequest{model: "m-" + text, tool: c.tool}
			rep := &reply{req: req, ans: ans, promptTokens: 123, completionTokens: len(text), cache: cacheUse{read: 64}, id: 0x0123456789abcdef ^ uint64(len(text)), now: now}
			var want bytes.Buffer
			if err := marshal(&want, openAIBody(rep)); err != nil {
				t.Fatal(err)
			}
			if got := appendOpenAIBody(nil, rep); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("appendOpenAIBody:\n%s\nencoding/json:\n%s", got, want.Bytes())
			}
		}
	}
	if got := appendHex16(nil, 0xab); string(got) != "00000000000000ab" {
		t.Errorf("appendHex16(0xab) = %s", got)
	}
}
