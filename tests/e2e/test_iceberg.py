"""Every topic is an Iceberg table: produce with confluent-kafka, then read the table
through Eddy's Iceberg REST catalog and Eddy's S3 endpoint with PyIceberg and DuckDB,
and check that the rows are exactly the records produced."""

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.expressions import And, EqualTo

NS = "kafka_topics"


def name(prefix="tbl"):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create(eddy, topic, partitions):
    # The sample records are stamped in 2023: kept from retention (7 days by default),
    # which would otherwise delete them at the first retention pass.
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1, config={"retention.ms": "-1"})])[
        topic].result(timeout=30)


def produce(eddy, topic, records):
    """Produces `records` (dicts with partition, key, value, headers, timestamp) and
    returns them with the offsets the broker acknowledged."""
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5})
    acked = []

    def done(record):
        def report(err, msg):
            assert err is None, err
            acked.append((record, msg))
        return report

    for r in records:
        p.produce(
            topic,
            value=r["value"],
            key=r["key"],
            partition=r["partition"],
            headers=r["headers"],
            timestamp=r["timestamp"],
            on_delivery=done(r),
        )
    assert p.flush(30) == 0
    assert len(acked) == len(records)
    # Delivery reports carry the offset; headers as sent come from the record itself.
    return [
        {
            "partition": m.partition(),
            "offset": m.offset(),
            "key": r["key"],
            "value": r["value"],
            "headers": list(r["headers"]),
            "timestamp": r["timestamp"],
        }
        for r, m in acked
    ]


def catalog(eddy, secret=None):
    return RestCatalog(
        "eddy",
        uri=f"{eddy.http_url}/iceberg",
        credential=f"{eddy.access_key}:{secret or eddy.secret_key}",
        warehouse="kafka",
        **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"},
    )


def rows_of(table: pa.Table):
    """Table rows in the same shape as `produce` returns, sorted by (partition, offset)."""
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    out = []
    for i, r in enumerate(table.to_pylist()):
        out.append({
            "partition": r["partition"],
            "offset": r["offset"],
            "key": r["key"],
            "value": r["value"],
            "headers": [(h["key"], h["value"]) for h in r["headers"]],
            "timestamp": ts[i] // 1000,
        })
    return sorted(out, key=lambda r: (r["partition"], r["offset"]))


def sample_records(n, partitions):
    return [
        {
            "partition": i % partitions,
            "key": None if i % 7 == 0 else f"key-{i}".encode(),
            "value": None if i % 11 == 0 else f"value-{i}-".encode() * (i % 5 + 1),
            "headers": [] if i % 3 == 0 else [("h1", f"one-{i}".encode()), ("h2", None)],
            "timestamp": 1_700_000_000_000 + i * 1000,
        }
        for i in range(n)
    ]


def test_pyiceberg_reads_exactly_the_produced_records(eddy):
    topic = name()
    create(eddy, topic, 3)
    first = produce(eddy, topic, sample_records(40, 3))
    cat = catalog(eddy)
    assert (NS,) in cat.list_namespaces()
    assert (NS, topic) in cat.list_tables(NS)

    tbl = cat.load_table(f"{NS}.{topic}")
    assert [f.name for f in tbl.schema().fields] == [
        "partition", "offset", "timestamp", "timestamp_broker", "key", "value", "headers",
    ]
    assert [f.source_id for f in tbl.spec().fields] == [tbl.schema().find_field("partition").field_id]
    got = rows_of(tbl.scan().to_arrow())
    assert got == sorted(first, key=lambda r: (r["partition"], r["offset"]))

    # More records after the first snapshot: a new load sees old and new ones.
    second = produce(eddy, topic, sample_records(25, 3))
    tbl = cat.load_table(f"{NS}.{topic}")
    got = rows_of(tbl.scan().to_arrow())
    assert got == sorted(first + second, key=lambda r: (r["partition"], r["offset"]))
    assert len(tbl.snapshots()) >= 2

    # File statistics let a reader prune by partition and offset.
    pick = second[3]
    scan = tbl.scan(row_filter=And(EqualTo("partition", pick["partition"]), EqualTo("offset", pick["offset"])))
    files = list(scan.plan_files())
    assert len(files) == 1
    assert rows_of(scan.to_arrow()) == [pick]


def test_empty_topic_is_an_empty_table(eddy):
    topic = name()
    create(eddy, topic, 2)
    tbl = catalog(eddy).load_table(f"{NS}.{topic}")
    assert tbl.scan().to_arrow().num_rows == 0


def duckdb_with_extensions():
    """A DuckDB connection with httpfs, avro and iceberg loaded from the PyPI wheels
    (no download: each wheel carries its extension file)."""
    import importlib

    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False})
    for ext in ("httpfs", "avro", "iceberg"):
        mod = importlib.import_module(f"duckdb_extension_{ext}")
        path = Path(mod.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{ext}.duckdb_extension"
        con.execute(f"LOAD '{path}'")
    return con


def duckdb_attached(eddy):
    """DuckDB with eddy's broker warehouse attached as catalog `eddy` (the REST catalog's
    OAuth2 tokens, eddy's S3 endpoint for the files), as a user sets it up."""
    con = duckdb_with_extensions()
    con.execute(f"""
        CREATE SECRET eddy_catalog (TYPE iceberg, CLIENT_ID '{eddy.access_key}',
            CLIENT_SECRET '{eddy.secret_key}',
            OAUTH2_SERVER_URI '{eddy.http_url}/iceberg/v1/oauth/tokens');
        CREATE SECRET eddy_s3 (TYPE s3, KEY_ID '{eddy.access_key}',
            SECRET '{eddy.secret_key}', ENDPOINT '127.0.0.1:{eddy.s3_port}',
            URL_STYLE 'path', USE_SSL false, REGION 'us-east-1');
        ATTACH 'kafka' AS eddy (TYPE iceberg, SECRET eddy_catalog,
            ENDPOINT '{eddy.http_url}/iceberg', ACCESS_DELEGATION_MODE 'none');
    """)
    return con


def test_duckdb_reads_the_table(eddy):
    topic = name()
    create(eddy, topic, 2)
    produced = produce(eddy, topic, sample_records(30, 2))
    # DuckDB reads the snapshot current when its transaction began, so its own load
    # (which seals the tail) comes too late for that transaction: seal first.
    catalog(eddy).load_table(f"{NS}.{topic}")
    con = duckdb_with_extensions()
    con.execute(f"""
        CREATE SECRET eddy_catalog (
            TYPE iceberg,
            CLIENT_ID '{eddy.access_key}',
            CLIENT_SECRET '{eddy.secret_key}',
            OAUTH2_SERVER_URI '{eddy.http_url}/iceberg/v1/oauth/tokens'
        )""")
    con.execute(f"""
        CREATE SECRET eddy_s3 (
            TYPE s3,
            KEY_ID '{eddy.access_key}',
            SECRET '{eddy.secret_key}',
            ENDPOINT '127.0.0.1:{eddy.s3_port}',
            URL_STYLE 'path',
            USE_SSL false,
            REGION 'us-east-1'
        )""")
    con.execute(f"""
        ATTACH 'kafka' AS eddy (
            TYPE iceberg,
            SECRET eddy_catalog,
            ENDPOINT '{eddy.http_url}/iceberg',
            ACCESS_DELEGATION_MODE 'none'
        )""")
    t = con.execute(
        f'SELECT * FROM eddy.{NS}."{topic}" ORDER BY "partition", "offset"'
    ).arrow()
    if isinstance(t, pa.RecordBatchReader):
        t = t.read_all()
    assert rows_of(t) == sorted(produced, key=lambda r: (r["partition"], r["offset"]))


def test_every_acked_record_is_in_the_next_scan(eddy):
    """Each thread produces one record at a time and, as soon as it is acknowledged,
    loads the table and scans for it: the row must be there."""
    topic = name()
    create(eddy, topic, 4)
    cat = catalog(eddy)
    errors = []

    def worker(w):
        try:
            p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 0})
            for i in range(8):
                acked = []
                p.produce(topic, value=f"w{w}-{i}".encode(), partition=w % 4,
                          on_delivery=lambda err, msg: acked.append((err, msg)))
                assert p.flush(30) == 0
                err, msg = acked[0]
                assert err is None, err
                tbl = cat.load_table(f"{NS}.{topic}")
                rows = tbl.scan(row_filter=And(EqualTo("partition", msg.partition()),
                                               EqualTo("offset", msg.offset()))).to_arrow()
                assert rows.column("value").to_pylist() == [f"w{w}-{i}".encode()], (w, i)
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    tbl = catalog(eddy).load_table(f"{NS}.{topic}")
    assert sorted(tbl.scan().to_arrow().column("value").to_pylist()) == sorted(
        f"w{w}-{i}".encode() for w in range(4) for i in range(8)
    )
    # Dozens of seals, yet manifests were merged: planning reads at most 8.
    assert len(tbl.snapshots()) > 8
    assert 1 <= len(tbl.current_snapshot().manifests(tbl.io)) <= 8


def test_deleted_topic_drops_its_table(eddy):
    topic = name()
    create(eddy, topic, 1)
    produce(eddy, topic, sample_records(5, 1))
    cat = catalog(eddy)
    tbl = cat.load_table(f"{NS}.{topic}")
    files = [t.file.file_path for t in tbl.scan().plan_files()]
    assert files and all(tbl.io.new_input(f).exists() for f in files)
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.delete_topics([topic])[topic].result(timeout=30)
    with pytest.raises(NoSuchTableError):
        cat.load_table(f"{NS}.{topic}")
    assert (NS, topic) not in cat.list_tables(NS)
    assert not any(tbl.io.new_input(f).exists() for f in files)
    assert not tbl.io.new_input(tbl.metadata_location).exists()


def rest(eddy, method, path, token=None, body=None, form=None):
    headers = {}
    data = None
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(f"{eddy.http_url}/iceberg{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


def token(eddy, secret=None):
    return rest(eddy, "POST", "/v1/oauth/tokens", form={
        "grant_type": "client_credentials",
        "client_id": eddy.access_key,
        "client_secret": secret or eddy.secret_key,
        "scope": "catalog",
    })


def test_rest_auth_config_and_read_only(eddy):
    status, body = token(eddy, secret="wrong")
    assert status == 401 and body["error"] == "invalid_client"
    status, body = rest(eddy, "GET", "/v1/config")
    assert status == 401 and body["error"]["type"] == "NotAuthorizedException"
    # The message names the route a client gets a token from, as the server mounts it.
    assert "POST /iceberg/v1/oauth/tokens" in body["error"]["message"], body
    status, body = rest(eddy, "GET", "/v1/config", token="forged")
    assert status == 401

    status, body = token(eddy)
    assert status == 200 and body["token_type"] == "bearer"
    tok = body["access_token"]
    status, body = rest(eddy, "GET", "/v1/config?warehouse=kafka", token=tok)
    assert status == 200
    o = body["overrides"]
    assert o["s3.endpoint"] == f"http://127.0.0.1:{eddy.s3_port}"
    assert o["s3.path-style-access"] == "true"
    assert o["s3.region"]
    # The spec documents 400 for a config naming a warehouse there is not.
    status, body = rest(eddy, "GET", "/v1/config?warehouse=elsewhere", token=tok)
    assert status == 400 and "unknown warehouse" in body["error"]["message"]

    status, body = rest(eddy, "GET", "/v1/namespaces/nope/tables", token=tok)
    assert status == 404 and body["error"]["type"] == "NoSuchNamespaceException"
    status, body = rest(eddy, "GET", f"/v1/namespaces/{NS}/tables/no-such-topic", token=tok)
    assert status == 404 and body["error"]["type"] == "NoSuchTableException"

    topic = name()
    create(eddy, topic, 1)
    status, body = rest(eddy, "POST", f"/v1/namespaces/{NS}/tables/{topic}", token=tok,
                        body={"requirements": [], "updates": []})
    assert status == 403
    assert "read-only" in body["error"]["message"]
    status, body = rest(eddy, "DELETE", f"/v1/namespaces/{NS}/tables/{topic}", token=tok)
    assert status == 403
    # A namespace of one's own takes writes (test_user_tables.py); kafka_topics is taken.
    status, body = rest(eddy, "POST", "/v1/namespaces", token=tok, body={"namespace": [NS]})
    assert status == 409 and body["error"]["type"] == "AlreadyExistsException"


def test_pyiceberg_append_is_refused(eddy):
    topic = name()
    create(eddy, topic, 1)
    produce(eddy, topic, sample_records(3, 1))
    tbl = catalog(eddy).load_table(f"{NS}.{topic}")
    with pytest.raises(Exception) as e:
        tbl.append(tbl.scan().to_arrow())
    # The data file's upload into the broker bucket is refused first (S3 AccessDenied);
    # the catalog would refuse the commit too (test_rest_auth_config_and_read_only).
    assert "managed by the broker" in str(e.value)
    assert tbl.refresh().scan().to_arrow().num_rows == 3


def test_delete_records_shows_up_as_a_new_snapshot(eddy):
    from confluent_kafka import TopicPartition

    topic = name()
    create(eddy, topic, 2)
    cat = catalog(eddy)
    first = produce(eddy, topic, sample_records(20, 2))  # offsets 0..9 in each partition
    cat.load_table(f"{NS}.{topic}")
    second = produce(eddy, topic, sample_records(20, 2))  # offsets 10..19
    before = cat.load_table(f"{NS}.{topic}")
    all_rows = sorted(first + second, key=lambda r: (r["partition"], r["offset"]))
    assert rows_of(before.scan().to_arrow()) == all_rows

    # Partition 0 from offset 13: its first file goes, its second is cut.
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    res = a.delete_records([TopicPartition(topic, 0, 13)])
    for fut in res.values():
        fut.result(timeout=30)
    after = cat.load_table(f"{NS}.{topic}")
    kept = [r for r in all_rows if not (r["partition"] == 0 and r["offset"] < 13)]
    assert rows_of(after.scan().to_arrow()) == kept
    new = after.current_snapshot()
    assert new.snapshot_id != before.current_snapshot().snapshot_id
    assert new.summary.operation.value in ("overwrite", "delete")
    # The snapshot before the deletion still reads every record (time travel).
    old = after.scan(snapshot_id=before.current_snapshot().snapshot_id).to_arrow()
    assert rows_of(old) == all_rows
    # Produce after the deletion: appended as usual.
    third = produce(eddy, topic, sample_records(4, 2))
    assert rows_of(cat.load_table(f"{NS}.{topic}").scan().to_arrow()) == sorted(
        kept + third, key=lambda r: (r["partition"], r["offset"]))


def test_expired_snapshots_take_their_files(tmp_path):
    """With snapshots expiring after 1 s, old snapshots leave the table metadata and
    the files only they referenced leave the bucket, while every live row stays."""
    import time

    from confluent_kafka import TopicPartition

    from conftest import new_eddy

    server = new_eddy(tmp_path, extra_args=["--table-snapshot-max-age-secs", "1"]).start()
    try:
        topic = name()
        create(server, topic, 1)
        cat = catalog(server)
        rows = produce(server, topic, sample_records(10, 1))
        first = cat.load_table(f"{NS}.{topic}")
        s1 = first.current_snapshot()
        s1_files = [t.file.file_path for t in first.scan().plan_files()]
        rows += produce(server, topic, sample_records(10, 1))
        cat.load_table(f"{NS}.{topic}")
        # Drop the first file (offsets 0..9) from the table.
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        for fut in admin.delete_records([TopicPartition(topic, 0, 10)]).values():
            fut.result(timeout=30)
        rows = [r for r in rows if r["offset"] >= 10]
        cut = cat.load_table(f"{NS}.{topic}").current_snapshot()
        assert cut.summary.operation.value == "delete"

        deadline = time.monotonic() + 60
        while True:
            rows += produce(server, topic, sample_records(1, 1))
            tbl = cat.load_table(f"{NS}.{topic}")
            ids = {s.snapshot_id for s in tbl.snapshots()}
            if s1.snapshot_id not in ids and cut.parent_snapshot_id not in ids:
                break
            assert time.monotonic() < deadline, "old snapshots never expired"
            time.sleep(0.2)
        assert rows_of(tbl.scan().to_arrow()) == sorted(rows, key=lambda r: r["offset"])
        assert not tbl.io.new_input(s1.manifest_list).exists()
        # The dropped data file is gone once no snapshot lists it.
        assert s1_files and not any(tbl.io.new_input(f).exists() for f in s1_files)
        for t in tbl.scan().plan_files():
            assert tbl.io.new_input(t.file.file_path).exists()
    finally:
        server.stop()


def test_metrics_count_snapshots(eddy):
    def snapshots():
        with urllib.request.urlopen(f"{eddy.http_url}/metrics") as r:
            text = r.read().decode()
        line = next(ln for ln in text.splitlines() if ln.startswith("eddy_tables_snapshots_total"))
        return int(float(line.split()[-1]))

    before = snapshots()
    topic = name()
    create(eddy, topic, 1)
    produce(eddy, topic, sample_records(3, 1))
    catalog(eddy).load_table(f"{NS}.{topic}")
    assert snapshots() >= before + 1


def test_small_files_are_merged(eddy):
    """Every load seals a tiny file; when manifests merge, a partition's small files are
    rewritten into one, and the rows stay exactly the produced ones."""
    topic = name()
    create(eddy, topic, 1)
    cat = catalog(eddy)
    rows = []
    for i in range(12):
        rows += produce(eddy, topic, sample_records(2, 1))
        tbl = cat.load_table(f"{NS}.{topic}")
    files = list(tbl.scan().plan_files())
    assert len(files) < 12, len(files)
    assert any(s.summary.operation.value == "overwrite" for s in tbl.snapshots())
    assert rows_of(tbl.scan().to_arrow()) == sorted(rows, key=lambda r: r["offset"])
    # An older snapshot, from before the rewrite, still reads the same rows.
    first = min(tbl.snapshots(), key=lambda s: s.sequence_number)
    old = tbl.scan(snapshot_id=first.snapshot_id).to_arrow()
    assert rows_of(old) == sorted(rows[:2], key=lambda r: r["offset"])
