#!/bin/sh
# Makes the fine-print scan fixtures of TestOCRFinePrint: a letter page of 40
# lines of 4.5 pt text (DejaVu Sans) with amounts, written here, printed by
# Chromium and scanned at 300 dpi with pdftoppm (poppler-utils), as a 4-bit
# gray PNG (imagemagick), a CCITT Group 4 TIFF and that TIFF as a PDF
# (tiff2pdf, libtiff-tools). fineprint.txt lists the amounts. Scaled down to
# Limits.MaxImagePixels (about 160 dpi) tesseract 5 misreads some amounts;
# at 300 dpi it reads them all. The outputs are committed; run this only to
# make them again.
set -eu
t=$(mktemp -d)
python3 - "$t/p.html" fineprint.txt <<'PY'
import random, sys
random.seed(7)
pt, n = 4.5, 40
words = "freight handling storage consulting licence support cleaning repair travel catering printing postage insurance rental audit".split()
lines, amts = [], []
for i in range(n):
    a = f"{random.randint(100,9999)}.{random.randint(0,99):02d}"
    amts.append(a)
    lines.append(f"<p>Line {i+1:02d} {random.choice(words)} {random.choice(words)} order {random.randint(1000,99999)} amount {a} EUR</p>")
open(sys.argv[2], "w").write("\n".join(amts) + "\n")
open(sys.argv[1], "w").write(f"""<html><head><style>@page {{ size: letter; margin: 0.6in; }} body {{ font-family: 'DejaVu Sans'; font-size: {pt}pt; margin:0 }} p {{ margin: 0 0 {pt*0.5}pt 0 }}</style></head><body>{''.join(lines)}</body></html>""")
PY
chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf="$t/p.pdf" "$t/p.html"
pdftoppm -r 300 -gray -singlefile "$t/p.pdf" "$t/g"
convert "$t/g.pgm" -strip -depth 4 -define png:compression-level=9 fineprint.png
pdftoppm -r 300 -mono -singlefile "$t/p.pdf" "$t/m"
convert "$t/m.pbm" -compress Group4 fineprint.tif
tiff2pdf -o fineprint.pdf fineprint.tif
rm -r "$t"
