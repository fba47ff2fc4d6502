package providers

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"testing"
)

// TestTemplateRequestMatchesNew: a request made from the provider's
// template is the request made anew (newRequest with the header set), field
// for field, body and GetBody included; it is used only with the
// provider's own bearer header, and a new URL, method or content type
// makes a new template.
func TestTemplateRequestMatchesNew(t *testing.T) {
	p, err := New("vllm:m", WithBaseURL("http://127.0.0.1:1/v1"), WithAPIKey("sk-test"), WithGetenv(env{}.get))
	if err != nil {
		t.Fatal(err)
	}
	b := &p.(*openAIProvider).base
	if b.direct == nil || b.template == nil {
		t.Fatal("the provider does not go to http1 directly")
	}
	fresh := *b
	fresh.template = nil // makes every request anew
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		method, url, ct string
		payload         []byte
	}{
		{http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", "application/json", []byte(`{"model":"m"}`)},
		{http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", "application/json", []byte(`{"model":"n"}`)},
		{http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", "text/plain", []byte(`x`)},
		{http.MethodPost, "http://127.0.0.1:1/v1/completions", "application/json", []byte{}},
		{http.MethodGet, "http://127.0.0.1:1/v1/models", "", nil},
		{"", "http://127.0.0.1:1/v1/models", "", nil},
		{http.MethodPost, "http://[::1]:/v1/x", "application/json", []byte(`{}`)},
	} {
		for range 2 { // the first call makes the template, the second uses it
			got, err := b.httpRequest(ctx, tc.method, tc.url, b.bearer, tc.ct, tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fresh.httpRequest(ctx, tc.method, tc.url, b.bearer, tc.ct, tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			sameRequest(t, got, want)
		}
		tmpl := b.template.Load()
		if tmpl == nil || tmpl.url != tc.url || tmpl.method != tc.method || tmpl.contentType != tc.ct {
			t.Fatalf("%s %s %s: no template made for it", tc.method, tc.url, tc.ct)
		}
		got, _ := b.httpRequest(ctx, tc.method, tc.url, b.bearer, tc.ct, tc.payload)
		if !sameMap(got.Header, tmpl.req.Header) || got.URL != tmpl.req.URL {
			t.Fatalf("%s %s: the template was not used", tc.method, tc.url)
		}
		other := http.Header{"Authorization": b.bearer["Authorization"]} // equal, not the provider's own
		got, _ = b.httpRequest(ctx, tc.method, tc.url, other, tc.ct, tc.payload)
		if sameMap(got.Header, tmpl.req.Header) {
			t.Fatalf("%s %s: the template was used with another header", tc.method, tc.url)
		}
	}
}

// sameRequest compares two requests field by field, their bodies and
// GetBody's by what they read.
func sameRequest(t *testing.T, got, want *http.Request) {
	t.Helper()
	readAll := func(rc io.ReadCloser) string {
		if rc == nil {
			return "<nil>"
		}
		bs, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return reflect.TypeOf(rc).String() + ":" + string(bs)
	}
	readGet := func(r *http.Request) string {
		if r.GetBody == nil {
			return "<nil>"
		}
		rc, err := r.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		return readAll(rc)
	}
	if g, w := readGet(got)+readGet(got), readGet(want)+readGet(want); g != w {
		t.Fatalf("GetBody: %q, want %q", g, w)
	}
	if g, w := readAll(got.Body), readAll(want.Body); g != w {
		t.Fatalf("body: %q, want %q", g, w)
	}
	g, w := *got, *want
	g.Body, g.GetBody, w.Body, w.GetBody = nil, nil, nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("request:\n%+v\nwant\n%+v", g, w)
	}
}
