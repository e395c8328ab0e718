"""Trino reads Kafka topics as Iceberg tables: a real Trino server (Iceberg connector,
catalog `eddy` from compose/trino/catalog/eddy.properties) on Eddy's REST catalog and S3
endpoint. Records produced with confluent-kafka are queried with the SQL users write:
schemas, tables, columns, exact rows, JSON in values, time travel, a topic joined with
its blob expansion, transactions, and writes refused with Eddy's reason. The SQL of
docs/analytics.md and compose/README.md marked for Trino runs as written."""

import json
import re

import pytest
from confluent_kafka import Producer

from conftest import ROOT
from engines import run_doc_with_engine, trino_server
from test_expansion import attach, envelope, field
from test_iceberg import create, name, produce, sample_records
from test_txn_tables import in_txn, txn_producer


@pytest.fixture(scope="module")
def trino(eddy):
    with trino_server(eddy) as t:
        yield t


def topic_name(prefix):
    # Trino folds unquoted names to lower case and the docs' examples leave table names
    # unquoted where they can: a name of letters, digits and underscores.
    return name(prefix).replace("-", "_")


def by_offset(rows):
    return sorted(rows, key=lambda r: (r["partition"], r["offset"]))


def trino_rows(trino, topic, at=""):
    """SELECT key, value, partition, offset, timestamp, headers as users write it, in
    the shape test_iceberg.produce returns (timestamps in ms, headers as pairs)."""
    rows = trino.query(f"SELECT key, value, partition, \"offset\", \"timestamp\", headers "
                       f"FROM eddy.kafka_topics.{topic} {at}")
    return by_offset({
        "key": key, "value": value, "partition": partition, "offset": offset,
        "timestamp": int(ts.timestamp() * 1000 + 0.5),
        "headers": [tuple(h) for h in headers],
    } for key, value, partition, offset, ts, headers in rows)


def test_the_docs_trino_examples_run_as_written(eddy, trino):
    """docs/analytics.md from the top (topic, expansion, records), every Trino query in
    it with the output it shows (as the CLI prints it); then compose/README.md's."""
    def run(sql):
        r = trino.cli(sql)
        return r.returncode == 0, r.stdout if r.returncode == 0 else r.stdout + r.stderr

    assert run_doc_with_engine(ROOT / "docs" / "analytics.md", eddy, "trino", run) >= 8
    # compose/README.md's queries read `orders` (made above) and Debezium's change topic
    # of its CDC walk-through, produced here as the connector writes it.
    produce_cdc_events(eddy, "demo-cdc.public.customers")
    assert run_doc_with_engine(ROOT / "compose" / "README.md", eddy, "trino", run,
                               run_blocks=False) >= 4


def produce_cdc_events(eddy, topic):
    """The change events of compose/README.md's walk-through: the snapshot of customers
    1-3, then an insert of 4, an update of 2 and a delete of 3 (with its tombstone), keyed
    by the primary key as Debezium's JSON converter writes them."""
    create(eddy, topic, 1)
    row = lambda i, email, balance: {"id": i, "email": email, "balance": balance}
    events = [  # compose/postgres/init.sql's rows, then the walk-through's changes
        (1, envelope("r", None, row(1, "ada@example.com", "10.50"), 1)),
        (2, envelope("r", None, row(2, "bob@example.com", "20.00"), 1)),
        (3, envelope("r", None, row(3, "cyd@example.com", "30.25"), 1)),
        (4, envelope("c", None, row(4, "dee@example.com", "40.00"), 2)),
        (2, envelope("u", row(2, "bob@example.com", "20.00"), row(2, "bob@example.com", "25.75"), 3)),
        (3, envelope("d", row(3, "cyd@example.com", "30.25"), None, 4)),
        (3, None),  # the delete's tombstone
    ]
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for key, value in events:
        p.produce(topic, key=json.dumps({"id": key}), value=value, partition=0)
    assert p.flush(30) == 0


def test_schemas_tables_and_columns(eddy, trino):
    topic = topic_name("shape")
    create(eddy, topic, 2)
    schemas = [r[0] for r in trino.query("SHOW SCHEMAS FROM eddy")]
    assert "kafka_topics" in schemas, schemas
    assert [topic] == [r[0] for r in trino.query("SHOW TABLES FROM eddy.kafka_topics")
                       if r[0] == topic]
    described = [tuple(r[:2]) for r in trino.query(f"DESCRIBE eddy.kafka_topics.{topic}")]
    assert described == [
        ("partition", "integer"),
        ("offset", "bigint"),
        ("timestamp", "timestamp(6) with time zone"),
        ("timestamp_broker", "timestamp(6) with time zone"),
        ("key", "varbinary"),
        ("value", "varbinary"),
        ("headers", "array(row(key varchar, value varbinary))"),
    ]
    # An empty topic is an empty table, not an error.
    assert trino.query(f"SELECT count(*) FROM eddy.kafka_topics.{topic}") == [[0]]


def test_rows_are_exactly_the_produced_records(eddy, trino):
    topic = topic_name("rows")
    create(eddy, topic, 3)
    # Null keys and values, empty and repeated headers, a header with a null value.
    first = produce(eddy, topic, sample_records(40, 3))
    assert trino_rows(trino, topic) == by_offset(first)
    # Acknowledged just now: the next query sees them (its load seals the log's tail).
    second = produce(eddy, topic, sample_records(9, 3))
    assert trino_rows(trino, topic) == by_offset(first + second)
    # Pruned by partition and offset, the way a reader picks one record.
    pick = second[4]
    assert trino.query(
        f"SELECT value FROM eddy.kafka_topics.{topic} "
        f"WHERE partition = {pick['partition']} AND \"offset\" = {pick['offset']}") == [[pick["value"]]]


def produce_json(eddy, topic, docs, partitions=1):
    """JSON values with keys and a header, round-robin over the partitions; returns the
    acked (partition, offset) of each, in order."""
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5})
    acked = {}
    for i, d in enumerate(docs):
        p.produce(topic, key=f"k{i}", value=json.dumps(d), partition=i % partitions,
                  headers={"source": b"test"},
                  on_delivery=lambda err, m, i=i: acked.__setitem__(i, (err, m.partition(), m.offset())))
    assert p.flush(30) == 0
    assert all(acked[i][0] is None for i in acked), acked
    return [acked[i][1:] for i in range(len(docs))]


def test_json_values_with_from_utf8_and_json_extract_scalar(eddy, trino):
    topic = topic_name("json")
    create(eddy, topic, 2)
    docs = [{"item": it, "qty": q, "shop": {"city": c}} for it, q, c in
            [("apple", 3, "Berlin"), ("pear", 1, "Paris"), ("apple", 4, "Paris"), ("plum", 7, "Berlin")]]
    produce_json(eddy, topic, docs, partitions=2)
    rows = trino.query(f"SELECT from_utf8(value) FROM eddy.kafka_topics.{topic}")
    assert sorted(json.loads(r[0])["qty"] for r in rows) == [1, 3, 4, 7]
    assert trino.query(f"""
        SELECT json_extract_scalar(from_utf8(value), '$.item') AS item,
               sum(CAST(json_extract_scalar(from_utf8(value), '$.qty') AS integer)) AS qty
        FROM eddy.kafka_topics.{topic}
        GROUP BY 1 ORDER BY 1""") == [["apple", 7], ["pear", 1], ["plum", 7]]
    assert trino.query(f"""
        SELECT from_utf8(key) FROM eddy.kafka_topics.{topic}
        WHERE json_extract_scalar(from_utf8(value), '$.shop.city') = 'Paris'
        ORDER BY 1""") == [["k1"], ["k2"]]
    assert trino.query(f"""
        SELECT DISTINCT from_utf8(h.value) FROM eddy.kafka_topics.{topic}
        CROSS JOIN UNNEST(headers) AS h WHERE h.key = 'source'""") == [["test"]]


def test_time_travel_to_an_older_snapshot(eddy, trino):
    topic = topic_name("travel")
    create(eddy, topic, 2)
    first = produce(eddy, topic, sample_records(10, 2))
    assert trino_rows(trino, topic) == by_offset(first)
    snaps = trino.query(f'SELECT snapshot_id FROM eddy.kafka_topics."{topic}$snapshots" '
                        "ORDER BY committed_at")
    older = snaps[-1][0]
    second = produce(eddy, topic, sample_records(6, 2))
    assert trino_rows(trino, topic) == by_offset(first + second)
    assert trino_rows(trino, topic, f"FOR VERSION AS OF {older}") == by_offset(first)
    newer = trino.query(f'SELECT snapshot_id, parent_id FROM eddy.kafka_topics."{topic}$snapshots" '
                        "ORDER BY committed_at")
    assert len(newer) > len(snaps) and newer[-1][1] is not None
    assert trino.query(f'SELECT count(*) FROM eddy.kafka_topics."{topic}$history" '
                       "WHERE is_current_ancestor") == [[len(newer)]]


def test_a_topic_joined_with_its_expansion(eddy, trino):
    topic = topic_name("joined")
    target = topic_name("orders")
    create(eddy, topic, 1)
    attach(eddy, topic, {"type": "struct", "fields": [
        field("id", "long"), field("item", "string"), field("qty", "int"),
        field("customer", {"type": "struct", "fields": [field("name", "string")]}),
    ]}, f"expanded.{target}", flatten_path=True)
    docs = [{"id": 1, "item": "apple", "qty": 3, "customer": {"name": "Ada"}},
            {"id": 2, "item": "pear", "qty": 1, "customer": {"name": "Grace"}, "note": "gift"},
            {"id": 3, "item": "plum", "qty": "seven", "customer": {"name": "Ada"}}]
    at = produce_json(eddy, topic, docs)
    assert target in [r[0] for r in trino.query("SHOW TABLES FROM eddy.expanded")]
    rows = trino.query(f"""
        SELECT o.partition, o."offset", from_utf8(o.key), e.id, e.item, e.qty,
               e.customer__name, e._excess_values, e._parse_error
        FROM eddy.kafka_topics.{topic} o
        JOIN eddy.expanded.{target} e ON e._kafka_partition = o.partition AND e._offset = o."offset"
        ORDER BY o."offset" """)
    assert rows == [
        [*at[0], "k0", 1, "apple", 3, "Ada", 0, 0],
        [*at[1], "k1", 2, "pear", 1, "Grace", 1, 0],
        [*at[2], "k2", 3, "plum", None, "Ada", 0, 1],  # "seven" is no int: null, parse error
    ]
    assert trino.query(f"""
        SELECT e.customer__name, sum(e.qty) FROM eddy.expanded.{target} e
        GROUP BY 1 ORDER BY 1""") == [["Ada", 3], ["Grace", 1]]


def test_open_and_aborted_transactions_never_show(eddy, trino):
    topic = topic_name("txn")
    create(eddy, topic, 1)
    p = txn_producer(eddy, f"tid-{topic}")
    in_txn(p, topic, [b"c1", b"c2"], commit=True)
    in_txn(p, topic, [b"a1", b"a2"], commit=False)

    def values():
        return [r[0] for r in trino.query(
            f'SELECT value FROM eddy.kafka_topics.{topic} ORDER BY "offset"')]

    assert values() == [b"c1", b"c2"]
    p.begin_transaction()
    p.produce(topic, key=b"k", value=b"open", partition=0)
    assert p.flush(30) == 0
    assert values() == [b"c1", b"c2"]
    p.abort_transaction(30)
    assert values() == [b"c1", b"c2"]
    in_txn(p, topic, [b"c3"], commit=True)
    assert values() == [b"c1", b"c2", b"c3"]


def causes(error):
    """The messages of a Trino error and its causes, outermost first."""
    out, info = [error.message], error.failure_info
    while info:
        out.append(info.get("message") or "")
        info = info.get("cause")
    return out


def test_writes_to_topic_tables_are_refused_with_the_reason(eddy, trino):
    import trino as trino_client

    topic = topic_name("readonly")
    create(eddy, topic, 1)
    produce(eddy, topic, sample_records(3, 1))
    before = trino_rows(trino, topic)

    # INSERT writes its Parquet file first: Eddy's S3 endpoint refuses it (403), and
    # the reason is in the error Trino returns (the CLI prints it with --debug).
    with pytest.raises(trino_client.exceptions.TrinoExternalError) as e:
        trino.query(f"INSERT INTO eddy.kafka_topics.{topic} (partition, \"offset\", \"timestamp\", headers) "
                    "VALUES (0, 99, current_timestamp, ARRAY[])")
    assert any("AccessDenied" in m or "Access Denied" in m for m in causes(e.value)), causes(e.value)
    assert any("bucket kafka is managed by the broker" in m for m in causes(e.value)), causes(e.value)

    # Changes that go to the catalog get its 403 and message as the query's error.
    for sql in (f"COMMENT ON TABLE eddy.kafka_topics.{topic} IS 'mine'",
                f"ALTER TABLE eddy.kafka_topics.{topic} ADD COLUMN note varchar",
                f"DROP TABLE eddy.kafka_topics.{topic}",
                "CREATE TABLE eddy.kafka_topics.made_by_sql (a integer)"):
        with pytest.raises(trino_client.exceptions.TrinoQueryError) as e:
            trino.query(sql)
        assert any(re.search(r"Forbidden: .*Kafka topics and read-only", m) for m in causes(e.value)), (
            sql, causes(e.value))
    assert trino_rows(trino, topic) == before


def test_a_buckets_inventory_is_its_listing(eddy, trino):
    """S3 Metadata's inventory table read by Trino right after the changes: exactly the
    bucket's current objects, tags included."""
    from test_bucket_metadata import bucket_name, enable, s3
    client = s3(eddy)
    bucket = bucket_name()
    client.create_bucket(Bucket=bucket)
    enable(client, bucket)
    for i in range(12):
        client.put_object(Bucket=bucket, Key=f"logs/{i:02}.txt", Body=b"l" * i,
                          Tagging=f"n={i}")
    client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "logs/00.txt"},
                                                             {"Key": "logs/05.txt"}]})
    rows = trino.query(f'SELECT key, size, object_tags[\'n\'] FROM eddy."b_{bucket}".inventory '
                       f"ORDER BY key")
    listed = [o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert [r[0] for r in rows] == listed
    assert [(r[1], r[2]) for r in rows] == [(int(k[5:7]), str(int(k[5:7]))) for k in listed]
