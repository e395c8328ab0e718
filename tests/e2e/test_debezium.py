"""The worked example of the Kafka Connect guide (seed 004) end to end with real software:
PostgreSQL 15 with logical decoding, the Debezium 3.6 PostgreSQL connector on a real
Kafka Connect 4.3 worker, its change events in an eddy topic (snapshot, insert, update,
delete + tombstone, heartbeats), then the change topic read as an Iceberg table through
eddy's REST catalog with PyIceberg and with DuckDB, where the "latest change per
customer" query gives back the PostgreSQL table's current contents."""

import json
import shutil
import uuid

import pytest
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, ResourceType)

import postgres
from conftest import new_eddy
from connect import Worker, client_config, read_topic, wait_for
from test_iceberg import NS, catalog, duckdb_with_extensions

@pytest.fixture(scope="module")
def eddy(tmp_path_factory):
    """This module's server: it looks at compacted partitions every 200 ms (so a
    tombstone's delete.retention.ms is seen to pass within the test)."""
    server = new_eddy(tmp_path_factory.mktemp("eddy"),
                      extra_args=["--kafka-compaction-check-interval-ms", "200"]).start()
    yield server
    server.stop()


pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or not postgres.available(),
    reason="needs Java and PostgreSQL 15 (scripts/test installs both)",
)

DB = "shop"
USER, PASSWORD = "debezium", "dbz-secret"
PREFIX = f"cdc{uuid.uuid4().hex[:6]}"
TOPIC = f"{PREFIX}.public.customers"
HEARTBEATS = f"__debezium-heartbeat.{PREFIX}"
CONNECTOR = f"{PREFIX}-customers"


def connector_config(pg):
    """The seed's documented configuration, pointed at the test's PostgreSQL."""
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": str(pg.port),
        "database.user": USER,
        "database.password": PASSWORD,
        "database.dbname": DB,
        "topic.prefix": PREFIX,
        "table.include.list": "public.customers",
        "slot.name": f"{PREFIX}_slot",
        "publication.name": f"{PREFIX}_pub",
        "publication.autocreate.mode": "filtered",
        "tombstones.on.delete": "true",
        "decimal.handling.mode": "string",
        # The seed says 10000; 1 s gives the heartbeat check something to see quickly.
        "heartbeat.interval.ms": "1000",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        # The change topic (and the heartbeat topic) are created compacted by Connect's
        # topic creation (CreateTopics with these configs), not pre-created: eddy does
        # not create topics on its own.
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.cleanup.policy": "compact",
        # Keeps every change for the history checks below until compaction is allowed
        # to touch them (test_compaction_keeps_the_latest_change_per_row, last).
        "topic.creation.default.min.compaction.lag.ms": "3600000",
    }


def customers(pg):
    """The table's current rows as Debezium's `after` images (decimal as a string)."""
    rows = pg.psql("SELECT id, email, balance FROM customers ORDER BY id", db=DB)
    return {json.dumps({"id": int(i)}): {"id": int(i), "email": e, "balance": b}
            for i, e, b in rows}


def events(bootstrap, topic=TOPIC):
    """The topic's records in offset order: (offset, key JSON, value JSON or None)."""
    out = []
    for _, off, k, v in read_topic(bootstrap, topic):
        out.append((off, json.loads(k) if k else None, json.loads(v) if v is not None else None))
    return out


@pytest.fixture(scope="module")
def cdc(eddy, tmp_path_factory):
    """PostgreSQL with a `customers` table, a Connect worker running the Debezium
    connector against eddy, and a known sequence of changes applied: yields what the
    tests check. Every process started here is stopped, even on failure."""
    tmp = tmp_path_factory.mktemp("debezium")  # pytest keeps the last runs' logs
    pg = postgres.Postgres()
    worker = None
    try:
        pg.start()
        pg.psql(f"CREATE ROLE {USER} WITH LOGIN REPLICATION PASSWORD '{PASSWORD}'")
        pg.psql(f"CREATE DATABASE {DB} OWNER {USER}")
        # The connector's user owns the table: a filtered publication needs that.
        pg.psql("""
            CREATE TABLE customers (id integer PRIMARY KEY, email text NOT NULL,
                                    balance numeric(10, 2));
            -- Full `before` images in update and delete events.
            ALTER TABLE customers REPLICA IDENTITY FULL;
            INSERT INTO customers VALUES (1, 'ada@example.com', 10.50),
                                         (2, 'bob@example.com', 20.00),
                                         (3, 'cyd@example.com', 30.25);
        """, db=DB, user=USER, password=PASSWORD)
        snapshot = customers(pg)

        # Unlike the seed's broker, eddy needs neither idempotence nor compression off:
        # the connector's producer is idempotent and compresses with zstd here.
        worker = Worker(tmp, eddy.bootstrap, f"{PREFIX}-connect", "w1", {
            "producer.enable.idempotence": "true", "producer.compression.type": "zstd",
        }).start()
        worker.put_config(CONNECTOR, connector_config(pg))
        worker.wait_running(CONNECTOR, 1, timeout=120)
        # The snapshot is in the topic: the slot exists, streaming follows from it.
        wait_for(lambda: topic_exists(eddy) and len(events(eddy.bootstrap)) >= 3, 120,
                 "the snapshot events")

        pg.psql("INSERT INTO customers VALUES (4, 'dee@example.com', 40.00)", db=DB)
        pg.psql("UPDATE customers SET balance = 25.75 WHERE id = 2", db=DB)
        pg.psql("DELETE FROM customers WHERE id = 3", db=DB)
        pg.psql("INSERT INTO customers VALUES (5, 'eve@example.com', 0.99)", db=DB)
        pg.psql("UPDATE customers SET email = 'dee@example.org' WHERE id = 4", db=DB)
        # 3 snapshot rows, c4, u2, d3 + its tombstone, c5, u4.
        got = wait_for(lambda: (lambda e: e if len(e) >= 9 else None)(events(eddy.bootstrap)),
                       120, "the change events")
        yield {"pg": pg, "worker": worker, "snapshot": snapshot, "events": got,
               "current": customers(pg)}
    finally:
        if worker is not None:
            worker.kill()
        pg.stop()


def topic_exists(eddy, topic=TOPIC):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    return topic in a.list_topics(timeout=30).topics


def test_change_topic_is_created_compacted(eddy, cdc):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    for t in (TOPIC, HEARTBEATS):
        cfg = a.describe_configs([ConfigResource(ResourceType.TOPIC, t)])
        configs = list(cfg.values())[0].result(timeout=30)
        assert configs["cleanup.policy"].value == "compact", t


def test_change_events(cdc):
    """Snapshot rows (r), then c, u, d and a tombstone, keyed by the primary key, with
    full before images (REPLICA IDENTITY FULL) and decimals as strings."""
    evs = cdc["events"]
    assert len(evs) == 9, evs
    offsets = [o for o, _, _ in evs]
    assert offsets == sorted(offsets)
    ops = [(k["id"], v["op"] if v else None) for _, k, v in evs]
    assert ops == [(1, "r"), (2, "r"), (3, "r"), (4, "c"), (2, "u"), (3, "d"), (3, None),
                   (5, "c"), (4, "u")], ops
    by = {(k["id"], v["op"] if v else None): v for _, k, v in evs}
    # Snapshot: the rows as they were, no before image.
    for i in (1, 2, 3):
        r = by[(i, "r")]
        assert r["before"] is None
        assert r["after"] == cdc["snapshot"][json.dumps({"id": i})]
        assert r["source"]["table"] == "customers" and r["source"]["snapshot"] in ("true", "first", "last", "first_in_data_collection", "last_in_data_collection")
    assert by[(4, "c")]["before"] is None
    assert by[(4, "c")]["after"] == {"id": 4, "email": "dee@example.com", "balance": "40.00"}
    assert by[(2, "u")]["before"] == {"id": 2, "email": "bob@example.com", "balance": "20.00"}
    assert by[(2, "u")]["after"] == {"id": 2, "email": "bob@example.com", "balance": "25.75"}
    assert by[(3, "d")]["before"] == {"id": 3, "email": "cyd@example.com", "balance": "30.25"}
    assert by[(3, "d")]["after"] is None
    # The tombstone follows its delete directly, with the same key (so compaction can
    # drop the row's earlier events, then the tombstone itself).
    i = ops.index((3, "d"))
    assert evs[i + 1][1] == evs[i][1] == {"id": 3} and evs[i + 1][2] is None
    for _, _, v in evs:
        if v is not None:
            assert v["source"]["connector"] == "postgresql" and v["source"]["name"] == PREFIX
            assert isinstance(v["ts_ms"], int)


def test_connector_producer_idempotent_and_compressed(cdc):
    cfg = client_config(cdc["worker"].log_text(), "ProducerConfig",
                        f"connector-producer-{CONNECTOR}-0")
    assert "enable.idempotence = true" in cfg and "compression.type = zstd" in cfg, cfg


def test_heartbeats(eddy, cdc):
    """Debezium's heartbeats land on __debezium-heartbeat.<prefix> (a name with a
    leading __, as the seed says the broker accepts)."""
    def beats():
        evs = events(eddy.bootstrap, HEARTBEATS)
        return evs if evs else None
    evs = wait_for(beats, 60, "heartbeat records")
    for _, k, v in evs:
        assert k == {"serverName": PREFIX}, k
        assert isinstance(v["ts_ms"], int), v


# The seed's "latest change per customer", ordered by the table's `offset` column rather
# than timestamp_broker; tombstones (value IS NULL) skipped; deletes then filtered out,
# so the result is the table's current state.
LATEST = """
SELECT key_json, after_json FROM (
  SELECT decode(key) AS key_json,
         json_extract_string(decode(value), '$.op') AS op,
         json_extract(decode(value), '$.after') AS after_json,
         row_number() OVER (PARTITION BY key ORDER BY "offset" DESC) AS rn
  FROM {table}
  WHERE value IS NOT NULL
)
WHERE rn = 1 AND op <> 'd'
ORDER BY key_json
"""


def as_state(rows):
    return {json.dumps(json.loads(k)): json.loads(a) for k, a in rows}


def test_latest_change_per_customer_pyiceberg(eddy, cdc):
    """PyIceberg loads the change topic's table from eddy's REST catalog and reads its
    Parquet files from eddy's S3 endpoint; the query runs over that Arrow table."""
    import duckdb

    # A tuple: Debezium's topic names have dots, which a dotted string would split.
    tbl = catalog(eddy).load_table((NS, TOPIC))
    arrow = tbl.scan().to_arrow()
    assert arrow.num_rows == len(cdc["events"])
    assert sorted(arrow.column("offset").to_pylist()) == [o for o, _, _ in cdc["events"]]
    con = duckdb.connect()
    con.register("changes", arrow)
    rows = con.execute(LATEST.format(table="changes")).fetchall()
    assert as_state(rows) == cdc["current"]
    assert json.dumps({"id": 3}) not in as_state(rows)  # deleted


def test_latest_change_per_customer_duckdb(eddy, cdc):
    """DuckDB's iceberg extension attaches eddy's catalog and runs the same query."""
    # DuckDB reads the snapshot current when its transaction began: seal the tail first.
    catalog(eddy).load_table((NS, TOPIC))
    con = duckdb_with_extensions()
    con.execute(f"""
        CREATE SECRET eddy_catalog (TYPE iceberg, CLIENT_ID '{eddy.access_key}',
            CLIENT_SECRET '{eddy.secret_key}',
            OAUTH2_SERVER_URI '{eddy.http_url}/iceberg/v1/oauth/tokens')""")
    con.execute(f"""
        CREATE SECRET eddy_s3 (TYPE s3, KEY_ID '{eddy.access_key}', SECRET '{eddy.secret_key}',
            ENDPOINT '127.0.0.1:{eddy.s3_port}', URL_STYLE 'path', USE_SSL false,
            REGION 'us-east-1')""")
    con.execute(f"""
        ATTACH 'kafka' AS eddy (TYPE iceberg, SECRET eddy_catalog,
            ENDPOINT '{eddy.http_url}/iceberg', ACCESS_DELEGATION_MODE 'none')""")
    rows = con.execute(LATEST.format(table=f'eddy.{NS}."{TOPIC}"')).fetchall()
    assert as_state(rows) == cdc["current"]
    assert sorted(json.loads(k)["id"] for k, _ in rows) == [1, 2, 4, 5]



EXPANDED = "docs_kafka_connect"


def expanded_rows(eddy):
    t = catalog(eddy).load_table((EXPANDED, "customers_changes")).scan().to_arrow()
    return sorted(t.to_pylist(), key=lambda r: r["_offset"])


def test_change_events_expanded_into_typed_columns(eddy, cdc):
    """The seed's blob expansion of the change topic (before/after as structs, flattened),
    attached after the connector created the topic, with a backfill so the events
    already there are expanded too; read with PyIceberg."""
    from test_expansion import ENVELOPE, admin, expansion_path
    status, view = admin(eddy, "PUT", expansion_path(TOPIC), {
        "target": f"{EXPANDED}.customers_changes", "schema": ENVELOPE, "flatten_path": True,
        "backfill": True})
    assert status == 200, view
    rows = expanded_rows(eddy)
    assert [r["_offset"] for r in rows] == [o for o, _, _ in cdc["events"]]
    for r, (_, k, v) in zip(rows, cdc["events"]):
        if v is None:  # the tombstone: every expanded column null, no parse error
            assert r["op"] is None and r["after__id"] is None and r["_parse_error"] == 0
            continue
        assert r["op"] == v["op"] and r["ts_ms"] == v["ts_ms"] and r["_parse_error"] == 0
        for side in ("before", "after"):
            for f in ("id", "email", "balance"):
                want = v[side][f] if v[side] else None
                assert r[f"{side}__{f}"] == want, (side, f, r)
        # source, transaction, ts_us, ts_ns are not in the schema.
        assert r["_excess_values"] == len(set(v) - {"op", "ts_ms", "before", "after"})
    assert rows[4]["before__balance"] == "20.00" and rows[4]["after__balance"] == "25.75"


def test_compaction_keeps_the_latest_change_per_row(eddy, cdc):
    """Last in this module (the tests above read the whole history). With the lag that
    held compaction back lowered, the change topic keeps the latest event per row at its
    offset (the deleted row's tombstone among them), then the tombstone goes after
    delete.retention.ms; the latest-change query still gives the table's contents."""
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    res = ConfigResource(ResourceType.TOPIC, TOPIC, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in {
            "min.compaction.lag.ms": "0", "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "4000"}.items()])
    for f in a.incremental_alter_configs([res]).values():
        f.result(timeout=30)
    latest = {}
    for off, k, v in cdc["events"]:
        latest[json.dumps(k)] = (off, k, v)
    want = sorted(latest.values(), key=lambda e: e[0])
    assert [(k["id"], v["op"] if v else None) for _, k, v in want] == \
        [(1, "r"), (2, "u"), (3, None), (5, "c"), (4, "u")]
    wait_for(lambda: events(eddy.bootstrap) == want, 60, "the compacted change topic")
    without_tombstone = [e for e in want if e[2] is not None]
    wait_for(lambda: events(eddy.bootstrap) == without_tombstone, 60,
             "the tombstone to go after delete.retention.ms")
    tbl = catalog(eddy).load_table((NS, TOPIC))
    arrow = tbl.scan().to_arrow()
    assert sorted(arrow.column("offset").to_pylist()) == [o for o, _, _ in without_tombstone]
    import duckdb
    con = duckdb.connect()
    con.register("changes", arrow)
    assert as_state(con.execute(LATEST.format(table="changes")).fetchall()) == cdc["current"]
    # The expansion's target keeps every change (compaction waited for it to read them).
    assert [r["_offset"] for r in expanded_rows(eddy)] == [o for o, _, _ in cdc["events"]]
