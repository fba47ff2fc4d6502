#!/bin/sh
# Makes the scan fixtures of TestTIFFPages and TestImageOrientation from text
# written for them (DejaVu Sans, free licence), with Debian's imagemagick,
# libtiff-tools and libimage-exiftool-perl. The outputs are committed; run
# this only to make them again.
set -eu
C=/usr/bin/convert
t=$(mktemp -d)
$C -size 900x220 xc:white -font DejaVu-Sans -pointsize 44 -fill black \
  -draw "text 30,90 'Invoice 2026-0042'" -draw "text 30,170 'Total due: 1,234.50 EUR'" "$t/p1.png"
$C -size 900x220 xc:white -font DejaVu-Sans -pointsize 44 -fill black \
  -draw "text 30,90 'Page two: Delivery note'" -draw "text 30,170 'Ship to Harbour Street 7'" "$t/p2.png"
# Two pages, CCITT Group 4, as a scanner or fax writes them.
$C "$t/p1.png" "$t/p2.png" -monochrome -compress Group4 scan.tif
# The same, page 2 stored a quarter turn clockwise with Orientation 8.
$C "$t/p1.png" -monochrome -compress Group4 "$t/a.tif"
$C "$t/p2.png" -rotate 90 -monochrome -compress Group4 "$t/b.tif"
tiffset -s 274 8 "$t/b.tif"
tiffcp "$t/a.tif" "$t/b.tif" scanrot.tif
# A phone photo stored sideways: pixels a quarter turn anticlockwise, EXIF Orientation 6.
$C "$t/p1.png" -rotate -90 -quality 80 photo6.jpg
exiftool -q -overwrite_original -n -Orientation=6 photo6.jpg
# Page 1 as a Windows tool saves a black-and-white scan (1-bit BMP), and as a GIF.
$C "$t/p1.png" -monochrome -compress None scan.bmp
$C "$t/p1.png" scan.gif
rm -r "$t"
