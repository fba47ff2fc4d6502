package http1

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// readResponse reads a response's status line and header from tp and
// works out how its body is framed, with net/http's rules
// (http.ReadResponse and its readTransfer): a single Transfer-Encoding,
// chunked, wins over Content-Length (which is then removed); differing
// Content-Lengths are an error; HEAD, 1xx, 204 and 304 have no body; a
// response with neither is read to the connection's close. fr is nil when
// there is no body. FuzzReadResponse compares it with http.ReadResponse.
func readResponse(tp *textproto.Reader, method string) (resp *http.Response, fr *frame, err error) {
	return readResponseInto(tp, method, nil)
}

// exchangeBox holds a response with its body and framing: the exchange
// allocates the three at once.
type exchangeBox struct {
	resp  http.Response
	body  body
	frame frame
}

// readResponseInto is readResponse placing the response and its frame in
// box (nil: allocated apart).
func readResponseInto(tp *textproto.Reader, method string, box *exchangeBox) (resp *http.Response, fr *frame, err error) {
	newFrame := func(f frame) *frame {
		if box == nil {
			return &f
		}
		box.frame = f
		return &box.frame
	}
	line, err := readStatusLine(tp.R)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok {
		return nil, nil, fmt.Errorf("malformed HTTP response %q", line)
	}
	if box != nil {
		box.resp = http.Response{Proto: proto, Status: strings.TrimLeft(status, " ")}
		resp = &box.resp
	} else {
		resp = &http.Response{Proto: proto, Status: strings.TrimLeft(status, " ")}
	}
	code, _, _ := strings.Cut(resp.Status, " ")
	if len(code) != 3 {
		return nil, nil, fmt.Errorf("malformed HTTP status code %q", code)
	}
	if resp.StatusCode, err = strconv.Atoi(code); err != nil || resp.StatusCode < 0 {
		return nil, nil, fmt.Errorf("malformed HTTP status code %q", code)
	}
	if resp.ProtoMajor, resp.ProtoMinor, ok = http.ParseHTTPVersion(proto); !ok {
		return nil, nil, fmt.Errorf("malformed HTTP version %q", proto)
	}
	h, rare, ok := readPlainHeader(tp.R)
	if !ok {
		rare = rareAll
		mh, err := tp.ReadMIMEHeader()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
		h = http.Header(mh)
	}
	resp.Header = h
	if rare&rarePragma != 0 {
		if hp, ok := h["Pragma"]; ok && len(hp) > 0 && hp[0] == "no-cache" {
			if _, ok := h["Cache-Control"]; !ok {
				h["Cache-Control"] = []string{"no-cache"}
			}
		}
	}

	resp.Close = shouldClose(resp.ProtoMajor, resp.ProtoMinor, h, rare&rareConnection != 0)
	major, minor := resp.ProtoMajor, resp.ProtoMinor
	if major == 0 && minor == 0 {
		major, minor = 1, 1
	}
	chunked := false
	var raw []string
	hasTE := false
	if rare&rareTransferEncoding != 0 {
		raw, hasTE = h["Transfer-Encoding"]
	}
	if hasTE {
		delete(h, "Transfer-Encoding")
		if major > 1 || major == 1 && minor >= 1 { // ignored on HTTP/1.0, as net/http does
			if len(raw) != 1 {
				return nil, nil, fmt.Errorf("too many transfer encodings: %q", raw)
			}
			if !asciiEqualFold(raw[0], "chunked") {
				return nil, nil, fmt.Errorf("unsupported transfer encoding: %q", raw[0])
			}
			chunked = true
		}
	}
	realLength, err := fixLength(resp.StatusCode, method, h, chunked)
	if err != nil {
		return nil, nil, err
	}
	resp.ContentLength = realLength
	if method == http.MethodHead {
		if resp.ContentLength, err = parseContentLength(h["Content-Length"]); err != nil {
			return nil, nil, err
		}
	}
	if resp.Trailer, err = fixTrailer(h, chunked && rare&rareTrailer != 0); err != nil {
		return nil, nil, err
	}
	if realLength == -1 && !chunked && bodyAllowed(resp.StatusCode) {
		resp.Close = true // unbounded: the body ends when the server closes
	}
	if chunked {
		resp.TransferEncoding = []string{"chunked"}
	}
	br := tp.R
	switch {
	case chunked:
		if method == http.MethodHead || !bodyAllowed(resp.StatusCode) {
			return resp, nil, nil
		}
		return resp, newFrame(frame{br: br, tp: tp, cr: httputil.NewChunkedReader(br), resp: resp}), nil
	case realLength == 0:
		return resp, nil, nil
	case realLength > 0:
		return resp, newFrame(frame{br: br, n: realLength}), nil
	case resp.Close:
		return resp, newFrame(frame{br: br, toEOF: true}), nil
	}
	return resp, nil, nil
}

// maxPlainHeaders bounds the fields readPlainHeader takes on.
const maxPlainHeaders = 64

// readPlainHeader is textproto.Reader.ReadMIMEHeader for the header every
// model server sends, already in br's buffer: lines of a key of letters,
// digits and '-', a colon and a printable ASCII value, each ended by CR LF,
// then an empty line. It makes the same header (keys canonical, values
// without the spaces around them, each value slice of capacity one) with
// one string for all the values and the keys already canonical, where
// textproto made one per value and per uncommon key. Anything else (a
// header not yet all buffered, folded lines, a bare LF, other bytes)
// returns false with nothing read, and textproto reads it.
//
// rare has a bit for each field readResponse looks up that the header
// holds, of Pragma, Connection, Transfer-Encoding and Trailer: a plain
// answer holds none, and each lookup costs as much as parsing a field.
func readPlainHeader(br *bufio.Reader) (h http.Header, rare uint8, ok bool) {
	buf, _ := br.Peek(br.Buffered())
	var fields [maxPlainHeaders]plainLine
	n, size := scanPlainHeader(buf, &fields)
	if size < 0 {
		return nil, 0, false
	}
	all := string(buf[:size-2]) // the fields, each with its CR LF
	h = make(http.Header, n)
	slab := make([]string, n)
	for i, f := range fields[:n] {
		key := canonicalKey(all[f.key:f.colon])
		switch key {
		case "Pragma":
			rare |= rarePragma
		case "Connection":
			rare |= rareConnection
		case "Transfer-Encoding":
			rare |= rareTransferEncoding
		case "Trailer":
			rare |= rareTrailer
		}
		value := all[f.value:f.end]
		if repeated(all, fields[:i], key) { // a map look-up only then
			h[key] = append(h[key], value)
			continue
		}
		vv := slab[:1:1]
		slab = slab[1:]
		vv[0] = value
		h[key] = vv
	}
	_, _ = br.Discard(size)
	return h, rare, true
}

// plainLine is where one field of a plain header lies: its key is
// [key:colon], its value, without the spaces and tabs around it,
// [value:end]. (int32: the array of them is zeroed on every call.)
type plainLine struct{ key, colon, value, end int32 }

// repeated reports whether one of fields (in all) has key, compared
// without regard to case: two keys of letters, digits and '-' have the
// same canonical form exactly when they are so equal.
func repeated(all string, fields []plainLine, key string) bool {
	for _, f := range fields {
		if int(f.colon-f.key) == len(key) && asciiEqualFold(all[f.key:f.colon], key) {
			return true
		}
	}
	return false
}

// scanPlainHeader finds, in one pass, the fields of the plain header
// buf starts with (see readPlainHeader) and the header's size, its blank
// line included; size is -1 when buf does not start with a whole plain
// header of at most maxPlainHeaders fields. (It had taken five passes:
// finding the blank line, counting the lines, finding each line's end,
// checking its bytes, then trimming its value.)
func scanPlainHeader(buf []byte, fields *[maxPlainHeaders]plainLine) (n, size int) {
	buf = buf[:min(len(buf), math.MaxInt32)] // offsets fit plainLine's int32 (a longer header goes to textproto)
	i := 0
	for {
		if i+1 < len(buf) && buf[i] == '\r' && buf[i+1] == '\n' {
			return n, i + 2
		}
		// A line starting with a space or a tab would continue the one
		// before: the key must start with a letter.
		if n == maxPlainHeaders || i >= len(buf) || !isLetter(buf[i]) {
			return 0, -1
		}
		key := i
		for i < len(buf) && plainKeyByte[buf[i]] {
			i++
		}
		if i >= len(buf) || buf[i] != ':' {
			return 0, -1
		}
		colon := i
		i++
		for i < len(buf) && (buf[i] == ' ' || buf[i] == '\t') {
			i++
		}
		value := i
		for i < len(buf) && plainValueByte[buf[i]] {
			i++
		}
		if i+1 >= len(buf) || buf[i] != '\r' || buf[i+1] != '\n' {
			return 0, -1
		}
		end := i
		for end > value && (buf[end-1] == ' ' || buf[end-1] == '\t') {
			end--
		}
		fields[n] = plainLine{key: int32(key), colon: int32(colon), value: int32(value), end: int32(end)}
		n++
		i += 2
	}
}

// plainKeyByte marks the bytes of a plain header's keys (ASCII letters,
// digits and '-'), plainValueByte those of its values (printable ASCII
// and tabs).
var plainKeyByte, plainValueByte = func() (k, v [256]bool) {
	for c := range 256 {
		k[c] = isLetter(byte(c)) || '0' <= c && c <= '9' || c == '-'
		v[c] = ' ' <= c && c <= '~' || c == '\t'
	}
	return k, v
}()

// The bits of readPlainHeader's rare.
const (
	rarePragma uint8 = 1 << iota
	rareConnection
	rareTransferEncoding
	rareTrailer
	rareAll = rarePragma | rareConnection | rareTransferEncoding | rareTrailer
)

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// canonicalKey is textproto.CanonicalMIMEHeaderKey for a key of letters,
// digits and '-': k itself when already canonical.
func canonicalKey(k string) string {
	upper := true
	for i := 0; i < len(k); i++ {
		c := k[i]
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			return textproto.CanonicalMIMEHeaderKey(k)
		}
		upper = c == '-'
	}
	return k
}

// statusOK is the status line of nearly every response a model server
// sends, kept as a string so that reading it allocates nothing.
const statusOK = "HTTP/1.1 200 OK"

// readStatusLine is textproto.Reader.ReadLine (whose dot reader this
// transport never uses): a line of any length without its CR LF or LF.
// The usual one, statusOK, is not copied.
func readStatusLine(br *bufio.Reader) (string, error) {
	var line []byte
	for {
		l, more, err := br.ReadLine()
		if err != nil {
			return "", err
		}
		if line == nil && !more {
			if string(l) == statusOK {
				return statusOK, nil
			}
			return string(l), nil
		}
		line = append(line, l...)
		if !more {
			return string(line), nil
		}
	}
}

// shouldClose reports whether the connection ends after this response
// (net/http's shouldClose): HTTP/1.0 without keep-alive, or Connection:
// close, which is then removed from the header on HTTP/1.1.
//
// connection false: the header has no Connection field (readPlainHeader
// saw none), so it need not be looked up.
func shouldClose(major, minor int, h http.Header, connection bool) bool {
	if major < 1 {
		return true
	}
	var conv []string
	if connection {
		conv = h["Connection"]
	}
	hasClose := hasToken(conv, "close")
	if major == 1 && minor == 0 {
		return hasClose || !hasToken(conv, "keep-alive")
	}
	if hasClose {
		delete(h, "Connection")
	}
	return hasClose
}

// fixLength is the body's length: -1 when unknown (chunked or to close).
func fixLength(status int, method string, h http.Header, chunked bool) (int64, error) {
	cls := h["Content-Length"]
	if len(cls) > 1 {
		first := textproto.TrimString(cls[0])
		for _, ct := range cls[1:] {
			if first != textproto.TrimString(ct) {
				return 0, fmt.Errorf("http: message cannot contain multiple Content-Length headers; got %q", cls)
			}
		}
		h["Content-Length"] = []string{first}
		cls = h["Content-Length"]
	}
	var n int64
	if len(cls) > 0 {
		var err error
		if n, err = parseContentLength(cls); err != nil {
			return -1, err
		}
	}
	if method == http.MethodHead || !bodyAllowed(status) {
		return 0, nil
	}
	if chunked {
		delete(h, "Content-Length")
		return -1, nil
	}
	if len(cls) > 0 {
		return n, nil
	}
	delete(h, "Content-Length")
	return -1, nil
}

func parseContentLength(cls []string) (int64, error) {
	if len(cls) == 0 {
		return -1, nil
	}
	cl := textproto.TrimString(cls[0])
	if cl == "" {
		return 0, errors.New("invalid empty Content-Length")
	}
	n, err := strconv.ParseUint(cl, 10, 63)
	if err != nil {
		return 0, fmt.Errorf("bad Content-Length %q", cl)
	}
	return int64(n), nil
}

// fixTrailer reads the Trailer header of a chunked response (net/http's
// fixTrailer): the keys it announces, with nil values until read.
func fixTrailer(h http.Header, chunked bool) (http.Header, error) {
	vv, ok := h["Trailer"]
	if !ok || !chunked {
		return nil, nil
	}
	delete(h, "Trailer")
	trailer := make(http.Header)
	var err error
	for _, v := range vv {
		v = textproto.TrimString(v)
		for v != "" {
			var key string
			key, v, _ = strings.Cut(v, ",")
			if key = textproto.TrimString(key); key == "" {
				continue
			}
			key = http.CanonicalHeaderKey(key)
			switch key {
			case "Transfer-Encoding", "Trailer", "Content-Length":
				if err == nil {
					err = fmt.Errorf("bad trailer key %q", key)
				}
				continue
			}
			trailer[key] = nil
		}
	}
	if err != nil {
		return nil, err
	}
	if len(trailer) == 0 {
		return nil, nil
	}
	return trailer, nil
}

func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == 204 || status == 304)
}

// asciiEqualFold is strings.EqualFold for ASCII only: "chunKed" with a
// Kelvin sign is not "chunked".
func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lower(s[i]) != lower(t[i]) {
			return false
		}
	}
	return true
}

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

// frame reads one response body off the buffered reader: n more bytes,
// chunks up to the last one and its trailer, or everything to EOF.
type frame struct {
	br    *bufio.Reader
	n     int64     // bytes left of a Content-Length body
	cr    io.Reader // chunked decoder, when chunked
	tp    *textproto.Reader
	resp  *http.Response // receives the trailer
	toEOF bool           // ends at the connection's close
	done  bool
}

var errTrailerEOF = fmt.Errorf("unexpected EOF reading trailer: %w", io.ErrUnexpectedEOF)

func (f *frame) Read(p []byte) (int, error) {
	if f.done {
		return 0, io.EOF
	}
	switch {
	case f.cr != nil:
		n, err := f.cr.Read(p)
		if err == io.EOF {
			if err = f.readTrailer(); err == nil {
				f.done = true
				return n, io.EOF
			}
		}
		return n, err
	case f.toEOF:
		n, err := f.br.Read(p)
		if err == io.EOF {
			f.done = true
		}
		return n, err
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	n, err := f.br.Read(p)
	f.n -= int64(n)
	if f.n == 0 {
		f.done = true
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

var (
	crlf       = []byte("\r\n")
	doubleCRLF = []byte("\r\n\r\n")
)

// readTrailer reads what follows the last chunk (net/http's
// body.readTrailer): CRLF, or trailer fields ended by a blank line that
// must already be within the reader's buffer.
func (f *frame) readTrailer() error {
	buf, err := f.br.Peek(2)
	if bytes.Equal(buf, crlf) {
		_, _ = f.br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !seeUpcomingDoubleCRLF(f.br) {
		return errors.New("suspiciously long trailer after chunked body")
	}
	hdr, err := f.tp.ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			return errTrailerEOF
		}
		return err
	}
	if f.resp.Trailer == nil {
		f.resp.Trailer = http.Header(hdr)
	} else {
		for k, v := range hdr {
			f.resp.Trailer[k] = v
		}
	}
	return nil
}

func seeUpcomingDoubleCRLF(r *bufio.Reader) bool {
	for peekSize := 4; ; peekSize++ {
		buf, err := r.Peek(peekSize)
		if bytes.HasSuffix(buf, doubleCRLF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// drainBuffered finishes the body from what the reader already holds
// (at most maxDrain bytes), without waiting on the network; it reports
// whether the body's end was reached.
func (f *frame) drainBuffered(c *conn) bool {
	switch {
	case f.done:
		return true
	case f.toEOF:
		return false
	case f.cr == nil:
		if f.n > maxDrain || f.n > int64(f.br.Buffered()) {
			return false
		}
		_, _ = f.br.Discard(int(f.n))
		f.n, f.done = 0, true
		return true
	}
	if f.br.Buffered() == 0 {
		return false
	}
	// Chunks may end beyond the buffer: a past read deadline makes the
	// reader fail instead of waiting. The deadline is cleared after;
	// release's stop() still catches a cancellation in between.
	_ = c.nc.SetReadDeadline(aLongTimeAgo)
	var scratch [512]byte
	total := 0
	for total <= maxDrain {
		n, err := f.Read(scratch[:])
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			return false
		}
	}
	_ = c.nc.SetReadDeadline(time.Time{})
	return f.done
}

// gzipBody decompresses a gzip response the transport asked for; the
// gzip reader is made on the first Read.
type gzipBody struct {
	b   *body
	zr  *gzip.Reader
	err error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		zr, err := gzip.NewReader(g.b)
		if err != nil {
			g.err = err
			return 0, err
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	if err != nil {
		g.err = err
		if err == io.EOF {
			_ = g.b.Close() // the gzip stream ended: release if the body did too
		}
	}
	return n, err
}

func (g *gzipBody) Close() error { return g.b.Close() }
