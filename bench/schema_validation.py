#!/usr/bin/env python3
"""Produce throughput with broker-side schema validation on and off, in one run.

A release `eddy` on free ports with a fresh data dir; two topics of one partition, one
with `confluent.value.schema.validation=true`; the same RECORDS Avro records (an order of
a long, a string, a double, a map and an array, about SIZE bytes each, framed by
confluent-kafka's AvroSerializer with one registered schema) produced by one
confluent-kafka producer per round (acks=all, linger 5 ms, 1 MiB batches), ROUNDS rounds
alternating the two topics. Prints per round the MB/s and the server's CPU seconds, then
the ratio validated / not validated (the goal: at least 0.8).

    EDDY_BIN=target/release/eddy .venv/bin/python bench/schema_validation.py

Environment: RECORDS (default 500000), SIZE (default 1000), ROUNDS (default 4).
"""

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from conftest import metric, new_eddy  # noqa: E402

RECORDS = int(os.environ.get("RECORDS", 500_000))
SIZE = int(os.environ.get("SIZE", 1000))
ROUNDS = int(os.environ.get("ROUNDS", 4))
SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
    {"name": "price", "type": "double"},
    {"name": "attrs", "type": {"type": "map", "values": "string"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def records(eddy, topic):
    sr = SchemaRegistryClient({"url": f"{eddy.http_url}/schema-registry",
                               "basic.auth.user.info": f"{eddy.access_key}:{eddy.secret_key}"})
    ser = AvroSerializer(sr, json.dumps(SCHEMA))
    ctx = SerializationContext(topic, MessageField.VALUE)
    pad = "x" * max(0, SIZE - 120)
    return [ser({"id": i, "item": f"item-{i}-{pad}", "price": i * 0.5,
                 "attrs": {"colour": "red", "size": str(i % 7)}, "tags": ["a", "b"]}, ctx)
            for i in range(RECORDS)]


def produce(eddy, topic, values):
    p = Producer({"bootstrap.servers": eddy.bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})
    start = time.perf_counter()
    for v in values:
        while True:
            try:
                p.produce(topic, v)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0
    return time.perf_counter() - start


def main():
    with tempfile.TemporaryDirectory(prefix="eddy-bench-validation-") as tmp:
        eddy = new_eddy(Path(tmp)).start()
        try:
            admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
            topics = {"off": "plain", "on": "validated"}
            for config, name in topics.items():
                conf = {"confluent.value.schema.validation": "true"} if config == "on" else {}
                admin.create_topics([NewTopic(name, 1, 1, config=conf)])[name].result(30)
            # One set of bytes for both topics (registered under the validated topic's
            # subject; the other topic checks nothing).
            values = records(eddy, topics["on"])
            total = sum(len(v) for v in values)
            rows = []
            for rnd in range(ROUNDS):
                for config in ("off", "on"):
                    cpu = cpu_seconds(eddy.proc.pid)
                    secs = produce(eddy, topics[config], values)
                    rows.append({"round": rnd, "config": config, "seconds": secs,
                                 "mb_s": total / secs / 1e6,
                                 "server_cpu_s": cpu_seconds(eddy.proc.pid) - cpu})
                    print(json.dumps(rows[-1]), file=sys.stderr)
            # Every record of the validated rounds was checked, none refused.
            validated = metric(eddy, "eddy_schema_registry_validated_records")
            refused = metric(eddy, "eddy_schema_registry_refused_records")
            assert (validated, refused) == (ROUNDS * RECORDS, 0), (validated, refused)
        finally:
            eddy.stop()
    print(f"\n{RECORDS} records of {total / RECORDS:.0f} bytes ({total / 1e6:.0f} MB) per round, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}\n")
    print("| round | validation | seconds | MB/s | server CPU s |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['round']} | {r['config']} | {r['seconds']:.2f} | {r['mb_s']:.1f} | {r['server_cpu_s']:.2f} |")
    on = statistics.median(r["mb_s"] for r in rows if r["config"] == "on")
    off = statistics.median(r["mb_s"] for r in rows if r["config"] == "off")
    cpu_on = statistics.median(r["server_cpu_s"] for r in rows if r["config"] == "on")
    cpu_off = statistics.median(r["server_cpu_s"] for r in rows if r["config"] == "off")
    print(f"\nmedian MB/s: on {on:.1f}, off {off:.1f}, on / off {on / off:.2f}; "
          f"server CPU s: on {cpu_on:.2f}, off {cpu_off:.2f}, on / off {cpu_on / cpu_off:.2f}")


if __name__ == "__main__":
    main()
