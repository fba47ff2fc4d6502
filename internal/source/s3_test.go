package source_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/extractq/extractq/internal/source"
	"github.com/extractq/extractq/internal/source/s3test"
)

// listAll lists src after after and returns the items' ids.
func listAll(t *testing.T, src source.Source, after string) ([]source.Item, error) {
	t.Helper()
	var got []source.Item
	err := src.List(t.Context(), after, func(it source.Item) error {
		got = append(got, it)
		return nil
	})
	return got, err
}

func ids(items []source.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func TestS3ListsInOrderAndResumes(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	objects := map[string]string{
		"in/a.txt": "alpha", "in/b.txt": "beta", "in/sub/c.txt": "gamma", "in/sub/d.md": "delta",
		"in/dir/": "-", "other/e.txt": "epsilon",
	}
	if err := srv.Fill(t.Context(), "docs", objects); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, uri, glob, after string
		want                   []string
	}{
		{"whole prefix", "s3://docs/in/", "", "", []string{"s3://docs/in/a.txt", "s3://docs/in/b.txt", "s3://docs/in/sub/c.txt", "s3://docs/in/sub/d.md"}},
		{"glob on the base name", "s3://docs/in/", "*.txt", "", []string{"s3://docs/in/a.txt", "s3://docs/in/b.txt", "s3://docs/in/sub/c.txt"}},
		{"resumed after a key", "s3://docs/in/", "", "in/b.txt", []string{"s3://docs/in/sub/c.txt", "s3://docs/in/sub/d.md"}},
		{"whole bucket", "s3://docs", "*.txt", "", []string{"s3://docs/in/a.txt", "s3://docs/in/b.txt", "s3://docs/in/sub/c.txt", "s3://docs/other/e.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := srv.Options()
			opts.Glob, opts.PageSize = tc.glob, 2 // several pages
			src, err := source.NewS3(tc.uri, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := src.Check(t.Context()); err != nil {
				t.Fatal(err)
			}
			got, err := listAll(t, src, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tc.want) {
				t.Fatalf("listed %v, want %v", ids(got), tc.want)
			}
			for _, it := range got {
				key := strings.TrimPrefix(it.ID, "s3://docs/")
				if it.Version == "" || it.Size != int64(len(objects[key])) || it.Position != key {
					t.Errorf("%s: version %q size %d position %q", it.ID, it.Version, it.Size, it.Position)
				}
				b, err := it.Fetch(t.Context(), 1<<20)
				if err != nil || string(b) != objects[key] {
					t.Errorf("fetch %s = %q, %v; want %q", it.ID, b, err, objects[key])
				}
			}
		})
	}
}

func TestS3RefusesBeforeListing(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	if err := srv.Fill(t.Context(), "docs", map[string]string{"open/a.txt": "a", "secret/b.txt": "b"}); err != nil {
		t.Fatal(err)
	}
	// Denials are tested against a server that checks access
	// (TestS3RefusedByAServerThatChecks); gofakes3 checks none.
	tests := []struct{ uri, want string }{
		{"s3://nobucket/x/", "no such bucket"},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			t.Parallel()
			src, err := source.NewS3(tc.uri, srv.Options())
			if err != nil {
				t.Fatal(err)
			}
			err = src.Check(t.Context())
			if !errors.Is(err, source.ErrAccess) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want ErrAccess saying %q", err, tc.want)
			}
		})
	}
	open, err := source.NewS3("s3://docs/open/", srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	if err := open.Check(t.Context()); err != nil {
		t.Fatalf("an allowed prefix is refused: %v", err)
	}
}

// TestS3RefusedByAServerThatChecks runs against versitygw, which checks
// every request's signature and each account's access to each bucket: a
// bucket the account may not list, a prefix its bucket policy denies, a
// wrong secret and an unknown key are refused by Check, before anything is listed, with the fix named; the
// account's own bucket is listed.
func TestS3RefusedByAServerThatChecks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	v := s3test.StartVersity(t)
	if err := v.CreateUser(ctx, "alice", "alice-secret"); err != nil {
		t.Fatal(err)
	}
	if err := v.CreateBucket(ctx, "finance", s3test.VersityRootKey, map[string]string{"in/a.txt": "a"}); err != nil {
		t.Fatal(err)
	}
	if err := v.CreateBucket(ctx, "alice-docs", "alice", map[string]string{"in/b.txt": "b", "in/c.txt": "c", "hr/d.txt": "d"}); err != nil {
		t.Fatal(err)
	}
	if err := v.DenyPrefix(ctx, "alice-docs", "alice", "hr/"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, uri, access, secret string
		want                      string // in the error; "" for none
	}{
		{"a bucket the account may not list", "s3://finance/in/", "alice", "alice-secret", "access denied: the credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE or the instance role) need s3:ListBucket"},
		{"wrong secret", "s3://alice-docs/in/", "alice", "not-alice-secret", "the credentials were refused (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"},
		{"unknown access key", "s3://alice-docs/in/", "mallory", "alice-secret", "the credentials were refused"},
		{"a prefix a bucket policy denies", "s3://alice-docs/hr/", "alice", "alice-secret", "access denied"},
		{"its own bucket", "s3://alice-docs/in/", "alice", "alice-secret", ""},
		{"root may list the other", "s3://finance/in/", s3test.VersityRootKey, s3test.VersityRootSecret, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, err := source.NewS3(tc.uri, v.Options(tc.access, tc.secret))
			if err != nil {
				t.Fatal(err)
			}
			err = src.Check(t.Context())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want it allowed", err)
				}
				got, err := listAll(t, src, "")
				if err != nil || len(got) == 0 {
					t.Fatalf("listed %v, %v; want the bucket's objects", ids(got), err)
				}
				return
			}
			if !errors.Is(err, source.ErrAccess) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want ErrAccess saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestS3BadURIs(t *testing.T) {
	t.Parallel()
	for _, uri := range []string{"s3://", "s3:///key", "http://x/y"} {
		if _, err := source.NewS3(uri, source.S3Options{Endpoint: "127.0.0.1:1"}); !errors.Is(err, source.ErrUsage) {
			t.Errorf("NewS3(%q) = %v, want ErrUsage", uri, err)
		}
	}
	if _, err := source.NewS3("s3://b/p", source.S3Options{Endpoint: "ftp://x"}); !errors.Is(err, source.ErrUsage) {
		t.Errorf("an ftp endpoint is accepted: %v", err)
	}
}

func TestS3UnreachableEndpoint(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	opts := srv.Options()
	opts.Endpoint = "http://127.0.0.1:1" // nothing listens there
	src, err := source.NewS3("s3://docs/", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Check(t.Context()); !errors.Is(err, source.ErrUnavailable) {
		t.Fatalf("Check on a closed port = %v, want ErrUnavailable", err)
	}
}

func TestS3ObjectDeletedAfterListing(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	if err := srv.Fill(t.Context(), "docs", map[string]string{"a.txt": "a", "b.txt": "b"}); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewS3("s3://docs/", srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	got, err := listAll(t, src, "")
	if err != nil || len(got) != 2 {
		t.Fatalf("listed %v, %v", ids(got), err)
	}
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveObject(t.Context(), "docs", "a.txt", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := got[0].Fetch(t.Context(), 100); !errors.Is(err, source.ErrItem) || !strings.Contains(err.Error(), "deleted after it was listed") {
		t.Errorf("fetch of a deleted object = %v, want ErrItem saying it was deleted", err)
	}
	if b, err := got[1].Fetch(t.Context(), 100); err != nil || string(b) != "b" {
		t.Errorf("the other object: %q, %v", b, err)
	}
}

func TestS3FetchReadsAtMostLimitPlusOne(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	if err := srv.Fill(t.Context(), "docs", map[string]string{"big.txt": strings.Repeat("x", 1000)}); err != nil {
		t.Fatal(err)
	}
	src, err := source.NewS3("s3://docs/", srv.Options())
	if err != nil {
		t.Fatal(err)
	}
	got, err := listAll(t, src, "")
	if err != nil || len(got) != 1 {
		t.Fatal(ids(got), err)
	}
	b, err := got[0].Fetch(t.Context(), 10)
	if err != nil || len(b) != 11 {
		t.Fatalf("read %d bytes, %v; want 11", len(b), err)
	}
}

// A server that stalls mid-listing makes List fail with the last key it
// listed; listing again after it continues where it stopped.
func TestS3StallMidListingResumes(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	if err := srv.Fill(t.Context(), "docs", map[string]string{"1": "a", "2": "b", "3": "c", "4": "d", "5": "e"}); err != nil {
		t.Fatal(err)
	}
	var stall atomic.Bool
	stall.Store(true)
	stallPages(srv, func(*http.Request) bool { return stall.Load() })
	opts := srv.Options()
	opts.PageSize, opts.Timeout = 2, 200*time.Millisecond
	src, err := source.NewS3("s3://docs/", opts)
	if err != nil {
		t.Fatal(err)
	}
	first, err := listAll(t, src, "")
	var le *source.ListError
	if !errors.As(err, &le) || le.After != "2" || len(first) != 2 {
		t.Fatalf("listed %v then %v; want 2 keys then a ListError after key 2", ids(first), err)
	}
	stall.Store(false)
	rest, err := listAll(t, src, le.After)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"s3://docs/3", "s3://docs/4", "s3://docs/5"}; !slices.Equal(ids(rest), want) {
		t.Fatalf("resumed listing %v, want %v", ids(rest), want)
	}
}

// ListResuming lists again after the last key when the server stalls
// mid-listing: every key once, in order; without retries the error stands.
func TestListResuming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		retries int
		want    []string
		retried int
	}{
		{name: "resumed", retries: 3, want: []string{"1", "2", "3", "4", "5"}, retried: 1},
		{name: "no retries", retries: 0, want: []string{"1", "2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := s3test.Start(t)
			if err := srv.Fill(t.Context(), "docs", map[string]string{"1": "a", "2": "b", "3": "c", "4": "d", "5": "e"}); err != nil {
				t.Fatal(err)
			}
			// Pages after the first stall (through the client's own retries)
			// until a listing starts after a key: the resumed one.
			var resumed atomic.Bool
			stallPages(srv, func(r *http.Request) bool {
				if r.URL.Query().Get("start-after") != "" {
					resumed.Store(true)
				}
				return !resumed.Load()
			})
			opts := srv.Options()
			opts.PageSize, opts.Timeout = 2, 200*time.Millisecond
			src, err := source.NewS3("s3://docs/", opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			retried, err := source.ListResuming(t.Context(), src, "", tc.retries, 10*time.Millisecond, func(it source.Item) error {
				got = append(got, strings.TrimPrefix(it.ID, "s3://docs/"))
				return nil
			})
			var le *source.ListError
			if tc.retries == 0 && !errors.As(err, &le) || tc.retries > 0 && err != nil {
				t.Fatalf("ListResuming = %v", err)
			}
			if !slices.Equal(got, tc.want) || retried != tc.retried {
				t.Fatalf("listed %v after %d retries, want %v after %d", got, retried, tc.want, tc.retried)
			}
		})
	}
}

// stallPages makes the server stall the pages after a listing's first,
// longer than the client's timeout, while stall (asked of every request)
// says so.
func stallPages(srv *s3test.Server, stall func(*http.Request) bool) {
	srv.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !stall(r) || r.URL.Query().Get("continuation-token") == "" {
			return false
		}
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
		return true
	})
}

// Stopping part way (fn's error) ends the listing with that error and
// no goroutine left paging.
func TestS3ListStopsAtCallbackError(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	if err := srv.Fill(t.Context(), "docs", map[string]string{"1": "a", "2": "b", "3": "c"}); err != nil {
		t.Fatal(err)
	}
	opts := srv.Options()
	opts.PageSize = 1
	src, err := source.NewS3("s3://docs/", opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	n := 0
	err = src.List(context.Background(), "", func(source.Item) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("List = %v after %d items, want stop after 1", err, n)
	}
}
