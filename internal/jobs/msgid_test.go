package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestMsgIDIsStreamedHash checks MsgID against the hash it has always
// been (the fields streamed into sha256, each followed by a zero byte, the
// first 32 hex digits), for short fields and for fields longer than its
// stack buffer: a changed id would queue every document again.
func TestMsgIDIsStreamedHash(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := [][5]string{
		{"", "", "", "", ""},
		{"doc-1", HashText("text"), "fp", "gpt", ""},
		{"doc-1", HashText("text"), "fp", "gpt", "r1"},
		{long, HashText(long), long, "model", long},
		{"a\x00b", "", "c", "", "d"},
	}
	for _, c := range cases {
		h := sha256.New()
		for _, s := range c {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		want := hex.EncodeToString(h.Sum(nil))[:32]
		if got := MsgID(c[0], c[1], c[2], c[3], c[4]); got != want {
			t.Errorf("MsgID(%.20q…) = %s, want %s", c, got, want)
		}
	}
	for _, text := range []string{"", "text", long} {
		sum := sha256.Sum256([]byte(text))
		if got, want := HashText(text), hex.EncodeToString(sum[:]); got != want || HashBytes([]byte(text)) != want {
			t.Errorf("HashText(%.20q) = %s, want %s", text, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { MsgID("doc-1", HashText("text"), "fp", "gpt", "") }); n > 2 {
		t.Errorf("%v allocations per MsgID (with HashText's one), want at most 2", n)
	}
}
