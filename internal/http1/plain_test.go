package http1

import (
	"bufio"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// TestReadPlainHeader: the headers readPlainHeader takes come out as
// textproto's, those it leaves are left unread for textproto.
func TestReadPlainHeader(t *testing.T) {
	for _, tc := range []struct {
		in    string
		plain bool
	}{
		{"\r\n", true},
		{"Content-Type: application/json\r\nContent-Length: 12\r\n\r\nbody", true},
		{"x-ratelimit-remaining-requests:  7 \t\r\nDate: Fri\r\nx-a: 1\r\nX-A: 2\r\n\r\n", true},
		{"A: b\r\n folded\r\n\r\n", false},
		{"connection: close\r\nPragma: no-cache\r\ntransfer-encoding: chunked\r\nTrailer: X\r\n\r\n", true},
		{"A: b\nC: d\r\n\r\n", false},
		{"A: b\r\nC: d\r\n", false}, // not all buffered
		{"A b: c\r\n\r\n", false},
		{"A_b: c\r\n\r\n", false},
		{"A: caf\xc3\xa9\r\n\r\n", false},
		{" A: b\r\n\r\n", false},
		{": b\r\n\r\n", false},
	} {
		br := bufio.NewReader(strings.NewReader(tc.in))
		_, _ = br.Peek(1)
		h, rare, ok := readPlainHeader(br)
		if ok != tc.plain {
			t.Errorf("%q: plain = %v, want %v", tc.in, ok, tc.plain)
			continue
		}
		want, werr := textproto.NewReader(bufio.NewReader(strings.NewReader(tc.in))).ReadMIMEHeader()
		if !ok {
			if br.Buffered() != len(tc.in) {
				t.Errorf("%q: %d bytes read before giving up", tc.in, len(tc.in)-br.Buffered())
			}
			continue
		}
		if werr != nil || !reflect.DeepEqual(h, http.Header(want)) {
			t.Errorf("%q: got %q, textproto %q (%v)", tc.in, h, want, werr)
		}
		for bit, k := range map[uint8]string{rarePragma: "Pragma", rareConnection: "Connection", rareTransferEncoding: "Transfer-Encoding", rareTrailer: "Trailer"} {
			if _, has := h[k]; has != (rare&bit != 0) {
				t.Errorf("%q: rare bit of %s = %v, want %v", tc.in, k, !has, has)
			}
		}
		for k, vs := range h {
			if cap(vs) != len(vs) && len(vs) == 1 {
				t.Errorf("%q: %s's values can grow into another's", tc.in, k)
			}
		}
	}
}

// TestReadResponseAllocs bounds the allocations of reading a model
// server's usual response head: textproto made one string per value and
// per uncommon key, and one for the status line.
func TestReadResponseAllocs(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: Fri, 27 Nov 2026 10:00:00 GMT\r\n" +
		"X-Ratelimit-Remaining-Requests: 7\r\nX-Ratelimit-Remaining-Tokens: 70\r\nContent-Length: 2\r\n\r\n{}"
	r := strings.NewReader(head)
	br := bufio.NewReaderSize(r, 4096)
	tp := textproto.NewReader(br)
	n := testing.AllocsPerRun(100, func() {
		r.Reset(head)
		br.Reset(r)
		if _, _, err := readResponse(tp, http.MethodPost); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations", n)
	if n > 6 {
		t.Fatalf("%.0f allocations, want at most 6", n)
	}
}

func TestFieldName(t *testing.T) {
	for _, k := range []string{"", "Accept", "accept", "Content-Type", "Content-type", "X-A", "x-a", "A_b", "A b", "é", "A-", "-a", "ÄB"} {
		valid, canonical := fieldName(k)
		if valid != httpguts.ValidHeaderFieldName(k) || valid && canonical != (http.CanonicalHeaderKey(k) == k) {
			t.Errorf("fieldName(%q) = %v, %v", k, valid, canonical)
		}
	}
}

func FuzzFieldName(f *testing.F) {
	f.Add("Content-Type")
	f.Add("x-ratelimit")
	f.Fuzz(func(t *testing.T, k string) {
		valid, canonical := fieldName(k)
		if valid != httpguts.ValidHeaderFieldName(k) || valid && canonical != (http.CanonicalHeaderKey(k) == k) {
			t.Fatalf("fieldName(%q) = %v, %v", k, valid, canonical)
		}
	})
}
