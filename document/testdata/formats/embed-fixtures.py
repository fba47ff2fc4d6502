#!/usr/bin/env python3
"""Writes the OOXML fixtures of imported parts and embedded objects, by hand.

  python3 embed-fixtures.py budget.xlsx

budget.xlsx is LibreOffice's export of budget.csv (see README.md); it is
embedded as is. Writes:
  altchunk.docx   html-docx-js's shape: a body that is only <w:altChunk>,
                  the imported part an HTML page (a heading, a table, a paragraph)
  altchunk-mht.docx  the same page as html-docx-js itself writes it: an MHT part
  embedded-xlsx.docx a report with budget.xlsx pasted in as an object (Word's
                  markup: w:object, v:shape with its preview picture, o:OLEObject)
  embedded-xlsx.pptx a slide with budget.xlsx pasted in as an object (p:oleObj)
"""
import sys
import zipfile
import quopri
import struct
import zlib

xlsx = open(sys.argv[1], "rb").read()

# A 1x1 grey PNG: the object's preview picture, which is no document.
def png():
    def chunk(t, d):
        c = struct.pack(">I", len(d)) + t + d
        return c + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    raw = b"\x00\x80"
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

def write(name, parts):
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in parts:
            z.writestr(n, d)

def root_rels(main):
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG}">'
            f'<Relationship Id="rId1" Type="{RELS}/officeDocument" Target="{main}"/></Relationships>')

HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Site report</title>
<style>td { border: 1px solid black }</style></head>
<body>
<h1>Site inspection report</h1>
<p>Inspected by Maren Olsson on the north wing.</p>
<table>
<tr><th>Room</th><th>Finding</th></tr>
<tr><td>Boiler room</td><td>Valve leaks</td></tr>
<tr><td>Archive</td><td>Humidity 71%</td></tr>
</table>
<p>Repairs are due before the next visit.</p>
</body></html>
"""

def altchunk_docx(name, part, ctype, data, before="", after=""):
    types = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
             '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
             '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
             '<Default Extension="xml" ContentType="application/xml"/>'
             f'<Default Extension="{part.rsplit(".", 1)[1]}" ContentType="{ctype}"/>'
             '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
             '</Types>')
    doc = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="{W}" xmlns:r="{RELS}">'
           f'<w:body>{before}<w:altChunk r:id="htmlChunk"/>{after}<w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr></w:body></w:document>')
    rels = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG}">'
            f'<Relationship Id="htmlChunk" Type="{RELS}/aFChunk" Target="/word/{part}"/></Relationships>')
    write(name, [("[Content_Types].xml", types), ("_rels/.rels", root_rels("/word/document.xml")),
                 ("word/document.xml", doc), ("word/_rels/document.xml.rels", rels), ("word/" + part, data)])

altchunk_docx("altchunk.docx", "afchunk.htm", "text/html", HTML)

# html-docx-js: an MHT (multipart/related) with the page quoted-printable.
mht = ("MIME-Version: 1.0\r\nContent-Type: multipart/related;\r\n    type=\"text/html\";\r\n"
       "    boundary=\"----=mhtDocumentPart\"\r\n\r\n\r\n------=mhtDocumentPart\r\n"
       "Content-Type: text/html;\r\n    charset=\"utf-8\"\r\nContent-Transfer-Encoding: quoted-printable\r\n"
       "Content-Location: file:///C:/fake/document.html\r\n\r\n"
       + quopri.encodestring(HTML.encode("utf-8")).decode("ascii").replace("\n", "\r\n")
       + "\r\n\r\n------=mhtDocumentPart--\r\n")
altchunk_docx("altchunk-mht.docx", "afchunk.mht", "message/rfc822", mht,
              before=f'<w:p><w:r><w:t>Cover note.</w:t></w:r></w:p>',
              after=f'<w:p><w:r><w:t>Signed: the inspector.</w:t></w:r></w:p>')

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# Word: the report, the pasted workbook, a closing paragraph.
types = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
         '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
         '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
         '<Default Extension="xml" ContentType="application/xml"/>'
         '<Default Extension="png" ContentType="image/png"/>'
         f'<Default Extension="xlsx" ContentType="{XLSX_TYPE}"/>'
         '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
         '</Types>')
doc = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="{W}" xmlns:r="{RELS}" '
       'xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office"><w:body>'
       '<w:p><w:r><w:t>Budget report: the quarters are in the table below.</w:t></w:r></w:p>'
       '<w:p><w:r><w:object w:dxaOrig="4320" w:dyaOrig="1440">'
       '<v:shape id="_x0000_i1025" type="#_x0000_t75" style="width:216pt;height:72pt" o:ole="">'
       '<v:imagedata r:id="rId5" o:title=""/></v:shape>'
       '<o:OLEObject Type="Embed" ProgID="Excel.Sheet.12" ShapeID="_x0000_i1025" DrawAspect="Content" ObjectID="_1770000001" r:id="rId6"/>'
       '</w:object></w:r></w:p>'
       '<w:p><w:r><w:t>Travel fell in the second quarter.</w:t></w:r></w:p>'
       '<w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr></w:body></w:document>')
rels = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG}">'
        f'<Relationship Id="rId5" Type="{RELS}/image" Target="media/image1.png"/>'
        f'<Relationship Id="rId6" Type="{RELS}/package" Target="embeddings/Microsoft_Excel_Worksheet.xlsx"/>'
        '</Relationships>')
write("embedded-xlsx.docx", [("[Content_Types].xml", types), ("_rels/.rels", root_rels("word/document.xml")),
      ("word/document.xml", doc), ("word/_rels/document.xml.rels", rels),
      ("word/media/image1.png", png()), ("word/embeddings/Microsoft_Excel_Worksheet.xlsx", xlsx)])

# PowerPoint: one slide, a title and the pasted workbook (p:oleObj with
# its preview picture).
P = "http://schemas.openxmlformats.org/presentationml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
types = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
         '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
         '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
         '<Default Extension="xml" ContentType="application/xml"/>'
         '<Default Extension="png" ContentType="image/png"/>'
         f'<Default Extension="xlsx" ContentType="{XLSX_TYPE}"/>'
         '<Override PartName="/ppt/presentation.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml"/>'
         '<Override PartName="/ppt/slides/slide1.xml" ContentType="application/vnd.openxmlformats-officedocument.presentationml.slide+xml"/>'
         '</Types>')
pres = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<p:presentation xmlns:p="{P}" xmlns:r="{RELS}">'
        '<p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/></p:presentation>')
prels = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG}">'
         f'<Relationship Id="rId2" Type="{RELS}/slide" Target="slides/slide1.xml"/></Relationships>')
slide = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<p:sld xmlns:p="{P}" xmlns:a="{A}" xmlns:r="{RELS}">'
         '<p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
         '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/><p:cNvSpPr/><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:spPr/>'
         '<p:txBody><a:bodyPr/><a:p><a:r><a:t>Quarterly budget</a:t></a:r></a:p></p:txBody></p:sp>'
         '<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="3" name="Object 2"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr>'
         '<p:xfrm><a:off x="914400" y="1828800"/><a:ext cx="4572000" cy="1371600"/></p:xfrm>'
         '<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/presentationml/2006/ole">'
         '<p:oleObj name="Worksheet" r:id="rId3" imgW="4572000" imgH="1371600" progId="Excel.Sheet.12"><p:embed/>'
         '<p:pic><p:nvPicPr><p:cNvPr id="0" name=""/><p:cNvPicPr/><p:nvPr/></p:nvPicPr>'
         '<p:blipFill><a:blip r:embed="rId4"/><a:stretch><a:fillRect/></a:stretch></p:blipFill>'
         '<p:spPr><a:xfrm><a:off x="914400" y="1828800"/><a:ext cx="4572000" cy="1371600"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr></p:pic>'
         '</p:oleObj></a:graphicData></a:graphic></p:graphicFrame>'
         '</p:spTree></p:cSld></p:sld>')
srels = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG}">'
         f'<Relationship Id="rId3" Type="{RELS}/package" Target="../embeddings/Microsoft_Excel_Worksheet.xlsx"/>'
         f'<Relationship Id="rId4" Type="{RELS}/image" Target="../media/image1.png"/></Relationships>')
write("embedded-xlsx.pptx", [("[Content_Types].xml", types), ("_rels/.rels", root_rels("ppt/presentation.xml")),
      ("ppt/presentation.xml", pres), ("ppt/_rels/presentation.xml.rels", prels),
      ("ppt/slides/slide1.xml", slide), ("ppt/slides/_rels/slide1.xml.rels", srels),
      ("ppt/media/image1.png", png()), ("ppt/embeddings/Microsoft_Excel_Worksheet.xlsx", xlsx)])
