#!/bin/sh
# Makes the page-image fixtures of TestPDFPageImages: one small text page
# (DejaVu Sans, free licence) drawn by Debian's imagemagick, then put into
# PDFs by make-pdfimages.py in the encodings scanners and converters write
# (ImageMagick's PDF writer is barred by Debian's policy.xml, and cannot
# write Decode arrays or bands). Checks each PDF against poppler's
# pdftoppm. The outputs are committed; run this only to make them again.
set -eu
C=/usr/bin/convert
cd "$(dirname "$0")"
t=$(mktemp -d)
$C -size 600x140 xc:white -font DejaVu-Sans -pointsize 34 \
  -fill '#102a80' -draw "text 20,55 'Receipt 7731 Lindenweg'" \
  -fill '#202020' -draw "text 20,115 'Paid 88.20 GBP cash'" \
  -fill '#c03020' -draw "rectangle 540,10 590,40" "$t/src.png"
$C "$t/src.png" -depth 8 "rgb:$t/src.rgb"
$C "$t/src.png" -colorspace Gray -depth 8 "gray:$t/src.gray"
$C "$t/src.png" -colorspace CMYK -depth 8 "cmyk:$t/src.cmyk"
$C "$t/src.png" +dither -colors 16 -depth 8 "rgb:$t/src16.rgb"
$C "$t/src.png" -quality 85 "$t/src.jpg"
$C "$t/src.png" -colorspace Gray -quality 85 "$t/gray.jpg"
$C "$t/src.png" -colorspace CMYK -quality 85 "$t/cmyk.jpg"
$C "$t/src.png" -colorspace Gray -define png:exclude-chunk=date,time "$t/expect.png"
$C "$t/expect.png" -crop 600x35+0+35 +repage -quality 85 "$t/band2.jpg"
python3 make-pdfimages.py "$t"
# The Flate+JPEG page encrypted (RC4 128, empty user password), with
# Debian's python3-pypdf.
/usr/bin/python3 - <<'PY'
import pypdf
w = pypdf.PdfWriter()
for p in pypdf.PdfReader("gray-flate-jpeg.pdf").pages:
    w.add_page(p)
w.encrypt(user_password="", owner_password="owner-password", use_128bit=True)
with open("gray-flate-jpeg-rc4.pdf", "wb") as f:
    w.write(f)
PY
cp "$t/expect.png" expect.png
cp "$t/cmyk.jpg" cmyk.jpg # the CMYK JPEG as an image file
for f in *.pdf; do
  pdftoppm -r 72 -gray -singlefile "$f" "$t/p"
  printf '%s: poppler differs from the source by ' "$f"
  /usr/bin/compare -metric MAE "$t/p.pgm" expect.png null: 2>&1 || true
  echo
done
rm -r "$t"
