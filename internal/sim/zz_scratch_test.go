package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

func TestZZScratch(t *testing.T) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, _ := tiktoken.GetEncoding("o200k_base")
	count := func(s string) int { return len(enc.EncodeOrdinary(s)) }
	for _, f := range []string{"extractq-tools", "instructor-TOOLS", "extractq-strict", "instructor-JSON_SCHEMA", "extractq-json", "instructor-JSON", "extractq-text", "instructor-MD_JSON"} {
		b, err := os.ReadFile(os.Getenv("DUMP") + "/" + f + ".json")
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages []struct{ Role, Content string }
			Tools    []struct {
				Function struct {
					Name, Description string
					Parameters        json.RawMessage
				}
			}
			ResponseFormat *struct {
				Type       string
				JSONSchema *struct {
					Name   string
					Schema json.RawMessage
				} `json:"json_schema"`
				Schema json.RawMessage
			} `json:"response_format"`
		}
		json.Unmarshal(b, &body)
		total := 3
		line := f + ":"
		for _, m := range body.Messages {
			total += 3 + count(m.Content)
			line += fmt.Sprintf(" %s %d+3;", m.Role, count(m.Content))
		}
		if len(body.Tools) > 0 {
			fn := body.Tools[0].Function
			n := count(renderFunction(fn.Name, fn.Description, fn.Parameters))
			total += n
			line += fmt.Sprintf(" tool %d (desc %d);", n, count(fn.Description))
		}
		if rf := body.ResponseFormat; rf != nil {
			if rf.JSONSchema != nil {
				n := count(renderFunction(rf.JSONSchema.Name, "", rf.JSONSchema.Schema))
				total += n
				line += fmt.Sprintf(" json_schema %d;", n)
			} else if len(rf.Schema) > 0 {
				n := count(renderFunction("", "", rf.Schema))
				total += n
				line += fmt.Sprintf(" json_object schema %d;", n)
			}
		}
		fmt.Printf("%s priming 3; total %d\n", line, total)
	}
}
