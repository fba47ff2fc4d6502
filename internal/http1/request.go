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
// It also returns what the exchange reads of the header (reqHeader), found
// on the same pass over it.
func validHeaders(req *http.Request) (rh reqHeader, err error) {
	if !httpguts.ValidHostHeader(host(req)) {
		return rh, fmt.Errorf("http1: invalid Host %q", host(req))
	}
	if req.Method != "" && !validMethod(req.Method) {
		return rh, fmt.Errorf("http1: invalid method %q", req.Method)
	}
	rh.canonical = true
	for k, vs := range req.Header {
		valid, canon := fieldName(k)
		if !valid {
			return rh, fmt.Errorf("http1: invalid header field name %q", k)
		}
		rh.canonical = rh.canonical && canon
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return rh, fmt.Errorf("http1: invalid header field value for %q; remove control characters", k)
			}
		}
		switch k { // the exact key, as req.Header[k] would find it
		case "User-Agent":
			rh.userAgent, rh.hasUserAgent = vs, true
		case "Accept-Encoding":
			rh.acceptEncoding = first(vs)
		case "Range":
			rh.rangeValue = first(vs)
		case "Connection":
			rh.connection = vs
		}
	}
	return rh, nil
}

// reqHeader is what the exchange reads of a request's header: the values
// of req.Header["User-Agent"], Get("Accept-Encoding"), Get("Range") and
// req.Header["Connection"], and whether every field name is already in
// canonical form (writeRequest then need not canonicalize them again).
type reqHeader struct {
	canonical      bool
	userAgent      []string
	hasUserAgent   bool
	acceptEncoding string
	rangeValue     string
	connection     []string
}

func first(vs []string) string {
	if len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// tokenByte marks the bytes of an HTTP token (RFC 9110 tchar).
var tokenByte = func() (t [256]bool) {
	for c := range 128 {
		t[c] = httpguts.IsTokenRune(rune(c))
	}
	return t
}()

// fieldName reports, in one pass, whether k is a valid field name
// (httpguts.ValidHeaderFieldName) and whether it is canonical
// (http.CanonicalHeaderKey(k) == k: upper case first and after each '-',
// lower case elsewhere).
func fieldName(k string) (valid, canonical bool) {
	if k == "" {
		return false, false
	}
	canonical, upper := true, true
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !tokenByte[c] {
			return false, false
		}
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			canonical = false
		}
		upper = c == '-'
	}
	return true, canonical
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
// rh is validHeaders' finding.
func writeRequest(bw *bufio.Writer, req *http.Request, body io.Reader, cl int64, gzip bool, rh reqHeader) error {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	// The head is appended in place in the writer's free buffer (a
	// larger head grows a copy) and handed over in one Write: a
	// WriteString per piece cost as much as building it.
	b := bw.AvailableBuffer()
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host(req)...)
	b = append(b, "\r\n"...)
	// User-Agent as net/http: its default when absent, none when empty.
	if ua, ok := rh.userAgent, rh.hasUserAgent; !ok {
		b = append(b, "User-Agent: Go-http-client/1.1\r\n"...)
	} else if len(ua) > 0 && ua[0] != "" {
		b = appendField(b, "User-Agent", ua[0])
	}
	for k, vs := range req.Header {
		if !rh.canonical {
			k = http.CanonicalHeaderKey(k)
		}
		if skipHeader(k) {
			continue
		}
		for _, v := range vs {
			b = appendField(b, k, v)
		}
	}
	switch {
	case cl > 0 || cl == 0 && (method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch):
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, cl, 10)
		b = append(b, "\r\n"...)
	case cl < 0:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	if req.Close && !hasToken(rh.connection, "close") {
		b = append(b, "Connection: close\r\n"...)
	}
	if gzip {
		b = append(b, "Accept-Encoding: gzip\r\n"...)
	}
	b = append(b, "\r\n"...)
	_, _ = bw.Write(b)
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

func appendField(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ": "...)
	b = append(b, textprotoTrim(v)...)
	return append(b, "\r\n"...)
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
