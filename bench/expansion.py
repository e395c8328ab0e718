#!/usr/bin/env python3
"""Blob expansion cost, in one run:

1. **Seal rate.** Two one-partition topics get the same SIZE_MB (default 256) of
   Debezium-like JSON change events (~460 B, produced by librdkafka with lz4); one has
   an expansion (the documents' envelope, flattened). With the background tabler off,
   the clock runs over one load of each table through the REST catalog, which seals it:
   the plain topic's table, then the expansion's target (which seals the second topic's
   table and its expansion in the same snapshot transactions). Reported: MB/s of record
   values for each, Eddy's CPU seconds, and the expansion's own share.
2. **Produce with an expansion attached.** With the tabler on (defaults: 30 s or 64
   MiB), ROUNDS (default 3) of SECONDS (default 15) each producing as fast as one
   librdkafka producer goes, alternating a topic without and one with an expansion:
   MB/s of each, and their ratio.

    .venv/bin/python bench/expansion.py BIN

BIN is an `eddy` release build, on a fresh data dir under $SCRATCH (default
/tmp/eddy-bench). No peer run: no Kafka-compatible broker that parses JSON into table
rows installs here (the documents' product is the only one, and it is not available).
"""

import json
import os
import random
import shutil
import sys
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from conftest import Eddy, free_port  # noqa: E402
from test_expansion import ENVELOPE, envelope  # noqa: E402
from test_iceberg import catalog, token  # noqa: E402

SCRATCH = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))
SIZE_MB = int(os.environ.get("SIZE_MB", "256"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SECONDS = float(os.environ.get("SECONDS", "15"))


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def values(n=2000):
    rnd = random.Random(7)
    out = []
    for i in range(n):
        c = {"id": i, "email": f"user{rnd.randrange(10**6)}@example.com",
             "balance": f"{rnd.randrange(10**6) / 100:.2f}"}
        out.append(envelope("u", c, dict(c, balance="0.00"), 1_764_000_000_000 + i))
    return out


def attach(eddy, topic, target):
    tok = token(eddy)[1]["access_token"]
    body = json.dumps({"target": target, "schema": ENVELOPE, "flatten_path": True}).encode()
    req = urllib.request.Request(f"{eddy.http_url}/admin/v1/topics/{topic}/expansion", data=body,
                                 method="PUT", headers={"Authorization": f"Bearer {tok}",
                                                        "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 200


def fill(eddy, topic, vals, size=None, count=None):
    """Produces `vals` round robin to partition 0 until `size` bytes or `count` records
    are sent; returns (bytes, records)."""
    p = Producer({"bootstrap.servers": eddy.bootstrap, "compression.type": "lz4",
                  "linger.ms": 20, "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})
    sent = 0
    i = 0
    while (size is None or sent < size) and (count is None or i < count):
        v = vals[i % len(vals)]
        while True:
            try:
                p.produce(topic, value=v, partition=0)
                break
            except BufferError:
                p.poll(0.05)
        sent += len(v)
        i += 1
    assert p.flush(120) == 0
    return sent, i


def produce_for(eddy, topic, vals, seconds):
    p = Producer({"bootstrap.servers": eddy.bootstrap, "compression.type": "lz4",
                  "linger.ms": 20, "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})
    acked = [0]

    def done(err, msg):
        if err is None:
            acked[0] += len(msg.value())

    end = time.time() + seconds
    i = 0
    start = time.time()
    while time.time() < end:
        try:
            p.produce(topic, value=vals[i % len(vals)], partition=i % 2, on_delivery=done)
            i += 1
        except BufferError:
            p.poll(0.05)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(120)
    return acked[0] / (time.time() - start)


def timed_load(eddy, ident):
    c0, t0 = cpu_seconds(eddy.proc.pid), time.time()
    t = catalog(eddy).load_table(ident)
    return time.time() - t0, cpu_seconds(eddy.proc.pid) - c0, t


def main(binary):
    os.environ["EDDY_BIN"] = binary
    vals = values()
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    eddy = Eddy(data_dir=SCRATCH / "seal", s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port(),
                extra_args=["--table-seal-age-secs", "86400", "--table-seal-mb", "1048576"]).start()
    try:
        a = AdminClient({"bootstrap.servers": eddy.bootstrap})
        for t in ("plain", "expanded"):
            a.create_topics([NewTopic(t, 1, 1, config={"retention.ms": "-1"})])[t].result(30)
        attach(eddy, "expanded", "bench.rows")
        size = SIZE_MB << 20
        bytes_plain, n = fill(eddy, "plain", vals, size)
        bytes_exp, _ = fill(eddy, "expanded", vals, size)
        plain_s, plain_cpu, _ = timed_load(eddy, ("kafka_topics", "plain"))
        exp_s, exp_cpu, t = timed_load(eddy, ("bench", "rows"))
        rows = t.scan(selected_fields=("_offset",)).to_arrow().num_rows
        assert rows == n, (rows, n)
        print(f"seal: {n} records, {bytes_plain / 1e6:.0f} MB of JSON values per topic")
        print(f"  topic table only:        {plain_s:6.2f} s  {bytes_plain / plain_s / 1e6:7.1f} MB/s  cpu {plain_cpu:6.2f} s")
        print(f"  topic table + expansion: {exp_s:6.2f} s  {bytes_exp / exp_s / 1e6:7.1f} MB/s  cpu {exp_cpu:6.2f} s")
        extra = max(exp_cpu - plain_cpu, 1e-9)
        print(f"  the expansion's share: {extra:.2f} cpu s, {bytes_exp / extra / 1e6:.1f} MB/s of cpu "
              f"({exp_s / plain_s:.2f}x the plain seal's time)")
    finally:
        eddy.stop()

    eddy = Eddy(data_dir=SCRATCH / "produce", s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port()).start()
    try:
        a = AdminClient({"bootstrap.servers": eddy.bootstrap})
        for t in ("p_plain", "p_expanded"):
            a.create_topics([NewTopic(t, 2, 1, config={"retention.ms": "-1"})])[t].result(30)
        attach(eddy, "p_expanded", "bench.produced")
        rates = {"p_plain": [], "p_expanded": []}
        for _ in range(ROUNDS):
            for t in rates:
                rates[t].append(produce_for(eddy, t, vals, SECONDS))
        for t, r in rates.items():
            print(f"produce {t}: " + ", ".join(f"{x / 1e6:.1f}" for x in r) + " MB/s")
        plain = sum(rates["p_plain"]) / ROUNDS
        exp = sum(rates["p_expanded"]) / ROUNDS
        print(f"produce with an expansion / without: {exp / plain:.2f} ({exp / 1e6:.1f} / {plain / 1e6:.1f} MB/s)")
    finally:
        eddy.stop()


if __name__ == "__main__":
    main(sys.argv[1])
