package pdf

import (
	"bufio"
	"cmp"
	"compress/lzw"
	"compress/zlib"
	"encoding/ascii85"
	"fmt"
	"io"

	tifflzw "golang.org/x/image/tiff/lzw"
)

// Stream filters (extractq): moved here from the page image decoder so
// that content streams, fonts and forms read through Reader decode the
// same filters images do.

// Unfilter decodes one of a stream's filters, name with its
// DecodeParms params: Flate and LZW (with their predictors), RunLength,
// ASCIIHex, ASCII85. An image codec's filter (DCT, JPX, JBIG2, CCITTFax)
// and any other name are an error, for the caller to decode or refuse.
// (extractq: the filter set of page images, also under Reader.)
func Unfilter(rd io.Reader, name string, params Value) (io.Reader, error) {
	switch name {
	case "FlateDecode":
		zr, err := zlib.NewReader(rd)
		if err != nil {
			return nil, fmt.Errorf("the image's Flate data does not open: %w", err)
		}
		return unpredict(zr, params)
	case "LZWDecode":
		// EarlyChange 1, the default, is the code width growing one code
		// early: TIFF's LZW; 0 is GIF's.
		var lr io.Reader
		if ec := params.Key("EarlyChange"); ec.Kind() == Null || ec.Int64() != 0 {
			lr = tifflzw.NewReader(rd, tifflzw.MSB, 8)
		} else {
			lr = lzw.NewReader(rd, lzw.MSB, 8)
		}
		return unpredict(lr, params)
	case "RunLengthDecode":
		return &runLengthReader{r: bufio.NewReader(rd)}, nil
	case "ASCIIHexDecode":
		return &hexReader{r: bufio.NewReader(rd)}, nil
	case "ASCII85Decode":
		return ascii85.NewDecoder(&a85Reader{r: bufio.NewReader(rd)}), nil
	}
	return nil, fmt.Errorf("images filtered with %s are not decoded", cmp.Or(name, "an unnamed filter"))
}

// unpredict undoes a Flate or LZW filter's predictor: TIFF's (2) or PNG's
// (10 and up, each row saying its own).
func unpredict(rd io.Reader, p Value) (io.Reader, error) {
	pred := p.Key("Predictor").Int64()
	if pred <= 1 {
		return rd, nil
	}
	colors := int(cmp.Or(p.Key("Colors").Int64(), 1))
	bpc := int(cmp.Or(p.Key("BitsPerComponent").Int64(), 8))
	cols := int(cmp.Or(p.Key("Columns").Int64(), 1))
	if colors < 1 || colors > 32 || cols < 1 || cols > 1<<20 || (bpc != 1 && bpc != 2 && bpc != 4 && bpc != 8 && bpc != 16) {
		return nil, fmt.Errorf("a predictor of %d colours, %d bits, %d columns", colors, bpc, cols)
	}
	bpp := max(1, colors*bpc/8) // bytes a pixel, as PNG counts
	rowBytes := (colors*bpc*cols + 7) / 8
	switch {
	case pred == 2:
		if bpc != 8 {
			return nil, fmt.Errorf("the TIFF predictor on %d-bit samples is not decoded", bpc)
		}
		return &predictReader{r: bufio.NewReader(rd), cur: make([]byte, rowBytes), bpp: bpp, tiff: true}, nil
	case pred >= 10:
		return &predictReader{r: bufio.NewReader(rd), cur: make([]byte, rowBytes), prev: make([]byte, rowBytes), bpp: bpp}, nil
	}
	return nil, fmt.Errorf("predictor %d is not decoded", pred)
}

// predictReader undoes a predictor row by row.
type predictReader struct {
	r         *bufio.Reader
	cur, prev []byte
	bpp       int
	tiff      bool
	pend      []byte
}

func (p *predictReader) Read(b []byte) (int, error) {
	for len(p.pend) == 0 {
		if err := p.row(); err != nil {
			return 0, err
		}
	}
	n := copy(b, p.pend)
	p.pend = p.pend[n:]
	return n, nil
}

func (p *predictReader) row() error {
	cur := p.cur
	if p.tiff {
		if _, err := io.ReadFull(p.r, cur); err != nil {
			return err
		}
		for i := p.bpp; i < len(cur); i++ {
			cur[i] += cur[i-p.bpp]
		}
		p.pend = cur
		return nil
	}
	kind, err := p.r.ReadByte()
	if err != nil {
		return err
	}
	copy(p.prev, cur)
	if _, err := io.ReadFull(p.r, cur); err != nil {
		return err
	}
	prev, bpp := p.prev, p.bpp
	switch kind {
	case 0: // None
	case 1: // Sub
		for i := bpp; i < len(cur); i++ {
			cur[i] += cur[i-bpp]
		}
	case 2: // Up
		for i := range cur {
			cur[i] += prev[i]
		}
	case 3: // Average
		for i := range cur {
			var left int
			if i >= bpp {
				left = int(cur[i-bpp])
			}
			cur[i] += byte((left + int(prev[i])) / 2)
		}
	case 4: // Paeth
		for i := range cur {
			var a, c int
			if i >= bpp {
				a, c = int(cur[i-bpp]), int(prev[i-bpp])
			}
			bb := int(prev[i])
			pa, pb, pc := abs(bb-c), abs(a-c), abs(a+bb-2*c)
			switch {
			case pa <= pb && pa <= pc:
				cur[i] += byte(a)
			case pb <= pc:
				cur[i] += byte(bb)
			default:
				cur[i] += byte(c)
			}
		}
	default:
		return fmt.Errorf("PNG predictor row type %d", kind)
	}
	p.pend = cur
	return nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// runLengthReader decodes RunLengthDecode: a length byte n, then n+1
// bytes as they are (n < 128) or one byte 257-n times (n > 128); 128 ends.
type runLengthReader struct {
	r    *bufio.Reader
	run  int  // bytes left in the current run
	lit  bool // the run is literal
	fill byte
	done bool
}

func (d *runLengthReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		if d.run == 0 {
			if d.done {
				break
			}
			c, err := d.r.ReadByte()
			if err != nil || c == 128 {
				d.done = true
				continue
			}
			if c < 128 {
				d.run, d.lit = int(c)+1, true
			} else {
				if d.fill, err = d.r.ReadByte(); err != nil {
					d.done = true
					continue
				}
				d.run, d.lit = 257-int(c), false
			}
		}
		if d.lit {
			c, err := d.r.ReadByte()
			if err != nil {
				d.done, d.run = true, 0
				continue
			}
			b[n] = c
		} else {
			b[n] = d.fill
		}
		n++
		d.run--
	}
	if n == 0 && d.done {
		return 0, io.EOF
	}
	return n, nil
}

// hexReader decodes ASCIIHexDecode: hex digit pairs, white space between
// them, up to '>' (an odd last digit is followed by 0).
type hexReader struct {
	r    *bufio.Reader
	done bool
}

func (d *hexReader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && !d.done {
		var v [2]byte
		got := 0
		for got < 2 {
			c, err := d.r.ReadByte()
			if err != nil || c == '>' {
				d.done = true
				break
			}
			switch {
			case c >= '0' && c <= '9':
				v[got] = c - '0'
			case c >= 'a' && c <= 'f':
				v[got] = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				v[got] = c - 'A' + 10
			case c == ' ', c == '\t', c == '\n', c == '\r', c == '\f', c == 0:
				continue
			default:
				return n, fmt.Errorf("ASCIIHex data holds %q", c)
			}
			got++
		}
		if got == 0 {
			break
		}
		b[n] = v[0]<<4 | v[1]
		n++
	}
	if n == 0 && d.done {
		return 0, io.EOF
	}
	return n, nil
}

// a85Reader passes ASCII85 data on to encoding/ascii85 without its white
// space, up to the '~>' that ends it.
type a85Reader struct {
	r    *bufio.Reader
	done bool
}

func (d *a85Reader) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) && !d.done {
		c, err := d.r.ReadByte()
		if err != nil || c == '~' {
			d.done = true
			break
		}
		if c <= ' ' {
			continue
		}
		b[n] = c
		n++
	}
	if n == 0 && d.done {
		return 0, io.EOF
	}
	return n, nil
}
