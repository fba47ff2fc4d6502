package sourcecli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/cli"
	"github.com/extractq/extractq/internal/source"
)

func TestFlagsCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		flags  Flags
		paths  []string
		remote bool
		says   string
	}{
		{name: "local paths", paths: []string{"docs/", "-"}},
		{name: "a bucket", paths: []string{"s3://b/p/"}, remote: true},
		{name: "a query", flags: Flags{FromSQL: "SELECT 1", SQLURL: "postgres://x"}, remote: true},
		{name: "a URL list", flags: Flags{FromURLs: "urls.txt"}, remote: true},
		{name: "two buckets", paths: []string{"s3://b/p/", "s3://b/q/"}, says: "one remote source per cmd"},
		{name: "a bucket and a query", flags: Flags{FromSQL: "SELECT 1"}, paths: []string{"s3://b/p/"}, says: "one remote source per cmd"},
		{name: "mixed", paths: []string{"docs/", "s3://b/p/"}, says: "local inputs (docs/) and a remote source cannot be mixed"},
		{name: "--sql-url alone", flags: Flags{SQLURL: "postgres://x"}, paths: []string{"docs/"}, says: "--sql-url needs --from-sql"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			remote, err := tc.flags.Check(tc.paths, "cmd")
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("Check = %v, want an error saying %q", err, tc.says)
				}
				return
			}
			if err != nil || remote != tc.remote {
				t.Fatalf("Check = %v, %v; want %v, nil", remote, err, tc.remote)
			}
		})
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		code int
		says string
	}{
		{name: "no error", err: nil, code: cli.ExitOK},
		{name: "access", err: fmt.Errorf("%w: no such bucket", source.ErrAccess), code: cli.ExitUsage},
		{name: "bad source", err: fmt.Errorf("%w: s3:/x", source.ErrUsage), code: cli.ExitUsage},
		{name: "server down", err: fmt.Errorf("%w: dial", source.ErrUnavailable), code: cli.ExitUnavailable},
		{name: "listing broken part way", err: &source.ListError{After: "k", Err: errors.New("timeout")}, code: cli.ExitUnavailable, says: "run the same command again: AGAIN"},
		{name: "already coded", err: cli.Unavailable(errors.New("db")), code: cli.ExitUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Error(tc.err, "AGAIN")
			if cli.Code(err) != tc.code || tc.says != "" && !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Error(%v) = %v (exit %d), want exit %d saying %q", tc.err, err, cli.Code(err), tc.code, tc.says)
			}
		})
	}
}
