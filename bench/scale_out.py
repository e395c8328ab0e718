"""Produce throughput and latency with the PostgreSQL catalog as a ratio to the embedded
one, with 1 and 3 nodes, and the failover pause (docs/scale-out.md, issue 19).

    .venv/bin/python bench/scale_out.py BIN [SECONDS]

Each setup gets a fresh data dir. PostgreSQL is Debian's, started here with durable
commits (the catalog's acknowledgements rest on them; the embedded catalog fsyncs too).
Load: one confluent-kafka producer bootstrapped on every node address, 1 KiB values,
acks=all, linger.ms=5, idempotent, on a topic of 6 partitions, as fast as it goes;
latency is each record's produce() to its delivery report, so it includes the client's
own queue. Setups alternate within one run, ROUNDS times (default 2), so a noisy machine
weighs on every setup alike.

Failover: 3 nodes, one producer over every address; one node is killed (SIGKILL) mid-run
and the longest pause between acknowledgements is reported, at the default lease
(6 s) and at 2 s. It includes librdkafka's reconnect backoff to the moved address
(`reconnect.backoff.max.ms`, 10 s by default).
"""

import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))

import postgres  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from conftest import Eddy, free_port  # noqa: E402

HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]


def start(tmp: Path, nodes: int, url: str | None, lease_ms: int = 6000) -> list:
    port = free_port()
    out = []
    for i in range(nodes):
        hosts = HOSTS[:nodes] if url else ["127.0.0.1"]
        extra = ["--catalog", url, "--node-id", f"n{i}", "--lease-timeout-ms", str(lease_ms)] if url else []
        n = Eddy(data_dir=tmp / "data", s3_port=free_port(), kafka_ports=[port] * len(hosts),
                 kafka_hosts=hosts, http_port=free_port(), extra_args=extra)
        out.append(n.start())
    return out


def load(bootstrap: str, seconds: float, stop_at=None) -> tuple:
    """MB/s acknowledged (from the first produce to the last acknowledgement), latencies
    (ms, produce() to delivery, so at full load they include the client's queue), and
    acknowledgement times."""
    lat, acks = [], []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "enable.idempotence": True, "message.timeout.ms": 120000})
    value = os.urandom(1024)
    began = time.monotonic()
    end = began + seconds
    while time.monotonic() < end:
        sent = time.monotonic()

        def done(err, _m, sent=sent):
            if err is None:
                now = time.monotonic()
                lat.append((now - sent) * 1000)
                acks.append(now)
        try:
            p.produce("bench", value=value, on_delivery=done)
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    p.flush(120)
    mb = len(acks) * 1024 / 1e6 / max(acks[-1] - began, 1e-9) if acks else 0.0
    return mb, lat, acks


def run_setup(name: str, nodes: int, pg_needed: bool, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as tmp:
        pg = postgres.Postgres(fsync=True).start() if pg_needed else None
        url = (f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
               if pg else None)
        servers = start(Path(tmp), nodes, url)
        try:
            boot = servers[0].bootstrap
            time.sleep(0.1)
            admin = AdminClient({"bootstrap.servers": boot})
            for f in admin.create_topics([NewTopic("bench", 6)]).values():
                f.result(60)
            load(boot, 2)  # warm-up
            mb, lat, _ = load(boot, seconds)
            lat.sort()
            return {"setup": name, "MB/s": mb, "p50": lat[len(lat) // 2],
                    "p99": lat[int(len(lat) * 0.99)]}
        finally:
            for s in servers:
                s.stop(kill=True)
            if pg:
                pg.stop()


def failover(lease_ms: int, seconds: float) -> float:
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as tmp:
        pg = postgres.Postgres(fsync=True).start()
        url = f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
        servers = start(Path(tmp), 3, url, lease_ms)
        try:
            boot = servers[0].bootstrap
            admin = AdminClient({"bootstrap.servers": boot})
            for f in admin.create_topics([NewTopic("bench", 6)]).values():
                f.result(60)
            result = {}
            t = threading.Thread(target=lambda: result.update(r=load(boot, seconds)))
            t.start()
            time.sleep(seconds / 3)
            servers[1].stop(kill=True)
            t.join()
            acks = result["r"][2]
            return max(b - a for a, b in zip(acks, acks[1:]))
        finally:
            for s in servers:
                s.stop(kill=True)
            pg.stop()


def main():
    os.environ["EDDY_BIN"] = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 15
    rounds = int(os.environ.get("ROUNDS", "2"))
    rows = []
    print(f"== {os.cpu_count()} cores, load {os.getloadavg()}, {seconds}s per setup, {rounds} rounds")
    for _ in range(rounds):
        rows.append(run_setup("embedded, 1 node", 1, False, seconds))
        rows.append(run_setup("postgresql, 1 node", 1, True, seconds))
        rows.append(run_setup("postgresql, 3 nodes", 3, True, seconds))
        for r in rows[-3:]:
            print(f"{r['setup']:22} {r['MB/s']:7.1f} MB/s  p50 {r['p50']:7.1f} ms  p99 {r['p99']:7.1f} ms")
    base = statistics.median(r["MB/s"] for r in rows if r["setup"].startswith("embedded"))
    for name in ("postgresql, 1 node", "postgresql, 3 nodes"):
        mb = statistics.median(r["MB/s"] for r in rows if r["setup"] == name)
        print(f"{name}: {mb / base:.2f}x the embedded catalog's MB/s (medians)")
    for lease in (6000, 2000):
        print(f"failover pause, lease {lease} ms: {failover(lease, 3 * lease / 1000 + 6):.2f} s")


if __name__ == "__main__":
    main()
