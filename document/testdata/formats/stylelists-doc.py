#!/usr/bin/env python3
"""Makes stylelists.doc from LibreOffice's .doc export of stylelists.docx.

LibreOffice writes a style's list (sprmPIlfo) both into the style (the
STSH) and onto each paragraph of the style; this rewrites the sprmPIlfo
of every paragraph that has a style other than Normal (istd 0) and a
list (ilfo > 0) into sprmPDxaRight 0 (right indent 0, the default), so
those paragraphs are in their list only through their style, as the
reader must find them. The paragraph's own sprmPIlvl and "ilfo 0" (out
of the style's list) stay. Standard library only:

    python3 stylelists-doc.py LIBREOFFICE.doc stylelists.doc
"""
import struct
import sys

from docfile import open_doc, u16, u32

src, dst = sys.argv[1], sys.argv[2]
f, wd, fib, tb, table = open_doc(src)
fc, lcb = u32(fib, 154 + 13 * 8), u32(fib, 154 + 13 * 8 + 4)  # PlcBtePapx
plc = table[fc : fc + lcb]
n = (len(plc) - 4) // 8
patched = 0
for k in range(n):
    pn = u32(plc, 4 * (n + 1) + 4 * k) & 0x3FFFFF
    at = wd[pn * 512 : pn * 512 + 512]
    page = bytes(f[o] for o in at)
    crun = page[511]
    for i in range(crun):
        b = 2 * page[4 * (crun + 1) + 13 * i]
        if b == 0:
            continue
        start, size = b + 1, 2 * page[b] - 1
        if page[b] == 0:
            start, size = b + 2, 2 * page[b + 1]
        istd, p, end = u16(page, start), start + 2, start + size
        while p + 2 <= end:
            sprm = u16(page, p)
            size = {0: 1, 1: 1, 2: 2, 3: 4, 4: 2, 5: 2, 7: 3}.get(sprm >> 13)
            if size is None:
                break  # a variable-length operand: none in this file's lists
            if sprm == 0x460B and istd != 0 and u16(page, p + 2) != 0:
                for j, c in enumerate(struct.pack("<HH", 0x840E, 0)):
                    f[at[p + j]] = c
                patched += 1
            p += 2 + size
open(dst, "wb").write(f)
print("patched", patched, "paragraphs")
