package http1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"testing"
)

// parsed is what a response parser gives: its status, framing, header,
// body and trailer, or the stage at which it failed.
type parsed struct {
	Status, Proto      string
	Code, Major, Minor int
	Header, Trailer    http.Header
	ContentLength      int64
	Close              bool
	TransferEncoding   []string
	Body               string
	HeaderErr, BodyErr bool
}

func readAllBody(p *parsed, body io.Reader) {
	if body == nil {
		return
	}
	b, err := io.ReadAll(body)
	p.Body, p.BodyErr = string(b), err != nil
}

func parseStd(data []byte, method string) parsed {
	resp, err := http.ReadResponse(bufio.NewReaderSize(bytes.NewReader(data), 4096), &http.Request{Method: method})
	if err != nil {
		return parsed{HeaderErr: true}
	}
	p := parsed{Status: resp.Status, Proto: resp.Proto, Code: resp.StatusCode, Major: resp.ProtoMajor, Minor: resp.ProtoMinor,
		Header: resp.Header, ContentLength: resp.ContentLength, Close: resp.Close, TransferEncoding: resp.TransferEncoding}
	if resp.Body != http.NoBody {
		readAllBody(&p, resp.Body)
	}
	p.Trailer = resp.Trailer
	return p
}

func parseOurs(data []byte, method string) parsed {
	return parseOursWith(bytes.NewReader(data), method)
}

var responseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum, X-Other\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3;ext=1\r\nabc\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nto the end",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\n\r\nuntil close",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
	"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
	"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\n\r\n",
	"HTTP/1.1 200\r\nX: y\r\n continued\r\n\r\n",
	"HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
	"HTTP/1.1 2000 OK\r\n\r\n",
	"HTTP/2.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/0.9 200 OK\r\n\r\nx",
	"HTTP/1.1  200  spaces\r\n\r\n",
	"HTTP/1.1 200 OK\nX-Lf: only\n\nbody",
	"HTTP/1.1 200 OK\r\ncontent-type: x\r\nx-foo-bar: 1\r\nX-FOO-BAR: 2\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Content-Length\r\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n",
}

func FuzzReadResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		want, got := parseStd(data, method), parseOurs(data, method)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%q (%s):\nnet/http %+v\nhttp1    %+v", data, method, want, got)
		}
	})
}

// TestReadResponseSeeds names what the seeds are for: each must parse
// the way net/http parses it (the fuzz target's seeds run as tests too).
func TestReadResponseSeeds(t *testing.T) {
	t.Parallel()
	errs := 0
	for _, s := range responseSeeds {
		if p := parseOurs([]byte(s), http.MethodGet); p.HeaderErr || p.BodyErr {
			errs++
		}
	}
	if errs == 0 || errs == len(responseSeeds) {
		t.Fatalf("%d of %d seeds fail: the corpus must hold both good and bad responses", errs, len(responseSeeds))
	}
}
