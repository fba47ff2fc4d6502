#!/bin/sh
# update.sh: copies Adobe's CID → Unicode maps of the four CJK character
# collections from Debian's poppler-data (apt-get install poppler-data) and
# compresses them for go:embed. The files are Adobe's (cmap-resources,
# BSD-3-Clause, its notice at the head of each file, kept as it is).
set -eu
cd "$(dirname "$0")"
for c in Japan1 GB1 CNS1 Korea1; do
	gzip -9nc "/usr/share/poppler/cMap/Adobe-$c/Adobe-$c-UCS2" > "Adobe-$c-UCS2.gz"
done
