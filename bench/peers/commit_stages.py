#!/usr/bin/env python3
"""Where a produce's time goes inside Eddy: runs Kafka's ProducerPerformance (acks=all)
against a fresh Eddy from $EDDY_BIN, and from $EDDY_BASE_BIN when set (alternating, the
order reversed every other round), then reads the catalog's group-commit metrics: commits,
transactions per commit, the mean commit and its stages (apply, log, store), and the mean
time a transaction waited from submission to its answer.

    EDDY_BIN=... [EDDY_BASE_BIN=...] .venv/bin/python bench/peers/commit_stages.py \\
        [--size 16384] [--partitions 1] [--records 16384] [--rounds 2]

It needs what bench/peers/run sets up (the Kafka tools: scripts/kafka install).
"""

import argparse
import os
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import java_produce, new_eddy  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

METRIC = re.compile(r"^eddy_catalog_(group_size|group_commits|commit_stage_seconds|commit_seconds"
                    r"|transaction_seconds)(\S*)\s+([\d.e+-]+)$")


def catalog_metrics(http_url):
    text = urllib.request.urlopen(http_url + "/metrics", timeout=10).read().decode()
    return {m.group(1) + m.group(2): float(m.group(3)) for m in map(METRIC.match, text.splitlines()) if m}


def run(binary, args):
    os.environ["EDDY_BIN"] = binary
    with tempfile.TemporaryDirectory(dir="/work") as d:
        eddy = new_eddy(Path(d)).start()
        try:
            admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
            admin.create_topics([NewTopic("t", args.partitions, 1)])["t"].result(30)
            res = java_produce(SimpleNamespace(bootstrap=eddy.bootstrap), "t", args.size, args.records, -1,
                               Path(d) / "producer.txt")
            m = catalog_metrics(eddy.http_url)
        finally:
            eddy.stop()
    if res is None:
        return "ProducerPerformance did not finish"
    g = m["group_commits_total"]
    stage = {s: m[f'commit_stage_seconds_sum{{stage="{s}"}}'] / g * 1e3 for s in ("apply", "log", "store")}
    txns = m["transaction_seconds_count"]
    return (f"{res['MBps']:.1f} MB/s, {g:.0f} commits, {m['group_size_sum'] / g:.2f} txns/commit, "
            f"commit {m['commit_seconds_sum'] / g * 1e3:.2f} ms (apply {stage['apply']:.2f}, "
            f"log {stage['log']:.2f}, store {stage['store']:.2f}), "
            f"txn wait {m['transaction_seconds_sum'] / txns * 1e3:.2f} ms over {txns:.0f} txns")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--records", type=int, default=16384)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    systems = {"eddy": os.environ["EDDY_BIN"]}
    if os.environ.get("EDDY_BASE_BIN"):
        systems["eddy-base"] = os.environ["EDDY_BASE_BIN"]
    for r in range(args.rounds):
        names = list(systems) if r % 2 == 0 else list(reversed(systems))
        for name in names:
            started = time.strftime("%H:%M:%S", time.gmtime())
            print(f"round {r + 1} {name} ({started} UTC): {run(systems[name], args)}", flush=True)


if __name__ == "__main__":
    main()
