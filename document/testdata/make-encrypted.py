import pikepdf
cases = [
    ("encrypted-empty-user.pdf", "", dict(R=4, aes=True, metadata=True), "This AES file opens with the empty password."),
    ("encrypted-empty-rc4.pdf", "", dict(R=3, aes=False, metadata=False), "This RC4 file opens with the empty password."),
    ("encrypted-secret.pdf", "secret", dict(R=4, aes=True, metadata=True), "This file needs the password."),
]
for name, user, kw, text in cases:
    pdf = pikepdf.new()
    font = pdf.make_indirect(pikepdf.Dictionary(Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica, Encoding=pikepdf.Name.WinAnsiEncoding))
    content = pdf.make_stream(("BT /F1 12 Tf 50 700 Td (%s) Tj ET" % text).encode())
    page = pikepdf.Dictionary(Type=pikepdf.Name.Page, MediaBox=[0, 0, 612, 792], Resources=pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font)), Contents=content)
    pdf.pages.append(pikepdf.Page(page))
    pdf.save(name, encryption=pikepdf.Encryption(user=user, owner="owner-password", **kw))

# AES-256 (R6), with the empty user password: what Acrobat makes for "restrictions only".
pdf = pikepdf.new()
font = pdf.make_indirect(pikepdf.Dictionary(Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica, Encoding=pikepdf.Name.WinAnsiEncoding))
content = pdf.make_stream(b"BT /F1 12 Tf 50 700 Td (This AES-256 file opens with the empty password.) Tj ET")
page = pikepdf.Dictionary(Type=pikepdf.Name.Page, MediaBox=[0, 0, 612, 792], Resources=pikepdf.Dictionary(Font=pikepdf.Dictionary(F1=font)), Contents=content)
pdf.pages.append(pikepdf.Page(page))
pdf.save("encrypted-empty-aes256.pdf", encryption=pikepdf.Encryption(user="", owner="owner-password", R=6, aes=True))
pdf.save("encrypted-secret-aes256.pdf", encryption=pikepdf.Encryption(user="secret", owner="owner-password", R=6, aes=True))
