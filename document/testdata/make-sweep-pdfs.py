#!/usr/bin/env python3
"""Writes one-page PDFs found in the real-documents sweep, each of
which made the reader lose the rest of a page (python3 make-sweep-pdfs.py,
no dependencies):

odd-tounicode.pdf: the font's Unicode map gives its ligature glyphs
strings of odd length, as LuaTeX 0.7x wrote them (<540068> for "Th": the
first letter in two hex digits instead of four); luatex-hyphen.pdf of TeX
Live's documentation.

actualtext-escape.pdf: a marked-content ActualText string with a backslash
before a character that is no escape, "(\\protect <)", as pdfTeX wrote it
in microtype.pdf of TeX Live's documentation.

inline-image.pdf: an inline image (BI ... ID data EI) whose binary data
holds '<' and '(' bytes, as in LilyPond's essay.pdf (Ghostscript).

builtin-encoding.pdf: a Type 1 font with neither /Encoding nor a Unicode
map, whose program's own encoding puts the period at code 58 (":" in
ASCII), as TeX's CMMI10 does; texinfo's index leaders in nettle.pdf came
out as ": : :". The font program is only its clear-text header: enough for
a text extractor, not for a renderer.
"""
cmap = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CMapName /Odd-Ligatures def
/CMapType 2 def
1 begincodespacerange
<00> <FF>
endcodespacerange
1 beginbfrange
<20> <7E> <0020>
endbfrange
3 beginbfchar
<01> <540068>
<02> <660074>
<03> <740074>
endbfchar
endcmap
CMapName currentdict /CMap defineresource pop
end
end
"""


def write(name, content, font, extra=()):
    """One Letter page drawing content with font as /F1; extra objects
    are numbered from 7."""
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        font,
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"endstream",
    ] + list(extra)
    out, offs = b"%PDF-1.4\n", []
    for i, o in enumerate(objs):
        offs.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offs)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    open(name, "wb").write(out)


# "The patterns after the fault", with Th, tt and ft as ligature glyphs.
text = b"\x01e pa\x03erns a\x02er the fault"
write("odd-tounicode.pdf",
      b"BT /F1 12 Tf 72 720 Td (" + text + b") Tj ET\nBT /F1 12 Tf 72 700 Td (Second line stays.) Tj ET",
      b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>")
# Object 6 (the map) is unused here.
write("actualtext-escape.pdf",
      b"BT /F1 12 Tf 72 720 Td (Before the span) Tj ET\n"
      b"/Span<</ActualText(\\protect <)>>BDC\nBT /F1 12 Tf 72 700 Td (<) Tj ET\nEMC\n"
      b"BT /F1 12 Tf 72 680 Td (After the span) Tj ET",
      b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
# A 4x2 gray inline image whose bytes include "<", "(", ")" and "E I".
write("inline-image.pdf",
      b"BT /F1 12 Tf 72 720 Td (Before the image) Tj ET\n"
      b"q 40 0 0 20 72 690 cm BI /W 4 /H 2 /BPC 8 /CS /G ID \x3c(\x00\xffE I\x29\x3c EI Q\n"
      b"BT /F1 12 Tf 72 660 Td (After the image) Tj ET",
      b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
# The clear-text part of a Type 1 program: its encoding array only.
program = (b"%!PS-AdobeFont-1.0: CMMI10 003.002\n/FontName /CMMI10 def\n"
           b"/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\n"
           b"dup 58 /period put\ndup 59 /comma put\ndup 11 /alpha put\nreadonly def\ncurrentdict end\ncurrentfile eexec\n")
write("builtin-encoding.pdf",
      b"BT /F1 12 Tf 72 720 Td (Index) Tj ( ::: ) Tj (8) Tj ET\nBT /F1 12 Tf 72 700 Td (\x0b;) Tj ET",
      b"<< /Type /Font /Subtype /Type1 /BaseFont /CMMI10 /FontDescriptor 7 0 R >>",
      [b"<< /Type /FontDescriptor /FontName /CMMI10 /Flags 4 /FontBBox [0 0 1000 1000] /ItalicAngle 0 /Ascent 750 /Descent -250 /CapHeight 700 /StemV 80 /FontFile 8 0 R >>",
       b"<< /Length %d /Length1 %d /Length2 0 /Length3 0 >>\nstream\n" % (len(program), len(program)) + program + b"\nendstream"])

# Found by the document survey (TestDocumentSurvey) in TeX Live's
# Vietnamese and Russian documentation:
#
# partial-tounicode.pdf: a Unicode map that names only the accented
# letters (xdvipdfmx's for VnTeX's typewriter font in babel-vietnamese's
# vietnamese.pdf): every other code read as U+FFFD.
tu = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CMapName /Partial-UTF16 def
/CMapType 2 def
1 begincodespacerange
<00> <FF>
endcodespacerange
2 beginbfchar
<E0> <1EC7>
<E1> <00E0>
endbfchar
endcmap
CMapName currentdict /CMap defineresource pop
end
end
"""
write("partial-tounicode.pdf",
      b"BT /F1 12 Tf 72 720 Td (Vi\xe0t Nam v\xe1 Lao) Tj ET",
      b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 7 0 R >>",
      [b"<< /Length %d >>\nstream\n" % len(tu) + tu + b"endstream"])


def index(items):
    """A CFF INDEX with one-byte offsets."""
    if not items:
        return b"\x00\x00"
    offs, o = [1], 1
    for it in items:
        o += len(it)
        offs.append(o)
    return len(items).to_bytes(2, "big") + b"\x01" + bytes(offs) + b"".join(items)


def cff():
    """A CFF font program of four empty glyphs whose Encoding (format 0
    with a supplement) and charset (format 1, ranges) put Cyrillic letters
    at KOI8-like codes and the period at 58 and 46, as Ghostscript's
    ps2pdf embedded TeX's LH fonts (eskd.pdf), without /Encoding or a
    Unicode map. Glyph outlines are empty: enough for a text extractor."""
    header = b"\x01\x00\x04\x01"
    names = index([b"LHR10"])
    strings = index([b"afii10030", b"afii10074", b"afii10082"])  # М и р: SIDs 391-393
    gsubrs = index([])

    def top(charset, encoding, charstrings):
        i32 = lambda v: b"\x1d" + v.to_bytes(4, "big")
        return i32(charset) + b"\x0f" + i32(encoding) + b"\x10" + i32(charstrings) + b"\x11"

    dict_len = len(index([top(0, 0, 0)]))
    base = len(header) + len(names) + dict_len + len(strings) + len(gsubrs)
    charset = b"\x01" + (391).to_bytes(2, "big") + b"\x02" + (15).to_bytes(2, "big") + b"\x00"  # glyphs 1-3, then period
    encoding = b"\x80\x04\xed\xc9\xd2\x3a" + b"\x01\x2e" + (15).to_bytes(2, "big")  # codes 237 201 210 58; 46 also period
    charstrings = index([b"\x0e"] * 5)  # .notdef and four glyphs, each endchar
    c_off = base
    e_off = c_off + len(charset)
    s_off = e_off + len(encoding)
    return header + names + index([top(c_off, e_off, s_off)]) + strings + gsubrs + charset + encoding + charstrings


prog = cff()
write("cff-encoding.pdf",
      b"BT /F1 12 Tf 72 720 Td (\xed\xc9\xd2:) Tj ET\nBT /F1 12 Tf 72 700 Td (end.) Tj ET",
      b"<< /Type /Font /Subtype /Type1 /BaseFont /LHR10 /FontDescriptor 7 0 R >>",
      [b"<< /Type /FontDescriptor /FontName /LHR10 /Flags 4 /FontBBox [0 0 1000 1000] /ItalicAngle 0 /Ascent 750 /Descent -250 /CapHeight 700 /StemV 80 /FontFile3 8 0 R >>",
       b"<< /Subtype /Type1C /Length %d >>\nstream\n" % len(prog) + prog + b"\nendstream"])
open("cff-encoding.cff", "wb").write(prog)

# cid-japan1.pdf: a Japanese font named, not embedded, with Identity-H and
# no Unicode map, as pTeX's dvipdfmx writes Ryumin-Light (lshort-japanese's
# jlshort.pdf): its codes are CIDs of Adobe-Japan1, here those of
# "日本語の文書" (3284 3722 1952 550 3592 2427, from Adobe's
# Adobe-Japan1-UCS2 map).
cids = b"".join(c.to_bytes(2, "big") for c in (3284, 3722, 1952, 550, 3592, 2427))
write("cid-japan1.pdf",
      b"BT /F1 12 Tf 72 720 Td <" + cids.hex().encode() + b"> Tj ET\nBT /F1 12 Tf 72 700 Td <0022002300240025> Tj ET",
      b"<< /Type /Font /Subtype /Type0 /BaseFont /Ryumin-Light-Identity-H /Encoding /Identity-H /DescendantFonts [7 0 R] >>",
      [b"<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Ryumin-Light /CIDSystemInfo << /Registry (Adobe) /Ordering (Japan1) /Supplement 2 >> /FontDescriptor 8 0 R /DW 1000 >>",
       b"<< /Type /FontDescriptor /FontName /Ryumin-Light /Flags 6 /FontBBox [-170 -331 1024 903] /ItalicAngle 0 /Ascent 723 /Descent -241 /CapHeight 709 /StemV 69 >>"])

# differences-uni.pdf: an /Encoding whose /Differences name letters by
# uniXXXX, as pdfTeX wrote VnTeX's fonts (lshort-vietnamese's lshort-vi.pdf:
# "của" came out as "cõa", the code read as Latin-1).
write("differences-uni.pdf",
      b"BT /F1 12 Tf 72 720 Td (c\xf5a m\xe9t) Tj ET",
      b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding << /Type /Encoding /Differences [233 /uni1ED9 245 /uni1EE7] >> >>")
