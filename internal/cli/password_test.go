package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestPasswordFlags: --password, else --password-file's first line (its
// line ending dropped, other spaces kept), else the environment; both
// flags, or a file missing or empty, are usage errors that never show
// what the file holds.
func TestPasswordFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crlf, spaced, empty := file("crlf", "s3cret\r\nsecond line\n"), file("spaced", " pass word "), file("empty", "\nhidden\n")
	env := map[string]string{PasswordEnv: "from-env"}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
		msg  string // a usage error saying this; "" for none
	}{
		{name: "flag", args: []string{"--password", "p1"}, env: env, want: "p1"},
		{name: "file, CRLF", args: []string{"--password-file", crlf}, env: env, want: "s3cret"},
		{name: "file, spaces kept", args: []string{"--password-file", spaced}, want: " pass word "},
		{name: "environment", env: env, want: "from-env"},
		{name: "none"},
		{name: "both", args: []string{"--password", "p1", "--password-file", crlf}, msg: "give --password or --password-file, not both"},
		{name: "missing file", args: []string{"--password-file", filepath.Join(dir, "nope")}, msg: "--password-file: open " + filepath.Join(dir, "nope")},
		{name: "empty first line", args: []string{"--password-file", empty}, msg: "its first line is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var f PasswordFlags
			fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
			f.Register(fl, "encrypted documents")
			if err := fl.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := f.Value(func(k string) string { return tc.env[k] })
			if tc.msg != "" {
				var ee *ExitError
				if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.Contains(err.Error(), tc.msg) {
					t.Fatalf("err = %v, want a usage error saying %q", err, tc.msg)
				}
				if strings.Contains(err.Error(), "hidden") || strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows the file's content: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("password %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
