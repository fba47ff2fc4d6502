# ReportLab sets a character its standard Helvetica (WinAnsi) cannot
# encode as ZapfDingbats' black square, code 0x6E ("n"); the Symbol line
# is set in the standard Symbol font.
import sys
from reportlab.pdfgen import canvas

c = canvas.Canvas(sys.argv[1], pagesize=(300, 120), invariant=1)
c.setFont("Helvetica", 10)
c.drawString(20, 80, "Ship to: Łódź warehouse, 2 pallets.")
c.setFont("Symbol", 10)
c.drawString(20, 60, "α + β ≤ 2π")
c.save()
