package jsonx

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"
)

// kindsOf lists the distinct repair kinds in order of first appearance.
func kindsOf(rs []llm.Repair) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rs {
		if !seen[r.Kind] {
			seen[r.Kind] = true
			out = append(out, r.Kind)
		}
	}
	return out
}

// TestRepairSyntax has one row per failure mode: the exact JSON expected
// from the first candidate and the distinct repair kinds, in order.
func TestRepairSyntax(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  string
		kinds []string
	}{
		{"valid untouched", `{"a": 1, "b": [true, null, "x"], "c": {"d": -1.5e3}}`, `{"a":1,"b":[true,null,"x"],"c":{"d":-1.5e3}}`, nil},
		{"valid tricky strings", `{"a": "}{][\"", "b": "// not a comment", "c": "# no", "d": "it's", "e": "\u00e9\n"}`, `{"a":"}{][\"","b":"// not a comment","c":"# no","d":"it's","e":"\u00e9\n"}`, nil},
		{"trailing commas", `{"a": [1, 2,], "b": 3,}`, `{"a":[1,2],"b":3}`, []string{KindTrailingComma}},
		{"leading and doubled commas", `[, 1,, 2]`, `[1,2]`, []string{KindLeadingComma}},
		{"missing comma between members", `{"a": 1 "b": "x" "c": true}`, `{"a":1,"b":"x","c":true}`, []string{KindMissingComma}},
		{"missing comma between elements", `["x" "y" 3 {"z": 1} [2]]`, `["x","y",3,{"z":1},[2]]`, []string{KindMissingComma}},
		{"missing comma across lines", "{\n  \"a\": \"x\"\n  \"b\": 2\n}", `{"a":"x","b":2}`, []string{KindMissingComma}},
		{"comments", "{\n  // the name\n  \"a\": 1, /* inline */ \"b\": 2 # hash\n}", `{"a":1,"b":2}`, []string{KindComment}},
		{"single quotes", `{'name': 'O\'Brien', 'q': 'say "hi"'}`, `{"name":"O'Brien","q":"say \"hi\""}`, []string{KindSingleQuotes}},
		{"apostrophe in single quotes", `{'a': 'it's fine', 'b': 1}`, `{"a":"it's fine","b":1}`, []string{KindSingleQuotes, KindUnescapedQuote}},
		{"curly double quotes", `{“name”: “Ana”}`, `{"name":"Ana"}`, []string{KindCurlyQuotes}},
		{"curly single quotes", `{‘name’: ‘Ana’}`, `{"name":"Ana"}`, []string{KindCurlyQuotes}},
		{"backtick string", "{\"a\": `x`}", `{"a":"x"}`, []string{KindBacktickQuotes}},
		{"unquoted keys", `{name: "x", $id: 2, first name: "y", 3: 4}`, `{"name":"x","$id":2,"first name":"y","3":4}`, []string{KindUnquotedKey}},
		{"python literals", `{"a": True, "b": False, "c": None}`, `{"a":true,"b":false,"c":null}`, []string{KindPythonLiteral}},
		{"non-finite numbers", `[NaN, Infinity, -Infinity, +Infinity]`, `[null,null,null,null]`, []string{KindNonFinite}},
		{"undefined", `{"a": undefined}`, `{"a":null}`, []string{KindUndefined}},
		{"raw newline and tab in string", "{\"a\": \"line1\nline2\tend\"}", `{"a":"line1\nline2\tend"}`, []string{KindControlChar}},
		{"raw control char", "{\"a\": \"x\x01y\"}", `{"a":"x\u0001y"}`, []string{KindControlChar}},
		{"truncated in string", `{"a": 1, "b": "hel`, `{"a":1,"b":"hel"}`, []string{KindCloseTruncated}},
		{"truncated after colon", `{"a": 1, "b":`, `{"a":1}`, []string{KindCloseTruncated}},
		{"truncated in key", `{"a": 1, "bb`, `{"a":1}`, []string{KindCloseTruncated}},
		{"truncated after comma", `{"a": [1, 2,`, `{"a":[1,2]}`, []string{KindCloseTruncated}},
		{"truncated literal", `{"a": tr`, `{"a":true}`, []string{KindCloseTruncated}},
		{"truncated number", `[1, 2.`, `[1,2]`, []string{KindCloseTruncated}},
		{"truncated deep", `{"a": [{"b": {"c": "d`, `{"a":[{"b":{"c":"d"}}]}`, []string{KindCloseTruncated}},
		{"truncated in a multibyte character", "{\"a\": \"caf\xc3", `{"a":"caf"}`, []string{KindCloseTruncated}},
		{"truncated escape", `{"a": "x\`, `{"a":"x"}`, []string{KindCloseTruncated}},
		{"ellipsis elements", `[1, 2, ...]`, `[1,2]`, []string{KindEllipsis}},
		{"ellipsis unicode", `["a", …]`, `["a"]`, []string{KindEllipsis}},
		{"ellipsis member and value", `{"a": 1, "b": ..., ...}`, `{"a":1}`, []string{KindEllipsis}},
		{"ellipsis with remark", `[{"x": 1}, ... (more items)]`, `[{"x":1}]`, []string{KindEllipsis}},
		{"double encoded", `"{\"a\": 1, \"b\": \"x\"}"`, `{"a":1,"b":"x"}`, []string{KindDoubleEncoded}},
		{"escaped quotes", `{\"a\": [\"x\"]}`, `{"a":["x"]}`, []string{KindDoubleEncoded}},
		{"double encoded pretty", `"{\n  \"a\": \"line\\nbreak\"\n}"`, `{"a":"line\nbreak"}`, []string{KindDoubleEncoded}},
		{"bom and zero-width space inside", "{\uFEFF\"a\":\u200B1}", `{"a":1}`, []string{KindWhitespace}},
		{"unescaped inner quotes", `{"text": "He said "hello" to me", "n": 1}`, `{"text":"He said \"hello\" to me","n":1}`, []string{KindUnescapedQuote}},
		{"unescaped quotes at end", `{"title": "The "Matrix"", "year": 1999}`, `{"title":"The \"Matrix\"","year":1999}`, []string{KindUnescapedQuote}},
		{"unescaped quote then comma", `{"q": "She said "yes", then left", "n": 1}`, `{"q":"She said \"yes\", then left","n":1}`, []string{KindUnescapedQuote}},
		{"missing closing quote at end of line", "{\n  \"name\": \"John,\n  \"age\": 30\n}", `{"name":"John","age":30}`, []string{KindMissingQuote, KindMissingComma}},
		{"missing bracket", `{"a": [1, 2}`, `{"a":[1,2]}`, []string{KindMismatchedBracket}},
		{"missing brace", `[{"a": 1]`, `[{"a":1}]`, []string{KindMismatchedBracket}},
		{"wrong closer", `{"a": 1]`, `{"a":1}`, []string{KindMismatchedBracket}},
		{"invalid escapes", `{"path": "C:\Users\x", "hex": "\x41", "q": "it\'s"}`, `{"path":"C:\\Users\\x","hex":"\u0041","q":"it's"}`, []string{KindInvalidEscape}},
		{"unquoted string values", `{"city": Paris, "tags": [red, dark blue]}`, `{"city":"Paris","tags":["red","dark blue"]}`, []string{KindUnquotedString}},
		{"digits then text", `{"w": 30kg, "d": 2024-01-15, "id": 007}`, `{"w":"30kg","d":"2024-01-15","id":"007"}`, []string{KindUnquotedString}},
		{"number formats", `[+5, .5, 5., -.25]`, `[5,0.5,5,-0.25]`, []string{KindNumberFormat}},
		{"wrapper calls", `{"n": NumberLong(42), "d": ISODate("2020-01-01"), "e": Decimal('1.5')}`, `{"n":42,"d":"2020-01-01","e":"1.5"}`, []string{KindFunctionCall, KindSingleQuotes}},
		{"missing colon", `{"a" 1, "b" = 2, "c" => 3}`, `{"a":1,"b":2,"c":3}`, []string{KindMissingColon}},
		{"missing value", `{"a": , "b": 2, "c"}`, `{"a":null,"b":2,"c":null}`, []string{KindMissingValue}},
		{"js object literal", `{name: 'Ada', langs: ['en', 'fr',], active: true,}`, `{"name":"Ada","langs":["en","fr"],"active":true}`, []string{KindUnquotedKey, KindSingleQuotes, KindTrailingComma}},
		{"python dict repr", `{'id': 1, 'ok': True, 'note': None, 'tags': ('a', 'b')}`, `{"id":1,"ok":true,"note":null,"tags":["a","b"]}`, []string{KindSingleQuotes, KindPythonLiteral, KindTuple}},
		{"string concatenation", `{"a": "x" + 'y' +` + "\n" + `"z"}`, `{"a":"xyz"}`, []string{KindConcatenation, KindSingleQuotes}},
		{"missing quote before next member", `{"city": "New York, "zip": "10001"}`, `{"city":"New York","zip":"10001"}`, []string{KindMissingQuote}},
		{"missing opening quotes", `{a": "x", "b": y", "c": [z", "w"]}`, `{"a":"x","b":"y","c":["z","w"]}`, []string{KindMissingQuote}},
		{"missing quote before next element", `{"tags": ["red, "blue"]}`, `{"tags":["red","blue"]}`, []string{KindMissingQuote}},
		{"unterminated string before closers", `{"tags": ["red]}`, `{"tags":["red"]}`, []string{KindMissingQuote}},
		{"quote taken as inner, then closed", `{"a": "x" true}`, `{"a":"x"}`, []string{KindMissingComma, KindGarbage}},
		{"stray quote after number", `{"n": 12345", "m": 1}`, `{"n":12345,"m":1}`, []string{KindGarbage}},
		{"stray closer", `[{"a": 1}}, {"a": 2}]`, `[{"a":1},{"a":2}]`, []string{KindMismatchedBracket}},
		{"brace typed for bracket", `{"a": ["x", "y"}, "b": 1}`, `{"a":["x","y"],"b":1}`, []string{KindMismatchedBracket}},
		{"missing brace between elements", `[{"i": 1{"i": 2}]`, `[{"i":1},{"i":2}]`, []string{KindMismatchedBracket, KindMissingComma}},
		{"fence ends the value", "{\"a\": [1, 2```", `{"a":[1,2]}`, []string{KindCloseTruncated}},
		{"stray word before key", `{"a": "x", NOTE "b": 1}`, `{"a":"x","b":1}`, []string{KindGarbage}},
		{"number with a comma kept as text", `{"price": 12,50, "total": 1,250.50, "n": 3}`, `{"price":"12,50","total":"1,250.50","n":3}`, []string{KindUnquotedString}},
		{"fraction and slashed date kept as text", `{"ratio": 1/3, "best_before": 12/05/2024, "n": [7/10]}`, `{"ratio":"1/3","best_before":"12/05/2024","n":["7/10"]}`, []string{KindUnquotedString}},
		{"object closed before its last members", `{"name": "Ada"}, "born": 1815, "lang": "en"}`, `{"name":"Ada","born":1815,"lang":"en"}`, []string{KindMismatchedBracket}},
		{"compact object closed before its last members", `{"name":"Ada"},"born":1815}`, `{"name":"Ada","born":1815}`, []string{KindMismatchedBracket}},
		{"object closed early across lines", "{\n  \"name\": \"Ada\"\n},\n  \"born\": 1815\n}", `{"name":"Ada","born":1815}`, []string{KindMismatchedBracket}},
		{"a quoted word after an object is no member", `{"a": 1}, "b" is next`, `{"a":1}`, nil},
		{"a nested object ends before the next member", `{"a": {"b": 1}, "c": 2}`, `{"a":{"b":1},"c":2}`, nil},
		{"python string prefixes", `{u'name': u'Ada', 'raw': r'\d+'}`, `{"name":"Ada","raw":"\\d+"}`, []string{KindPythonLiteral, KindSingleQuotes}},
		{"python raw strings keep backslashes", `{'re': r'\d+\n', 'q': r'it\'s', "doc": r"""C:\new\table"""}`, `{"re":"\\d+\\n","q":"it\\'s","doc":"C:\\new\\table"}`, []string{KindSingleQuotes, KindPythonLiteral, KindTripleQuotes}},
		{"call with several arguments", `{"d": datetime.date(2024, 1, 5), "n": 1}`, `{"d":2024,"n":1}`, []string{KindFunctionCall}},
		{"doubled template braces", `{{"a": {{"b": 1}}}}`, `{"a":{"b":1}}`, []string{KindGarbage}},
		{"invalid utf8 in string", "{\"a\": \"x\xffy\"}", "{\"a\":\"x\uFFFDy\"}", []string{KindInvalidUTF8}},
		{"triple double quotes with quotes and lines", "{\"code\": \"\"\"def f():\n    return \"x\"\n\"\"\", \"n\": 1}", `{"code":"def f():\n    return \"x\"","n":1}`, []string{KindTripleQuotes}},
		{"triple single quotes with an apostrophe", `{"q": '''it's "fine"''', "n": 1}`, `{"q":"it's \"fine\"","n":1}`, []string{KindTripleQuotes}},
		{"triple quotes: closing line's indentation removed", "{\"doc\": \"\"\"\n    Line one\n      indented\n    \"\"\"}", `{"doc":"Line one\n  indented"}`, []string{KindTripleQuotes}},
		{"triple quotes: extra closing quotes are content", `{"q": """She said "hi""""}`, `{"q":"She said \"hi\""}`, []string{KindTripleQuotes}},
		{"triple quotes: escapes read, unknown kept", `{"p": """C:\Users\x\n"""}`, `{"p":"C:\\Users\\x\n"}`, []string{KindTripleQuotes, KindInvalidEscape}},
		{"triple backticks: code verbatim, tag dropped", "{\"code\": ```python\nprint(\"a\\nb\")\nx = 'q' # `tick`\n```, \"n\": 1}", "{\"code\":\"print(\\\"a\\\\nb\\\")\\nx = 'q' # `tick`\",\"n\":1}", []string{KindTripleQuotes}},
		{"triple backticks on one line", "{\"cmd\": ```ls -la \"$HOME\"```}", `{"cmd":"ls -la \"$HOME\""}`, []string{KindTripleQuotes}},
		{"triple backticks in an array", "[```a```, ```\nb\nc\n```]", `["a","b\nc"]`, []string{KindTripleQuotes}},
		{"backtick template over lines", "{\"sql\": `SELECT *\n\"name\": FROM t`, \"ok\": true}", `{"sql":"SELECT *\n\"name\": FROM t","ok":true}`, []string{KindBacktickQuotes, KindControlChar}},
		{"unquoted keys in other scripts", `{"name": "Ana", étoiles: 4, 名前: "x", größe: 2, ключ: true}`, `{"name":"Ana","étoiles":4,"名前":"x","größe":2,"ключ":true}`, []string{KindUnquotedKey}},
		{"unquoted non-ASCII key after a string", `{"titre": "Le Petit Prince", année: 1943}`, `{"titre":"Le Petit Prince","année":1943}`, []string{KindUnquotedKey}},
		{"numeric and literal keys", `{5: "b", 2.17: "e", null: "n", true: 1, -1: "m"}`, `{"5":"b","2.17":"e","null":"n","true":1,"-1":"m"}`, []string{KindUnquotedKey}},
		{"numeric key after a string value", `{"a": "x", 2.17: "e", "b": 1}`, `{"a":"x","2.17":"e","b":1}`, []string{KindUnquotedKey}},
		{"missing comma before an unquoted key", `{"nom": "Hôtel" étoiles: 4, "a": "x" b: 2}`, `{"nom":"Hôtel","étoiles":4,"a":"x","b":2}`, []string{KindMissingComma, KindUnquotedKey}},
		{"hyphenated key after a string value", `{"a": "x", e-mail: "y"}`, `{"a":"x","e-mail":"y"}`, []string{KindUnquotedKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := Find(tt.in, PolicySyntax)
			if len(cs) == 0 {
				t.Fatalf("Find(%q) found nothing, want %s", tt.in, tt.want)
			}
			c := cs[0]
			if string(c.JSON) != tt.want {
				t.Errorf("Find(%q)\n got %s\nwant %s", tt.in, c.JSON, tt.want)
			}
			if got := kindsOf(c.Repairs); !reflect.DeepEqual(got, tt.kinds) {
				t.Errorf("Find(%q) repairs %v, want kinds %v", tt.in, c.Repairs, tt.kinds)
			}
			for _, r := range c.Repairs {
				if !strings.HasPrefix(r.Where, "@") || r.Detail == "" {
					t.Errorf("repair %+v lacks a position or a detail", r)
				}
				if r.Lossy && neverLossy[r.Kind] {
					t.Errorf("repair %+v is marked lossy; kind %s never is", r, r.Kind)
				}
			}
			if !json.Valid(c.JSON) {
				t.Errorf("invalid JSON %s", c.JSON)
			}
			off := Find(tt.in, PolicyOff)
			if tt.kinds == nil && len(off) == 0 {
				t.Errorf("PolicyOff rejected valid JSON %q", tt.in)
			}
			if tt.kinds != nil && len(off) > 0 && off[0].Start == c.Start {
				t.Errorf("PolicyOff accepted %q as %s", tt.in, off[0].JSON)
			}
		})
	}
}
