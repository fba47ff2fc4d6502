"""Fills form.pdf with pypdf (Debian's python3-pypdf) into filled-pypdf.pdf."""
import sys
from pypdf import PdfReader, PdfWriter

reader = PdfReader("form.pdf")
writer = PdfWriter()
writer.append(reader)
writer.update_page_form_field_values(writer.pages[0], {
    "customer": "Grace Hopper",
    "order": "PO-77031",
    "city": "Málaga",
    "colour": "Blue",
    "notes": "Ring twice",
})
with open("filled-pypdf.pdf", "wb") as f:
    writer.write(f)
