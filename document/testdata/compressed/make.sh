#!/bin/sh
# Makes the compressed fixtures with the GNU tools (Debian's gzip, bzip2,
# tar), as users' exports and buckets hold them. Text of our own (CC0).
# Run from this folder: sh make.sh
set -e
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/reports/.git" "$tmp/reports/__MACOSX" "$tmp/reports/empty-dir"
printf 'From: billing@globex.example\nTo: ap@initech.example\nSubject: Invoice INV-2207\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nContent-Type: text/plain; charset=utf-8\n\nInvoice INV-2207, total due 1,234.50 EUR by 30 November 2026.\n' > "$tmp/invoice.eml"
printf 'Quarterly report: revenue 4.2M EUR, up 8%%.\n' > "$tmp/reports/q3.txt"
printf 'code,rate\nEUR,1.08\nGBP,0.86\n' > "$tmp/reports/rates.csv"
printf 'hidden\n' > "$tmp/reports/.notes.txt"
printf 'ref: refs/heads/main\n' > "$tmp/reports/.git/HEAD"
printf 'AppleDouble\n' > "$tmp/reports/__MACOSX/._q3.txt"
printf 'AppleDouble\n' > "$tmp/reports/._rates.csv"
ln -s q3.txt "$tmp/reports/latest.txt"
# gzip -N (the default) keeps the name inside; -n leaves it out.
gzip -9 -c "$tmp/invoice.eml" > invoice.eml.gz
gzip -9 -n -c "$tmp/invoice.eml" > renamed.gz
bzip2 -9 -c "$tmp/invoice.eml" > invoice.eml.bz2
# Sorted, with fixed owners and times, so that a re-run makes the same bytes.
tarit() { tar -C "$tmp" --sort=name --owner=0 --group=0 --numeric-owner --mtime=2026-11-01 "$@" reports; }
tarit -cf reports.tar
tarit -czf reports.tgz
tarit -cjf reports.tar.bz2
