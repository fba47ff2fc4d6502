// Package tneftest writes TNEF streams (winmail.dat, [MS-OXTNEF]) for
// tests: the reader's own tests and its fixtures, which nothing on the
// build machine writes. It writes what Outlook writes (legacy attributes,
// MAPI property lists, compressed RTF) and, on request, what broken
// writers do (wrong checksums).
package tneftest

import (
	"encoding/binary"
	"hash/crc32"
	"time"
	"unicode/utf16"
)

// Signature starts every TNEF stream.
const Signature = 0x223E9F78

// Attribute levels.
const (
	LevelMessage    = 1
	LevelAttachment = 2
)

// Attribute ids ([MS-OXTNEF] 2.1.3.2): the attribute's type in the high
// word, its id in the low.
const (
	AttFrom           = 0x00008000
	AttSubject        = 0x00018004
	AttDateSent       = 0x00038005
	AttMessageClass   = 0x00078008
	AttBody           = 0x0002800C
	AttAttachData     = 0x0006800F
	AttAttachTitle    = 0x00018010
	AttAttachRendData = 0x00069002
	AttMsgProps       = 0x00069003
	AttRecipTable     = 0x00069004
	AttAttachment     = 0x00069005
	AttTnefVersion    = 0x00089006
	AttOemCodepage    = 0x00069007
)

// Attr is one attribute.
type Attr struct {
	Level byte
	ID    uint32
	Data  []byte
	// BadChecksum writes a checksum one off the data's.
	BadChecksum bool
}

// Build writes a stream: the signature, the legacy key, the attributes,
// each with its length and checksum.
func Build(key uint16, attrs ...Attr) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, Signature)
	b = le.AppendUint16(b, key)
	for _, a := range attrs {
		b = append(b, a.Level)
		b = le.AppendUint32(b, a.ID)
		b = le.AppendUint32(b, uint32(len(a.Data)))
		b = append(b, a.Data...)
		sum := Checksum(a.Data)
		if a.BadChecksum {
			sum++
		}
		b = le.AppendUint16(b, sum)
	}
	return b
}

// Checksum is an attribute's checksum: the sum of its data bytes.
func Checksum(data []byte) uint16 {
	var s uint16
	for _, c := range data {
		s += uint16(c)
	}
	return s
}

// Version is attTnefVersion's data (0x00010000).
func Version() []byte { return binary.LittleEndian.AppendUint32(nil, 0x00010000) }

// Codepage is attOemCodepage's data: the primary code page, then 0.
func Codepage(cp uint32) []byte {
	return binary.LittleEndian.AppendUint64(nil, uint64(cp))
}

// String8 is a legacy string attribute's data: the bytes and a NUL.
func String8(s string) []byte { return append([]byte(s), 0) }

// Date is a legacy date attribute's data (year, month, day, hour,
// minute, second, day of the week, each 16 bits).
func Date(t time.Time) []byte {
	var b []byte
	for _, v := range []int{t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute(), t.Second(), int(t.Weekday())} {
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	return b
}

// Triple is attFrom's data: a one-off triple of a display name and an
// address ("SMTP:a@b"), each NUL-terminated, then 8 bytes of zeros.
func Triple(name, addr string) []byte {
	le := binary.LittleEndian
	n, a := String8(name), String8(addr)
	b := le.AppendUint16(nil, 4)
	b = le.AppendUint16(b, uint16(len(n)+len(a)+16))
	b = le.AppendUint16(b, uint16(len(n)))
	b = le.AppendUint16(b, uint16(len(a)))
	b = append(b, n...)
	b = append(b, a...)
	return append(b, make([]byte, 8)...)
}

// RendData is attAttachRendData's data for a file attachment: type 1,
// position, width and height, flags.
func RendData(position uint32) []byte {
	le := binary.LittleEndian
	b := le.AppendUint16(nil, 1)
	b = le.AppendUint32(b, position)
	b = le.AppendUint16(b, 0xFFFF)
	b = le.AppendUint16(b, 0xFFFF)
	return le.AppendUint32(b, 0)
}

// Name is a named property's name: a GUID and a numeric id, or a GUID
// and a string when Str is set.
type Name struct {
	GUID [16]byte
	ID   uint32
	Str  string
}

// Prop is one MAPI property: its tag (id in the high word, type in the
// low), its name when the id is a named one (0x8000 and up), its values
// (one for a single-valued property), each as its bytes without padding.
type Prop struct {
	Tag    uint32
	Name   *Name
	Values [][]byte
}

// variable reports the types whose values carry their own size.
func variable(typ uint16) bool {
	switch typ &^ 0x1000 {
	case 0x001E, 0x001F, 0x0102, 0x000D:
		return true
	}
	return false
}

// Props writes a property list (attMsgProps, attAttachment, a row of
// attRecipTable): the count, then each property's tag, name, and values,
// each value padded to 4 bytes; a multi-valued or variable-size
// property's values are counted, a variable-size value has its size.
func Props(props ...Prop) []byte {
	le := binary.LittleEndian
	pad := func(b []byte) []byte {
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	b := le.AppendUint32(nil, uint32(len(props)))
	for _, p := range props {
		b = le.AppendUint32(b, p.Tag)
		if n := p.Name; n != nil {
			b = append(b, n.GUID[:]...)
			if n.Str != "" {
				s := Unicode(n.Str)
				b = le.AppendUint32(b, 1)
				b = le.AppendUint32(b, uint32(len(s)))
				b = pad(append(b, s...))
			} else {
				b = le.AppendUint32(b, 0)
				b = le.AppendUint32(b, n.ID)
			}
		}
		typ := uint16(p.Tag)
		if typ&0x1000 != 0 || variable(typ) {
			b = le.AppendUint32(b, uint32(len(p.Values)))
		}
		for _, v := range p.Values {
			if variable(typ) {
				b = le.AppendUint32(b, uint32(len(v)))
			}
			b = pad(append(b, v...))
		}
	}
	return b
}

// Unicode is a PT_UNICODE value: UTF-16LE with a terminating NUL.
func Unicode(s string) []byte {
	var b []byte
	for _, c := range utf16.Encode([]rune(s + "\x00")) {
		b = binary.LittleEndian.AppendUint16(b, c)
	}
	return b
}

// Long is a PT_LONG value.
func Long(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// Time is a PT_SYSTIME value (a FILETIME).
func Time(t time.Time) []byte {
	return binary.LittleEndian.AppendUint64(nil, uint64(t.UnixNano()/100)+116444736000000000)
}

// IIDMessage is IID_IMessage, the interface an attached message's
// PR_ATTACH_DATA_OBJ value starts with.
var IIDMessage = [16]byte{0x07, 0x03, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46}

// Object is a PT_OBJECT value: the interface id, then the data (an
// embedded TNEF stream for IID_IMessage).
func Object(iid [16]byte, data []byte) []byte { return append(iid[:], data...) }

// lzfuPrebuf is the length of [MS-OXRTFCP]'s initial dictionary: where
// the first byte written lands.
const lzfuPrebuf = 207

// CompressRTF writes rtf as PR_RTF_COMPRESSED ([MS-OXRTFCP]): LZFu with
// literals only (every control byte 0) and the end marker, a reference
// to the dictionary's write position. Valid for any reader; no smaller.
func CompressRTF(rtf []byte) []byte {
	le := binary.LittleEndian
	var body []byte
	wp := lzfuPrebuf
	for i := 0; ; i += 8 {
		run := rtf[i:min(i+8, len(rtf))]
		ctl := byte(0)
		if len(run) < 8 {
			ctl = 1 << len(run) // the end marker after the last literals
		}
		body = append(body, ctl)
		body = append(body, run...)
		wp = (wp + len(run)) % 4096
		if len(run) < 8 {
			body = binary.BigEndian.AppendUint16(body, uint16(wp<<4))
			break
		}
	}
	b := le.AppendUint32(nil, uint32(len(body)+12))
	b = le.AppendUint32(b, uint32(len(rtf)))
	b = le.AppendUint32(b, 0x75465A4C) // "LZFu"
	b = le.AppendUint32(b, CRC(body))
	return append(b, body...)
}

// CRC is [MS-OXRTFCP]'s CRC-32 of the compressed bytes: the IEEE table,
// started at 0 and not inverted at the end.
func CRC(b []byte) uint32 { return ^crc32.Update(^uint32(0), crc32.IEEETable, b) }
