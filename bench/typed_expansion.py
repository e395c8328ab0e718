#!/usr/bin/env python3
"""Seal rate of a typed table (Avro records expanded by their registered schema) against
a JSON expansion of the same data, in one run.

Three one-partition topics get the same N records (default 400,000) of an order shape
(a long, a string enum, a double, a nested record of a string and an int, an array of
strings), produced by librdkafka with lz4: `plain` holds the Avro records without an
expansion, `json` the records as JSON documents with an expansion of the same columns,
`avro` the Avro records (confluent-kafka's AvroSerializer, the schema registered under
`avro-value`) with a typed expansion. With the background tabler off, the clock runs
over one load of each table through the REST catalog, which seals it. Reported: records
per second and Eddy's CPU seconds for each, and each expansion's own CPU (its seal's
minus the plain topic's, per million records).

    .venv/bin/python bench/typed_expansion.py BIN

BIN is an `eddy` release build, on a fresh data dir under $SCRATCH (default
/tmp/eddy-bench). No peer run: no broker that installs here turns registered Avro
records into table rows.
"""

import json
import os
import random
import shutil
import sys
import urllib.request
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import Eddy, free_port  # noqa: E402
from expansion import fill, timed_load  # noqa: E402
from test_iceberg import token  # noqa: E402

SCRATCH = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))
N = int(os.environ.get("N", "400000"))

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID", "SENT"]}},
    {"name": "amount", "type": "double"},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
        {"name": "name", "type": "string"}, {"name": "zip", "type": "int"}]}},
    {"name": "items", "type": {"type": "array", "items": "string"}},
]}

COLUMNS = {"type": "struct", "fields": [
    {"name": "id", "type": "long"}, {"name": "state", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "customer", "type": {"type": "struct", "fields": [
        {"name": "name", "type": "string"}, {"name": "zip", "type": "int"}]}},
    {"name": "items", "type": {"type": "list", "element": "string"}},
]}


def orders(n=2000):
    rnd = random.Random(7)
    return [{"id": i, "state": ["NEW", "PAID", "SENT"][i % 3], "amount": rnd.randrange(10**6) / 100,
             "customer": {"name": f"user{rnd.randrange(10**6)}", "zip": rnd.randrange(10**5)},
             "items": [f"sku-{rnd.randrange(1000)}" for _ in range(rnd.randrange(4))]}
            for i in range(n)]


def put_expansion(eddy, topic, body):
    tok = token(eddy)[1]["access_token"]
    req = urllib.request.Request(f"{eddy.http_url}/admin/v1/topics/{topic}/expansion",
                                 data=json.dumps(body).encode(), method="PUT",
                                 headers={"Authorization": f"Bearer {tok}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.status == 200


def main(binary):
    os.environ["EDDY_BIN"] = binary
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    eddy = Eddy(data_dir=SCRATCH / "typed", s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port(),
                extra_args=["--table-seal-age-secs", "86400", "--table-seal-mb", "1048576"]).start()
    try:
        a = AdminClient({"bootstrap.servers": eddy.bootstrap})
        for t in ("plain", "json", "avro"):
            a.create_topics([NewTopic(t, 1, 1, config={"retention.ms": "-1"})])[t].result(30)
        sr = SchemaRegistryClient({"url": f"{eddy.http_url}/schema-registry",
                                   "basic.auth.user.info": f"{eddy.access_key}:{eddy.secret_key}"})
        ser = AvroSerializer(sr, json.dumps(SCHEMA))
        docs = orders()
        avro = [ser(d, SerializationContext("avro", MessageField.VALUE)) for d in docs]
        as_json = [json.dumps(d).encode() for d in docs]
        put_expansion(eddy, "json", {"target": "bench.json_rows", "schema": COLUMNS})
        put_expansion(eddy, "avro", {"target": "bench.avro_rows", "format": "avro"})
        sizes = {t: fill(eddy, t, vals, count=N)[0]
                 for t, vals in (("plain", avro), ("json", as_json), ("avro", avro))}
        plain_s, plain_cpu, _ = timed_load(eddy, ("kafka_topics", "plain"))
        results = {}
        for name, ident in (("json", ("bench", "json_rows")), ("avro", ("bench", "avro_rows"))):
            s, cpu, t = timed_load(eddy, ident)
            rows = t.scan(selected_fields=("_offset",)).to_arrow().num_rows
            assert rows == N, (name, rows)
            errors = t.scan(selected_fields=("_parse_error",)).to_arrow().column(0).to_pylist()
            assert sum(errors) == 0, f"{name}: {sum(errors)} rows with _parse_error"
            results[name] = (s, cpu)
        print(f"seal of {N} records per topic (values: Avro {sizes['avro'] / 1e6:.0f} MB, "
              f"JSON {sizes['json'] / 1e6:.0f} MB)")
        print(f"  topic table only (Avro values): {plain_s:6.2f} s  {N / plain_s / 1e3:7.1f} k records/s  cpu {plain_cpu:6.2f} s")
        for name, (s, cpu) in results.items():
            own = max(cpu - plain_cpu, 1e-9)
            print(f"  + {name:4} expansion:            {s:6.2f} s  {N / s / 1e3:7.1f} k records/s  cpu {cpu:6.2f} s"
                  f"  (expansion {own / N * 1e6:.2f} cpu s per million records)")
        (js, jcpu), (avs, acpu) = results["json"], results["avro"]
        print(f"  Avro-typed / JSON seal rate: {js / avs:.2f}x; expansion cpu Avro / JSON: "
              f"{max(acpu - plain_cpu, 1e-9) / max(jcpu - plain_cpu, 1e-9):.2f}x")
    finally:
        eddy.stop()


if __name__ == "__main__":
    main(sys.argv[1])
