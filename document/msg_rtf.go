package document

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
)

// lzfuPrebuf is the dictionary's initial content ([MS-OXRTFCP] 2.1.2.1).
const lzfuPrebuf = "{\\rtf1\\ansi\\mac\\deff0\\deftab720{\\fonttbl;}{\\f0\\fnil \\froman \\fswiss \\fmodern \\fscript \\fdecor MS Sans SerifSymbolArialTimes New RomanCourier{\\colortbl\\red0\\green0\\blue0\r\n\\par \\pard\\plain\\f0\\fs20\\b\\i\\u\\tab\\tx"

// decompressRTF undoes the compression of PR_RTF_COMPRESSED
// ([MS-OXRTFCP]): a header, then runs of a control byte and eight
// literals or dictionary references; "MELA" marks stored bytes. The
// output is bounded by max.
func decompressRTF(b []byte, max int64) ([]byte, error) {
	if len(b) < 16 {
		return nil, fmt.Errorf("%w: a compressed RTF body of %d bytes", ErrCorrupt, len(b))
	}
	le := binary.LittleEndian
	raw := int64(le.Uint32(b[4:]))
	if raw > max {
		return nil, fmt.Errorf("%w: a compressed RTF body of %d bytes (Limits.MaxUnpacked)", ErrTooLarge, raw)
	}
	switch le.Uint32(b[8:]) {
	case 0x414C454D: // "MELA": not compressed
		return b[16:min(int64(len(b)), 16+raw)], nil
	case 0x75465A4C: // "LZFu"
	default:
		return nil, fmt.Errorf("%w: unknown RTF compression %#x", ErrCorrupt, le.Uint32(b[8:]))
	}
	var dict [4096]byte
	copy(dict[:], lzfuPrebuf)
	wp := len(lzfuPrebuf)
	out := make([]byte, 0, min(raw, int64(len(b))*8))
	in := b[16:]
	for i := 0; i < len(in); {
		ctl := in[i]
		i++
		for bit := 0; bit < 8 && i < len(in); bit++ {
			if int64(len(out)) >= raw {
				return out, nil
			}
			if ctl&(1<<bit) == 0 {
				c := in[i]
				i++
				out = append(out, c)
				dict[wp] = c
				wp = (wp + 1) % 4096
				continue
			}
			if i+2 > len(in) {
				return out, nil
			}
			v := int(in[i])<<8 | int(in[i+1])
			i += 2
			off, n := v>>4, v&0xF+2
			if off == wp {
				return out, nil // the end marker
			}
			for k := 0; k < n; k++ {
				c := dict[(off+k)%4096]
				out = append(out, c)
				dict[wp] = c
				wp = (wp + 1) % 4096
			}
		}
	}
	return out, nil
}

// rtfBody reads a message's compressed RTF body as text with the RTF
// reader (an HTML message's RTF keeps its text outside the \*\htmltag
// groups the reader skips).
func rtfBody(ctx context.Context, b []byte, opts *Options) (string, error) {
	rtf, err := decompressRTF(b, opts.Limits.withDefaults().MaxUnpacked)
	if err != nil {
		return "", err
	}
	d, err := decodeRTF(ctx, bytes.NewReader(rtf), int64(len(rtf)), opts)
	if err != nil {
		return "", err
	}
	return d.Text, nil
}
