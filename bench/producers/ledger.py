# Writes ledger.html: 95 rows of expenses over several pages, a header row
# that repeats on every page (thead), names in Latin, Polish, Greek and
# Cyrillic script.
import random, sys

random.seed(7)
names = ["Ana Jiménez", "Łukasz Wiśniewski", "Δημήτρης Παπαδόπουλος", "Анна Кузнецова", "François Lefèvre", "Jürgen Weiß", "Zoë Brontë", "Małgorzata Kowalska", "Σοφία Γεωργίου", "Иван Петров", "Søren Kierkegård", "Ørjan Østby", "Çağla Yılmaz", "Nguyễn Văn An"]
items = ["Consulting", "Licence renewal", "Hardware", "Travel expenses", "Training", "Support contract"]
rows, total = [], 0
for i in range(1, 96):
    amt = random.randint(1200, 980000) / 100
    total += amt
    rows.append(f"<tr><td>{i:03d}</td><td>2026-{random.randint(1,12):02d}-{random.randint(1,28):02d}</td><td>{random.choice(names)}</td><td>{random.choice(items)}</td><td class='n'>{amt:,.2f}</td></tr>")
html = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Expense ledger FY2026</title>
<style>
body {{ font-family: "DejaVu Sans", "Liberation Sans", sans-serif; font-size: 9.5pt; margin: 1.5cm; }}
table {{ width: 100%; border-collapse: collapse; }}
thead {{ display: table-header-group; }}
tr {{ page-break-inside: avoid; }}
th {{ background: #ddd; text-align: left; padding: 3px; }}
td {{ padding: 2px 3px; border-bottom: 1px solid #ccc; }}
td.n, th.n {{ text-align: right; }}
</style></head>
<body>
<h1>Expense ledger, financial year 2026</h1>
<p>All amounts in euro (€). Entries are listed in the order they were booked.</p>
<table>
<thead><tr><th>No.</th><th>Date</th><th>Employee</th><th>Category</th><th class="n">Amount €</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
<p><strong>Total: € {total:,.2f}</strong></p>
</body></html>
"""
open(sys.argv[1], "w").write(html)
