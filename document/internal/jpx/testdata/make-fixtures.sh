#!/bin/sh
# Makes the JPEG 2000 fixtures with OpenJPEG (Debian's libopenjp2-tools)
# and ImageMagick (/usr/bin/convert), and each one's oracle: what
# opj_decompress makes of it (PNG). Run from this directory.
set -eu
C=/usr/bin/convert
$C -size 180x64 xc:white -font DejaVu-Sans -pointsize 20 -annotate +6+26 'Invoice 4471' -annotate +6+54 'Total 88.20' -depth 8 -type Grayscale grey.png
$C -size 67x45 gradient:red-blue \( -size 67x45 gradient:yellow-green -rotate 90 -resize 67x45! \) -compose multiply -composite -font DejaVu-Sans -pointsize 14 -fill black -annotate +3+25 'Rgb 42' -depth 8 -type TrueColor rgb.png
# Four components (RGB and alpha): a PDF's DeviceCMYK reads them as CMYK.
$C rgb.png -alpha set -channel A -fx 'i/w' +channel -depth 8 rgba.png
rm -f *.j2k *.jp2 oracle-*.png
mk() { # name input options...
	n=$1; in=$2; shift 2
	opj_compress -i "$in" -o "$n" "$@" >/dev/null
	opj_decompress -i "$n" -o "oracle-${n%.*}.png" >/dev/null
}
mk grey-lossless.j2k grey.png
mk grey-lossless.jp2 grey.png
mk grey-97.j2k grey.png -I -r 10
mk grey-n1.j2k grey.png -n 1
mk grey-n6.j2k grey.png -n 6
mk grey-tiles.j2k grey.png -t 64,32
mk grey-tiles-offset.j2k grey.png -t 50,40 -T 7,3 -d 9,5
mk grey-rlcp.j2k grey.png -p RLCP -r 20,5,1
mk grey-rpcl.j2k grey.png -p RPCL -c [32,32],[32,32],[16,16]
mk grey-pcrl.j2k grey.png -p PCRL -c [32,32],[16,16] -t 100,40
mk grey-cprl.j2k grey.png -p CPRL -c [64,32] -r 30,10,1
mk grey-layers.j2k grey.png -r 40,20,10,1
mk grey-cb16.j2k grey.png -b 16,16
mk grey-cb-wide.j2k grey.png -b 64,8
mk grey-sop-eph.j2k grey.png -SOP -EPH -r 10,1
mk grey-tp.j2k grey.png -t 64,64 -TP R
for m in 1 2 4 8 16 32 63; do mk grey-M$m.j2k grey.png -M $m -r 8,1; done
mk grey-M63-97.j2k grey.png -M 63 -I -r 12
mk rgb-lossless.jp2 rgb.png
mk rgb-lossless.j2k rgb.png -n 3
mk rgb-97.jp2 rgb.png -I -r 8
mk rgb-nomct.j2k rgb.png -mct 0
mk rgb-tiles-pcrl.jp2 rgb.png -t 32,32 -n 3 -p PCRL -c [16,16]
mk rgb-cprl.j2k rgb.png -p CPRL -r 16,4,1
mk rgb-poc.j2k rgb.png -r 30,10,1 -POC T1=0,0,2,3,3,RLCP/T1=0,0,3,6,3,CPRL
mk grey-poc-plt.j2k grey.png -r 20,5,1 -PLT -POC T1=0,0,1,6,1,RPCL/T1=0,0,3,6,1,LRCP
mk grey-roi.j2k grey.png -ROI c=0,U=3
mk rgb-roi-97.jp2 rgb.png -I -r 10 -ROI c=1,U=5
mk rgba4.j2k rgba.png -n 3
mk rgb-M21-97.jp2 rgb.png -M 21 -I
# Subsampled (4:2:0) components from raw planes, no component transform;
# opj_decompress upsamples the chroma for its PNG.
python3 -c '
import sys
w, h = 67, 45
cw, ch = (w + 1) // 2, (h + 1) // 2
y = bytes(((x * 3 + r * 5) % 256) if (x // 8 + r // 8) % 2 else 40 for r in range(h) for x in range(w))
cb = bytes((x * 7 + r * 3) % 256 for r in range(ch) for x in range(cw))
cr = bytes((255 - x * 5 - r * 2) % 256 for r in range(ch) for x in range(cw))
sys.stdout.buffer.write(y + cb + cr)' >sub.raw
mk sub420.j2k sub.raw -F 67,45,3,8,u@1x1:2x2:2x2 -mct 0
mk sub420-97.j2k sub.raw -F 67,45,3,8,u@1x1:2x2:2x2 -mct 0 -I
rm sub.raw
