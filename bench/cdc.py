"""CDC benchmark (not run by CI): rows per second from PostgreSQL inserts, through the
Debezium PostgreSQL connector on a real Kafka Connect 4.3 worker, to records in an eddy
topic; and eddy's share of that time.

ROWS rows are inserted in transactions of BATCH rows (one INSERT ... SELECT each) into a
table the connector streams; the clock runs from the first insert until the change
topic's high watermark holds every row. Over the same interval it reads:
- the CPU time (user + system, from /proc/<pid>/stat) of eddy, of the Connect JVM and
  of PostgreSQL (postmaster, its live children such as the walsender, and the children
  that exited, which the postmaster reaped: cutime/cstime);
- eddy's Produce requests from its Prometheus /metrics (eddy_kafka_request_seconds
  histogram): how many, and the summed time from decode to response, i.e. the time
  the connector's producer waited on eddy (requests may overlap, so it is an upper
  bound on eddy's share of the wall time).

PostgreSQL runs with fsync on (durable commits, as eddy's are). Prints a summary and
one JSON object.

  .venv/bin/python bench/cdc.py [--rows 20000] [--batch 500] [--eddy-bin PATH]
  (scripts/connect-jars must have run once; EDDY_BIN works as in the tests)
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402

import postgres  # noqa: E402
from conftest import new_eddy  # noqa: E402
from connect import Worker, wait_for  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, reaped: bool = False) -> float:
    """utime + stime of one process (+ its reaped children's when `reaped`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the ")": state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    ut, st, cut, cst = (int(fields[i]) for i in (11, 12, 13, 14))
    return (ut + st + ((cut + cst) if reaped else 0)) / TICK


def tree_cpu(pid: int) -> float:
    """A process, its live descendants, and what it reaped (PostgreSQL's backends)."""
    total = cpu_seconds(pid, reaped=True)
    for child in Path(f"/proc/{pid}/task").glob("*/children"):
        for c in child.read_text().split():
            try:
                total += tree_cpu(int(c))
            except FileNotFoundError:
                pass
    return total


def produce_metrics(eddy):
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    def val(name):
        m = re.search(rf'^{name}\{{api="Produce"\}} ([0-9.e+-]+)', text, re.M)
        return float(m.group(1)) if m else 0.0
    return val("eddy_kafka_request_seconds_count"), val("eddy_kafka_request_seconds_sum")


def high_watermark(consumer, topic):
    return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--eddy-bin")
    args = ap.parse_args()
    if args.eddy_bin:
        os.environ["EDDY_BIN"] = args.eddy_bin

    tmp = Path(tempfile.mkdtemp(prefix="eddy-bench-cdc-"))
    eddy = worker = pg = None
    try:
        eddy = new_eddy(tmp).start()
        pg = postgres.Postgres(fsync=True).start()
        pg.psql("CREATE ROLE bench WITH LOGIN REPLICATION PASSWORD 'bench'")
        pg.psql("CREATE DATABASE bench OWNER bench")
        pg.psql("""CREATE TABLE rows (id integer PRIMARY KEY, payload text NOT NULL,
                                      amount numeric(12, 2));
                   ALTER TABLE rows REPLICA IDENTITY FULL;
                   INSERT INTO rows VALUES (0, 'warm-up', 0);""",
                db="bench", user="bench", password="bench")
        worker = Worker(tmp, eddy.bootstrap, "bench-connect", "w1").start()
        topic = "bench.public.rows"
        worker.put_config("bench", {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "plugin.name": "pgoutput",
            "database.hostname": "127.0.0.1", "database.port": str(pg.port),
            "database.user": "bench", "database.password": "bench", "database.dbname": "bench",
            "topic.prefix": "bench", "table.include.list": "public.rows",
            "slot.name": "bench", "publication.name": "bench",
            "publication.autocreate.mode": "filtered",
            "tombstones.on.delete": "true", "decimal.handling.mode": "string",
            "heartbeat.interval.ms": "10000",
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.cleanup.policy": "compact",
        })
        worker.wait_running("bench", 1, timeout=120)
        c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": "bench-watch"})

        def hw():
            try:
                return high_watermark(c, topic)
            except Exception:  # noqa: BLE001 - the topic may not exist yet
                return -1
        wait_for(lambda: hw() >= 1, 120, "the snapshot's warm-up row")
        base = hw()

        sql = "".join(
            f"INSERT INTO rows SELECT g, 'row ' || g || ' ' || md5(g::text), g * 1.25 "
            f"FROM generate_series({lo}, {min(lo + args.batch, args.rows + 1) - 1}) g;\n"
            for lo in range(1, args.rows + 1, args.batch))
        pids = {"eddy": eddy.proc.pid, "connect": worker.proc.pid, "postgres": pg.proc.pid}
        cpu0 = {k: tree_cpu(p) for k, p in pids.items()}
        n0, s0 = produce_metrics(eddy)
        t0 = time.time()
        pg.psql(sql, db="bench", user="bench", password="bench", script=True)
        t_ins = time.time() - t0
        wait_for(lambda: hw() >= base + args.rows, 600, "every row in the topic", 0.05)
        wall = time.time() - t0
        cpu = {k: round(tree_cpu(p) - cpu0[k], 2) for k, p in pids.items()}
        n1, s1 = produce_metrics(eddy)
        c.close()

        produce_n, produce_s = int(n1 - n0), s1 - s0
        result = {
            "rows": args.rows, "batch": args.batch, "eddy_bin": os.environ.get("EDDY_BIN"),
            "insert_seconds": round(t_ins, 2), "end_to_end_seconds": round(wall, 2),
            "rows_per_second": round(args.rows / wall),
            "cpu_seconds": cpu,
            "eddy_produce_requests": produce_n,
            "eddy_produce_seconds_sum": round(produce_s, 3),
            "eddy_produce_mean_ms": round(1000 * produce_s / max(produce_n, 1), 2),
            "eddy_produce_share_of_wall": round(produce_s / wall, 3),
            "eddy_cpu_share_of_wall": round(cpu["eddy"] / wall, 3),
        }
        print(f"{args.rows} rows in batches of {args.batch}: inserted in {t_ins:.2f} s, "
              f"all in the topic after {wall:.2f} s = {args.rows / wall:.0f} rows/s")
        print(f"CPU s: eddy {cpu['eddy']}, Connect JVM {cpu['connect']}, "
              f"PostgreSQL {cpu['postgres']}")
        print(f"eddy Produce: {produce_n} requests, {produce_s:.3f} s summed "
              f"({result['eddy_produce_mean_ms']} ms mean) = "
              f"{100 * produce_s / wall:.1f}% of the wall time")
        print(json.dumps(result))
    finally:
        if worker is not None:
            worker.kill()
        if pg is not None:
            pg.stop()
        if eddy is not None:
            eddy.stop(kill=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
