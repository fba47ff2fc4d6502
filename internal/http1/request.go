package http1

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"golang.org/x/net/http/httpguts"
)

// outgoingLength is the length of the request body: 0 without one, -1
// when unknown (the body is then sent chunked), as net/http decides.
func outgoingLength(req *http.Request) (int64, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return 0, nil
	}
	if req.ContentLength < -1 {
		return 0, fmt.Errorf("http1: negative ContentLength %d; use -1 for an unknown length", req.ContentLength)
	}
	if req.ContentLength != 0 {
		return req.ContentLength, nil
	}
	return -1, nil
}

// validHeaders refuses what would let a header value end the line early
// (CR, LF, other control bytes), invalid field names and hosts, as
// net/http's Transport does before writing anything.
func validHeaders(req *http.Request) error {
	if !httpguts.ValidHostHeader(host(req)) {
		return fmt.Errorf("http1: invalid Host %q", host(req))
	}
	if req.Method != "" && !validMethod(req.Method) {
		return fmt.Errorf("http1: invalid method %q", req.Method)
	}
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("http1: invalid header field name %q", k)
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("http1: invalid header field value for %q; remove control characters", k)
			}
		}
	}
	return nil
}

func validMethod(m string) bool {
	for i := 0; i < len(m); i++ {
		if !httpguts.IsTokenRune(rune(m[i])) {
			return false
		}
	}
	return true
}

func host(req *http.Request) string {
	if req.Host != "" {
		return req.Host
	}
	return req.URL.Host
}

// skipHeader lists the fields the transport writes itself, as net/http's
// reqWriteExcludeHeader does.
func skipHeader(k string) bool {
	switch k {
	case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
		return true
	}
	return false
}

// writeRequest writes the request line, the header (keys in canonical
// form) and the body, then flushes: a request that fits the buffer goes
// out in one write.
func writeRequest(bw *bufio.Writer, req *http.Request, body io.Reader, cl int64, gzip bool) error {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	_, _ = bw.WriteString(method)
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(req.URL.RequestURI())
	_, _ = bw.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = bw.WriteString(host(req))
	_, _ = bw.WriteString("\r\n")
	// User-Agent as net/http: its default when absent, none when empty.
	if ua, ok := req.Header["User-Agent"]; !ok {
		_, _ = bw.WriteString("User-Agent: Go-http-client/1.1\r\n")
	} else if len(ua) > 0 && ua[0] != "" {
		writeField(bw, "User-Agent", ua[0])
	}
	for k, vs := range req.Header {
		k = http.CanonicalHeaderKey(k) // no allocation when already canonical
		if skipHeader(k) {
			continue
		}
		for _, v := range vs {
			writeField(bw, k, v)
		}
	}
	switch {
	case cl > 0 || cl == 0 && (method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch):
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.Write(strconv.AppendInt(bw.AvailableBuffer(), cl, 10))
		_, _ = bw.WriteString("\r\n")
	case cl < 0:
		_, _ = bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if req.Close && !hasToken(req.Header["Connection"], "close") {
		_, _ = bw.WriteString("Connection: close\r\n")
	}
	if gzip {
		_, _ = bw.WriteString("Accept-Encoding: gzip\r\n")
	}
	_, _ = bw.WriteString("\r\n")
	switch {
	case cl > 0:
		if err := writeBody(bw, body, cl); err != nil {
			return err
		}
	case cl < 0:
		if err := writeChunked(bw, body); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeBody copies cl bytes of body straight into the writer's buffer
// (io.Copy through an io.LimitReader allocated the reader).
func writeBody(bw *bufio.Writer, body io.Reader, cl int64) error {
	for n := int64(0); n < cl; {
		if bw.Available() == 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
		buf := bw.AvailableBuffer()
		buf = buf[:min(int64(cap(buf)), cl-n)]
		m, err := body.Read(buf)
		_, _ = bw.Write(buf[:m]) // the bytes are already in place: no copy
		n += int64(m)
		if err == io.EOF && n < cl {
			return fmt.Errorf("%w (%d bytes, ContentLength %d)", ErrBodyLength, n, cl)
		}
		if err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

// writeChunked sends a body of unknown length in chunks of what each read
// returns, then the last chunk.
func writeChunked(bw *bufio.Writer, body io.Reader) error {
	var buf [4 << 10]byte
	for {
		n, err := body.Read(buf[:])
		if n > 0 {
			_, _ = bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(n), 16))
			_, _ = bw.WriteString("\r\n")
			_, _ = bw.Write(buf[:n])
			if _, werr := bw.WriteString("\r\n"); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	_, err := bw.WriteString("0\r\n\r\n")
	return err
}

func writeField(bw *bufio.Writer, k, v string) {
	_, _ = bw.WriteString(k)
	_, _ = bw.WriteString(": ")
	_, _ = bw.WriteString(textprotoTrim(v))
	_, _ = bw.WriteString("\r\n")
}

// textprotoTrim trims leading and trailing spaces and tabs, as
// http.Header.Write does.
func textprotoTrim(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
