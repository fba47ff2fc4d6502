package jsonx

import "testing"

func TestCodeStringLayout(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"triple quotes indented with the layout", "{\n  \"code\": \"\"\"\n      def f():\n          return 1\n  \"\"\"\n}", `{"code":"def f():\n    return 1"}`},
		{"backticks indented with the layout", "{\n  \"code\": `\n    if (a) {\n      b();\n    }\n  `\n}", `{"code":"if (a) {\n  b();\n}"}`},
		{"a fence's info string with a file name", "{\"code\": ```ts main.ts\nlet a = 1;\n```}", `{"code":"let a = 1;"}`},
		{"a language tag", "{\"code\": ```python\nprint(1)\n```}", `{"code":"print(1)"}`},
		{"a first line of code stays", "{\"code\": ```print hello\nworld\n```}", `{"code":"print hello\nworld"}`},
		{"code on the opening line keeps its indentation", "{\"code\": \"\"\"if a:\n    b\"\"\"}", `{"code":"if a:\n    b"}`},
		{"a one-line backtick string is untouched", "{\"code\": `  x  `}", `{"code":"  x  "}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := Find(tt.in, PolicyCoerce)
			if len(cs) == 0 {
				t.Fatalf("nothing found in %q", tt.in)
			}
			if got := string(cs[0].JSON); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
