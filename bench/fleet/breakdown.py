#!/usr/bin/env python3
"""Per-document CPU breakdown of a worker CPU profile (bench/fleet -profile-dir).

    go tool pprof -traces DIR/worker/cpu.pprof | python3 bench/fleet/breakdown.py DOCS

Each sample goes to the first category whose pattern appears in its stack
(searched from the leaf up, so an audit write inside the engine's call
counts as audit); the figures are the profile's CPU time divided by DOCS.
"""
import re
import sys

# (category, regular expression over a frame), first match from the leaf wins.
CATEGORIES = [
    ("audit (Postgres writer)", r"internal/audit\.|jackc/pgx"),
    ("metrics", r"internal/metrics\.|prometheus"),
    ("logging", r"log/slog"),
    ("engine: provider HTTP", r"internal/providers\.|net/http\.|net/textproto"),
    ("engine: validate, repair, prompt", r"internal/retry\.|internal/jsonx\.|extractq/schema\.|santhosh-tekuri|extractq\.\(\*Extractor\)|internal/chunk\."),
    ("NATS (pull, ack, envelope)", r"nats-io/nats|internal/jobs\."),
    ("rate limit, circuits, slots", r"internal/ratelimit\.|worker\.\(\*callSlots\)|worker\.\(\*slotted\)"),
    ("GC", r"runtime\.gcBgMarkWorker|runtime\.gcAssist|runtime\.bgsweep|runtime\.bgscavenge"),
    ("worker (handle, keep-alive, caches)", r"internal/worker\."),
]

def main():
    docs = float(sys.argv[1])
    totals, total = {}, 0.0
    stack, value = [], None
    def flush():
        nonlocal total
        if value is None:
            return
        total += value
        cat = "rest (scheduler, syscalls, timers)"
        for frame in stack:
            hit = next((name for name, rx in CATEGORIES if re.search(rx, frame)), None)
            if hit:
                cat = hit
                break
        totals[cat] = totals.get(cat, 0) + value
    unit = 1.0
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line.startswith("-----------"):
            flush()
            stack, value = [], None
            continue
        m = re.match(r"^\s+([0-9.]+)(ms|s|us|µs|ns)\s+(\S.*)$", line)
        if m:
            flush()
            v, u = float(m.group(1)), m.group(2)
            value = v * {"s": 1e6, "ms": 1e3, "us": 1, "µs": 1, "ns": 1e-3}[u]
            stack = [m.group(3)]
            continue
        if value is not None and line.strip():
            stack.append(line.strip())
    flush()
    print(f"{'share':>6} {'µs/doc':>7}  category")
    order = [n for n, _ in CATEGORIES] + ["rest (scheduler, syscalls, timers)"]
    for name in order:
        v = totals.get(name, 0)
        print(f"{100*v/total:5.1f}% {v/docs:7.1f}  {name}")
    print(f"{100:5.1f}% {total/docs:7.1f}  total sampled (profile)")

if __name__ == "__main__":
    main()
