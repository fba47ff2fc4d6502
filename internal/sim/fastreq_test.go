package sim

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fastReqCases are request bodies of every shape decodeFast meets: what the
// providers send, and spellings it must leave to encoding/json.
var fastReqCases = []string{
	string(fleetRequest(7)),
	`{"model":"m","messages":[{"role":"user","content":"hi \u00e9\ud83d\ude00 \"q\"\n"}],"temperature":0.2,"seed":null,"stop":["a",{"b":[1,2e3,true,false,null]}]}`,
	`{"model":"m","messages":[{"role":"user","content":null,"name":"x"}],"max_tokens":12,"max_completion_tokens":0,"stream":false}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":true}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto"}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object","schema":{"type":"object"}}}`,
	` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : "x" } ] , "response_format" : { "type" : "json_schema" , "json_schema" : { "name" : "n" , "schema" : { "a" : [ 1 , 2 ] } , "strict" : false } } } `,
	// left to encoding/json
	`{"Model":"m","messages":[]}`,
	`{"model":"m","model":"n","messages":[]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
	`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}]}`,
	`{"model":"m","messages":[],"max_tokens":1.0}`,
	`{"model":"m","messages":[],"max_tokens":1e3}`,
	`{"model":"m","messages":[],"max_tokens":012}`,
	`{"model":"m","messages":[],"response_format":null}`,
	`{"model":"m","messages":[],"tool_choice":null}`,
	`{"model":"m\ud800","messages":[]}`,
	`{"model":"m","messages":[{"role":"user","content":"a` + "\x01" + `"}]}`,
	`{"model":"m","messages":[]}x`,
	`{"model":"m","messages":[],"x":[1,}`,
	`{"model":"m","messages":[],"x":tru}`,
	`{"model":"m","messages":[{"role":"user","content":"x"}]`,
	`[]`,
	``,
	`null`,
}

// TestDecodeFastMatchesJSON: whenever decodeFast takes a body, it reads
// what json.Unmarshal reads; and it does take the providers' requests.
func TestDecodeFastMatchesJSON(t *testing.T) {
	took := 0
	seen := &rawCache{} // shared, as a server's: a schema sent again is compared, not read
	for i, body := range fastReqCases {
		checkDecodeFast(t, seen, []byte(body))
		checkDecodeFast(t, seen, []byte(body)) // again: from the cache
		checkDecodeFast(t, nil, []byte(body))
		var r openAIRequest
		if r.decodeFast([]byte(body), seen) {
			took++
		} else if i < 7 {
			t.Errorf("case %d: decodeFast refused a provider's request: %s", i, body)
		}
	}
	if took < 7 {
		t.Errorf("decodeFast took %d cases", took)
	}
}

func checkDecodeFast(t *testing.T, seen *rawCache, body []byte) {
	t.Helper()
	var fast openAIRequest
	if !fast.decodeFast(body, seen) {
		return
	}
	var slow openAIRequest
	if err := json.Unmarshal(body, &slow); err != nil {
		t.Fatalf("decodeFast took a body encoding/json refuses (%v): %q", err, body)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decodeFast read %+v, encoding/json %+v: %q", fast, slow, body)
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, c := range fastReqCases {
		f.Add([]byte(c))
	}
	seen := &rawCache{} // shared by the inputs, as a server's by its requests
	f.Fuzz(func(t *testing.T, body []byte) { checkDecodeFast(t, seen, body) })
}
