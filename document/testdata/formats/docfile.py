"""Reads a small Word 97-2003 .doc (a Compound File) for the fixture
scripts beside it (pagebreaks-doc.py, stylelists-doc.py): where each byte
of a stream lies in the file, so a script can rewrite bytes in place.
Standard library only.
"""
import struct


def open_doc(src):
    """Returns the file's bytes (to rewrite), the WordDocument stream's
    positions, its FIB, and the table stream's positions and bytes."""
    f = bytearray(open(src, "rb").read())
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
    return f, wd, fib, tb, bytes(f[o] for o in tb)


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]
