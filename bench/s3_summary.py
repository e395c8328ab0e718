"""Summarises bench/s3.sh's raw.tsv: MB/s (objects/s) per system from the mean time over
the runs, and Eddy / best peer both from the means and from each system's best run (on a
shared machine the best run is the one least slowed by other load); then, when the raw
file has them (runs since 2026-12-01), the CPU the server and the client used per MB
moved, which shows whether a row is bound by the server or by the client.

    python3 bench/s3_summary.py RAW.tsv "eddy eddy-base seaweedfs ..."
"""

import csv
import sys
from collections import defaultdict

raw, systems = sys.argv[1], sys.argv[2].split()
peers = [s for s in systems if not s.startswith("eddy")]
secs = defaultdict(list)  # (row, system) -> [seconds]
cpu = defaultdict(list)  # (row, system) -> [(server CPU s, client CPU s)]
rows = []
for r in csv.DictReader(open(raw), delimiter="\t"):
    k = (r["tool"], r["op"], int(r["size"]), int(r["conc"]), int(r["count"]))
    if k not in rows:
        rows.append(k)
    if r["seconds"] != "FAIL":
        secs[(k, r["system"])].append(float(r["seconds"]))
        if r.get("server_cpu", "-") not in ("-", None):
            cpu[(k, r["system"])].append((float(r["server_cpu"]), float(r["client_cpu"])))


def human(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def ratio(mbps):
    best = max((mbps[p] for p in peers if p in mbps), default=None)
    return f"{mbps['eddy'] / best:.2f}x" if best and "eddy" in mbps else "-"


def durable(mbps):
    d = mbps.get("seaweedfs-fsync")
    return f"{mbps['eddy'] / d:.2f}x" if d and "eddy" in mbps else "-"


head = ["client", "op", "size", "clients"] + [f"{s} MB/s (obj/s)" for s in systems]
head += ["eddy / best peer, means", "eddy / best peer, best runs"]
if "seaweedfs-fsync" in systems:
    head += ["eddy / seaweedfs-fsync (the durable peer), means"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for k in rows:
    tool, op, size, conc, n = k
    cells, mean_mbps, best_mbps = [], {}, {}
    for s in systems:
        t = secs.get((k, s))
        if not t:
            cells.append("fail")
            continue
        mean = sum(t) / len(t)
        mean_mbps[s] = n * size / 1e6 / mean
        best_mbps[s] = n * size / 1e6 / min(t)
        cells.append(f"{mean_mbps[s]:.1f} ({n / mean:.0f})")
    print(f"| {tool} | {op} | {human(size)} x {n} | {conc} | " + " | ".join(cells)
          + f" | {ratio(mean_mbps)} | {ratio(best_mbps)} |"
          + (f" {durable(mean_mbps)} |" if "seaweedfs-fsync" in systems else ""))
print()
print("MB/s = 10^6 bytes per second of the client command's wall time, mean over",
      max((len(v) for v in secs.values()), default=0), "runs; raw seconds per run in", raw)

if cpu:
    print()
    print("CPU per MB moved, server / client (ms of CPU per 10^6 bytes, means over the runs):")
    print()
    head = ["client", "op", "size", "clients"] + systems
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for k in rows:
        tool, op, size, conc, n = k
        mb = n * size / 1e6
        cells = []
        for s in systems:
            v = cpu.get((k, s))
            if not v:
                cells.append("-")
                continue
            srv = sum(x[0] for x in v) / len(v) * 1e3 / mb
            cli = sum(x[1] for x in v) / len(v) * 1e3 / mb
            cells.append(f"{srv:.2f} / {cli:.2f}")
        print(f"| {tool} | {op} | {human(size)} x {n} | {conc} | " + " | ".join(cells) + " |")
