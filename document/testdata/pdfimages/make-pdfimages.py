"""Writes the page-image fixtures of TestPDFPageImages (see
make-pdfimages.sh, which makes the inputs in the folder given): the same
600x140 text page as an image XObject in each encoding, one PDF each."""
import base64
import sys
import zlib

W, H = 600, 140
src = sys.argv[1]


def read(name):
    with open(f"{src}/{name}", "rb") as f:
        return f.read()


def pdf(path, images, page=(W, H), pre=(), content=b"", resources=b""):
    """images: (dict entries, stream bytes, placement x y w h) each; pre:
    objects put first (numbered from 1), for the images to refer to;
    content and resources: more of the page's."""
    objs = list(pre)

    def add(body):
        objs.append(body)
        return len(objs)

    names, draws = [], []
    for i, (entries, data, place) in enumerate(images):
        n = add(b"<< /Type /XObject /Subtype /Image " + entries + b" /Length %d >>\nstream\n" % len(data) + data + b"\nendstream")
        names.append(b"/Im%d %d 0 R" % (i, n))
        x, y, w, h = place
        draws.append(b"q %g 0 0 %g %g %g cm /Im%d Do Q" % (w, h, x, y, i))
    content = b"\n".join(draws) + content
    c = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    pages = len(objs) + 2
    p = add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << %s/XObject << " % (pages, page[0], page[1], resources)
            + b" ".join(names) + b" >> >> /Contents %d 0 R >>" % c)
    add(b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % p)
    root = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages)
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offs = []
    for i, body in enumerate(objs):
        offs.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offs:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, root, xref)
    with open(path, "wb") as f:
        f.write(out)


def image(entries, data):
    return (entries, data, (0, 0, W, H))


def lzw(data, early=1):
    """LZW as PDF's LZWDecode reads it; early: its EarlyChange."""
    out, acc, nacc = bytearray(), 0, 0

    def put(code, width):
        nonlocal acc, nacc
        acc, nacc = acc << width | code, nacc + width
        while nacc >= 8:
            nacc -= 8
            out.append(acc >> nacc & 0xFF)
        acc &= (1 << nacc) - 1

    def reset():
        return {bytes([i]): i for i in range(256)}, 9, 257, 512

    table, width, hi, overflow = reset()
    put(256, width)
    w = b""
    for c in data:
        wc = w + bytes([c])
        if wc in table:
            w = wc
            continue
        put(table[w], width)
        hi += 1
        table[wc] = hi
        if hi == overflow - early:
            width, overflow = width + 1, overflow << 1
        if hi >= 4000:
            put(256, width)
            table, width, hi, overflow = reset()
        w = bytes([c])
    if w:
        put(table[w], width)
        hi += 1
        if hi == overflow - early:
            width += 1
    put(257, width)
    if nacc:
        out.append(acc << (8 - nacc) & 0xFF)
    return bytes(out)


def rle(data):
    """RunLengthDecode's encoding: runs of 3 and more repeated, the rest literal."""
    out, i = bytearray(), 0
    while i < len(data):
        j = i
        while j < len(data) and j - i < 128 and data[j] == data[i]:
            j += 1
        if j - i >= 3:
            out += bytes([257 - (j - i), data[i]])
            i = j
            continue
        j = i
        while j < len(data) and j - i < 128 and not (j + 2 < len(data) and data[j] == data[j + 1] == data[j + 2]):
            j += 1
        out += bytes([j - i - 1]) + data[i:j]
        i = j
    return bytes(out + b"\x80")


def pack(samples, bits, per_row):
    """Packs samples of bits each, rows of per_row samples padded to a byte."""
    out = bytearray()
    for r in range(0, len(samples), per_row):
        acc, n = 0, 0
        for s in samples[r:r + per_row]:
            acc, n = acc << bits | s, n + bits
            while n >= 8:
                n -= 8
                out.append(acc >> n & 0xFF)
            acc &= (1 << n) - 1
        if n:
            out.append(acc << (8 - n) & 0xFF)
    return bytes(out)


def png_predict(data, row_bytes, bpp):
    """PNG predictor rows, each filtered Sub, Up, Average or Paeth in turn."""
    out, prev = bytearray(), bytes(row_bytes)
    for r in range(0, len(data), row_bytes):
        row, kind = data[r:r + row_bytes], (r // row_bytes) % 4 + 1
        out.append(kind)
        for i, v in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                p = a
            elif kind == 2:
                p = b
            elif kind == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else b if pb <= pc else c
            out.append((v - p) & 0xFF)
        prev = row
    return bytes(out)


def to_lab(rgb):
    """sRGB to 8-bit L*a*b* (D65): L* 0-100 as 0-255, a* b* offset by 128."""
    def lin(v):
        v /= 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    def f(t):
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29

    out, memo = bytearray(), {}
    for i in range(0, len(rgb), 3):
        px = rgb[i:i + 3]
        if px not in memo:
            r, g, b = (lin(v) for v in px)
            x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.9505
            y = 0.2126 * r + 0.7152 * g + 0.0722 * b
            z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.089
            L, A, B = 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))
            memo[px] = bytes([round(L * 255 / 100), max(0, min(255, round(A) + 128)), max(0, min(255, round(B) + 128))])
        out += memo[px]
    return bytes(out)


rgb, gray, cmyk = read("src.rgb"), read("src.gray"), read("src.cmyk")
lab = to_lab(rgb)
dims = b"/Width %d /Height %d " % (W, H)

# Palette: 16 colours, 4-bit indexes, LZW (EarlyChange 1, the default), the
# palette as a string.
q = read("src16.rgb")
colours = sorted({q[i:i + 3] for i in range(0, len(q), 3)})
index = {c: i for i, c in enumerate(colours)}
idx = [index[q[i:i + 3]] for i in range(0, len(q), 3)]
lookup = b"".join(colours)
pdf("indexed4-lzw.pdf", [image(dims + b"/ColorSpace [/Indexed /DeviceRGB %d <%s>] /BitsPerComponent 4 /Filter /LZWDecode" % (len(colours) - 1, lookup.hex().encode()), lzw(pack(idx, 4, W)))])

# Palette of 8-bit indexes with the palette in a stream (Flate), the image
# Flate with a PNG predictor.
pal_stream = zlib.compress(lookup)
pal_obj = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(pal_stream) + pal_stream + b"\nendstream"
pdf("indexed8-stream.pdf", [image(dims + b"/ColorSpace [/Indexed /DeviceRGB %d 1 0 R] /BitsPerComponent 8 /Filter /FlateDecode /DecodeParms << /Predictor 15 /Columns %d /Colors 1 /BitsPerComponent 8 >>" % (len(colours) - 1, W), zlib.compress(png_predict(bytes(idx), W, 1)))], pre=[pal_obj])

# Gray, RunLength.
pdf("gray8-rle.pdf", [image(dims + b"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /RunLengthDecode", rle(gray))])

# RGB behind [/ASCII85Decode /FlateDecode].
pdf("rgb8-a85-flate.pdf", [image(dims + b"/ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter [/ASCII85Decode /FlateDecode]", base64.a85encode(zlib.compress(rgb, 9), wrapcol=76) + b"~>")])

# CalGray 2-bit behind [/ASCIIHexDecode /LZWDecode] with EarlyChange 0.
g2 = [v >> 6 for v in gray]
pdf("calgray2-hex-lzw.pdf", [image(dims + b"/ColorSpace [/CalGray << /WhitePoint [0.9505 1 1.089] >>] /BitsPerComponent 2 /Filter [/ASCIIHexDecode /LZWDecode] /DecodeParms [null << /EarlyChange 0 >>]", lzw(pack(g2, 2, W), early=0).hex().encode() + b">")])

# Gray 4-bit, Flate.
pdf("gray4-flate.pdf", [image(dims + b"/ColorSpace /DeviceGray /BitsPerComponent 4 /Filter /FlateDecode", zlib.compress(pack([v >> 4 for v in gray], 4, W), 9))])

# CalRGB 16-bit, Flate.
rgb16 = bytes(b for v in rgb for b in (v, v))
pdf("calrgb16-flate.pdf", [image(dims + b"/ColorSpace [/CalRGB << /WhitePoint [0.9505 1 1.089] >>] /BitsPerComponent 16 /Filter /FlateDecode", zlib.compress(rgb16, 9))])

# CMYK samples, Flate with a PNG predictor (4 colours).
pdf("cmyk8-flate-png.pdf", [image(dims + b"/ColorSpace /DeviceCMYK /BitsPerComponent 8 /Filter /FlateDecode /DecodeParms << /Predictor 15 /Columns %d /Colors 4 >>" % W, zlib.compress(png_predict(cmyk, 4 * W, 4), 9))])

# A CMYK JPEG (Adobe APP14, inverted) with the Decode array ImageMagick and
# Photoshop write for it.
pdf("cmyk-jpeg.pdf", [image(dims + b"/ColorSpace /DeviceCMYK /BitsPerComponent 8 /Filter /DCTDecode /Decode [1 0 1 0 1 0 1 0]", read("cmyk.jpg"))])

# A gray JPEG compressed again: [/FlateDecode /DCTDecode].
pdf("gray-flate-jpeg.pdf", [image(dims + b"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter [/FlateDecode /DCTDecode]", zlib.compress(read("gray.jpg"), 9))])

# 1-bit gray with Decode [1 0]: 1 is black, as some scanners write.
bw = [0 if v < 128 else 1 for v in gray]
pdf("gray1-decode.pdf", [image(dims + b"/ColorSpace /DeviceGray /BitsPerComponent 1 /Decode [1 0] /Filter /FlateDecode", zlib.compress(pack([1 - b for b in bw], 1, W), 9))])

# An image mask with Decode [1 0]: 1 paints (black).
pdf("mask-decode.pdf", [image(dims + b"/ImageMask true /BitsPerComponent 1 /Decode [1 0] /Filter /FlateDecode", zlib.compress(pack([1 - b for b in bw], 1, W), 9))])

# Lab, 8-bit: a* and b* from -128 to 127.
pdf("lab8-flate.pdf", [image(dims + b"/ColorSpace [/Lab << /WhitePoint [0.9505 1 1.089] /Range [-128 127 -128 127] >>] /BitsPerComponent 8 /Filter /FlateDecode", zlib.compress(lab, 9))])

# Bands: the page cut into four strips of 35 rows, as some scanner software
# writes it, each under a third of the page; the second a JPEG, the third
# RGB.
bands = []
for i in range(4):
    rows = gray[i * 35 * W:(i + 1) * 35 * W]
    place = (0, H - (i + 1) * 35, W, 35)
    bdims = b"/Width %d /Height 35 /ColorSpace /DeviceGray /BitsPerComponent 8 " % W
    if i == 1:
        bands.append((bdims + b"/Filter /DCTDecode", read("band2.jpg"), place))
    elif i == 2:
        bands.append((bdims.replace(b"DeviceGray", b"DeviceRGB") + b"/Filter /FlateDecode", zlib.compress(rgb[i * 35 * W * 3:(i + 1) * 35 * W * 3], 9), place))
    else:
        bands.append((bdims + b"/Filter /FlateDecode", zlib.compress(rows, 9), place))
pdf("bands.pdf", bands)

# One ink's tints (Separation, black ink over DeviceGray): 255 is full ink.
pdf("separation8-flate.pdf", [image(dims + b"/ColorSpace [/Separation /Black /DeviceGray << /FunctionType 2 /Domain [0 1] /C0 [1] /C1 [0] /N 1 >>] /BitsPerComponent 8 /Filter /FlateDecode", zlib.compress(bytes(255 - v for v in gray), 9))])

# RGB, LZW with the TIFF predictor (2), as TIFF converters write it.
tiff = bytearray(rgb)
for r in range(H):
    row = rgb[r * 3 * W:(r + 1) * 3 * W]
    for i in range(3, 3 * W):
        tiff[r * 3 * W + i] = (row[i] - row[i - 3]) & 0xFF
pdf("rgb8-lzw-tiff.pdf", [image(dims + b"/ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /LZWDecode /DecodeParms << /Predictor 2 /Colors 3 /Columns %d >>" % W, lzw(bytes(tiff)))])

# Two bands of 70 rows, each half the page.
pdf("bands2.pdf", [(b"/Width %d /Height 70 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode" % W, zlib.compress(gray[i * 70 * W:(i + 1) * 70 * W], 9), (0, H - (i + 1) * 70, W, 70)) for i in range(2)])

# An inline image (BI ... ID data EI in the page's content), abbreviated
# as Ghostscript writes small ones: 4-bit indexes into a palette named in
# the resources (/CS0), behind [/A85 /Fl].
inline = base64.a85encode(zlib.compress(pack(idx, 4, W), 9)) + b"~>"
pdf("inline-indexed.pdf", [], content=b"q %d 0 0 %d 0 0 cm\nBI /W %d /H %d /BPC 4 /CS /CS0 /F [/A85 /Fl] ID\n" % (W, H, W, H) + inline + b"\nEI\nQ",
    resources=b"/ColorSpace << /CS0 [/Indexed /DeviceRGB %d <%s>] >> " % (len(colours) - 1, lookup.hex().encode()))
