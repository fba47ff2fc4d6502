"""Writes reportlab-form.pdf: a claim form whose fields ReportLab fills
as it makes them (values with appearance streams it draws; a radio group;
a checked and an unchecked box; a choice), with python3-reportlab."""
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

c = canvas.Canvas("reportlab-form.pdf", pagesize=A4, invariant=1)
c.setFont("Helvetica-Bold", 14)
c.drawString(50, 790, "Insurance claim")
c.setFont("Helvetica", 11)
form = c.acroForm
c.drawString(50, 750, "Policy number:")
form.textfield(name="policy", value="HX-2291-B", x=140, y=745, width=150, height=18, borderWidth=0, fontSize=11)
c.drawString(50, 720, "Claimant:")
form.textfield(name="claimant", value="Mary Somerville", x=140, y=715, width=200, height=18, borderWidth=0, fontSize=11)
c.drawString(50, 690, "Damage:")
form.choice(name="damage", value="Water", options=["Fire", "Water", "Theft"], x=140, y=685, width=100, height=18, borderWidth=0, fontSize=11)
c.drawString(50, 660, "Police report filed:")
form.checkbox(name="police", checked=True, x=160, y=657, size=12, buttonStyle="check", borderWidth=0)
c.drawString(50, 630, "Photos attached:")
form.checkbox(name="photos", checked=False, x=160, y=627, size=12, buttonStyle="check", borderWidth=0)
c.drawString(50, 600, "Contact by:")
form.radio(name="contact", value="phone", selected=False, x=130, y=597, size=12, borderWidth=0)
c.drawString(145, 600, "phone")
form.radio(name="contact", value="email", selected=True, x=190, y=597, size=12, borderWidth=0)
c.drawString(205, 600, "e-mail")
c.save()
