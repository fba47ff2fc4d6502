"""Spreadsheets as pandas exports them (to_excel through openpyxl and
XlsxWriter): an index column, dates as datetimes, several sheets. Text
written for extractq's office sweep."""
import sys

import pandas as pd

out = sys.argv[1]

orders = pd.DataFrame({
    "Kunde": ["Åsa Lindqvist", "José Peñalver", "Željko Marić", "Søren Kierkegård"],
    "Bestellt": pd.to_datetime(["2026-02-03", "2026-02-11", "2026-02-19", "2026-02-27"]),
    "Betrag_EUR": [1249.5, 87.0, 15320.75, 640.1],
    "Rabatt": [0.05, 0.0, 0.12, 0.025],
    "Status": ["bezahlt", "offen", "gemahnt", "bezahlt"],
})
summary = orders.groupby("Status", as_index=True)["Betrag_EUR"].sum().to_frame("Summe_EUR")
for engine in ("openpyxl", "xlsxwriter"):
    with pd.ExcelWriter(f"{out}/pandas-{engine}-orders.xlsx", engine=engine, date_format="YYYY-MM-DD", datetime_format="YYYY-MM-DD") as xw:
        orders.to_excel(xw, sheet_name="Bestellungen", index=False)
        summary.to_excel(xw, sheet_name="Übersicht")
        orders.set_index(["Status", "Kunde"]).to_excel(xw, sheet_name="Gruppiert")
