#!/bin/sh
# corpus.sh DIR: builds the corpus of TestDocumentSurvey (document/survey_test.go)
# from what a Debian machine holds, and writes DIR/list.tsv, one "path<TAB>reference"
# a line (no reference for a PDF: the survey runs pdftotext itself). Nothing here is
# committed; the converters make references and office files, never extractq's text.
#
#   apt-get install --no-install-recommends libreoffice-writer libreoffice-calc \
#     libreoffice-impress pandoc poppler-utils python3-doc ghostscript-doc gnuplot-doc \
#     texlive-latex-recommended-doc bash-doc sqlite3-doc latex2rtf-doc pikepdf-doc dblatex-doc
#   bench/docsurvey/corpus.sh /tmp/docsurvey
#
# With LANG_PDFS=1 it also unpacks (dpkg-deb -x, nothing installed) the TeX Live
# language packages, 270 MB of downloads, and lists their 460 PDFs: Japanese,
# Chinese, Korean, Arabic, Persian, Cyrillic, Greek, Vietnamese, Thai, Indic.
#   EXTRACTQ_SURVEY_LIST=/tmp/docsurvey/list.tsv go test -run TestDocumentSurvey -v -timeout 0 ./document/
set -eu
dir=${1:?usage: corpus.sh DIR}
mkdir -p "$dir/ref" "$dir/office" "$dir/src"
list=$dir/list.tsv
: > "$list"
ref() { mktemp -p "$dir/ref" --suffix=.txt; }

# Every PDF (plain or gzipped) under /usr/share.
find /usr/share -type f \( -iname '*.pdf' -o -iname '*.pdf.gz' \) | sort | while read -r f; do
	case $f in
	*.gz) r=$(ref); zcat "$f" | pdftotext -q - "$r" 2>/dev/null || true; printf '%s\t%s\n' "$f" "$r" >> "$list" ;;
	*) printf '%s\n' "$f" >> "$list" ;;
	esac
done

if [ "${LANG_PDFS:-}" = 1 ]; then
	mkdir -p "$dir/deb" "$dir/debx"
	(cd "$dir/deb" && apt-get download texlive-lang-chinese texlive-lang-japanese texlive-lang-korean \
		texlive-lang-arabic texlive-lang-cyrillic texlive-lang-european texlive-lang-other >/dev/null)
	for d in "$dir"/deb/*.deb; do dpkg-deb -x "$d" "$dir/debx"; done
	find "$dir/debx" -name '*.pdf' | sort >> "$list"
fi

# HTML pages: at most 12 per package, every 4th; reference pandoc -t plain.
find /usr/share/doc -type f \( -iname '*.html' -o -iname '*.htm' \) | sort |
	awk -F/ '{p=$5; c[p]++; if (c[p] % 4 == 1 && c[p] <= 48) print}' | while read -r f; do
	r=$(ref)
	pandoc -f html -t plain --wrap=none "$f" -o "$r" 2>/dev/null || continue
	printf '%s\t%s\n' "$f" "$r" >> "$list"
done

# Plain text, gzipped or not: READMEs, NEWS, changelogs (every 10th); the file is its reference.
find /usr/share/doc -type f \( -iname 'README*' -o -iname 'NEWS*' -o -iname 'changelog*' -o -iname '*.txt' -o -iname '*.txt.gz' \) \
	! -iname '*.html' ! -iname '*.pdf*' | sort | awk 'NR % 10 == 1' | while read -r f; do
	r=$(ref)
	case $f in *.gz) zcat "$f" > "$r" 2>/dev/null || continue ;; *) cp "$f" "$r" ;; esac
	printf '%s\t%s\n' "$f" "$r" >> "$list"
done

# Office files: eight manual pages with headings, lists and tables, converted by
# LibreOffice (its text export of each file is the reference) and by pandoc.
srcs=$(find /usr/share/doc/sqlite3-doc /usr/share/doc/bash /usr/share/doc/gnuplot-doc /usr/share/doc/python3.11 /usr/share/doc/ghostscript /usr/share/doc/pikepdf-doc /usr/share/doc/dblatex-doc \
	-type f -name '*.html' -size +8k -size -120k 2>/dev/null | sort)
srcs=$(echo "$srcs" | awk -v n="$(echo "$srcs" | wc -l)" 'NR % int(n / 8 + 1) == 1' | head -8)
i=0
for f in $srcs; do
	i=$((i+1)); b=$dir/src/p$i
	cp "$f" "$b.html"
	(cd "$dir/office" && timeout 120 soffice --headless --convert-to "docx:MS Word 2007 XML" "$b.html" >/dev/null 2>&1 || true
	 for to in odt rtf doc; do timeout 120 soffice --headless --convert-to $to p$i.docx >/dev/null 2>&1 || true; done)
	pandoc -f html "$b.html" -o "$dir/office/p$i-pandoc.docx" 2>/dev/null || true
	pandoc -f html "$b.html" -o "$dir/office/p$i-pandoc.odt" 2>/dev/null || true
	pandoc -f html "$b.html" -o "$dir/office/p$i-pandoc.epub" 2>/dev/null || true
	pandoc -f html "$b.html" -o "$dir/office/p$i-pandoc.pptx" 2>/dev/null || true
	(cd "$dir/office" && for to in odp ppt; do timeout 120 soffice --headless --convert-to $to p$i-pandoc.pptx >/dev/null 2>&1 || true; done)
done
# Spreadsheets from CSV files Debian ships.
for f in $(find /usr/share/distro-info /usr/share/doc -name '*.csv' 2>/dev/null | sort | head -6); do
	i=$((i+1)); cp "$f" "$dir/src/s$i.csv"
	(cd "$dir/office" && for to in xlsx ods xls; do timeout 120 soffice --headless --convert-to $to "$dir/src/s$i.csv" >/dev/null 2>&1 || true; done)
done
for f in "$dir"/office/*; do
	r=$(ref)
	case $f in
	*.epub) pandoc -t plain --wrap=none "$f" -o "$r" 2>/dev/null || continue ;;
	*.xlsx|*.ods|*.xls) cp "$dir/src/$(basename "${f%.*}").csv" "$r" ;;
	*.pptx|*.odp|*.ppt) (cd "$dir/office" && timeout 120 soffice --headless --convert-to pdf --outdir "$r.d" "$f" >/dev/null 2>&1) &&
		pdftotext -q "$r.d/$(basename "${f%.*}").pdf" "$r" || continue ;;
	*) (timeout 120 soffice --headless --convert-to "txt:Text (encoded):UTF8" --outdir "$r.d" "$f" >/dev/null 2>&1) &&
		mv "$r.d/$(basename "${f%.*}").txt" "$r" || continue ;;
	esac
	printf '%s\t%s\n' "$f" "$r" >> "$list"
done

# Scans: four PDF pages rendered as PNG and JPEG for OCR.
first=$(find /usr/share/doc -name '*.pdf' | sort | head -1)
if [ -n "$first" ]; then
	pdftoppm -r 150 -f 1 -l 2 -png "$first" "$dir/src/scan" && pdftoppm -r 150 -f 1 -l 2 -jpeg "$first" "$dir/src/scan"
	for f in "$dir"/src/scan*; do
		r=$(ref); pdftotext -q -f 1 -l 1 "$first" "$r"
		case $f in *-2.*|*-02.*) pdftotext -q -f 2 -l 2 "$first" "$r" ;; esac
		printf '%s\t%s\n' "$f" "$r" >> "$list"
	done
fi
wc -l "$list"
