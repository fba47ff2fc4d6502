//go:build ignore

// mkscan makes a scanned-looking PDF from a text file: the text drawn in a
// bitmap font on a letter-size page at 150 dpi, stored as one JPEG image
// per page with no text layer, as a scanner writes it. It made
// invoice-scan.pdf:
//
//	go run examples/mkscan.go examples/invoices/invoice-08.txt examples/documents/invoice-scan.pdf
package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"os"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run mkscan.go TEXT-FILE OUT.pdf")
		os.Exit(2)
	}
	text, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	const w, h, scale = 1275, 1650, 2 // letter at 150 dpi; the 7×13 font drawn twice as large
	small := image.NewGray(image.Rect(0, 0, w/scale, h/scale))
	draw.Draw(small, small.Bounds(), image.White, image.Point{}, draw.Src)
	d := font.Drawer{Dst: small, Src: image.NewUniform(color.Gray{Y: 30}), Face: basicfont.Face7x13}
	for i, line := range strings.Split(string(text), "\n") {
		d.Dot = fixed.P(40, 60+i*15)
		d.DrawString(line)
	}
	page := image.NewGray(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			page.SetGray(x, y, small.GrayAt(x/scale, y/scale))
		}
	}
	var img bytes.Buffer
	if err := jpeg.Encode(&img, page, &jpeg.Options{Quality: 60}); err != nil {
		fail(err)
	}
	if err := os.WriteFile(os.Args[2], pdf(img.Bytes(), w, h), 0o644); err != nil {
		fail(err)
	}
}

// pdf is a one-page PDF showing a JPEG over the whole letter-size page.
func pdf(jpg []byte, w, h int) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(body string, stream []byte) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s", len(offs), body)
		if stream != nil {
			b.WriteString("\nstream\n")
			b.Write(stream)
			b.WriteString("\nendstream")
		}
		b.WriteString("\nendobj\n")
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	content := "q 612 0 0 792 0 0 cm /Im0 Do Q"
	obj("<< /Type /Catalog /Pages 2 0 R >>", nil)
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>", nil)
	obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>", nil)
	obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>", w, h, len(jpg)), jpg)
	obj(fmt.Sprintf("<< /Length %d >>", len(content)), []byte(content))
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, xref)
	return b.Bytes()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mkscan:", err)
	os.Exit(1)
}
