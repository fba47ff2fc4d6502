package jsonx

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCorpus runs realistic model answers (testdata/corpus/*.txt) and checks
// the first candidate against NAME.want: line 1 is the expected compact JSON
// (or NONE), line 2 the distinct repair kinds in order (or -).
func TestCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*.txt")
	if err != nil || len(files) < 40 {
		t.Fatalf("corpus missing: %d samples, err %v", len(files), err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			golden, err := os.ReadFile(strings.TrimSuffix(file, ".txt") + ".want")
			if err != nil {
				t.Fatalf("no golden file: %v", err)
			}
			lines := strings.Split(strings.TrimRight(string(golden), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("golden file needs 2 lines, has %d", len(lines))
			}
			want, wantKinds := lines[0], strings.Fields(lines[1])
			if lines[1] == "-" {
				wantKinds = nil
			}
			cs := Find(string(text), PolicyCoerce)
			if want == "NONE" {
				if len(cs) != 0 {
					t.Fatalf("found %s, want nothing", cs[0].JSON)
				}
				return
			}
			if len(cs) == 0 {
				t.Fatalf("found nothing, want %s", want)
			}
			if string(cs[0].JSON) != want {
				t.Errorf("\n got %s\nwant %s", cs[0].JSON, want)
			}
			if got := kindsOf(cs[0].Repairs); !reflect.DeepEqual(got, wantKinds) {
				t.Errorf("repairs %v, want kinds %v", cs[0].Repairs, wantKinds)
			}
			for _, c := range cs {
				if !json.Valid(c.JSON) {
					t.Errorf("invalid candidate %s", c.JSON)
				}
			}
		})
	}
}
