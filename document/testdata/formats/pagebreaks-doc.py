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
