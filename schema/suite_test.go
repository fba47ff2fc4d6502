package schema

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/testenv"
)

// suiteDir is the JSON-Schema-Test-Suite in the shared test data.
func suiteDir(t testing.TB) string {
	t.Helper()
	return testenv.SharedTestdata(t, "json-schema-test-suite")
}

type suiteGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

type suiteResult struct {
	pass, total int
	failures    []string
}

// suiteFiles lists the .json files under dir; required skips optional/.
func suiteFiles(t *testing.T, dir string, required bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && required && d.Name() == "optional" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return files
}

// runSuite runs every case of the given files. Required cases use the
// dialect's own format default (the suite expects "format" to be an
// annotation in 2020-12); optional ones use extractq's default (asserted).
func runSuite(t *testing.T, suite string, files []string, draft Draft, opts ...Option) suiteResult {
	t.Helper()
	var res suiteResult
	sort.Strings(files)
	remotes := filepath.Join(suite, "remotes")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var groups []suiteGroup
		if err := json.Unmarshal(data, &groups); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rel, _ := filepath.Rel(suite, f)
		for _, g := range groups {
			all := append([]Option{WithDraft(draft), WithJSONSchema(), WithRefDir("http://localhost:1234/", remotes)}, opts...)
			s, cerr := Compile(g.Schema, all...)
			for _, tc := range g.Tests {
				res.total++
				name := rel + ": " + g.Description + ": " + tc.Description
				if cerr != nil {
					res.failures = append(res.failures, name+": schema did not compile: "+cerr.Error())
					continue
				}
				vs, err := s.ValidateJSON(tc.Data)
				if err != nil {
					res.failures = append(res.failures, name+": "+err.Error())
					continue
				}
				if got := len(vs) == 0; got != tc.Valid {
					res.failures = append(res.failures, name+": valid="+boolText(got)+", want "+boolText(tc.Valid))
					continue
				}
				res.pass++
			}
		}
	}
	return res
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestJSONSchemaTestSuite(t *testing.T) {
	suite := suiteDir(t)
	for _, d := range []struct {
		dir   string
		draft Draft
	}{
		{"draft7", Draft7},
		{"draft2020-12", Draft2020},
	} {
		t.Run(d.dir, func(t *testing.T) {
			base := filepath.Join(suite, "tests", d.dir)
			req := runSuite(t, suite, suiteFiles(t, base, true), d.draft, WithFormatAssertion(false))
			for _, f := range req.failures {
				t.Errorf("required case failed: %s", f)
			}
			if req.total == 0 {
				t.Fatalf("no required cases found under %s", base)
			}
			t.Logf("%s required: %d/%d passed", d.dir, req.pass, req.total)

			opt := runSuite(t, suite, suiteFiles(t, filepath.Join(base, "optional"), false), d.draft)
			t.Logf("%s optional (incl. format, formats asserted): %d/%d passed", d.dir, opt.pass, opt.total)
			byFile := map[string]int{}
			for _, f := range opt.failures {
				file, _, _ := strings.Cut(f, ":")
				byFile[file]++
			}
			for file, n := range byFile {
				t.Logf("  optional: %d failed in %s", n, file)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Instance on the suite's schemas (those with a valid instance): the share
// it cannot build is reported and bounded, and every instance it builds
// validates. The simulator answers with these instances.
func TestInstanceOnSuiteSchemas(t *testing.T) {
	t.Parallel()
	suite := suiteDir(t)
	for _, d := range []struct {
		dir   string
		draft Draft
	}{{"draft7", Draft7}, {"draft2020-12", Draft2020}} {
		t.Run(d.dir, func(t *testing.T) {
			t.Parallel()
			base := filepath.Join(suite, "tests", d.dir)
			cases, built, instances := 0, 0, 0
			var unbuilt []string
			for _, f := range suiteFiles(t, base, true) {
				var groups []suiteGroup
				if err := json.Unmarshal(mustRead(t, f), &groups); err != nil {
					t.Fatal(err)
				}
				rel, _ := filepath.Rel(base, f)
				for _, g := range groups {
					hasValid := false
					for _, tc := range g.Tests {
						hasValid = hasValid || tc.Valid
					}
					if !hasValid {
						continue
					}
					cases++
					s, err := Compile(g.Schema, WithDraft(d.draft), WithJSONSchema(), WithFormatAssertion(false),
						WithRefDir("http://localhost:1234/", filepath.Join(suite, "remotes")))
					if err != nil {
						t.Errorf("%s: %s: %v", rel, g.Description, err)
						continue
					}
					ok := false
					for seed := range uint64(5) {
						in, err := s.Instance(seed)
						if err != nil {
							continue
						}
						ok = true
						instances++
						if vs, err := s.ValidateJSON(in); err != nil || vs != nil {
							t.Errorf("%s: %s: Instance(%d) = %s is invalid: %v %v", rel, g.Description, seed, in, vs, err)
						}
					}
					if ok {
						built++
					} else {
						unbuilt = append(unbuilt, rel+": "+g.Description)
					}
				}
			}
			for _, u := range unbuilt {
				t.Logf("no instance: %s", u)
			}
			share := 100 * float64(cases-built) / float64(cases)
			t.Logf("%s: instances for %d of %d schemas with a valid case (%.1f%% without); %d instances, all valid", d.dir, built, cases, share, instances)
			if cases == 0 || share > 3 {
				t.Errorf("%.1f%% of %d schemas get no instance: more than 3%%", share, cases)
			}
		})
	}
}
