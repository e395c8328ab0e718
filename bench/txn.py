#!/usr/bin/env python3
"""Transactions against one Kafka-compatible broker at BOOT, one librdkafka producer:

1. **Throughput.** ROUNDS (default 3) pairs of DUR seconds (default 6) of 1 KiB values to
   a 3-partition topic: one from an idempotent producer, then one from a transactional
   producer committing every TXN_MSGS (default 1000) values; MB/s of values for each and
   each pair's ratio. Pairs, not one long run each: on this VM a disk's write rate falls
   by 4-5x a few GB into a run (page-cache write-back), which would be charged to
   whichever mode ran second.
2. **Commit latency.** COMMITS (default 300) transactions of 10 values over the 3
   partitions: the time `commit_transaction()` takes once the values are acknowledged
   (flushed first), which is one EndTxn round trip: p50 and p99.

    .venv/bin/python bench/txn.py BOOT     (bench/txn.sh runs it against Eddy and Tansu)

Prints one JSON object.
"""

import json
import os
import sys
import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

DUR = float(os.environ.get("DUR", "6"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
TXN_MSGS = int(os.environ.get("TXN_MSGS", "1000"))
COMMITS = int(os.environ.get("COMMITS", "300"))
VALUE = b"v" * 1024


def topic(boot):
    name = f"txbench-{uuid.uuid4().hex[:8]}"
    a = AdminClient({"bootstrap.servers": boot})
    a.create_topics([NewTopic(name, 3, 1)])[name].result(timeout=30)
    return name


def run(p, name, txn):
    """Values per second produced for DUR seconds (whole transactions when `txn`)."""
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < DUR:
        if txn:
            p.begin_transaction()
        for i in range(TXN_MSGS):
            while True:
                try:
                    p.produce(name, VALUE, partition=i % 3)
                    break
                except BufferError:
                    p.poll(0.01)
        if txn:
            p.commit_transaction(60)
        n += TXN_MSGS
    assert p.flush(60) == 0
    return n / (time.perf_counter() - start)


def main():
    boot = sys.argv[1]
    base = {"bootstrap.servers": boot, "linger.ms": 5, "batch.size": 1 << 20,
            "compression.type": "none"}
    out = {"plain_mb_s": [], "txn_mb_s": [], "ratio": []}
    name = topic(boot)
    plain = Producer({**base, "enable.idempotence": True})
    txp = Producer({**base, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}"})
    txp.init_transactions(30)
    for _ in range(ROUNDS):
        out["plain_mb_s"].append(run(plain, name, False) * len(VALUE) / 1e6)
        out["txn_mb_s"].append(run(txp, name, True) * len(VALUE) / 1e6)
        out["ratio"].append(out["txn_mb_s"][-1] / out["plain_mb_s"][-1])
    lat = []
    for _ in range(COMMITS):
        txp.begin_transaction()
        for i in range(10):
            txp.produce(name, VALUE, partition=i % 3)
        assert txp.flush(30) == 0
        t0 = time.perf_counter()
        txp.commit_transaction(30)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    out["commit_p50_ms"] = lat[len(lat) // 2] * 1e3
    out["commit_p99_ms"] = lat[int(len(lat) * 0.99)] * 1e3
    print(json.dumps(out))


if __name__ == "__main__":
    main()
