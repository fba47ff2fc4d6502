#!/bin/sh
# Rebuilds the producers' fixtures of TestPDFProducers from their sources
# here, text written for the tests (Debian 12: chromium, groff, ghostscript,
# python3-reportlab, fonts-dejavu, weasyprint).
set -e
cd "$(dirname "$0")"
for f in chromium-table chromium-invoice chromium-ledger chromium-columns chromium-grid; do
  chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf=$f.pdf $f.html
done
# A table whose cells wrap, by both producers that set cells middle.
chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf=chromium-wrapped.pdf wrapped-cells.html
weasyprint wrapped-cells.html weasyprint-wrapped.pdf
groff -ms -Tps groff-kern.ms | ps2pdf - groff-kern.pdf
/usr/bin/python3 reportlab-dingbats.py reportlab-dingbats.pdf
# ReportLab's invoice in the standard Helvetica, from the producers' corpus.
d=$(mktemp -d) && (cd ../../../bench/producers && /usr/bin/python3 rl.py "$d") && cp "$d/invoice-helvetica.pdf" reportlab-invoice.pdf && rm -rf "$d"
