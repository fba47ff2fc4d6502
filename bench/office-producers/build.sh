#!/bin/sh
# Builds the producers' corpus into OUT (default /tmp/officesweep) with
# Debian's python3-openpyxl, python3-xlsxwriter, python3-pandas and
# python3-docx, and writes each file's reference text (FILE.ref.txt) with
# LibreOffice: every sheet as CSV for spreadsheets, Text for Word files.
# Then: nice -n 10 go run ./bench/docsweep -v OUT
set -eu
OUT=${1:-/tmp/officesweep}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3 # Debian's packages, not a pyenv shim
mkdir -p "$OUT"
for s in openpyxl_files xlsxwriter_files pandas_files python_docx_files; do
	"$PY" "$HERE/$s.py" "$OUT"
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PROFILE="-env:UserInstallation=file://$TMP/profile"
for f in "$OUT"/*.xlsx; do
	b=$(basename "$f" .xlsx)
	# Sheet -1: one CSV per sheet, FILE-SHEET.csv; as shown (formatted).
	soffice "$PROFILE" --headless --convert-to 'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,true,false,false,-1' --outdir "$TMP/$b" "$f" >/dev/null 2>&1
	# In the workbook's sheet order, as extractq reads them.
	"$PY" -c 'import sys, openpyxl; print("\n".join(openpyxl.load_workbook(sys.argv[1], read_only=True).sheetnames))' "$f" |
		while IFS= read -r s; do cat "$TMP/$b/$b-$s.csv"; done >"$f.ref.txt"
done
for f in "$OUT"/*.docx; do
	soffice "$PROFILE" --headless --convert-to 'txt:Text (encoded):UTF8' --outdir "$TMP" "$f" >/dev/null 2>&1
	mv "$TMP/$(basename "$f" .docx).txt" "$f.ref.txt"
done
