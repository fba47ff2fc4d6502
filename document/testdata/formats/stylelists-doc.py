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

src, dst = sys.argv[1], sys.argv[2]
f = bytearray(open(src, "rb").read())
u16 = lambda b, o: struct.unpack_from("<H", b, o)[0]
u32 = lambda b, o: struct.unpack_from("<I", b, o)[0]
ss = 1 << u16(f, 0x1E)
sector = lambda n: (n + 1) * ss


def chain(n, table):
    out = []
    while n < 0xFFFFFFFA and len(out) <= len(table):
        out.append(n)
        n = table[n]
    return out


fat = []
for i in range(min(u32(f, 0x2C), 109)):  # the header's DIFAT is enough for a small file
    fat += struct.unpack_from("<%dI" % (ss // 4), f, sector(u32(f, 0x4C + 4 * i)))
minifat = []
for s in chain(u32(f, 0x3C), fat):
    minifat += struct.unpack_from("<%dI" % (ss // 4), f, sector(s))


def entry(name):
    for d in chain(u32(f, 0x30), fat):
        for e in range(sector(d), sector(d) + ss, 128):
            if f[e : e + max(0, u16(f, e + 0x40) - 2)].decode("utf-16-le") == name:
                return u32(f, e + 0x74), u32(f, e + 0x78)
    raise SystemExit("no stream " + name)


root = chain(entry("Root Entry")[0], fat)


def stream(name):
    """Returns where each byte of the stream is in the file."""
    start, size = entry(name)
    if size >= 4096:
        return [sector(s) + i for s in chain(start, fat) for i in range(ss)][:size]
    mini = [64 * m + i for m in chain(start, minifat) for i in range(64)][:size]
    return [sector(root[o // ss]) + o % ss for o in mini]


wd = stream("WordDocument")
fib = bytes(f[o] for o in wd[:1024])
tb = stream("1Table" if u16(fib, 0x0A) & 0x0200 else "0Table")
table = bytes(f[o] for o in tb)
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
