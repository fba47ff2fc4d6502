#!/usr/bin/env python3
"""compare.py BEFORE.tsv AFTER.tsv: the per-format table of two
TestDocumentSurvey runs (EXTRACTQ_SURVEY_OUT) of the same list, as markdown,
then the files whose word recall moved by more than 5 points."""
import csv, statistics, sys
from collections import defaultdict


def load(p):
    with open(p, newline="") as f:
        return {r["path"]: r for r in csv.DictReader(f, delimiter="\t")}


def rec(r):
    return None if r["recall"] == "-" else float(r["recall"])


before, after = load(sys.argv[1]), load(sys.argv[2])
by = defaultdict(lambda: ([], []))
for p, b in before.items():
    a = after.get(p)
    if a is None:
        continue
    fmt = a["format"] if a["format"] != "?" else b["format"]
    by[fmt][0].append(b)
    by[fmt][1].append(a)
print("| format | files | errors | recall < 0.8 | median recall | median ms | slowest ms |")
print("|---|---:|---:|---:|---:|---:|---:|")
for fmt, (bs, as_) in sorted(by.items(), key=lambda kv: -len(kv[1][0])):
    def cells(rows):
        errs = sum(1 for r in rows if r["err"])
        recs = [rec(r) for r in rows if rec(r) is not None]
        low = sum(1 for x in recs if x < 0.8)
        med = statistics.median(recs) if recs else float("nan")
        ms = [float(r["ms"]) for r in rows]
        return errs, low, med, statistics.median(ms), max(ms)
    b, a = cells(bs), cells(as_)
    def arrow(x, y, f="%d"):
        fx, fy = ("-" if v != v else f % v for v in (x, y))  # NaN: no reference
        return fx if fx == fy else fx + " → " + fy
    print("| %s | %d | %s | %s | %s | %s | %s |" % (fmt, len(bs), arrow(b[0], a[0]), arrow(b[1], a[1]),
          arrow(b[2] * 100, a[2] * 100, "%.1f%%"), arrow(b[3], a[3], "%.0f"), arrow(b[4], a[4], "%.0f")))
print()
for p, b in sorted(before.items()):
    a = after.get(p)
    if a and rec(a) is not None and rec(b) is not None and abs(rec(a) - rec(b)) > 0.05:
        print("%.3f → %.3f  %s" % (rec(b), rec(a), p))
