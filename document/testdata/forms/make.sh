#!/bin/sh
# Remakes the filled-in form fixtures (see README.md): LibreOffice Writer
# makes the form from form.html, pdftk-java and pypdf fill it; ReportLab
# makes and fills a form of its own.
# Needs: libreoffice, pdftk-java, python3-pypdf, python3-reportlab (Debian).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
soffice -env:UserInstallation="file://$tmp/profile" --headless --infilter="HTML (StarWriter)" \
	--convert-to 'pdf:writer_pdf_Export:{"ExportFormFields":{"type":"boolean","value":"true"}}' --outdir "$tmp" form.html >/dev/null
cp "$tmp/form.pdf" form.pdf
pdftk form.pdf fill_form data.fdf output filled-pdftk.pdf
pdftk form.pdf fill_form data.fdf output filled-pdftk-na.pdf need_appearances
/usr/bin/python3 fill-pypdf.py
/usr/bin/python3 strip-appearances.py
/usr/bin/python3 reportlab-form.py
rm form.pdf
