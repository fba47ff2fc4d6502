"""Spreadsheets as openpyxl writes them: shared strings, formulas without
cached values, dates as serials with number formats, merged cells, a hidden
sheet. Text written for extractq's office sweep."""
import datetime
import sys

from openpyxl import Workbook
from openpyxl.styles import Font

out = sys.argv[1]

# invoice: merged title, € amounts, a percentage, a formula total.
wb = Workbook()
ws = wb.active
ws.title = "Rechnung"
ws["A1"] = "Rechnung Nr. 2026-0417 für Müller & Söhne GmbH"
ws.merge_cells("A1:E1")
ws["A1"].font = Font(bold=True)
ws.append(["Datum", datetime.date(2026, 3, 15)])
ws["B2"].number_format = "dd.mm.yyyy"
ws.append([])
ws.append(["Position", "Beschreibung", "Menge", "Einzelpreis", "Betrag"])
items = [("Beratung Zürich", 12, 145.5), ("Übersetzung Straße", 3, 89.9), ("Reisekosten Köln", 1, 412.25)]
for i, (desc, qty, price) in enumerate(items, start=5):
    ws.append([i - 4, desc, qty, price, f"=C{i}*D{i}"])
    ws[f"D{i}"].number_format = '#,##0.00 "€"'
    ws[f"E{i}"].number_format = '#,##0.00 "€"'
ws.append(["", "Zwischensumme", "", "", "=SUM(E5:E7)"])
ws["E8"].number_format = '#,##0.00 "€"'
ws.append(["", "Rabatt", "", "", 0.075])
ws["E9"].number_format = "0.0%"
ws.append(["", "Gesamtbetrag", "", "", "=E8*(1-E9)"])
ws["E10"].number_format = '#,##0.00 "€"'
notes = wb.create_sheet("Zahlungsbedingungen")
notes.append(["Zahlbar innerhalb von 30 Tagen ohne Abzug."])
notes.append(["Bankverbindung", "IBAN DE89 3704 0044 0532 0130 00"])
hidden = wb.create_sheet("Intern")
hidden.append(["Kalkulationsnotiz", "Marge Ångström-Projekt"])
hidden.sheet_state = "hidden"
wb.save(f"{out}/openpyxl-invoice.xlsx")

# ledger: many dated rows, a running balance by formula, cached values absent.
wb = Workbook()
ws = wb.active
ws.title = "Kassenbuch"
ws.append(["Buchungsdatum", "Beleg", "Text", "Einnahme", "Ausgabe", "Saldo"])
entries = [
    (datetime.date(2026, 1, 2), "B-001", "Anfangsbestand Kasse", 1500, 0),
    (datetime.date(2026, 1, 5), "B-002", "Büromaterial Papeterie Genève", 0, 42.8),
    (datetime.date(2026, 1, 9), "B-003", "Barverkauf Café Ørsted", 318.4, 0),
    (datetime.date(2026, 1, 14), "B-004", "Porto Łódź Versand", 0, 17.35),
    (datetime.date(2026, 1, 21), "B-005", "Tankquittung Málaga", 0, 96.1),
    (datetime.datetime(2026, 1, 30, 16, 45), "B-006", "Kassensturz Monatsende", 0, 0),
]
for i, (d, doc, text, inc, exp) in enumerate(entries, start=2):
    prev = "0" if i == 2 else f"F{i - 1}"
    ws.append([d, doc, text, inc, exp, f"={prev}+D{i}-E{i}"])
    ws[f"A{i}"].number_format = "yyyy-mm-dd h:mm" if isinstance(d, datetime.datetime) else "d mmm yyyy"
    for c in "DEF":
        ws[f"{c}{i}"].number_format = "#,##0.00"
ws.append([])
ws.append(["Kassenprüfer", "Ines Ibáñez"])
wb.save(f"{out}/openpyxl-ledger.xlsx")
