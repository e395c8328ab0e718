"""Typed topic tables from registered schemas: a topic whose records confluent-kafka's
Avro, Protobuf and JSON Schema serializers wrote (magic byte, schema id) expands into the
columns of its subject's schema, every record read with its own writer's schema. A new
version registered under the subject evolves the table in the registration's own
transaction (kept columns keep their field ids, nested fields included); one the table
cannot take is refused with the registration; a kill -9 during registrations leaves each
schema and its table evolution both there or both absent. Read with PyIceberg and DuckDB
here, and with Trino and Spark in test_engine_tables.py."""

import datetime
import json
import threading
import time
import uuid
from decimal import Decimal

import pytest
import requests
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from test_expansion import admin, create, expansion_path, target_rows
from test_iceberg import catalog, duckdb_attached
from test_schema_registry import api, client, ok

NS = "typed"

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "qty", "type": "int"},
    {"name": "paid", "type": "boolean"},
    {"name": "ratio", "type": "float"},
    {"name": "score", "type": "double"},
    {"name": "blob", "type": "bytes"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "clock", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID", "SENT"]}},
    {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 2}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "either", "type": ["null", "long", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "long"}},
    {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
        {"name": "name", "type": "string"},
        {"name": "zip", "type": ["null", "int"], "default": None}]}},
]}

# Every column's Iceberg type (as PyIceberg prints it).
ICEBERG_TYPES = {
    "id": "long", "qty": "int", "paid": "boolean", "ratio": "float", "score": "double",
    "blob": "binary", "price": "decimal(9, 2)", "day": "date", "at": "timestamptz",
    "at_ms": "timestamptz", "local": "timestamp", "clock": "long", "uid": "uuid",
    "state": "string", "code": "fixed[2]", "note": "string",
    "either": "struct<", "tags": "list<string>", "attrs": "map<string, long>",
    "customer": "struct<",
}

AT = datetime.datetime(2024, 3, 1, 12, 30, 45, 123456, tzinfo=datetime.timezone.utc)


def order(i):
    return {
        "id": i, "qty": i * 2 - 3, "paid": i % 2 == 0, "ratio": 0.5 + i, "score": 1e10 / (i + 1),
        "blob": bytes([i, 0, 255]), "price": Decimal(f"{i}23.45"),
        "day": datetime.date(2024, 1, 1) + datetime.timedelta(days=i),
        "at": AT + datetime.timedelta(seconds=i), "at_ms": AT.replace(microsecond=123000),
        "local": datetime.datetime(2024, 3, 1, 8, 0, i), "clock": datetime.time(13, 14, 15, 16000),
        "uid": uuid.UUID(int=i + 1), "state": ["NEW", "PAID", "SENT"][i % 3], "code": b"AB",
        "note": None if i % 2 else f"note {i}", "either": i if i % 2 else f"s{i}",
        "tags": [f"t{j}" for j in range(i)], "attrs": {"k": i, "z": -i},
        "customer": {"name": f"c{i}", "zip": 10000 + i},
    }


def produce(eddy, topic, serializer, values):
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    p.list_topics(topic, timeout=30)
    for v in values:
        p.produce(topic, serializer(v, SerializationContext(topic, MessageField.VALUE)))
    assert p.flush(30) == 0


def raw_produce(eddy, topic, values):
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for v in values:
        p.produce(topic, v)
    assert p.flush(30) == 0


def attach(eddy, topic, fmt, table, **options):
    status, body = admin(eddy, "PUT", expansion_path(topic),
                         {"target": f"{NS}.{table}", "format": fmt, **options})
    assert status == 200, body
    return body


def avro_topic(eddy, topic, values):
    """`values` produced by AvroSerializer (which registers ORDER under `<topic>-value`),
    and the typed expansion attached."""
    create(eddy, topic)
    sr = client(eddy)
    ser = AvroSerializer(sr, json.dumps(ORDER))
    produce(eddy, topic, ser, values[:1])
    view = attach(eddy, topic, "avro", topic, backfill=True)
    produce(eddy, topic, ser, values[1:])
    return view


def test_an_avro_topic_is_a_typed_table(eddy):
    """Every Avro type in its Iceberg column, each value as produced, read by PyIceberg
    and DuckDB; the expansion's view names format and subject."""
    topic = f"typed_avro_{uuid.uuid4().hex[:6]}"
    values = [order(i) for i in range(6)]
    view = avro_topic(eddy, topic, values)
    assert view["format"] == "avro" and view["subject"] == f"{topic}-value", view
    rows = sorted(target_rows(eddy, topic, ns=NS).values(), key=lambda r: r["_offset"])
    assert len(rows) == len(values)
    table = catalog(eddy).load_table(f"{NS}.{topic}")
    types = {f.name: str(f.field_type) for f in table.schema().fields}
    for col, t in ICEBERG_TYPES.items():
        assert types[col].startswith(t), (col, types[col])
    for r, v in zip(rows, values):
        assert r["_parse_error"] == 0 and r["_missing_values"] == 0 and r["_excess_values"] == 0, r
        for k in ("id", "qty", "paid", "score", "blob", "price", "day", "state", "note",
                  "tags", "customer"):
            assert r[k] == v[k], (k, r[k], v[k])
        assert r["ratio"] == pytest.approx(v["ratio"])
        assert r["at"] == v["at"] and r["at_ms"] == v["at_ms"]
        assert r["local"] == v["local"]
        assert r["clock"] == ((13 * 60 + 14) * 60 + 15) * 1_000_000 + 16000  # µs since midnight
        assert uuid.UUID(bytes=r["uid"]) == v["uid"] if isinstance(r["uid"], bytes) else r["uid"] == v["uid"]
        assert r["code"] == b"AB"
        assert dict(r["attrs"]) == v["attrs"]
        branch = "long" if isinstance(v["either"], int) else "string"
        assert r["either"] == {"long": None, "string": None, branch: v["either"]}

    con = duckdb_attached(eddy)
    got = con.execute(
        f'SELECT id, CAST(price AS VARCHAR), day, state, customer.name, len(tags), attrs[\'k\'], '
        f'either.string FROM eddy.{NS}."{topic}" ORDER BY id').fetchall()
    assert got == [(v["id"], str(v["price"]), v["day"], v["state"], v["customer"]["name"],
                    len(v["tags"]), v["attrs"]["k"],
                    v["either"] if isinstance(v["either"], str) else None) for v in values]


def test_a_new_version_evolves_the_table_in_the_registration(eddy):
    """Registering a compatible version changes the table before any record of it is
    produced: a new top-level column and a new nested field, the kept columns' field ids
    unchanged; records of both versions land in the one table, each read by its own
    writer's schema. An incompatible version is refused and changes nothing."""
    topic = f"typed_evolve_{uuid.uuid4().hex[:6]}"
    values = [order(i) for i in range(3)]
    avro_topic(eddy, topic, values)
    cat = catalog(eddy)
    before = cat.load_table(f"{NS}.{topic}").schema()
    v2 = json.loads(json.dumps(ORDER))
    v2["fields"].append({"name": "coupon", "type": ["null", "string"], "default": None})
    cust = next(f for f in v2["fields"] if f["name"] == "customer")
    cust["type"]["fields"].append({"name": "email", "type": ["null", "string"], "default": None})
    sr = client(eddy)
    sr.register_schema(f"{topic}-value", Schema(json.dumps(v2), "AVRO"))
    after = cat.load_table(f"{NS}.{topic}").schema()
    assert after.find_field("coupon").field_type.__str__() == "string"
    assert after.find_field("customer.email") is not None
    for name in ("id", "price", "customer", "customer.name", "tags", "attrs"):
        assert after.find_field(name).field_id == before.find_field(name).field_id, name

    ser = AvroSerializer(sr, json.dumps(v2))
    newer = [{**order(i), "coupon": f"C{i}",
              "customer": {"name": f"c{i}", "zip": None, "email": f"c{i}@x"}} for i in range(3, 5)]
    produce(eddy, topic, ser, newer)
    rows = sorted(target_rows(eddy, topic, ns=NS).values(), key=lambda r: r["_offset"])
    assert [r["coupon"] for r in rows] == [None, None, None, "C3", "C4"]
    assert [r["customer"]["email"] for r in rows] == [None, None, None, "c3@x", "c4@x"]
    assert [r["customer"]["name"] for r in rows] == ["c0", "c1", "c2", "c3", "c4"]
    # Each record is expanded by the version current when it was committed.
    assert [r["_missing_values"] for r in rows] == [0, 0, 0, 0, 0]

    # BACKWARD (the default) refuses a type change; the table stays as it was.
    v3 = json.loads(json.dumps(v2))
    v3["fields"][0]["type"] = "string"
    r = api(eddy, "POST", f"/subjects/{topic}-value/versions", {"schema": json.dumps(v3)})
    assert r.status_code == 409, r.text
    assert cat.load_table(f"{NS}.{topic}").schema() == after
    # With NONE the registry takes it; the table's `id` becomes a new column (a long
    # does not become a string in place) and the earlier rows keep theirs out of sight.
    ok(api(eddy, "PUT", f"/config/{topic}-value", {"compatibility": "NONE"}))
    ok(api(eddy, "POST", f"/subjects/{topic}-value/versions", {"schema": json.dumps(v3)}))
    final = cat.load_table(f"{NS}.{topic}").schema()
    assert str(final.find_field("id").field_type) == "string"
    assert final.find_field("id").field_id != after.find_field("id").field_id


def test_a_schema_the_table_cannot_take_is_refused_with_the_registration(eddy):
    topic = f"typed_refuse_{uuid.uuid4().hex[:6]}"
    avro_topic(eddy, topic, [order(0)])
    ok(api(eddy, "PUT", f"/config/{topic}-value", {"compatibility": "NONE"}))
    recursive = {"type": "record", "name": "Node", "fields": [
        {"name": "id", "type": "long"}, {"name": "next", "type": ["null", "Node"], "default": None}]}
    r = api(eddy, "POST", f"/subjects/{topic}-value/versions", {"schema": json.dumps(recursive)})
    assert r.status_code == 409, r.text
    assert "recursive" in r.json()["message"] and topic in r.json()["message"], r.text
    assert ok(api(eddy, "GET", f"/subjects/{topic}-value/versions")) == [1]


def test_protobuf_and_json_schema_topics_are_typed_tables(eddy):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="shop/typed.proto", package="shop",
                                             syntax="proto3", dependency=["google/protobuf/timestamp.proto"])
    line = fdp.message_type.add(name="Line")
    line.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    line.field.add(name="count", number=2, type=F.TYPE_UINT32, label=F.LABEL_OPTIONAL)
    m = fdp.message_type.add(name="Cart")
    m.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m.field.add(name="total", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    m.field.add(name="lines", number=3, type=F.TYPE_MESSAGE, type_name=".shop.Line", label=F.LABEL_REPEATED)
    m.field.add(name="at", number=4, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
                label=F.LABEL_OPTIONAL)
    m.field.add(name="big", number=5, type=F.TYPE_UINT64, label=F.LABEL_OPTIONAL)
    # Cart first: the serializer writes the first message unless told otherwise.
    fdp.message_type.insert(0, fdp.message_type.pop())
    from google.protobuf import timestamp_pb2  # noqa: F401  (puts timestamp.proto in the pool)
    pool = descriptor_pool.Default()
    pool.Add(fdp)
    Cart = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Cart"))
    Line = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Line"))
    sr = client(eddy)
    topic = f"typed_pb_{uuid.uuid4().hex[:6]}"
    create(eddy, topic)
    ser = ProtobufSerializer(Cart, sr, {"use.deprecated.format": False})
    carts = []
    for i in range(3):
        c = Cart(id=i, total=1.5 * i, lines=[Line(sku=f"s{i}", count=i)], big=2**64 - 1 - i)
        c.at.FromDatetime(datetime.datetime(2024, 5, 1, 0, 0, i))
        carts.append(c)
    produce(eddy, topic, ser, carts[:1])
    attach(eddy, topic, "protobuf", topic, backfill=True)
    produce(eddy, topic, ser, carts[1:])
    rows = sorted(target_rows(eddy, topic, ns=NS).values(), key=lambda r: r["_offset"])
    assert [(r["id"], r["total"], r["lines"], r["big"], r["_parse_error"]) for r in rows] == [
        (i, 1.5 * i, [{"sku": f"s{i}", "count": i}], Decimal(2**64 - 1 - i), 0) for i in range(3)]
    assert [r["at"] for r in rows] == [
        datetime.datetime(2024, 5, 1, 0, 0, i, tzinfo=datetime.timezone.utc) for i in range(3)]

    topic = f"typed_json_{uuid.uuid4().hex[:6]}"
    create(eddy, topic)
    schema = {"type": "object", "title": "Reading", "properties": {
        "sensor": {"type": "string"}, "value": {"type": "number"},
        "at": {"type": "string", "format": "date-time"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "ok": {"type": ["boolean", "null"]}}}
    ser = JSONSerializer(json.dumps(schema), sr)
    docs = [{"sensor": f"t{i}", "value": 20.5 + i, "at": f"2024-05-01T00:00:0{i}Z",
             "labels": {"room": f"r{i}"}, "ok": i != 1} for i in range(3)]
    produce(eddy, topic, ser, docs[:1])
    attach(eddy, topic, "json_schema", topic, backfill=True)
    produce(eddy, topic, ser, docs[1:])
    rows = sorted(target_rows(eddy, topic, ns=NS).values(), key=lambda r: r["_offset"])
    assert [(r["sensor"], r["value"], dict(r["labels"]), r["ok"]) for r in rows] == [
        (d["sensor"], d["value"], d["labels"], d["ok"]) for d in docs]
    assert rows[2]["at"] == datetime.datetime(2024, 5, 1, 0, 0, 2, tzinfo=datetime.timezone.utc)


def test_records_without_a_registered_schema_are_marked(eddy):
    """With validation off a topic takes any bytes: a record without the wire format, with
    an id nobody registered, or cut short is a row of nulls with `_parse_error` 1, the
    source bytes kept when asked for; tombstones are rows of nulls without an error."""
    topic = f"typed_bad_{uuid.uuid4().hex[:6]}"
    create(eddy, topic)
    sr = client(eddy)
    ser = AvroSerializer(sr, json.dumps(ORDER))
    good = ser(order(1), SerializationContext(topic, MessageField.VALUE))
    attach(eddy, topic, "avro", topic, copy_source_column=True)
    bad = [b'{"id": 1}', b"\x00\x7f\xff\xff\xff" + good[5:], good[:-3], None, good]
    raw_produce(eddy, topic, bad)
    rows = sorted(target_rows(eddy, topic, ns=NS).values(), key=lambda r: r["_offset"])
    assert [r["_parse_error"] for r in rows] == [1, 1, 1, 0, 0]
    assert [r["id"] for r in rows] == [None, None, None, None, 1]
    assert [r["value"] for r in rows] == bad


def test_admin_errors_of_typed_expansions(eddy):
    topic = f"typed_err_{uuid.uuid4().hex[:6]}"
    create(eddy, topic)
    status, body = admin(eddy, "PUT", expansion_path(topic), {"target": f"{NS}.{topic}", "format": "avro"})
    assert status == 400 and "register one first" in body["error"]["message"], body
    ok(api(eddy, "POST", f"/subjects/{topic}-value/versions", {"schema": json.dumps(ORDER)}))
    status, body = admin(eddy, "PUT", expansion_path(topic),
                         {"target": f"{NS}.{topic}", "format": "protobuf"})
    assert status == 400 and "not protobuf" in body["error"]["message"], body
    status, body = admin(eddy, "PUT", expansion_path(topic),
                         {"target": f"{NS}.{topic}", "format": "avro", "schema": {"type": "struct", "fields": []}})
    assert status == 400 and "leave schema out" in body["error"]["message"], body
    attach(eddy, topic, "avro", topic)
    status, body = admin(eddy, "POST", expansion_path(topic) + "/columns", {"drop": ["id"]})
    assert status == 409 and "register a new version" in body["error"]["message"], body


def test_a_kill_during_registrations_leaves_schema_and_table_together(fresh_eddy):
    """kill -9 while a client registers versions that each add a column: after the
    restart the subject's latest version and the table's columns agree, and every
    acknowledged version is there."""
    eddy = fresh_eddy
    topic = f"typed_kill_{uuid.uuid4().hex[:6]}"
    create(eddy, topic)
    subject = f"{topic}-value"
    base = {"type": "record", "name": "R", "fields": [{"name": "id", "type": "long"}]}
    ok(api(eddy, "POST", f"/subjects/{subject}/versions", {"schema": json.dumps(base)}))
    attach(eddy, topic, "avro", topic)
    acked, stop = [], threading.Event()

    def register():
        n = 0
        while not stop.is_set():
            s = json.loads(json.dumps(base))
            s["fields"] += [{"name": f"f{j}", "type": ["null", "int"], "default": None} for j in range(n + 1)]
            try:
                r = api(eddy, "POST", f"/subjects/{subject}/versions", {"schema": json.dumps(s)})
            except requests.RequestException:
                return
            if r.status_code != 200:
                return
            acked.append(r.json()["id"])
            n += 1

    t = threading.Thread(target=register)
    t.start()
    deadline = time.time() + 120
    while len(acked) < 15:
        assert time.time() < deadline, f"only {len(acked)} registrations in 120 s"
        time.sleep(0.05)
    eddy.stop(kill=True)
    stop.set()
    t.join(timeout=60)
    eddy.start()
    versions = ok(api(eddy, "GET", f"/subjects/{subject}/versions"))
    assert len(versions) >= len(acked) + 1, (versions, acked)
    latest = json.loads(ok(api(eddy, "GET", f"/subjects/{subject}/versions/latest"))["schema"])
    table = catalog(eddy).load_table(f"{NS}.{topic}")
    columns = [f.name for f in table.schema().fields if not f.name.startswith("_")]
    assert columns == [f["name"] for f in latest["fields"]], (columns, latest)
