#!/usr/bin/env python3
"""A topic table seal's CPU: seconds of server CPU per GiB of records turned into Parquet,
for one or two builds alternating in one run.

    .venv/bin/python bench/seal_cpu.py [--before OTHER_EDDY_BIN] [--mb 128] [--rounds 3]
                                        [--partitions 16]

Each round, for each build ($EDDY_BIN, then --before) and each payload, a fresh
`eddy serve` with the background tabler held back (EDDY_TABLE_SEAL_MB and
EDDY_TABLE_SEAL_AGE_SECS set past the run) takes --mb MiB of 1 KiB values into a topic
of --partitions partitions, then one REST load of the topic's table seals all of it.
The server's CPU seconds (/proc, every thread) and the wall time of that load are the
seal's. Two payloads:
  - `repeated`: rdkafka_performance's fixed value ($RDKAFKA_PERF, as bench/peers/run
    builds it), which Parquet's dictionary and zstd shrink to almost nothing, so the
    seal's own work (reading the log, building Arrow columns) shows;
  - `text`: every value different, base64 of random bytes (6 bits a character, like
    Kafka's ProducerPerformance's random letters), so compression, hashing and storing
    the data files show too.
"""

import argparse
import base64
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.catalog.rest import RestCatalog

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cdc import cpu_seconds  # noqa: E402
from iceberg import start  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
import compare  # noqa: E402


def produce_repeated(args, bootstrap, records):
    subprocess.run([args.rdkafka_perf, "-P", "-t", "backlog", "-b", bootstrap, "-s", "1024",
                    "-a", "-1", "-c", str(records), "-X", "linger.ms=5",
                    "-X", "sticky.partitioning.linger.ms=0"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=600)


def produce_text(args, bootstrap, records):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                  "batch.size": 1 << 20})
    for i in range(records):
        value = base64.b64encode(os.urandom(768))
        while True:
            try:
                p.produce("backlog", value, partition=i % args.partitions)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    assert p.flush(120) == 0


def one(args, binary, payload):
    """(wall seconds, CPU seconds, Parquet MB) of one seal of a fresh server's backlog."""
    os.environ.update(compare.SEALS_HELD_BACK)
    with tempfile.TemporaryDirectory(dir=args.scratch) as data:
        proc, ports = start(binary, data)
        try:
            bootstrap = f"127.0.0.1:{ports['kafka']}"
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic("backlog", args.partitions, 1)])["backlog"].result(30)
            records = args.mb * 1024
            (produce_repeated if payload == "repeated" else produce_text)(args, bootstrap, records)
            cat = RestCatalog("eddy", uri=f"http://127.0.0.1:{ports['http']}/iceberg",
                              credential="bench:benchsecret", warehouse="kafka")
            c0, t0 = cpu_seconds(proc.pid), time.monotonic()
            table = cat.load_table("kafka_topics.backlog")
            wall, cpu = time.monotonic() - t0, cpu_seconds(proc.pid) - c0
            files = list(table.scan().plan_files())
            rows = sum(f.file.record_count for f in files)
            assert rows == records, f"one load sealed {rows} of {records} records"
            return wall, cpu, sum(f.file.file_size_in_bytes for f in files) / 1e6
        finally:
            proc.terminate()
            proc.wait(60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="another eddy build, measured alternately")
    ap.add_argument("--mb", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--payloads", default="repeated,text")
    ap.add_argument("--scratch", default="/work/scratch-peers")
    args = ap.parse_args()
    binary = compare.eddy_under_test(args)
    builds = [("this build", binary)] + ([("before", args.before)] if args.before else [])
    runs = {}
    for r in range(args.rounds):
        for payload in args.payloads.split(","):
            for name, build in builds[:: 1 if r % 2 == 0 else -1]:
                wall, cpu, parquet = one(args, build, payload)
                runs.setdefault((payload, name), []).append((wall, cpu, parquet))
                print(f"round {r + 1} {payload} {name}: {wall:.2f} s, {cpu:.2f} CPU s "
                      f"({cpu * 1024 / args.mb:.2f} s/GiB), {parquet:.1f} MB Parquet", flush=True)
    print(f"\n{args.mb} MiB of 1 KiB values, {args.partitions} partitions, one load; medians of "
          f"{args.rounds}")
    print("| payload | build | seal s | CPU s per GiB (each run) | Parquet MB |")
    print("|---|---|---|---|---|")
    for (payload, name), xs in runs.items():
        per_gib = [c * 1024 / args.mb for _, c, _ in xs]
        print(f"| {payload} | {name} | {statistics.median(w for w, _, _ in xs):.2f} | "
              f"{statistics.median(per_gib):.2f} ({', '.join(f'{v:.2f}' for v in per_gib)}) | "
              f"{statistics.median(p for _, _, p in xs):.1f} |")


if __name__ == "__main__":
    main()
