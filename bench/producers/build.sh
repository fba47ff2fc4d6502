#!/bin/sh
# Builds the producers' corpus of business documents (doc/documents-pdf.md,
# "Producers of business documents") into OUT (default /tmp/prodsweep) from
# the sources here, with Debian 12's producers:
#   apt-get install --no-install-recommends chromium libreoffice-writer weasyprint \
#     wkhtmltopdf python3-reportlab librsvg2-bin enscript ghostscript groff pandoc \
#     php-cli php-tcpdf fonts-dejavu fonts-liberation2
set -e
S=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/prodsweep}
mkdir -p "$OUT" && cd "$OUT"
mkdir -p chromium libreoffice weasyprint wkhtmltopdf reportlab cairo ghostscript groff tcpdf
tmp=$(mktemp -d)
cp "$S"/*.html "$tmp"/
/usr/bin/python3 "$S/ledger.py" "$tmp/ledger.html"
for f in invoice receipt ledger report ticket; do
  chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf=chromium/$f.pdf "$tmp/$f.html" 2>/dev/null
  weasyprint "$tmp/$f.html" weasyprint/$f.pdf 2>/dev/null
  wkhtmltopdf -q --encoding utf-8 "$tmp/$f.html" wkhtmltopdf/$f.pdf 2>/dev/null || true
  pandoc -f html -t odt -o "$tmp/$f-odt.odt" "$tmp/$f.html"
done
# Chromium's own header and footer (date, title, URL, page numbers).
chromium --headless --no-sandbox --disable-gpu --print-to-pdf=chromium/ledger-hf.pdf "$tmp/ledger.html" 2>/dev/null
# LibreOffice: the HTML opened by Writer/Web, and the ODT pandoc made of it.
(cd "$tmp" && libreoffice --headless --convert-to pdf --outdir "$OUT/libreoffice" *.html *.odt >/dev/null 2>&1)
pandoc -f html -t pdf --pdf-engine=wkhtmltopdf -o wkhtmltopdf/report-pandoc.pdf "$S/report.html" 2>/dev/null
(cd "$S" && /usr/bin/python3 rl.py "$OUT/reportlab")
rsvg-convert -f pdf -o cairo/invoice-svg.pdf "$S/invoice.svg"
iconv -f utf-8 -t latin1 "$S/receipt.txt" > "$tmp/receipt.txt"
enscript -q -X latin1 -B -o - "$tmp/receipt.txt" | ps2pdf - ghostscript/receipt-enscript.pdf
groff -ms -Tps "$S/report.ms" 2>/dev/null | ps2pdf - ghostscript/report-groff.pdf
groff -ms -Tpdf "$S/report.ms" 2>/dev/null > groff/report-gropdf.pdf
php "$S/tcpdf.php" "$OUT/tcpdf"
rm -rf "$tmp"
# Two-column pages: pdftotext -layout sets the columns side by side, which
# garbles its word pairs; its reading order (no -layout) is the reference.
for f in */report*.pdf; do pdftotext -enc UTF-8 "$f" "$f.ref.txt"; done
