"""Spreadsheets as XlsxWriter writes them: formulas with cached value 0
unless given one, dates as serials, merged ranges, inline strings in
constant_memory mode. Text written for extractq's office sweep."""
import datetime
import sys

import xlsxwriter

out = sys.argv[1]

for name, opts in (("xlsxwriter-report.xlsx", {}), ("xlsxwriter-report-constmem.xlsx", {"constant_memory": True})):
    wb = xlsxwriter.Workbook(f"{out}/{name}", opts)
    bold = wb.add_format({"bold": True})
    title = wb.add_format({"bold": True, "align": "center"})
    eur = wb.add_format({"num_format": "#,##0.00 [$€-407]"})
    pct = wb.add_format({"num_format": "0.00%"})
    date = wb.add_format({"num_format": "dd/mm/yyyy"})
    ws = wb.add_worksheet("Quartalsbericht")
    ws.merge_range("A1:D1", "Quartalsbericht Q1 2026 – Région Île-de-France", title)
    ws.write_row(1, 0, ["Filiale", "Umsatz", "Anteil", "Stichtag"], bold)
    rows = [("Paris Opéra", 184250.75, 0.412), ("Versailles Château", 96310.2, 0.215), ("Créteil Échat", 167042.0, 0.373)]
    for r, (shop, rev, share) in enumerate(rows, start=2):
        ws.write_string(r, 0, shop)
        ws.write_number(r, 1, rev, eur)
        ws.write_number(r, 2, share, pct)
        ws.write_datetime(r, 3, datetime.datetime(2026, 3, 31), date)
    # One total with its value given, one left to the default cached 0.
    ws.write_formula(5, 0, '="Summe"')
    ws.write_formula(5, 1, "=SUM(B3:B5)", eur, 447602.95)
    ws.write_formula(5, 2, "=SUM(C3:C5)", pct)
    ws.write_string(7, 0, "Erstellt von Zoë Çelik, Controlling")
    ws2 = wb.add_worksheet("Kennzahlen")
    ws2.write_row(0, 0, ["Kennzahl", "Wert"], bold)
    ws2.write_row(1, 0, ["Mitarbeitende", 57])
    ws2.write(2, 0, "Kundenzufriedenheit")
    ws2.write_number(2, 1, 0.918, pct)
    ws2.write(3, 0, "Zielerreichung")
    ws2.write_boolean(3, 1, True)
    ws2.write(4, 0, "Nächste Prüfung")
    ws2.write_datetime(4, 1, datetime.datetime(2026, 6, 30, 9, 30), wb.add_format({"num_format": "yyyy-mm-dd hh:mm"}))
    wb.close()
