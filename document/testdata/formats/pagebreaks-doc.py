#!/usr/bin/env python3
"""Makes pagebreaks.doc from LibreOffice's .doc export of pagebreaks.docx.

LibreOffice cannot keep a page break inside a paragraph: it splits the
paragraph, where Word keeps it whole and writes the break as character
0x0C inside the paragraph's text. pagebreaks.docx has a "\u00a7" where
each break goes; this rewrites every "\u00a7" of the text (found through
the piece table) into 0x0C, the same length, so the .doc has its breaks
where Word writes them. Section breaks (0x0C as a paragraph's mark, in
the PlcfSed) are LibreOffice's own. Standard library only:

    python3 pagebreaks-doc.py LIBREOFFICE.doc pagebreaks.doc
"""
import sys

from docfile import open_doc, u16, u32

src, dst = sys.argv[1], sys.argv[2]
f, wd, fib, tb, table = open_doc(src)
fc, lcb = u32(fib, 154 + 33 * 8), u32(fib, 154 + 33 * 8 + 4)  # the CLX
clx = table[fc : fc + lcb]
i = 0
while clx[i] == 0x01:  # Prc: property runs, skipped
    i += 3 + u16(clx, i + 1)
assert clx[i] == 0x02, "no piece table"
plc = clx[i + 5 : i + 5 + u32(clx, i + 1)]
n = (len(plc) - 4) // 12
patched = 0
for k in range(n):
    cp, end = u32(plc, 4 * k), u32(plc, 4 * k + 4)
    fcp = u32(plc, 4 * (n + 1) + 8 * k + 2)
    compressed = fcp & 0x40000000
    at = (fcp & 0x3FFFFFFF) // 2 if compressed else fcp & 0x3FFFFFFF
    width = 1 if compressed else 2
    for j in range(end - cp):
        o = at + width * j
        c = f[wd[o]] if compressed else f[wd[o]] | f[wd[o + 1]] << 8
        if c == 0xA7:
            f[wd[o]] = 0x0C
            patched += 1
open(dst, "wb").write(f)
print("patched", patched, "page breaks")
