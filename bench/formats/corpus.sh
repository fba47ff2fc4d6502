#!/bin/sh
# corpus.sh DIR: assembles the word-recovery corpus of bench/formats from
# documents already on a Debian machine (HTML manuals under /usr/share/doc,
# LibreOffice's own document and spreadsheet templates, CSV data files),
# converted into every format by libreoffice and pandoc, each file with a
# reference text (FILE.ref.txt) made by a reference converter:
#   html, docx, epub            pandoc -t plain
#   rtf, odt                    libreoffice --convert-to txt
#   xlsx, ods                   libreoffice --convert-to csv (every sheet)
#   pptx                        libreoffice --convert-to pdf, then pdftotext (a slide's
#                               text that overflows it is clipped there, not here)
#   csv                         the file itself
#   eml                         pandoc -t plain of the HTML body and of the attached DOCX
# Needs libreoffice, pandoc, poppler-utils and python3. The reference
# converters run here only, never in extractq.
set -eu
out=${1:?usage: corpus.sh DIR}
mkdir -p "$out/src" "$out/tmp"
export HOME="$out/tmp/home"
so() { soffice --headless --norestore "$@" >/dev/null 2>&1 || true; }
plain() { pandoc --wrap=none -t plain "$@" 2>/dev/null || true; }

# HTML pages from several producers' manuals (texinfo, docbook, asciidoc, hand-written).
n=0
for f in $(find /usr/share/doc -name '*.html' -size +6k -size -200k 2>/dev/null | sort | awk 'NR % 37 == 1' | head -16); do
  n=$((n+1)); cp "$f" "$out/src/page$n.html"
done
for f in "$out"/src/page*.html; do
  b=$(basename "$f" .html)
  cp "$f" "$out/$b.html"; plain -f html "$f" > "$out/$b.html.ref.txt"
  pandoc -f html -t epub -o "$out/$b.epub" "$f" 2>/dev/null && plain -f epub "$out/$b.epub" > "$out/$b.epub.ref.txt"
  pandoc -f html -t pptx -o "$out/$b.pptx" "$f" 2>/dev/null || true
done
for filter in 'docx:MS Word 2007 XML' 'odt:writer8' 'rtf:Rich Text Format'; do
  fmt=${filter%%:*}
  so --infilter='HTML (StarWriter)' --convert-to "$filter" --outdir "$out" "$out"/src/page*.html
  for f in "$out"/page*."$fmt"; do [ -f "$f" ] && plain -f "$fmt" "$f" > "$f.ref.txt"; done
done
# pandoc 2.17 reads little of LibreOffice's RTF (23 of 1,327 words of one
# page) and of many of its ODT files (none of some): their reference is
# LibreOffice's own text export.
txtref() { # EXT FILES…: FILE.EXT.ref.txt from libreoffice --convert-to txt
  ext=$1; shift
  rm -rf "$out/tmp/txt"; mkdir -p "$out/tmp/txt"
  so --convert-to 'txt:Text (encoded):UTF8' --outdir "$out/tmp/txt" "$@"
  for f in "$out"/tmp/txt/*.txt; do [ -f "$f" ] && cp "$f" "$out/$(basename "$f" .txt).$ext.ref.txt"; done
}
txtref rtf "$out"/page*.rtf

# LibreOffice's templates: real documents made by LibreOffice itself.
n=0
for f in $(find /usr/lib/libreoffice/share/template -name '*.ott' | sort | head -12); do
  n=$((n+1)); cp "$f" "$out/template$n.odt"
  cp "$f" "$out/src/template$n.ott"
done
so --convert-to docx --outdir "$out" "$out"/src/template*.ott
txtref odt "$out"/page*.odt "$out"/template*.odt
for f in "$out"/template*.docx; do [ -f "$f" ] && plain -f docx "$f" > "$f.ref.txt"; done

# Spreadsheets: LibreOffice's templates and CSV data, as XLSX and ODS.
n=0
for f in $(find /usr/lib/libreoffice/share/template -name '*.ots' | sort | head -10) /usr/share/distro-info/*.csv $(find /usr/share/doc -name '*.csv' | head -6); do
  n=$((n+1)); ext=${f##*.}; cp "$f" "$out/src/sheet$n.$ext"
  if [ "$ext" = csv ]; then cp "$f" "$out/sheet$n.csv"; cp "$f" "$out/sheet$n.csv.ref.txt"; fi
done
for fmt in xlsx ods; do
  so --convert-to "$fmt" --outdir "$out" "$out"/src/sheet*
done
for f in "$out"/sheet*.xlsx "$out"/sheet*.ods; do
  [ -f "$f" ] || continue
  rm -rf "$out/tmp/csv"; mkdir -p "$out/tmp/csv"
  so --convert-to 'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1' --outdir "$out/tmp/csv" "$f"
  cat "$out"/tmp/csv/*.csv > "$f.ref.txt" 2>/dev/null || true
done

# Slides: pandoc's from the HTML pages, and LibreOffice's presentation templates.
for f in $(find /usr/lib/libreoffice/share/template -name '*.otp' | sort | head -8); do
  so --convert-to pptx --outdir "$out" "$f"
done
for f in "$out"/*.pptx; do
  [ -f "$f" ] || continue
  rm -rf "$out/tmp/pdf"; mkdir -p "$out/tmp/pdf"
  so --convert-to pdf --outdir "$out/tmp/pdf" "$f"
  pdftotext "$out"/tmp/pdf/*.pdf "$f.ref.txt" 2>/dev/null || true
done

# E-mail: each HTML page as an HTML-only message with its DOCX attached.
for f in "$out"/src/page*.html; do
  b=$(basename "$f" .html)
  [ -f "$out/$b.docx" ] || continue
  python3 - "$f" "$out/$b.docx" "$out/$b.eml" <<'PY'
import sys
from email.message import EmailMessage
html, docx, dst = sys.argv[1:4]
m = EmailMessage()
m['From'] = 'Docs <docs@example.org>'; m['To'] = 'reader@example.org'
m['Subject'] = 'Manual page'; m['Date'] = 'Mon, 02 Mar 2026 10:00:00 +0000'
m.set_content(open(html, 'rb').read().decode('utf-8', 'replace'), subtype='html')
m.add_attachment(open(docx, 'rb').read(), maintype='application', subtype='vnd.openxmlformats-officedocument.wordprocessingml.document', filename='manual.docx')
open(dst, 'wb').write(bytes(m))
PY
  { plain -f html "$f"; plain -f docx "$out/$b.docx"; } > "$out/$b.eml.ref.txt"
done
rm -rf "$out/tmp"
find "$out" -name '*.ref.txt' -size 0 -delete
echo "corpus in $out: $(ls "$out"/*.ref.txt | wc -l) documents with a reference text"
