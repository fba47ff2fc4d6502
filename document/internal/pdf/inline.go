package pdf

import (
	"bytes"
	"io"
)

// inlineKeys spells out the abbreviated keys of an inline image's
// dictionary (PDF 32000-1 table 93).
var inlineKeys = map[string]string{
	"BPC": "BitsPerComponent", "CS": "ColorSpace", "D": "Decode", "DP": "DecodeParms",
	"F": "Filter", "H": "Height", "IM": "ImageMask", "I": "Interpolate", "W": "Width", "L": "Length",
}

// InlineImage makes an image XObject of an inline image (BI … ID data EI
// in a content stream): its entries as the content stream gave them, a key
// then its value, and its data. Keys are spelled out; abbreviated values
// (filter and colour space names) are left to the caller. file is any
// value of the PDF, whose reader resolves references in the entries (a
// colour space put in from the page's resources). extractq: the page
// image decoder reads it as any image.
func InlineImage(file Value, entries []Value, data []byte) Value {
	hdr := dict{name("Subtype"): name("Image")}
	for i := 0; i+1 < len(entries); i += 2 {
		k, ok := entries[i].data.(name)
		if !ok {
			continue
		}
		if full, ok := inlineKeys[string(k)]; ok {
			k = name(full)
		}
		hdr[k] = entries[i+1].data
	}
	hdr[name("Length")] = int64(len(data))
	return Value{file.r, objptr{}, stream{hdr: hdr, inline: data}}
}

// inlineReader reads an inline image's data, if v is one.
func inlineReader(v Value) (io.Reader, bool) {
	x, ok := v.data.(stream)
	if !ok || x.inline == nil {
		return nil, false
	}
	return bytes.NewReader(x.inline), true
}
