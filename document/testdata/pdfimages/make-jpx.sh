#!/bin/sh
# Makes the JPEG 2000 fixtures of TestPDFPageImages: the page of
# make-pdfimages.sh (same ImageMagick drawing) compressed by OpenJPEG's
# opj_compress (Debian's libopenjp2-tools) and put into PDFs as JPXDecode
# image XObjects. Run from anywhere; the outputs are committed.
set -eu
C=/usr/bin/convert
cd "$(dirname "$0")"
t=$(mktemp -d)
$C -size 600x140 xc:white -font DejaVu-Sans -pointsize 34 \
  -fill '#102a80' -draw "text 20,55 'Receipt 7731 Lindenweg'" \
  -fill '#202020' -draw "text 20,115 'Paid 88.20 GBP cash'" \
  -fill '#c03020' -draw "rectangle 540,10 590,40" "$t/src.png"
$C "$t/src.png" -colorspace Gray -depth 8 "$t/gray.png"
# Lossless 5/3, grey, in JP2 boxes: the PDF leaves the colour space to them.
opj_compress -i "$t/gray.png" -o "$t/gray.jp2" >/dev/null
# Irreversible 9/7 RGB at 60:1, tiles, precincts, RPCL: a bare codestream,
# the PDF saying DeviceRGB.
opj_compress -i "$t/src.png" -o "$t/rgb.j2k" -I -r 60 -t 256,128 -p RPCL -c [64,64] >/dev/null
opj_compress -i "$t/src.png" -o page.jp2 -I -r 60 -n 4 -M 8 >/dev/null
python3 - "$t" <<'PY'
import sys
src = sys.argv[1]
W, H = 600, 140

def pdf(path, entries, data):
    objs = [b"<< /Type /XObject /Subtype /Image /Width %d /Height %d " % (W, H) + entries
            + b" /Filter /JPXDecode /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"]
    content = b"q %d 0 0 %d 0 0 cm /Im0 Do Q" % (W, H)
    objs.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    objs.append(b"<< /Type /Page /Parent 4 0 R /MediaBox [0 0 %d %d] /Resources << /XObject << /Im0 1 0 R >> >> /Contents 2 0 R >>" % (W, H))
    objs.append(b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
    objs.append(b"<< /Type /Catalog /Pages 4 0 R >>")
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offs = []
    for i, body in enumerate(objs):
        offs.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offs:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root 5 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    open(path, "wb").write(out)

pdf("jpx-gray.pdf", b"", open(src + "/gray.jp2", "rb").read())
pdf("jpx-rgb97.pdf", b"/ColorSpace /DeviceRGB /BitsPerComponent 8", open(src + "/rgb.j2k", "rb").read())
PY
for f in jpx-*.pdf; do
  pdftoppm -r 72 -gray -singlefile "$f" "$t/p"
  printf '%s: poppler differs from the source by ' "$f"
  /usr/bin/compare -metric MAE "$t/p.pgm" expect.png null: 2>&1 || true
  echo
done
rm -r "$t"
