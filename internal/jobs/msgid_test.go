package jobs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
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

// TestAppendHex: appendHex is hex.AppendEncode, for every byte value, on
// empty and non-empty destinations; and AppendHashText, AppendHashBytes
// and AppendMsgID append what HashText, HashBytes and MsgID return.
func TestAppendHex(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, dst := range [][]byte{nil, []byte("prefix:"), make([]byte, 3, 600)} {
		for _, src := range [][]byte{nil, {}, {0}, {0xff, 0x0f, 0xf0}, all, all[:7], all[250:], all[9:14]} {
			want := hex.AppendEncode(slices.Clone(dst), src)
			if got := appendHex(slices.Clone(dst), src); !bytes.Equal(got, want) {
				t.Fatalf("appendHex(%q, %x) = %q, want %q", dst, src, got, want)
			}
		}
	}
	text := "some text ü"
	if got := string(AppendHashText([]byte("x"), text)); got != "x"+HashText(text) {
		t.Errorf("AppendHashText = %s", got)
	}
	if got := string(AppendHashBytes([]byte("x"), []byte(text))); got != "x"+HashBytes([]byte(text)) {
		t.Errorf("AppendHashBytes = %s", got)
	}
	if got, want := string(AppendMsgID([]byte("x"), "d", "h", "fp", "m", "r")), "x"+MsgID("d", "h", "fp", "m", "r"); got != want {
		t.Errorf("AppendMsgID = %s, want %s", got, want)
	}
}

func FuzzAppendHex(f *testing.F) {
	f.Add([]byte("prefix"), []byte{0, 9, 10, 15, 16, 0x9a, 0xaf, 0xff, 1})
	f.Fuzz(func(t *testing.T, dst, src []byte) {
		if got, want := appendHex(slices.Clone(dst), src), hex.AppendEncode(slices.Clone(dst), src); !bytes.Equal(got, want) {
			t.Fatalf("appendHex(%q, %x) = %q, want %q", dst, src, got, want)
		}
	})
}
