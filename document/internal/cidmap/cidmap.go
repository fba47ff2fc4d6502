// Package cidmap maps the CIDs of Adobe's four CJK character collections
// (Adobe-Japan1, -GB1, -CNS1, -Korea1) to Unicode, by Adobe's own
// Adobe-*-UCS2 maps (BSD-3-Clause; update.sh copies them from Debian's
// poppler-data). A PDF that names a CJK font without embedding it, with
// the Identity-H encoding and no ToUnicode map (pTeX and dvipdfmx write
// them so), gives only CIDs: these maps are what turns them into text.
package cidmap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/hex"
	"strings"
	"sync"
	"unicode/utf16"
)

var (
	//go:embed Adobe-Japan1-UCS2.gz
	japan1 []byte
	//go:embed Adobe-GB1-UCS2.gz
	gb1 []byte
	//go:embed Adobe-CNS1-UCS2.gz
	cns1 []byte
	//go:embed Adobe-Korea1-UCS2.gz
	korea1 []byte
)

// Map is one collection's CID → text map, read on first use.
type Map struct {
	once sync.Once
	gz   []byte
	text []string // by CID; "" for a CID the map does not name
}

var maps = map[string]*Map{
	"Japan1": {gz: japan1},
	"GB1":    {gz: gb1},
	"CNS1":   {gz: cns1},
	"Korea1": {gz: korea1},
}

// For returns the map of the Adobe character collection named by a
// CIDSystemInfo's Ordering ("Japan1", …), nil for any other.
func For(ordering string) *Map { return maps[ordering] }

// Text is the character (or characters) CID stands for; false when the
// map does not name it.
func (m *Map) Text(cid int) (string, bool) {
	m.once.Do(m.load)
	if cid < 0 || cid >= len(m.text) || m.text[cid] == "" {
		return "", false
	}
	return m.text[cid], true
}

// load parses the map's bfchar and bfrange lines: "<cid> <utf16>" and
// "<lo> <hi> <utf16 of lo>". A damaged map names fewer CIDs.
func (m *Map) load() {
	zr, err := gzip.NewReader(bytes.NewReader(m.gz))
	if err != nil {
		return
	}
	sc := bufio.NewScanner(zr)
	in := false // within a bfchar or bfrange block, not the code space
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasSuffix(line, "beginbfchar"), strings.HasSuffix(line, "beginbfrange"):
			in = true
			continue
		case strings.HasPrefix(line, "endbf"):
			in = false
			continue
		case !in:
			continue
		}
		f := strings.Fields(line)
		var lo, hi int
		var dst []uint16
		switch {
		case len(f) == 2 && isHex(f[0]) && isHex(f[1]):
			lo, _ = code(f[0])
			hi = lo
			dst = units(f[1])
		case len(f) == 3 && isHex(f[0]) && isHex(f[1]) && isHex(f[2]):
			lo, _ = code(f[0])
			hi, _ = code(f[1])
			dst = units(f[2])
		default:
			continue
		}
		if len(dst) == 0 || hi < lo || hi > 0xffff {
			continue
		}
		for len(m.text) <= hi {
			m.text = append(m.text, "")
		}
		for cid := lo; cid <= hi; cid++ {
			if r := string(utf16.Decode(dst)); r != "\ufffd" {
				m.text[cid] = r
			}
			dst = append([]uint16(nil), dst...)
			dst[len(dst)-1]++ // a range runs on in its last unit
		}
	}
}

func isHex(s string) bool { return len(s) > 2 && s[0] == '<' && s[len(s)-1] == '>' }

func code(s string) (int, bool) {
	b, err := hex.DecodeString(s[1 : len(s)-1])
	if err != nil || len(b) == 0 || len(b) > 2 {
		return 0, false
	}
	v := 0
	for _, c := range b {
		v = v<<8 | int(c)
	}
	return v, true
}

func units(s string) []uint16 {
	b, err := hex.DecodeString(s[1 : len(s)-1])
	if err != nil || len(b)%2 != 0 {
		return nil
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	return u
}
