# ReportLab versions of the corpus: an invoice in the standard Helvetica
# (WinAnsi, no embedded font), and in an embedded TrueType font (DejaVu) a
# report with two frames (columns), footnotes and a multi-page table that
# repeats its header.
import random, sys
from reportlab.lib.pagesizes import A4
from reportlab.lib import colors
from reportlab.lib.styles import getSampleStyleSheet, ParagraphStyle
from reportlab.lib.units import cm
from reportlab.platypus import (SimpleDocTemplate, BaseDocTemplate, Frame, PageTemplate, Paragraph, Table, TableStyle, Spacer, FrameBreak)
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont

out = sys.argv[1]
pdfmetrics.registerFont(TTFont("DejaVu", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
pdfmetrics.registerFont(TTFont("DejaVu-Bold", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"))
ss = getSampleStyleSheet()

def invoice(path, font, bold, names):
    st = ParagraphStyle("b", parent=ss["Normal"], fontName=font, fontSize=10, leading=13)
    h = ParagraphStyle("h", parent=st, fontName=bold, fontSize=16, leading=20)
    doc = SimpleDocTemplate(path, pagesize=A4, title="Invoice 2026-0417")
    seller = Paragraph("<b>%s</b><br/>Kärntner Straße 12<br/>1010 Wien<br/>Österreich" % names[0], st)
    buyer = Paragraph("Bill to:<br/>%s<br/>%s<br/>30-001 Kraków" % (names[1], names[2]), ParagraphStyle("r", parent=st, alignment=2))
    head = Table([[seller, buyer]], colWidths=[8.5*cm, 8.5*cm])
    head.setStyle(TableStyle([("VALIGN", (0, 0), (-1, -1), "TOP")]))
    rows = [["Pos.", "Description", "Qty", "Unit price", "Amount"],
            ["1", "Desk lamp \u201cÄther\u201d, white", "2", "49.90 €", "99.80 €"],
            ["2", "Office chair Ergonomic Plus", "1", "1,249.00 €", "1,249.00 €"],
            ["3", "Cable duct, 2 m", "12", "7.45 €", "89.40 €"],
            ["4", "Installation on site, hours", "3.5", "68.00 €", "238.00 €"],
            ["5", "Shipping", "1", "15.00 €", "15.00 €"]]
    t = Table(rows, colWidths=[1.2*cm, 8*cm, 1.6*cm, 3*cm, 3*cm])
    t.setStyle(TableStyle([("FONT", (0, 0), (-1, -1), font, 10), ("FONT", (0, 0), (-1, 0), bold, 10),
        ("ALIGN", (2, 0), (-1, -1), "RIGHT"), ("LINEBELOW", (0, 0), (-1, -1), 0.5, colors.grey)]))
    tot = Table([["Subtotal", "1,691.20 €"], ["VAT 20 %", "338.24 €"], ["Total due", "2,029.44 €"]], colWidths=[4*cm, 3*cm], hAlign="RIGHT")
    tot.setStyle(TableStyle([("FONT", (0, 0), (-1, -1), font, 10), ("FONT", (0, 2), (-1, 2), bold, 10), ("ALIGN", (1, 0), (1, -1), "RIGHT")]))
    doc.build([head, Spacer(1, 1*cm), Paragraph("Invoice No. 2026-0417", h), Paragraph("Invoice date 14.03.2026, customer K-88213. Ship to: Łódź warehouse.", st),
               Spacer(1, 0.5*cm), t, Spacer(1, 0.5*cm), tot, Spacer(1, 0.5*cm),
               Paragraph("Payable within 14 days to IBAN AT61 1904 3002 3457 3201. A late fee of £25 applies to payments from the UK.", st)])

invoice(out + "/invoice-helvetica.pdf", "Helvetica", "Helvetica-Bold", ["Müller & Søn Großhandel GmbH", "Jérôme Lefèvre", "Rue de la Paix 7"])
invoice(out + "/invoice-ttf.pdf", "DejaVu", "DejaVu-Bold", ["Müller & Søn Großhandel GmbH", "Paweł Łukasiewicz", "ul. Źródlana 7/3, Ελλάδα, Москва"])

# Two-column report with footnotes.
st = ParagraphStyle("b", parent=ss["Normal"], fontName="DejaVu", fontSize=10, leading=13, alignment=4)
h = ParagraphStyle("h", parent=st, fontName="DejaVu-Bold", fontSize=13, leading=17, alignment=0)
fn = ParagraphStyle("f", parent=st, fontSize=7.5, leading=9)
doc = BaseDocTemplate(out + "/report.pdf", pagesize=A4)
W, H = A4
m = 2*cm
title = Frame(m, H-m-2*cm, W-2*m, 2*cm, id="t")
colw = (W-2*m-1*cm)/2
left = Frame(m, m+2.5*cm, colw, H-2*m-4.5*cm, id="l")
right = Frame(m+colw+1*cm, m+2.5*cm, colw, H-2*m-4.5*cm, id="r")
foot = Frame(m, m, W-2*m, 2.5*cm, id="f")
doc.addPageTemplates([PageTemplate(frames=[title, left, right, foot])])
text = open("report.txt").read().split("\n\n")
story = [Paragraph("Quarterly operations report, Q1 2026", ParagraphStyle("T", parent=h, fontSize=18, leading=22)), FrameBreak()]
for para in text:
    if para.startswith("## "):
        story.append(Paragraph(para[3:], h))
    elif para.startswith("FN "):
        continue
    else:
        story.append(Paragraph(para.replace("[1]", "<super>1</super>").replace("[2]", "<super>2</super>"), st))
story.append(FrameBreak())
story.append(FrameBreak()) if False else None
for para in text:
    if para.startswith("FN "):
        story.append(Paragraph(para[3:].replace("[1]", "<super>1</super>").replace("[2]", "<super>2</super>"), fn))
doc.build(story)

# A long table that repeats its header row on every page.
random.seed(7)
names = ["Ana Jiménez", "Łukasz Wiśniewski", "Δημήτρης Παπαδόπουλος", "Анна Кузнецова", "François Lefèvre", "Jürgen Weiß", "Zoë Brontë", "Małgorzata Kowalska", "Σοφία Γεωργίου", "Иван Петров", "Søren Kierkegård", "Ørjan Østby"]
items = ["Consulting", "Licence renewal", "Hardware", "Travel expenses", "Training", "Support contract"]
rows = [["No.", "Date", "Employee", "Category", "Amount €"]]
for i in range(1, 96):
    rows.append(["%03d" % i, "2026-%02d-%02d" % (random.randint(1, 12), random.randint(1, 28)), random.choice(names), random.choice(items), "{:,.2f}".format(random.randint(1200, 980000)/100)])
t = Table(rows, repeatRows=1, colWidths=[1.5*cm, 2.5*cm, 6*cm, 4*cm, 3*cm])
t.setStyle(TableStyle([("FONT", (0, 0), (-1, -1), "DejaVu", 9), ("FONT", (0, 0), (-1, 0), "DejaVu-Bold", 9),
    ("ALIGN", (4, 0), (4, -1), "RIGHT"), ("BACKGROUND", (0, 0), (-1, 0), colors.lightgrey), ("LINEBELOW", (0, 0), (-1, -1), 0.25, colors.grey)]))
SimpleDocTemplate(out + "/ledger.pdf", pagesize=A4).build([Paragraph("Expense ledger, financial year 2026", h), Spacer(1, 0.4*cm), t])
