package jsonx

import (
	"reflect"
	"testing"
)

func TestEnumInProse(t *testing.T) {
	t.Parallel()
	words := []string{`"ONE"`, `"TWO"`, `"THREE"`}
	status := []string{`"open"`, `"in_progress"`, `"closed"`}
	aliases := map[string][]string{"in_progress": {"in progress", "ongoing"}, "closed": {"done"}}
	tests := []struct {
		name, text string
		allowed    []string
		want       string   // "" for no value
		named      []string // when two or more are named
	}{
		{"label and a description", "ONE: the description lists a single item.", words, `"ONE"`, nil},
		{"a sentence, another case", "The answer is One", words, `"ONE"`, nil},
		{"emphasis", "**one** is the answer", words, `"ONE"`, nil},
		{"an alias phrase", "The ticket is still in progress.", status, `"in_progress"`, nil},
		{"the value with a space for '_'", "Status: In Progress", status, `"in_progress"`, nil},
		{"a longer phrase hides the word inside it", "It is done, not in progress anymore", status, "", nil},
		{"two values are never settled by counting", "TWO, or maybe THREE; TWO seems likelier", words, "", []string{`"TWO"`, `"THREE"`}},
		{"a word inside another word does not count", "The ticket was reopened yesterday.", status, "", nil},
		{"a negation makes it unreadable", "It is not closed.", status, "", nil},
		{"reasoning does not count", "<think>maybe TWO</think>The answer is ONE.", words, `"ONE"`, nil},
		{"nothing named", "The document does not say.", words, "", nil},
		{"non-string values are ignored", "one", []string{"1", "2"}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, r, named := EnumInProse(tt.text, tt.allowed, aliases)
			if string(v) != tt.want {
				t.Fatalf("value %s, want %q (named %v)", v, tt.want, named)
			}
			if tt.want != "" && (r.Kind != KindEnumInProse || r.Lossy) {
				t.Errorf("repair %+v", r)
			}
			if tt.named != nil && !reflect.DeepEqual(named, tt.named) {
				t.Errorf("named %v, want %v", named, tt.named)
			}
		})
	}
}

func TestFraction(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"1/5", "0.2"}, {"3 / 8", "0.375"}, {"-1/4", "-0.25"}, {"10/2", "5"}, {"0/7", "0"},
		{"1/3", ""}, {"1/0", ""}, {"a/2", ""}, {"1/2/3", ""}, {"2024/05", ""},
	}
	for _, tt := range tests {
		got, ok := fraction(tt.in)
		if tt.want == "" && ok || tt.want != "" && got != tt.want {
			t.Errorf("fraction(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}
