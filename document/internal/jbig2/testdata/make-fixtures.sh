#!/bin/sh
# Makes the fixtures of package jbig2's tests. Run from this directory;
# needs poppler-utils (pdftoppm), octave-doc's reference card and jbig2dec
# (apt-get install jbig2dec). The outputs are committed.
#
# octave.pbm: the top left of the Octave quick reference card (GPL, as
# Debian ships it) rendered black and white at 150 dpi, a scanned-looking
# page of text.
# *.jb2: embedded JBIG2 streams (PDF's JBIG2Decode: no file header),
# *.globals.jb2 their JBIG2Globals, coded by the tests' encoder
# (encode_test.go, huffman_test.go; what each holds: fixtures_test.go) from
# octave.pbm and ../../../testdata/scans/scan.tif.
# *.pbm but octave.pbm: jbig2dec's pictures of them, the reference the
# decoder is held to, bit for bit.
set -eu
pdftoppm -mono -r 150 -f 1 -l 1 -x 0 -y 0 -W 600 -H 420 /usr/share/doc/octave/refcard-a4.pdf octave-tmp
mv octave-tmp-1.pbm octave.pbm
(cd .. && EXTRACTQ_UPDATE_FIXTURES=1 go test -count=1 -run TestMakeFixtures .)
for f in *.jb2; do
	case $f in *.globals.jb2) continue ;; esac
	name=${f%.jb2}
	if [ -f "$name.globals.jb2" ]; then
		jbig2dec -q -e -t pbm -o "$name.pbm" "$name.globals.jb2" "$f"
	else
		jbig2dec -q -e -t pbm -o "$name.pbm" "$f"
	fi
done
