"""Word files as python-docx writes them (Word's default template): styles,
a table with a header row, a merged cell, headers and footers, numbered and
bulleted lists. Text written for extractq's office sweep."""
import sys

from docx import Document
from docx.enum.section import WD_SECTION

out = sys.argv[1]

# invoice letter: header and footer, a table with a header row and a merged
# total row.
d = Document()
sec = d.sections[0]
sec.header.paragraphs[0].text = "Müller & Söhne GmbH · Königsallee 12 · 40212 Düsseldorf"
sec.footer.paragraphs[0].text = "Geschäftsführer: Jörg Brückner · USt-IdNr. DE123456789"
d.add_heading("Rechnung 2026-0417", level=1)
d.add_paragraph("Sehr geehrte Frau Dvořáková,")
d.add_paragraph("für die im März erbrachten Leistungen berechnen wir Ihnen:")
t = d.add_table(rows=1, cols=4)
t.style = "Table Grid"
for c, h in zip(t.rows[0].cells, ["Pos.", "Leistung", "Stunden", "Betrag"]):
    c.text = h
for row in [("1", "Analyse Lagerprozesse Brno", "12", "1.746,00 €"), ("2", "Workshop Ústí nad Labem", "6", "873,00 €"), ("3", "Abschlussbericht", "4", "582,00 €")]:
    cells = t.add_row().cells
    for c, v in zip(cells, row):
        c.text = v
total = t.add_row().cells
merged = total[0].merge(total[2])
merged.text = "Summe netto"
total[3].text = "3.201,00 €"
d.add_paragraph("Zahlbar bis 15.04.2026 ohne Abzug; bei Zahlung binnen 8 Tagen 2 % Skonto.")
d.add_paragraph("Mit freundlichen Grüßen")
d.save(f"{out}/python-docx-invoice.docx")

# report: numbered and bulleted lists, a quote, a second section with its own
# header, a table without borders.
d = Document()
d.sections[0].header.paragraphs[0].text = "Prüfbericht Wärmepumpe – vertraulich"
d.add_heading("Prüfbericht Anlage Nord", level=0)
d.add_heading("Befunde", level=1)
for s in ["Verdampfer vereist bei −7 °C Außentemperatur", "Kältemittelfüllung 2,4 kg statt 2,6 kg", "Steuerung meldet Fehler E-204"]:
    d.add_paragraph(s, style="List Number")
d.add_heading("Empfehlungen", level=1)
for s in ["Abtauzyklus auf 45 Minuten verkürzen", "Füllmenge korrigieren", "Firmware 3.1.7 einspielen"]:
    d.add_paragraph(s, style="List Bullet")
d.add_paragraph("Die Anlage ist bis zur Nachprüfung eingeschränkt betriebsbereit.", style="Intense Quote")
s2 = d.add_section(WD_SECTION.NEW_PAGE)
s2.header.is_linked_to_previous = False
s2.header.paragraphs[0].text = "Anhang A – Messwerte"
s2.footer.paragraphs[0].text = "Seite Anhang · Prüfer: Ólafur Þórsson"
d.add_heading("Messwerte", level=1)
t = d.add_table(rows=1, cols=3)
for c, h in zip(t.rows[0].cells, ["Messpunkt", "Soll", "Ist"]):
    c.text = h
for row in [("Vorlauf", "35 °C", "33,8 °C"), ("Rücklauf", "30 °C", "29,1 °C"), ("COP", "4,2", "3,6")]:
    for c, v in zip(t.add_row().cells, row):
        c.text = v
d.save(f"{out}/python-docx-report.docx")
