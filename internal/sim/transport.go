package sim

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
)

// Transport returns a RoundTripper that serves requests in-process through
// Handler: no sockets, no goroutines. A dropped connection comes back as a
// connection-reset error, as it would over TCP.
func (s *Server) Transport() http.RoundTripper { return transport{h: s.Handler()} }

type transport struct{ h http.Handler }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	} else {
		req = req.Clone(req.Context())
		req.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, req)
	if rec.dropped {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	if err := req.Context().Err(); err != nil && rec.status == 0 {
		return nil, err
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

// recorder is the in-process ResponseWriter.
type recorder struct {
	header  http.Header
	status  int
	body    bytes.Buffer
	dropped bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

func (r *recorder) drop() { r.dropped = true }
