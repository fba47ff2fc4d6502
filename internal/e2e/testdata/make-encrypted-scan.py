# Makes encrypted-scan.pdf: a two-page PDF that opens only with the user
# password "secret" (standard security handler, RC4 128-bit, R3), page 1
# with a text layer, page 2 a scan: a gray picture (FlateDecode, no
# predictor) over the whole page and no text. Needs ImageMagick's convert and Python 3 only:
#   python3 make-encrypted-scan.py
import hashlib, subprocess, zlib

W, H = 306, 396
raw = subprocess.run(["convert", "-size", f"{W}x{H}", "xc:white", "-fill", "black", "-pointsize", "20",
                      "-annotate", "+20+60", "Total 42.00 EUR", "-depth", "8", "gray:-"],
                     check=True, capture_output=True).stdout
assert len(raw) == W * H

PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")

def rc4(key, data):
    s, j = list(range(256)), 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    out, i, j = bytearray(), 0, 0
    for c in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(c ^ s[(s[i] + s[j]) % 256])
    return bytes(out)

def padded(pw):
    return (pw.encode() + PAD)[:32]

user, owner, n = "secret", "owner-password", 16
P = -3904  # print and copy allowed
file_id = hashlib.md5(b"extractq encrypted scan").digest()

k = hashlib.md5(padded(owner)).digest()
for _ in range(50):
    k = hashlib.md5(k[:n]).digest()
O = rc4(k[:n], padded(user))
for i in range(1, 20):
    O = rc4(bytes(b ^ i for b in k[:n]), O)

key = hashlib.md5(padded(user) + O + P.to_bytes(4, "little", signed=True) + file_id).digest()
for _ in range(50):
    key = hashlib.md5(key[:n]).digest()
key = key[:n]
U = rc4(key, hashlib.md5(PAD + file_id).digest())
for i in range(1, 20):
    U = rc4(bytes(b ^ i for b in key), U)
U += b"\x00" * 16

def enc(num, data):
    k = hashlib.md5(key + num.to_bytes(3, "little") + (0).to_bytes(2, "little")).digest()[:min(n + 5, 16)]
    return rc4(k, data)

def hexstr(b):
    return b"<" + b.hex().encode() + b">"

text = b"BT /F1 14 Tf 50 700 Td (Invoice INV-7, page 2 is a scan.) Tj ET"
picture = zlib.compress(raw, 9)
draw = b"q 612 0 0 792 0 0 cm /Im1 Do Q"
objs = {
    1: b"<< /Type /Catalog /Pages 2 0 R >>",
    2: b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
    3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 6 0 R >>",
    4: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 7 0 R >> >> /Contents 8 0 R >>",
    5: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
}
streams = {
    6: (b"", text),
    7: (b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode " % (W, H), picture),
    8: (b"", draw),
}
for num, (extra, data) in streams.items():
    data = enc(num, data)
    objs[num] = b"<< " + extra + b"/Length %d >>\nstream\n" % len(data) + data + b"\nendstream"
objs[9] = b"<< /Filter /Standard /V 2 /R 3 /Length 128 /O " + hexstr(O) + b" /U " + hexstr(U) + b" /P %d >>" % P

out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
offsets = {}
for num in sorted(objs):
    offsets[num] = len(out)
    out += b"%d 0 obj\n" % num + objs[num] + b"\nendobj\n"
xref = len(out)
out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
for num in sorted(objs):
    out += b"%010d 00000 n \n" % offsets[num]
out += b"trailer\n<< /Size %d /Root 1 0 R /Encrypt 9 0 R /ID [" % (len(objs) + 1) + hexstr(file_id) + hexstr(file_id) + b"] >>\nstartxref\n%d\n%%%%EOF\n" % xref
open("encrypted-scan.pdf", "wb").write(out)
