"""Blob expansion: JSON record values parsed into the typed rows of an ordinary Iceberg
table (seeds 001, 002, 004), committed with the topic-table snapshot that holds their
records. Produced with confluent-kafka, kafka-python and the Java client; managed through
the admin API (and `eddy expansion`); read with PyIceberg and DuckDB through eddy's REST
catalog and S3 endpoint."""

import base64
import datetime
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.expressions import And, EqualTo

from conftest import eddy_bin, new_eddy
from test_iceberg import catalog, duckdb_attached, token
from test_kafka import kafka_clients_classpath

TARGET_NS = "expanded"


def name(prefix="exp"):
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def admin(eddy, method, path, body=None, query=None, tok=None):
    """A request to eddy's admin API: (status, JSON body or None)."""
    if tok is None:
        tok = token(eddy)[1]["access_token"]
    url = f"{eddy.http_url}/admin{path}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    headers = {"Authorization": f"Bearer {tok}"} if tok else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


def expansion_path(topic):
    return f"/v1/topics/{urllib.parse.quote(topic, safe='')}/expansion"


def attach(eddy, topic, schema, target, **options):
    status, body = admin(eddy, "PUT", expansion_path(topic),
                         {"target": target, "schema": schema, **options})
    assert status == 200, body
    return body


def create(eddy, topic, partitions=1, **config):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    config = {"retention.ms": "-1", **config}
    a.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(timeout=30)


def produce(eddy, topic, values, partition=0, key=b"k"):
    """Produces each value (bytes, str or None) with confluent-kafka; returns the acked
    offsets in order."""
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 2})
    acked = {}

    def report(i):
        def done(err, msg):
            assert err is None, err
            acked[i] = msg.offset()
        return done

    for i, v in enumerate(values):
        p.produce(topic, value=v, key=key, partition=partition, on_delivery=report(i))
    assert p.flush(30) == 0
    return [acked[i] for i in range(len(values))]


def target_rows(eddy, table, ns=TARGET_NS):
    """The target table's rows by (partition, offset), loaded through the REST catalog."""
    t = catalog(eddy).load_table(f"{ns}.{table}").scan().to_arrow()
    rows = {}
    for r in t.to_pylist():
        k = (r["_kafka_partition"], r["_offset"])
        assert k not in rows, f"two rows for {k}"
        rows[k] = r
    return rows


def jsonable_value(v):
    """A value PyIceberg read from a table, as JSON (the format fixtures' manifests hold
    expansion rows this way)."""
    if isinstance(v, dict):
        return {k: jsonable_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable_value(x) for x in v]
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return "base64:" + base64.b64encode(bytes(v)).decode()
    return v


def field(name, type_, **kw):
    return {"name": name, "type": type_, "required": False, **kw}


ORDER_SCHEMA = {
    "type": "struct",
    "fields": [
        field("id", "long"),
        field("name", "string"),
        field("qty", "int"),
        field("price", "decimal(10, 2)"),
        field("paid", "boolean"),
        field("ratio", "double"),
        field("tags", {"type": "list", "element": "string", "element-required": False}),
        field("attrs", {"type": "map", "key": "string", "value": "long", "value-required": False}),
        field("address", {"type": "struct", "fields": [field("city", "string"), field("zip", "int")]}),
        field("at", "timestamptz"),
        field("day", "date"),
        field("ref", "uuid"),
        field("blob", "binary"),
    ],
}


def test_records_become_typed_rows_with_their_records(eddy):
    topic, table = name("orders"), name("orders_rows")
    create(eddy, topic, 2)
    # Committed before the expansion: never expanded.
    before = produce(eddy, topic, [b'{"id": 1}', b'{"id": 2}'])
    view = attach(eddy, topic, ORDER_SCHEMA, f"{TARGET_NS}.{table}", copy_source_column=True)
    assert view["target"] == f"{TARGET_NS}.{table}" and view["source_column"] == "value"
    assert view["columns"][:3] == ["id", "name", "qty"]
    assert {"_missing_values", "_excess_values", "_parse_error", "_kafka_partition", "_offset",
            "_timestamp", "value"} <= set(view["columns"])
    full = {
        "id": 7, "name": "pen", "qty": 3, "price": "12.50", "paid": True, "ratio": 0.25,
        "tags": ["a", "b"], "attrs": {"x": 1, "y": 2}, "address": {"city": "Oslo", "zip": 150},
        "at": "2026-12-01T10:00:00.123456+01:00", "day": "2026-12-01",
        "ref": "67e55044-10b1-426f-9247-bb680e5fe0c8",
        "blob": base64.b64encode(b"\x00\x01bytes").decode(),
    }
    cases = [
        json.dumps(full).encode(),                               # 0 every field
        b'{"id": 8, "name": null}',                              # 1 a null is not missing
        b'{"id": 9, "extra": {"deep": [1, 2]}, "more": 1}',      # 2 excess fields
        b'{"id": "ten"}',                                        # 3 a string where a long is
        b'{"id": 11, "qty": 3000000000}',                        # 4 too large for an int
        b'{"id": 12, "address": [1, 2]}',                        # 5 an array for a struct
        b'{"id": 13, "id": 14}',                                 # 6 duplicate keys
        b'{"id": 15,',                                           # 7 not JSON
        None,                                                    # 8 tombstone
        b'[1, 2, 3]',                                            # 9 not an object
        b'{"id": 16, "price": 1.005}',                           # 10 too many decimals
        b'{"id": 17, "tags": ["a", 5, "c"], "address": {"city": "Rome", "zip": "x"}}',  # 11
        b'{"id": 18, "price": 99999999.99, "at": 1796119200000}',  # 12 ms since the epoch
    ]
    offsets = produce(eddy, topic, cases, partition=1)
    rows = target_rows(eddy, table)
    assert not any((0, o) in rows for o in before), "a record from before the expansion"
    assert set(rows) == {(1, o) for o in offsets}
    r = [rows[(1, o)] for o in offsets]
    n = len(ORDER_SCHEMA["fields"])

    assert r[0]["id"] == 7 and r[0]["name"] == "pen" and r[0]["qty"] == 3
    assert r[0]["price"] == Decimal("12.50") and r[0]["paid"] is True and r[0]["ratio"] == 0.25
    assert r[0]["tags"] == ["a", "b"]
    assert sorted(r[0]["attrs"]) == [("x", 1), ("y", 2)]
    assert r[0]["address"] == {"city": "Oslo", "zip": 150}
    assert r[0]["at"] == datetime.datetime(2026, 12, 1, 9, 0, 0, 123456, tzinfo=datetime.timezone.utc)
    assert r[0]["day"] == datetime.date(2026, 12, 1)
    assert str(uuid.UUID(bytes=bytes(r[0]["ref"])) if isinstance(r[0]["ref"], bytes) else r[0]["ref"]) \
        == "67e55044-10b1-426f-9247-bb680e5fe0c8"
    assert r[0]["blob"] == b"\x00\x01bytes"
    assert (r[0]["_parse_error"], r[0]["_missing_values"], r[0]["_excess_values"]) == (0, 0, 0)
    assert r[0]["value"] == cases[0]

    assert r[1]["id"] == 8 and r[1]["name"] is None
    assert (r[1]["_parse_error"], r[1]["_missing_values"]) == (0, n - 2)
    assert (r[2]["_parse_error"], r[2]["_excess_values"]) == (0, 2)
    assert r[3]["id"] is None and r[3]["_parse_error"] == 1
    assert r[4]["id"] == 11 and r[4]["qty"] is None and r[4]["_parse_error"] == 1
    assert r[5]["id"] == 12 and r[5]["address"] is None and r[5]["_parse_error"] == 1
    assert r[6]["id"] == 14 and r[6]["_parse_error"] == 1
    for bad in (7, 9):
        assert r[bad]["_parse_error"] == 1 and r[bad]["id"] is None, bad
        assert r[bad]["value"] == cases[bad]
    assert r[8]["_parse_error"] == 0 and r[8]["id"] is None and r[8]["value"] is None
    assert r[10]["price"] is None and r[10]["_parse_error"] == 1 and r[10]["id"] == 16
    assert r[11]["tags"] == ["a", None, "c"] and r[11]["address"] == {"city": "Rome", "zip": None}
    assert r[11]["_parse_error"] == 1
    assert r[12]["price"] == Decimal("99999999.99") and r[12]["_parse_error"] == 0
    assert r[12]["at"] == datetime.datetime(2026, 12, 1, 10, 0, tzinfo=datetime.timezone.utc)
    # Every row joins back to its record.
    topic_rows = catalog(eddy).load_table(f"kafka_topics.{topic}").scan(
        row_filter=EqualTo("partition", 1)).to_arrow().to_pylist()
    ts = {t["offset"]: t["timestamp"] for t in topic_rows}
    assert all(rows[(1, o)]["_timestamp"] == ts[o] for o in offsets)

    status, got = admin(eddy, "GET", expansion_path(topic))
    assert status == 200 and got["target"] == view["target"] and got["copy_source_column"]
    names = [n[0] for n in catalog(eddy).list_namespaces()]
    assert "kafka_topics" in names and TARGET_NS in names
    assert (TARGET_NS, table) in catalog(eddy).list_tables(TARGET_NS)


def test_kafka_python_and_the_java_client_produce_expanded_records(eddy, tmp_path):
    from kafka import KafkaProducer
    topic, table = name("clients"), name("clients_rows")
    create(eddy, topic, 2)
    schema = {"type": "struct", "fields": [field("client", "string"), field("n", "long"),
                                           field("nested", {"type": "struct", "fields": [
                                               field("list", {"type": "list", "element": "long"})]})]}
    attach(eddy, topic, schema, f"{TARGET_NS}.{table}")
    kp = KafkaProducer(bootstrap_servers=eddy.bootstrap, acks="all")
    futures = [kp.send(topic, partition=i % 2,
                       value=json.dumps({"client": "kafka-python", "n": i,
                                         "nested": {"list": [i, i + 1]}}).encode())
               for i in range(20)]
    acked = {(m.partition, m.offset): i for i, m in ((i, f.get(timeout=30)) for i, f in enumerate(futures))}
    kp.close()
    java = {}
    cp = kafka_clients_classpath()
    if shutil.which("javac") and cp:
        src = Path(__file__).parent / "java" / "JsonProduce.java"
        subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path), str(src)], check=True, timeout=300)
        lines = "".join(f"{i % 2}\t" + json.dumps({"client": "java", "n": 100 + i, "nested": {"list": []}}) + "\n"
                        for i in range(20))
        out = subprocess.run(["java", "-cp", f"{tmp_path}:{cp}", "JsonProduce", eddy.bootstrap, topic],
                             input=lines, capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr[-3000:]
        pairs = out.stdout.split()
        java = {(int(pairs[j]), int(pairs[j + 1])): 100 + j // 2 for j in range(0, len(pairs), 2)}
        assert len(java) == 20
    rows = target_rows(eddy, table)
    assert set(rows) == set(acked) | set(java)
    for k, n in acked.items():
        assert rows[k]["client"] == "kafka-python" and rows[k]["n"] == n
        assert rows[k]["nested"] == {"list": [n, n + 1]} and rows[k]["_parse_error"] == 0
    for k, n in java.items():
        assert rows[k]["client"] == "java" and rows[k]["n"] == n and rows[k]["nested"] == {"list": []}


CUSTOMER = {"type": "struct", "fields": [field("id", "long"), field("email", "string"),
                                         field("balance", "string")]}
ENVELOPE = {"type": "struct", "fields": [field("op", "string"), field("ts_ms", "long"),
                                         field("before", CUSTOMER), field("after", CUSTOMER)]}


def envelope(op, before, after, ts):
    """A Debezium change event as the PostgreSQL connector writes it (JSON converter,
    schemas off)."""
    return json.dumps({
        "before": before, "after": after,
        "source": {"version": "3.6.0.Final", "connector": "postgresql", "name": "cdc",
                   "ts_ms": ts, "db": "shop", "schema": "public", "table": "customers",
                   "lsn": 12345, "txId": 777},
        "transaction": None, "op": op, "ts_ms": ts, "ts_us": ts * 1000, "ts_ns": ts * 1000000,
    }).encode()


def test_debezium_envelope_flattened_read_with_pyiceberg_and_duckdb(tmp_path):
    """The documents' example: change events of `customers` expanded with flatten_path
    into after__id, ...; the target keeps every change after compaction of the topic
    removed the old ones."""
    server = new_eddy(tmp_path, extra_args=["--kafka-compaction-check-interval-ms", "200"]).start()
    try:
        topic, table = name("cdc.public.customers"), name("customers_changes")
        create(server, topic, 1, **{"cleanup.policy": "compact", "min.compaction.lag.ms": "0",
                                    "segment.ms": "100", "delete.retention.ms": "100"})
        view = attach(server, topic, ENVELOPE, f"docs_kafka_connect.{table}", flatten_path=True)
        assert view["columns"][:8] == ["op", "ts_ms", "before__id", "before__email",
                                       "before__balance", "after__id", "after__email", "after__balance"]
        c1 = {"id": 1, "email": "a@x", "balance": "10.00"}
        c1b = {"id": 1, "email": "a@y", "balance": "12.50"}
        events = [
            (b'{"id": 1}', envelope("c", None, c1, 1000)),
            (b'{"id": 1}', envelope("u", c1, c1b, 2000)),
            (b'{"id": 1}', envelope("d", c1b, None, 3000)),
            (b'{"id": 1}', None),
        ]
        p = Producer({"bootstrap.servers": server.bootstrap})
        offsets = []
        for k, v in events:
            p.produce(topic, key=k, value=v, partition=0,
                      on_delivery=lambda err, m: offsets.append(m.offset()))
            p.flush(30)
        assert len(offsets) == 4
        rows = target_rows(server, table, ns="docs_kafka_connect")
        r = [rows[(0, o)] for o in offsets]
        assert [x["op"] for x in r] == ["c", "u", "d", None]
        assert r[0]["before__id"] is None and r[0]["after__email"] == "a@x"
        assert r[1]["before__email"] == "a@x" and r[1]["after__balance"] == "12.50"
        assert r[2]["after__id"] is None and r[2]["before__id"] == 1
        # source, ts_us and ts_ns are not in the schema (`transaction` neither).
        assert [x["_excess_values"] for x in r[:3]] == [4, 4, 4]
        assert [x["_missing_values"] for x in r[:3]] == [0, 0, 0]
        assert r[3]["_parse_error"] == 0 and all(r[3][c] is None for c in view["columns"][:8])

        con = duckdb_attached(server)
        got = con.execute(f'SELECT op, after__email, before__email FROM eddy.docs_kafka_connect."{table}" '
                          "WHERE op IS NOT NULL ORDER BY _offset").fetchall()
        assert got == [("c", "a@x", None), ("u", "a@y", "a@x"), ("d", None, "a@y")]

        # Compaction of the topic leaves the target's history alone.
        p.produce(topic, key=b'{"id": 2}', value=envelope("c", None, {"id": 2, "email": "b", "balance": "0"}, 4000))
        p.flush(30)
        target_rows(server, table, ns="docs_kafka_connect")  # seals: the expansion read all
        deadline = time.time() + 60
        while True:
            kept = catalog(server).load_table(("kafka_topics", topic)).scan().to_arrow()
            if kept.num_rows < 5:
                break
            assert time.time() < deadline, "compaction never ran"
            time.sleep(0.2)
        rows = target_rows(server, table, ns="docs_kafka_connect")
        assert len(rows) == 5 and {(0, o) for o in offsets} <= set(rows)
    finally:
        server.stop()


def test_columns_added_and_dropped_mid_stream(eddy):
    topic, table = name("evolve"), name("evolve_rows")
    create(eddy, topic)
    schema = {"type": "struct", "fields": [field("a", "long"), field("b", "string")]}
    attach(eddy, topic, schema, f"{TARGET_NS}.{table}")
    first = produce(eddy, topic, [b'{"a": 1, "b": "x", "c": true}'])
    cols = expansion_path(topic) + "/columns"
    status, view = admin(eddy, "POST", cols, {"add": [field("c", "boolean")]})
    assert status == 200 and "c" in view["columns"]
    t = catalog(eddy).load_table(f"{TARGET_NS}.{table}")
    assert "c" in [f.name for f in t.schema().fields]
    second = produce(eddy, topic, [b'{"a": 2, "b": "y", "c": true}'])
    rows = target_rows(eddy, table)
    assert rows[(0, first[0])]["c"] is None and rows[(0, first[0])]["_excess_values"] == 1
    assert rows[(0, second[0])]["c"] is True and rows[(0, second[0])]["_excess_values"] == 0
    # Adding what is there and dropping what was dropped change nothing.
    assert admin(eddy, "POST", cols, {"add": [field("c", "boolean")]})[0] == 200
    status, view = admin(eddy, "POST", cols, {"drop": ["b"]})
    assert status == 200 and "b" not in view["columns"]
    assert admin(eddy, "POST", cols, {"drop": ["b"]})[0] == 200
    status, body = admin(eddy, "POST", cols, {"drop": ["never"]})
    assert status == 404, body
    third = produce(eddy, topic, [b'{"a": 3, "b": "z", "c": false}'])
    t = catalog(eddy).load_table(f"{TARGET_NS}.{table}")
    assert [f.name for f in t.schema().fields][:2] == ["a", "c"]
    rows = target_rows(eddy, table)
    assert rows[(0, third[0])]["a"] == 3 and rows[(0, third[0])]["c"] is False
    assert "b" not in rows[(0, third[0])]
    assert rows[(0, third[0])]["_excess_values"] == 1  # b is no longer in the schema


def test_bad_requests_get_clear_errors(eddy):
    topic = name("bad")
    create(eddy, topic)
    good = {"type": "struct", "fields": [field("a", "long")]}
    cases = [
        (name("nosuch"), {"target": "x.y", "schema": good}, 404),
        (topic, {"target": "x.y", "schema": {"type": "struct", "fields": [field("a", "varchar")]}}, 400),
        (topic, {"target": "x.y", "schema": [1]}, 400),
        (topic, {"target": f"kafka_topics.{topic}", "schema": good}, 400),
        (topic, {"target": "no_namespace", "schema": good}, 400),
        (topic, {"target": "x.y", "schema": good, "format": "avro"}, 400),
        (topic, {"target": "x.y", "schema": good, "source_column": "headers"}, 400),
        (topic, {"target": "x.y", "schema": {"type": "struct", "fields": [
            {"name": "a", "type": "long", "required": True}]}}, 400),
        (topic, {"target": "x.y", "schema": {"type": "struct", "fields": [field("_offset", "long")]}}, 400),
        (topic, {"target": "x.y", "schema": good, "unknown_option": 1}, 400),
    ]
    for t, body, want in cases:
        status, err = admin(eddy, "PUT", expansion_path(t), body)
        assert status == want, (body, status, err)
        assert err["error"]["message"], err
    status, _ = admin(eddy, "PUT", expansion_path(topic), {"target": "x.y", "schema": good}, tok="")
    assert status == 401
    status, _ = admin(eddy, "GET", expansion_path(topic), tok="not-a-token")
    assert status == 401
    assert admin(eddy, "GET", expansion_path(topic))[0] == 404
    table = name("twice")
    attach(eddy, topic, good, f"{TARGET_NS}.{table}")
    # The same PUT again is a no-op; another on the same column a conflict.
    assert admin(eddy, "PUT", expansion_path(topic), {"target": f"{TARGET_NS}.{table}", "schema": good})[0] == 200
    status, err = admin(eddy, "PUT", expansion_path(topic), {"target": f"{TARGET_NS}.other", "schema": good})
    assert status == 409 and "already has an expansion" in err["error"]["message"]
    # A table has one writer.
    other = name("other")
    create(eddy, other)
    status, err = admin(eddy, "PUT", expansion_path(other), {"target": f"{TARGET_NS}.{table}", "schema": good})
    assert status == 409, err
    # The key can be expanded beside the value.
    status, _ = admin(eddy, "PUT", expansion_path(topic), {"target": f"{TARGET_NS}.{name('keys')}",
                                                            "schema": good, "source_column": "key"})
    assert status == 200


def test_a_topic_with_an_expansion_cannot_be_deleted(eddy, tmp_path):
    topic, table = name("keep"), name("keep_rows")
    create(eddy, topic)
    attach(eddy, topic, {"type": "struct", "fields": [field("a", "long")]}, f"{TARGET_NS}.{table}")
    produce(eddy, topic, [b'{"a": 1}'])
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    with pytest.raises(KafkaException) as e:
        a.delete_topics([topic])[topic].result(timeout=30)
    # librdkafka's DeleteTopics (v4) has no error message; the Java client's (v6) does.
    assert e.value.args[0].name() == "POLICY_VIOLATION"
    cp = kafka_clients_classpath()
    if shutil.which("javac") and cp:
        src = Path(__file__).parent / "java" / "JsonProduce.java"
        subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path), str(src)], check=True, timeout=300)
        out = subprocess.run(["java", "-cp", f"{tmp_path}:{cp}", "JsonProduce", eddy.bootstrap, topic,
                              "delete"], capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.startswith("PolicyViolationException:"), out.stdout
        assert f"has an expansion of its value column into {TARGET_NS}.{table}" in out.stdout
        assert "drop the expansion first" in out.stdout
    assert topic in a.list_topics(timeout=10).topics
    status, _ = admin(eddy, "DELETE", expansion_path(topic))
    assert status == 204
    assert admin(eddy, "GET", expansion_path(topic))[0] == 404
    a.delete_topics([topic])[topic].result(timeout=30)
    # The target table stays, with its rows, until it is dropped.
    assert len(target_rows(eddy, table)) == 1
    tok = token(eddy)[1]["access_token"]
    req = urllib.request.Request(f"{eddy.http_url}/iceberg/v1/namespaces/{TARGET_NS}/tables/{table}",
                                 method="DELETE", headers={"Authorization": f"Bearer {tok}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 204
    assert not catalog(eddy).table_exists((TARGET_NS, table))


def test_delete_records_and_retention_never_remove_target_rows(eddy):
    topic, table = name("trunc"), name("trunc_rows")
    create(eddy, topic)
    attach(eddy, topic, {"type": "struct", "fields": [field("a", "long")]}, f"{TARGET_NS}.{table}")
    offsets = produce(eddy, topic, [json.dumps({"a": i}).encode() for i in range(10)])
    # Nobody loaded the tables: DeleteRecords has the expansion read them first.
    from confluent_kafka import TopicPartition
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    res = a.delete_records([TopicPartition(topic, 0, offsets[-1] + 1)])
    list(res.values())[0].result(timeout=30)
    rows = target_rows(eddy, table)
    assert sorted(r["a"] for r in rows.values()) == list(range(10))
    assert catalog(eddy).load_table(f"kafka_topics.{topic}").scan().to_arrow().num_rows == 0


def test_every_acked_record_has_its_row_in_the_next_scan(eddy):
    topic, table = name("race"), name("race_rows")
    create(eddy, topic, 3)
    attach(eddy, topic, {"type": "struct", "fields": [field("w", "int"), field("i", "int")]},
           f"{TARGET_NS}.{table}")
    errors = []

    def worker(w):
        try:
            p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 0})
            cat = catalog(eddy)
            for i in range(6):
                got = []
                p.produce(topic, value=json.dumps({"w": w, "i": i}).encode(), partition=(w + i) % 3,
                          on_delivery=lambda err, m: got.append((err, m.partition(), m.offset())))
                p.flush(30)
                err, part, off = got[0]
                assert err is None
                t = cat.load_table(f"{TARGET_NS}.{table}")
                found = t.scan(row_filter=And(EqualTo("_kafka_partition", part), EqualTo("_offset", off))).to_arrow()
                assert found.num_rows == 1, (w, i, part, off)
                assert found.to_pylist()[0]["w"] == w and found.to_pylist()[0]["i"] == i
                # The topic table has it too, from the same snapshot transaction.
                tt = cat.load_table(f"kafka_topics.{topic}")
                assert tt.scan(row_filter=And(EqualTo("partition", part),
                                              EqualTo("offset", off))).to_arrow().num_rows == 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_expansion_metrics(eddy):
    topic, table = name("metrics"), name("metrics_rows")
    create(eddy, topic)
    attach(eddy, topic, {"type": "struct", "fields": [field("a", "long")]}, f"{TARGET_NS}.{table}")
    produce(eddy, topic, [b'{"a": 1, "x": 2}', b'not json', b'{}'])
    target_rows(eddy, table)
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()

    def value(metric):
        for line in text.splitlines():
            if line.startswith(metric + "_total{") and f'topic="{topic}"' in line:
                return int(float(line.rsplit(" ", 1)[1]))
        return None

    assert value("eddy_tables_expansion_rows") == 3
    assert value("eddy_tables_expansion_parse_errors") == 1
    assert value("eddy_tables_expansion_missing_fields") == 1
    assert value("eddy_tables_expansion_excess_fields") == 1


def test_cli_infers_puts_gets_and_drops(eddy, tmp_path):
    topic, table = name("cli"), name("cli_rows")
    create(eddy, topic)
    produce(eddy, topic, [json.dumps({"id": i, "price": 1.5 if i % 2 else 2, "at": "2026-12-01T10:00:00Z",
                                      "tags": ["x"]}).encode() for i in range(10)])
    env = dict(os.environ, EDDY_HTTP_URL=eddy.http_url, EDDY_ACCESS_KEY=eddy.access_key,
               EDDY_SECRET_KEY=eddy.secret_key)

    def cli(*args, input=None):
        out = subprocess.run([eddy_bin(), "expansion", *args], capture_output=True, text=True,
                             env=env, timeout=60, input=input)
        return out

    out = cli("infer", topic, "--target", f"{TARGET_NS}.{table}")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    types = {f["name"]: f["type"] for f in body["schema"]["fields"]}
    assert types == {"id": "long", "price": "double", "at": "timestamptz",
                     "tags": {"type": "list", "element-id": types["tags"]["element-id"],
                              "element": "string", "element-required": False}}
    out = cli("put", topic, "--file", "-", input=json.dumps(body))
    assert out.returncode == 0, out.stderr
    produce(eddy, topic, [b'{"id": 99, "price": 3.25, "at": "2026-12-01T11:00:00Z", "tags": []}'])
    rows = list(target_rows(eddy, table).values())
    assert len(rows) == 1 and rows[0]["id"] == 99 and rows[0]["price"] == 3.25
    out = cli("get", topic)
    assert out.returncode == 0 and json.loads(out.stdout)["target"] == f"{TARGET_NS}.{table}"
    out = cli("drop", topic)
    assert out.returncode == 0, out.stderr
    out = cli("get", topic)
    assert out.returncode != 0 and "no expansion" in out.stderr
    bad = subprocess.run([eddy_bin(), "expansion", "get", topic], capture_output=True, text=True,
                         env=dict(env, EDDY_SECRET_KEY="wrong"), timeout=60)
    assert bad.returncode != 0 and "refused the credentials" in bad.stderr


def expansion_cli(eddy):
    env = dict(os.environ, EDDY_HTTP_URL=eddy.http_url, EDDY_ACCESS_KEY=eddy.access_key,
               EDDY_SECRET_KEY=eddy.secret_key)

    def cli(*args, input=None):
        return subprocess.run([eddy_bin(), "expansion", *args], capture_output=True, text=True,
                              env=env, timeout=120, input=input)
    return cli


def test_infer_with_backfill_gives_every_earlier_record_a_row(eddy):
    """The newcomer's way, infer -> put, with --backfill: the records already in the topic
    get their rows too. Without it (and with no terminal to ask on) the body says no."""
    topic, table = name("inferbf"), name("inferbf_rows")
    create(eddy, topic, partitions=2)
    before = produce(eddy, topic, [json.dumps({"id": i}).encode() for i in range(15)])
    cli = expansion_cli(eddy)
    out = cli("infer", topic, "--target", f"{TARGET_NS}.{table}")
    assert out.returncode == 0 and json.loads(out.stdout)["backfill"] is False, out
    out = cli("infer", topic, "--target", f"{TARGET_NS}.{table}", "--backfill")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["backfill"] is True
    assert cli("put", topic, "--file", "-", input=json.dumps(body)).returncode == 0
    rows = target_rows(eddy, table)
    assert sorted((0, o) for o in before) == sorted(rows), rows.keys()
    assert sorted(r["id"] for r in rows.values()) == list(range(15))


def test_backfill_asked_after_the_expansion_was_attached(eddy):
    """Attached without backfill (as `infer > f; put --file f` used to leave it), the
    earlier records are expanded later by `eddy expansion backfill`, once: asking again
    adds no row twice."""
    topic, table = name("latebf"), name("latebf_rows")
    create(eddy, topic)
    early = produce(eddy, topic, [json.dumps({"id": i}).encode() for i in range(20)])
    cli = expansion_cli(eddy)
    out = cli("infer", topic, "--target", f"{TARGET_NS}.{table}")
    assert cli("put", topic, "--file", "-", input=out.stdout).returncode == 0
    late = produce(eddy, topic, [json.dumps({"id": 100 + i}).encode() for i in range(5)])
    assert sorted(target_rows(eddy, table)) == [(0, o) for o in late]
    out = cli("backfill", topic)
    assert out.returncode == 0, out.stderr
    assert "backfill done" in out.stderr
    rows = target_rows(eddy, table)
    assert sorted(rows) == sorted((0, o) for o in early + late)
    out = cli("backfill", topic)
    assert out.returncode == 0, out.stderr
    assert len(target_rows(eddy, table)) == 25
    status, err = admin(eddy, "POST", expansion_path(name("none")) + "/backfill")
    assert status == 404, err


def test_infer_reports_values_of_different_kinds(eddy):
    """One string among twelve numbers is reported (on the CLI, as a warning), not widened
    to a string in silence."""
    topic = name("mixed")
    create(eddy, topic)
    produce(eddy, topic, [json.dumps({"n": i, "ok": True}).encode() for i in range(12)]
            + [json.dumps({"n": "twelve", "ok": False}).encode()])
    status, body = admin(eddy, "GET", expansion_path(topic) + "/infer")
    assert status == 200, body
    assert body["disagreements"] == [{"field": "n", "seen": {"long": 12, "string": 1},
                                      "proposed": "string"}]
    out = expansion_cli(eddy)("infer", topic)
    assert out.returncode == 0, out.stderr
    assert "field n has values of different kinds" in out.stderr, out.stderr


def test_kill_during_produce_and_sealing_keeps_rows_and_records_together(tmp_path):
    """SIGKILL while producers run and a reader loads the target (so seals commit), then
    restart, for EXPANSION_KILL_ROUNDS rounds (3 here; 20 or more for a long run): after
    each restart the target's rows are exactly the topic table's records, none twice,
    every acked record among them with its values."""
    rounds = int(os.environ.get("EXPANSION_KILL_ROUNDS", "3"))
    server = new_eddy(tmp_path).start()
    topic, table = name("crash"), name("crash_rows")
    create(server, topic, 2)
    attach(server, topic, {"type": "struct", "fields": [field("p", "int"), field("i", "long")]},
           f"{TARGET_NS}.{table}")
    acked = set()
    try:
        for round_ in range(rounds):
            stop = threading.Event()

            def producer(p_id):
                p = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 1,
                              "message.timeout.ms": 5000, "retries": 0})
                i = round_ * 1_000_000
                while not stop.is_set():
                    def done(err, m, i=i):
                        if err is None:
                            acked.add((m.partition(), m.offset(), i))
                    p.produce(topic, value=json.dumps({"p": p_id, "i": i}).encode(),
                              partition=p_id % 2, on_delivery=done)
                    p.poll(0)
                    i += 1
                    if i % 50 == 0:
                        p.flush(5)
                p.flush(5)

            def loader():
                while not stop.is_set():
                    try:
                        catalog(server).load_table(f"{TARGET_NS}.{table}")
                    except Exception:  # noqa: BLE001 - the server dies under it
                        return

            threads = [threading.Thread(target=producer, args=(i,)) for i in range(2)]
            threads.append(threading.Thread(target=loader))
            for t in threads:
                t.start()
            want = len(acked) + 1500
            deadline = time.time() + 30
            while len(acked) < want and time.time() < deadline:
                time.sleep(0.05)
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait()
            stop.set()
            for t in threads:
                t.join()
            server.proc = None
            server.start()
            rows = target_rows(server, table)
            records = catalog(server).load_table(("kafka_topics", topic)).scan().to_arrow().to_pylist()
            record_keys = {(r["partition"], r["offset"]) for r in records}
            assert set(rows) == record_keys, f"round {round_}: rows and records differ"
            values = {(r["partition"], r["offset"]): json.loads(r["value"]) for r in records}
            for part, off, i in acked:
                assert (part, off) in rows, f"round {round_}: acked {(part, off)} lost"
                assert rows[(part, off)]["i"] == i
            for k, row in rows.items():
                assert (row["p"], row["i"]) == (values[k]["p"], values[k]["i"])
        assert len(acked) > 100 * rounds
    finally:
        server.stop()


def test_backfill_expands_older_records_once(eddy):
    topic, table = name("backfill"), name("backfill_rows")
    create(eddy, topic, 2)
    old = {p: produce(eddy, topic, [json.dumps({"n": p * 100 + i}).encode() for i in range(5)], partition=p)
           for p in range(2)}
    view = attach(eddy, topic, {"type": "struct", "fields": [field("n", "long")]},
                  f"{TARGET_NS}.{table}", backfill=True)
    assert view["backfilled"] == [0, 0] and view["since"] == [5, 5]
    new = produce(eddy, topic, [b'{"n": 7}'], partition=1)
    rows = target_rows(eddy, table)
    want = {(p, o) for p, offs in old.items() for o in offs} | {(1, new[0])}
    assert set(rows) == want
    assert rows[(1, old[1][2])]["n"] == 102 and rows[(1, new[0])]["n"] == 7
    status, got = admin(eddy, "GET", expansion_path(topic))
    assert got["backfilled"] == got["since"] == [5, 5]
    # Loading again expands nothing twice.
    assert set(target_rows(eddy, table)) == want
    # A second expansion of a column expanded before cannot backfill.
    admin(eddy, "DELETE", expansion_path(topic))
    status, err = admin(eddy, "PUT", expansion_path(topic), {
        "target": f"{TARGET_NS}.{table}", "schema": {"type": "struct", "fields": [field("n", "long")]},
        "backfill": True})
    assert status == 409, err
