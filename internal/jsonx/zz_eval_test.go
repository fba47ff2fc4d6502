package jsonx

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
)

func TestEval(t *testing.T) {
	f, err := os.Open("/tmp/jx/eval.jsonl")
	if err != nil {
		t.Skip()
	}
	sc := bufio.NewScanner(f)
	ok, n := 0, 0
	for sc.Scan() {
		var pair [2]string
		json.Unmarshal(sc.Bytes(), &pair)
		n++
		var want, got any
		json.Unmarshal([]byte(pair[1]), &want)
		cs := Find(pair[0], PolicySyntax)
		g := "NONE"
		if len(cs) > 0 {
			g = string(cs[0].JSON)
			json.Unmarshal(cs[0].JSON, &got)
		}
		if reflect.DeepEqual(want, got) {
			ok++
			continue
		}
		fmt.Printf("FAIL %q\n   got  %s\n   want %s\n", pair[0], g, pair[1])
	}
	fmt.Printf("EVAL %d/%d\n", ok, n)
}
