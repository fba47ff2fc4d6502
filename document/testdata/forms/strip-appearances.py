"""Writes filled-noap.pdf: filled-pdftk.pdf with every widget's /AP and
/AS removed and /NeedAppearances true, as web form fillers leave a form
(the viewer is to draw every field from its value)."""
from pypdf import PdfReader, PdfWriter
from pypdf.generic import BooleanObject, NameObject

writer = PdfWriter()
writer.append(PdfReader("filled-pdftk.pdf"))
for page in writer.pages:
    for annot in page.get("/Annots", []):
        annot = annot.get_object()
        for key in ("/AP", "/AS"):
            if key in annot:
                del annot[key]
writer._root_object["/AcroForm"][NameObject("/NeedAppearances")] = BooleanObject(True)
with open("filled-noap.pdf", "wb") as f:
    writer.write(f)
