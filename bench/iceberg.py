#!/usr/bin/env python3
"""Topic tables: ack-to-visible latency under a steady produce load, Parquet write
(seal) throughput, and table scan throughput through PyIceberg.

    .venv/bin/python bench/iceberg.py [--eddy-bin PATH] [--rate-mb 10] [--seconds 30]
                                      [--backlog-mb 48] [--record-bytes 1024]

Starts its own `eddy serve` on free loopback ports with a fresh data dir, then:
  1. ack-to-visible: a background producer sends `record-bytes` records at `rate-mb`
     MB/s to a 4-partition topic (paced per 10 ms, acks=all, linger.ms=5) for
     `seconds` s; meanwhile a probe produces one record, waits for its ack, then loads
     the table through the REST catalog (which seals the tail) and scans for exactly that
     (partition, offset) until it is seen; latency = seen - ack. p50/p99/max over probes.
  2. Parquet write: `backlog-mb` MB produced to a fresh 4-partition topic (below the
     background tabler's 64 MiB threshold, within its 30 s age), then one load_table
     seals it all; MB/s = record bytes (keys+values) / seal time.
  3. Scan: tbl.scan().to_arrow() of that table, 3 runs; MB/s of record bytes and of
     Parquet bytes read.
"""

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import And, EqualTo

ROOT = Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(bin_path, data):
    ports = {k: free_port() for k in ("s3", "kafka", "http")}
    env = dict(os.environ, EDDY_LOG="warn", EDDY_ACCESS_KEY="bench", EDDY_SECRET_KEY="benchsecret")
    p = subprocess.Popen([
        bin_path, "serve", "--data-dir", str(data),
        "--s3-listen", f"127.0.0.1:{ports['s3']}",
        "--kafka-listen", f"127.0.0.1:{ports['kafka']}",
        "--http-listen", f"127.0.0.1:{ports['http']}",
    ], stdout=subprocess.PIPE, env=env, text=True)
    for line in p.stdout:
        if line.startswith("eddy ready:"):
            return p, ports
    raise RuntimeError("eddy did not start")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eddy-bin", default=os.environ.get("EDDY_BIN", str(ROOT / "target/release/eddy")))
    ap.add_argument("--rate-mb", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--backlog-mb", type=float, default=48.0)
    ap.add_argument("--record-bytes", type=int, default=1024)
    a = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="eddy-iceberg-bench-"))
    proc, ports = start(a.eddy_bin, tmp / "data")
    boot = f"127.0.0.1:{ports['kafka']}"
    try:
        admin = AdminClient({"bootstrap.servers": boot})
        for t in ("steady", "backlog"):
            admin.create_topics([NewTopic(t, 4, 1)])[t].result(timeout=30)
        cat = RestCatalog("eddy", uri=f"http://127.0.0.1:{ports['http']}/iceberg",
                          credential="bench:benchsecret", warehouse="kafka")

        # 1. ack-to-visible under a steady load. Values are random (incompressible), from
        # a pool far larger than a Parquet dictionary page would hold.
        pool = [os.urandom(a.record_bytes) for _ in range(4096)]
        stop = threading.Event()
        sent = [0]

        def load():
            p = Producer({"bootstrap.servers": boot, "linger.ms": 5, "acks": "all",
                          "queue.buffering.max.kbytes": 1 << 20})
            per_tick = a.rate_mb * 1e6 / a.record_bytes / 100
            t0 = time.monotonic()
            n = 0
            while not stop.is_set():
                due = int((time.monotonic() - t0) * 100 * per_tick)
                while n < due:
                    try:
                        p.produce("steady", value=pool[n % len(pool)])
                        n += 1
                    except BufferError:
                        p.poll(0.01)
                p.poll(0)
                time.sleep(0.01)
            p.flush(60)
            sent[0] = n

        bg = threading.Thread(target=load)
        bg.start()
        probe = Producer({"bootstrap.servers": boot, "linger.ms": 0, "acks": "all"})
        lat = []
        t_end = time.monotonic() + a.seconds
        time.sleep(2)
        while time.monotonic() < t_end:
            acked = []
            probe.produce("steady", value=b"probe", partition=len(lat) % 4,
                          on_delivery=lambda e, m: acked.append((e, m, time.monotonic())))
            probe.flush(30)
            err, msg, t_ack = acked[0]
            assert err is None, err
            while True:
                tbl = cat.load_table("kafka_topics.steady")
                rows = tbl.scan(row_filter=And(EqualTo("partition", msg.partition()),
                                               EqualTo("offset", msg.offset())),
                                selected_fields=("offset",)).to_arrow()
                if rows.num_rows == 1:
                    break
            lat.append(time.monotonic() - t_ack)
        stop.set()
        bg.join()
        achieved = sent[0] * a.record_bytes / 1e6 / (a.seconds)
        print(f"ack-to-visible at {a.rate_mb:g} MB/s offered ({achieved:.1f} MB/s sent), "
              f"{len(lat)} probes: p50 {pct(lat, 50)*1000:.0f} ms, p99 {pct(lat, 99)*1000:.0f} ms, "
              f"max {max(lat)*1000:.0f} ms")

        # 2. Parquet write: seal a backlog in one load.
        n = int(a.backlog_mb * 1e6 / a.record_bytes)
        p = Producer({"bootstrap.servers": boot, "linger.ms": 20, "acks": "all",
                      "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})
        t0 = time.monotonic()
        for i in range(n):
            while True:
                try:
                    p.produce("backlog", key=str(i).encode(), value=os.urandom(a.record_bytes),
                              partition=i % 4)
                    break
                except BufferError:
                    p.poll(0.05)
        p.flush(120)
        produce_s = time.monotonic() - t0
        record_mb = sum(len(str(i)) + a.record_bytes for i in range(n)) / 1e6
        t0 = time.monotonic()
        tbl = cat.load_table("kafka_topics.backlog")
        seal_s = time.monotonic() - t0
        files = list(tbl.scan().plan_files())
        parquet_mb = sum(f.file.file_size_in_bytes for f in files) / 1e6
        print(f"parquet write: {record_mb:.1f} MB of records ({n} records, produced in {produce_s:.1f} s) "
              f"sealed into {len(files)} files ({parquet_mb:.1f} MB Parquet) in {seal_s:.2f} s: "
              f"{record_mb / seal_s:.1f} MB/s")

        # 3. Scan through PyIceberg.
        times = []
        for _ in range(3):
            t0 = time.monotonic()
            t = tbl.scan().to_arrow()
            times.append(time.monotonic() - t0)
            assert t.num_rows == n, (t.num_rows, n)
        best = min(times)
        print(f"pyiceberg scan of {n} rows: median {statistics.median(times):.2f} s, best {best:.2f} s: "
              f"{record_mb / best:.1f} MB/s of records, {parquet_mb / best:.1f} MB/s of Parquet")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
