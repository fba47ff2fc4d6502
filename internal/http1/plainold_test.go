package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// readPlainHeaderPasses is readPlainHeader as it was before its single
// pass (scanPlainHeader), kept to compare the two.
func readPlainHeaderPasses(br *bufio.Reader) (h http.Header, rare uint8, ok bool) {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, doubleCRLF)
	switch {
	case len(buf) >= 2 && buf[0] == '\r' && buf[1] == '\n':
		end = -2
	case end < 0:
		return nil, 0, false
	}
	block := buf[:end+2]
	lines := bytes.Count(block, crlf)
	if lines > maxPlainHeaders {
		return nil, 0, false
	}
	for rest := block; len(rest) > 0; {
		i := bytes.Index(rest, crlf)
		if !plainFieldPasses(rest[:i]) {
			return nil, 0, false
		}
		rest = rest[i+2:]
	}
	all := string(block)
	h = make(http.Header, lines)
	slab := make([]string, lines)
	for len(all) > 0 {
		i := strings.Index(all, "\r\n")
		line := all[:i]
		all = all[i+2:]
		colon := strings.IndexByte(line, ':')
		key := canonicalKey(line[:colon])
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
		value := strings.TrimRight(strings.TrimLeft(line[colon+1:], " \t"), " \t")
		if vv, ok := h[key]; ok {
			h[key] = append(vv, value)
			continue
		}
		vv := slab[:1:1]
		slab = slab[1:]
		vv[0] = value
		h[key] = vv
	}
	_, _ = br.Discard(len(block) + 2)
	return h, rare, true
}

func plainFieldPasses(line []byte) bool {
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 || !isLetter(line[0]) {
		return false
	}
	for _, c := range line[:colon] {
		if !isLetter(c) && !('0' <= c && c <= '9') && c != '-' {
			return false
		}
	}
	for _, c := range line[colon+1:] {
		if (c < ' ' || c > '~') && c != '\t' {
			return false
		}
	}
	return true
}

// plainResult is what a plain header read gives: the header, with each
// value slice's capacity, the rare bits, and the bytes left buffered.
type plainResult struct {
	H        http.Header
	Caps     map[string]int
	Rare     uint8
	OK       bool
	Buffered int
}

func readPlainWith(data []byte, read func(*bufio.Reader) (http.Header, uint8, bool)) plainResult {
	br := bufio.NewReaderSize(bytes.NewReader(data), 64<<10)
	_, _ = br.Peek(1)
	h, rare, ok := read(br)
	r := plainResult{H: h, Rare: rare, OK: ok, Buffered: br.Buffered()}
	if h != nil {
		r.Caps = map[string]int{}
		for k, vs := range h {
			r.Caps[k] = cap(vs)
		}
	}
	return r
}

// FuzzPlainHeaderOnePass checks that readPlainHeader's single pass takes
// the headers the passes before it took, and makes the same header of
// them, leaving the same bytes unread.
func FuzzPlainHeaderOnePass(f *testing.F) {
	for _, s := range []string{
		"\r\n", "\r\nbody", "", "\r", "A: b\r\n", "A: b\r\n\r", "A: b\r\n\r\n",
		"Content-Type: application/json\r\nContent-Length: 12\r\n\r\nbody",
		"x-ratelimit-remaining-requests:  7 \t\r\nDate: Fri\r\nx-a: 1\r\nX-A: 2\r\nx-A: 3\r\n\r\n",
		"A: b\r\n folded\r\n\r\n", "A: b\nC: d\r\n\r\n", "A b: c\r\n\r\n", "A_b: c\r\n\r\n",
		"A: caf\xc3\xa9\r\n\r\n", " A: b\r\n\r\n", ": b\r\n\r\n", "A:\r\n\r\n", "A: \t \r\n\r\n",
		"A: b\rc\r\n\r\n", "A: b\r\n\r\n\r\n", "a:b:c\r\n\r\n", "9a: b\r\n\r\n",
		"connection: close\r\nPragma: no-cache\r\ntransfer-encoding: chunked\r\nTrailer: X\r\n\r\n",
		strings.Repeat("A: b\r\n", 64) + "\r\n", strings.Repeat("A: b\r\n", 65) + "\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, got := readPlainWith(data, readPlainHeaderPasses), readPlainWith(data, readPlainHeader)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%q:\npasses   %+v\none pass %+v", data, want, got)
		}
	})
}
