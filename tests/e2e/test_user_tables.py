"""Users' own Iceberg tables through Eddy's REST catalog: PyIceberg makes a namespace and
a table, appends, overwrites, deletes rows, evolves the schema and reads it back, with the
data files in Eddy's S3; two writers racing get one 409 and the loser retries; a commit
of several tables lands whole or not at all, across kill -9; topic tables stay read-only;
a user without a policy is refused in someone else's namespace."""

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid

import boto3
import pyarrow as pa
import pytest
from botocore.config import Config
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (CommitFailedException, ForbiddenError,
                                  NamespaceAlreadyExistsError, NamespaceNotEmptyError,
                                  NoSuchTableError)
from pyiceberg.expressions import EqualTo, GreaterThan
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from conftest import eddy_bin, metric


def name(prefix="t"):
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def catalog(eddy, key=None, secret=None):
    return RestCatalog(
        "eddy",
        uri=f"{eddy.http_url}/iceberg",
        credential=f"{key or eddy.access_key}:{secret or eddy.secret_key}",
        **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"},
    )


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
)


def rows(ids, names=None):
    names = names or [f"n{i}" for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())})


def ids_of(table):
    return sorted(r["id"] for r in table.scan().to_arrow().to_pylist())


def s3(eddy):
    return boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=eddy.access_key,
                        aws_secret_access_key=eddy.secret_key, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


def keys_under(eddy, bucket, prefix):
    pages = s3(eddy).get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def rest(eddy, method, path, body=None, key=None, secret=None):
    """A raw REST catalog request with a fresh token: (status, JSON body or None)."""
    form = f"grant_type=client_credentials&client_id={key or eddy.access_key}" \
           f"&client_secret={secret or eddy.secret_key}".encode()
    with urllib.request.urlopen(f"{eddy.http_url}/iceberg/v1/oauth/tokens", data=form) as r:
        token = json.load(r)["access_token"]
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{eddy.http_url}/iceberg{path}", data=data, method=method,
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None


def test_a_table_lives_through_append_overwrite_delete_and_schema_change(eddy):
    cat = catalog(eddy)
    ns = name("sales")
    cat.create_namespace(ns, {"comment": "orders of the shop"})
    assert (ns,) in cat.list_namespaces()
    props = cat.load_namespace_properties(ns)
    assert props["comment"] == "orders of the shop"
    assert props["location"] == f"s3://warehouse/{ns}"
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace(ns)

    t = cat.create_table(f"{ns}.orders", SCHEMA)
    assert t.location().startswith(f"s3://warehouse/{ns}/orders-")
    t.append(rows([1, 2, 3]))
    assert ids_of(cat.load_table(f"{ns}.orders")) == [1, 2, 3]
    t.overwrite(rows([9]))
    t.append(rows([10, 11]))
    t.delete(EqualTo("id", 10))
    with t.update_schema() as u:
        u.add_column("qty", LongType())
    t.append(pa.table({"id": pa.array([12], pa.int64()), "name": ["w"],
                       "qty": pa.array([5], pa.int64())}))

    # What another reader sees after loading it fresh.
    fresh = catalog(eddy).load_table(f"{ns}.orders")
    got = sorted(fresh.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": 9, "name": "n9", "qty": None}, {"id": 11, "name": "n11", "qty": None},
                   {"id": 12, "name": "w", "qty": 5}]
    assert [f.name for f in fresh.schema().fields] == ["id", "name", "qty"]
    assert sorted(r["id"] for r in fresh.scan(row_filter=GreaterThan("id", 10)).to_arrow()
                  .to_pylist()) == [11, 12]
    # Time travel: the first snapshot still reads the first append.
    first = fresh.history()[0].snapshot_id
    assert sorted(r["id"] for r in fresh.scan(snapshot_id=first).to_arrow().to_pylist()) == [1, 2, 3]

    # The files are objects in Eddy's S3, under the table's location.
    bucket, prefix = t.location().removeprefix("s3://").split("/", 1)
    keys = keys_under(eddy, bucket, prefix + "/")
    assert any(k.endswith(".parquet") for k in keys)
    assert any(k.endswith(".metadata.json") for k in keys)
    assert fresh.metadata_location.removeprefix(f"s3://{bucket}/") in keys

    assert cat.list_tables(ns) == [(ns, "orders")]
    cat.rename_table(f"{ns}.orders", f"{ns}.orders_2024")
    assert cat.list_tables(ns) == [(ns, "orders_2024")]
    with pytest.raises(NoSuchTableError):
        cat.load_table(f"{ns}.orders")
    assert ids_of(cat.load_table(f"{ns}.orders_2024")) == [9, 11, 12]

    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace(ns)
    cat.purge_table(f"{ns}.orders_2024")
    assert keys_under(eddy, bucket, prefix + "/") == []
    cat.drop_namespace(ns)
    assert (ns,) not in cat.list_namespaces()


def test_a_table_at_a_buckets_root_is_refused(eddy):
    """Purging a table deletes everything under its location: never a whole bucket."""
    from pyiceberg.exceptions import BadRequestError

    s3(eddy).create_bucket(Bucket="rooted")
    s3(eddy).put_object(Bucket="rooted", Key="keep.txt", Body=b"mine")
    cat = catalog(eddy)
    ns = name("rooted")
    cat.create_namespace(ns)
    with pytest.raises(BadRequestError) as e:
        cat.create_table(f"{ns}.t", SCHEMA, location="s3://rooted")
    assert "bucket's root" in str(e.value)
    t = cat.create_table(f"{ns}.t", SCHEMA, location="s3://rooted/tables/t")
    t.append(rows([1]))
    cat.purge_table(f"{ns}.t")
    assert keys_under(eddy, "rooted", "") == ["keep.txt"]


def test_a_drop_without_purge_keeps_the_files_and_register_adopts_them(eddy):
    cat = catalog(eddy)
    ns = name("keep")
    cat.create_namespace(ns)
    t = cat.create_table(f"{ns}.events", SCHEMA)
    t.append(rows([1, 2]))
    location = cat.load_table(f"{ns}.events").metadata_location
    cat.drop_table(f"{ns}.events")
    with pytest.raises(NoSuchTableError):
        cat.load_table(f"{ns}.events")
    back = cat.register_table(f"{ns}.events_again", location)
    assert ids_of(back) == [1, 2]
    back.append(rows([3]))
    assert ids_of(cat.load_table(f"{ns}.events_again")) == [1, 2, 3]


def test_two_writers_on_one_snapshot_get_one_commit_and_one_409(eddy, caplog):
    cat = catalog(eddy)
    ns = name("race")
    cat.create_namespace(ns)
    cat.create_table(f"{ns}.t", SCHEMA)
    a = catalog(eddy).load_table(f"{ns}.t")
    b = catalog(eddy).load_table(f"{ns}.t")
    conflicts = metric(eddy, "eddy_tables_user_commit_conflicts_total")
    a.append(rows([1]))
    # b was loaded before a's commit: its commit names the snapshot it read, which is no
    # longer the table's, so the catalog answers 409 and PyIceberg (0.12 retries commits)
    # reloads and commits again on top of a's.
    b.append(rows([2]))
    assert "Commit failed due to a concurrent update" in caplog.text
    assert ids_of(cat.load_table(f"{ns}.t")) == [1, 2]
    # Operators see the lost race.
    assert metric(eddy, "eddy_tables_user_commit_conflicts_total") == conflicts + 1

    # The same race over the REST API itself: two commits built on one snapshot.
    current = cat.load_table(f"{ns}.t").metadata.current_snapshot_id
    commit = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                                "snapshot-id": current}],
              "updates": [{"action": "set-properties", "updates": {"writer": "x"}}]}
    first = rest(eddy, "POST", f"/v1/namespaces/{ns}/tables/t", commit)
    assert first[0] == 200, first
    commit["updates"][0]["updates"]["writer"] = "y"
    # A property change makes no snapshot, so move the snapshot to make the second stale.
    cat.load_table(f"{ns}.t").append(rows([3]))
    status, body = rest(eddy, "POST", f"/v1/namespaces/{ns}/tables/t", commit)
    assert status == 409, body
    assert body["error"]["type"] == "CommitFailedException"
    assert cat.load_table(f"{ns}.t").properties["writer"] == "x"


def test_concurrent_appends_all_land_with_retries(eddy):
    cat = catalog(eddy)
    ns = name("many")
    cat.create_namespace(ns)
    cat.create_table(f"{ns}.t", SCHEMA)
    writers, per_writer = 4, 5
    errors = []
    start = threading.Barrier(writers)

    def write(w):
        try:
            own = catalog(eddy).load_table(f"{ns}.t")
            start.wait()
            for i in range(per_writer):
                # PyIceberg retries a 409 four times; past that the writer reloads.
                while True:
                    try:
                        own.append(rows([w * 100 + i]))
                        break
                    except CommitFailedException:
                        own.refresh()
        except Exception as e:  # surfaced below, with the writer
            errors.append((w, e))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    want = sorted(w * 100 + i for w in range(writers) for i in range(per_writer))
    assert ids_of(cat.load_table(f"{ns}.t")) == want
    # Every commit is one snapshot: none lost, none doubled.
    assert len(cat.load_table(f"{ns}.t").snapshots()) == writers * per_writer


def transaction(ns, tables, value, fail_on=None):
    changes = []
    for t in tables:
        requirements = []
        if t == fail_on:
            requirements = [{"type": "assert-table-uuid",
                             "uuid": "00000000-0000-0000-0000-000000000000"}]
        changes.append({"identifier": {"namespace": [ns], "name": t},
                        "requirements": requirements,
                        "updates": [{"action": "set-properties", "updates": {"n": str(value)}}]})
    return {"table-changes": changes}


def test_a_multi_table_commit_lands_whole_or_not_at_all(eddy):
    cat = catalog(eddy)
    ns = name("multi")
    cat.create_namespace(ns)
    for t in ("a", "b"):
        cat.create_table(f"{ns}.{t}", SCHEMA)
    status, _ = rest(eddy, "POST", "/v1/transactions/commit", transaction(ns, ["a", "b"], 1))
    assert status == 204
    assert [cat.load_table(f"{ns}.{t}").properties.get("n") for t in "ab"] == ["1", "1"]
    status, body = rest(eddy, "POST", "/v1/transactions/commit",
                        transaction(ns, ["a", "b"], 2, fail_on="b"))
    assert status == 409, body
    assert body["error"]["type"] == "CommitFailedException"
    assert [cat.load_table(f"{ns}.{t}").properties.get("n") for t in "ab"] == ["1", "1"]
    status, body = rest(eddy, "POST", "/v1/transactions/commit",
                        {"table-changes": [{"requirements": [], "updates": []}]})
    assert status == 400, body


def test_topic_tables_stay_read_only_with_a_clear_message(eddy):
    status, body = rest(eddy, "POST", "/v1/namespaces/kafka_topics/tables",
                        {"name": "x", "schema": {"type": "struct", "fields": []}})
    assert status == 403
    assert "Kafka topics and read-only" in body["error"]["message"]
    assert "POST /v1/namespaces" in body["error"]["message"]
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog(eddy).create_namespace("kafka_topics")


def cli(eddy, *args):
    env = {"EDDY_ACCESS_KEY": eddy.access_key, "EDDY_SECRET_KEY": eddy.secret_key,
           "PATH": "/usr/bin:/bin"}
    p = subprocess.run([eddy_bin(), args[0], "--url", eddy.http_url, *args[1:]],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_another_users_namespace_needs_a_policy(eddy, tmp_path):
    owner = catalog(eddy)
    ns = name("private")
    owner.create_namespace(ns)
    owner.create_table(f"{ns}.t", SCHEMA).append(rows([1]))
    user = name("carol")
    cli(eddy, "user", "put", user, "--s3-secret", "carol-secret-1", "--kafka-password", "pw")
    carol = catalog(eddy, user, "carol-secret-1")
    # She is not told the name of a namespace she may not see.
    assert (ns,) not in carol.list_namespaces()
    assert (ns,) in owner.list_namespaces()
    for attempt in (lambda: carol.load_table(f"{ns}.t"),
                    lambda: carol.load_namespace_properties(ns),
                    lambda: carol.namespace_exists(ns),
                    lambda: carol.create_table(f"{ns}.mine", SCHEMA),
                    lambda: carol.drop_table(f"{ns}.t"),
                    lambda: carol.drop_namespace(ns)):
        with pytest.raises(ForbiddenError):
            attempt()
    status, body = rest(eddy, "POST", "/v1/transactions/commit", transaction(ns, ["t"], 5),
                        key=user, secret="carol-secret-1")
    assert status == 403, body
    assert catalog(eddy).load_table(f"{ns}.t").properties.get("n") is None
    # A namespace of her own in the administrator's default bucket needs an S3 policy
    # too: she writes the data files there with her own keys.
    with pytest.raises(ForbiddenError) as e:
        carol.create_namespace(name("hers"))
    assert "s3:PutObject" in str(e.value)
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3tables:GetTableMetadataLocation"],
         "Resource": f"vast:iceberg:table:{ns}/*"},
        {"Effect": "Allow", "Action": ["s3:GetObject"],
         "Resource": f"arn:aws:s3:::warehouse/{ns}/*"}]}
    (tmp_path / "p.json").write_text(json.dumps(policy))
    cli(eddy, "policy", "put", f"{user}-read", "--file", str(tmp_path / "p.json"), "--attach", user)
    assert ids_of(carol.load_table(f"{ns}.t")) == [1]
    # Reading is all she may do: her data file's upload is refused by S3 itself.
    with pytest.raises(OSError) as e:
        carol.load_table(f"{ns}.t").append(rows([2]))
    assert "ACCESS_DENIED" in str(e.value)
    assert ids_of(catalog(eddy).load_table(f"{ns}.t")) == [1]


def test_tables_survive_a_restart_and_a_kill_mid_commit(fresh_eddy):
    cat = catalog(fresh_eddy)
    ns = name("crash")
    cat.create_namespace(ns)
    for t in ("a", "b"):
        cat.create_table(f"{ns}.{t}", SCHEMA)
    cat.load_table(f"{ns}.a").append(rows([1, 2]))
    acked = []
    stop, enough = threading.Event(), threading.Event()

    def commit_forever():
        n = 0
        while not stop.is_set():
            n += 1
            try:
                status, _ = rest(fresh_eddy, "POST", "/v1/transactions/commit",
                                 transaction(ns, ["a", "b"], n))
            except OSError:
                return
            if status == 204:
                acked.append(n)
                if len(acked) >= 20:
                    enough.set()

    writer = threading.Thread(target=commit_forever)
    writer.start()
    assert enough.wait(120), f"only {len(acked)} commits acknowledged"
    fresh_eddy.stop(kill=True)
    stop.set()
    writer.join()
    fresh_eddy.start()
    cat = catalog(fresh_eddy)
    a, b = (cat.load_table(f"{ns}.{t}") for t in "ab")
    # Both tables moved together: neither shows a commit the other lacks, and every
    # acknowledged commit is there.
    assert a.properties["n"] == b.properties["n"]
    assert int(a.properties["n"]) >= acked[-1]
    assert ids_of(a) == [1, 2]


def test_listings_page_by_any_token_and_refuse_a_bad_page_size(eddy):
    cat = catalog(eddy)
    ns = name("pages")
    cat.create_namespace(ns)
    for t in ("a", "b", "c"):
        cat.create_table(f"{ns}.{t}", SCHEMA)
    base = f"/v1/namespaces/{ns}/tables"
    status, body = rest(eddy, "GET", f"{base}?pageToken=&pageSize=2")
    assert status == 200 and [i["name"] for i in body["identifiers"]] == ["a", "b"]
    status, body = rest(eddy, "GET", f"{base}?pageToken={body['next-page-token']}&pageSize=2")
    assert status == 200 and [i["name"] for i in body["identifiers"]] == ["c"]
    # A token is opaque: any string is a place in the listing, never an error.
    status, body = rest(eddy, "GET", f"{base}?pageToken=%5B%27x%27%5D")
    assert status == 200 and [i["name"] for i in body["identifiers"]] == ["a", "b", "c"]
    for path in ("/v1/namespaces", base, f"/v1/namespaces/{ns}/views"):
        for bad in ("pageSize=0", "pageSize=-1", "pageSize=x", "pageSize=2&pageSize=3"):
            status, body = rest(eddy, "GET", f"{path}?pageToken=&{bad}")
            assert status == 400, (path, bad, body)
            assert body["error"]["code"] == 400


def test_views_are_created_loaded_replaced_renamed_and_dropped(eddy):
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

    cat = catalog(eddy)
    ns = name("views")
    cat.create_namespace(ns)
    cat.create_table(f"{ns}.orders", SCHEMA)
    sql = f"SELECT id FROM {ns}.orders WHERE id > 10"
    version = ViewVersion(
        version_id=1, schema_id=0, timestamp_ms=1_764_800_000_000,
        summary={"engine-name": "pytest"},
        representations=[SQLViewRepresentation(type="sql", sql=sql, dialect="spark")],
        default_namespace=[ns])
    view_schema = Schema(NestedField(1, "id", LongType(), required=False))
    cat.create_view(f"{ns}.big_orders", view_schema, version)
    assert cat.list_views(ns) == [(ns, "big_orders")]
    assert cat.view_exists(f"{ns}.big_orders")
    loaded = cat.load_view(f"{ns}.big_orders")
    rep = loaded.metadata.versions[0].representations[0]
    assert getattr(rep, "root", rep).sql == sql
    # Tables and views share names: a table of that name is refused.
    from pyiceberg.exceptions import TableAlreadyExistsError
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table(f"{ns}.big_orders", SCHEMA)

    # Replace: a second version, made current, guarded by the view's UUID.
    status, body = rest(eddy, "GET", f"/v1/namespaces/{ns}/views/big_orders")
    assert status == 200
    view_uuid = body["metadata"]["view-uuid"]
    second = dict(body["metadata"]["versions"][0], **{"version-id": 2, "timestamp-ms": 1_764_800_001_000})
    second["representations"] = [{"type": "sql", "sql": sql.replace("10", "20"), "dialect": "spark"}]
    replace = {"requirements": [{"type": "assert-view-uuid", "uuid": view_uuid}],
               "updates": [{"action": "add-view-version", "view-version": second},
                           {"action": "set-current-view-version", "view-version-id": -1}]}
    status, body = rest(eddy, "POST", f"/v1/namespaces/{ns}/views/big_orders", replace)
    assert status == 200, body
    assert body["metadata"]["current-version-id"] == 2
    replace["requirements"][0]["uuid"] = str(uuid.uuid4())
    status, body = rest(eddy, "POST", f"/v1/namespaces/{ns}/views/big_orders", replace)
    assert status == 409, body

    status, _ = rest(eddy, "POST", "/v1/views/rename",
                     {"source": {"namespace": [ns], "name": "big_orders"},
                      "destination": {"namespace": [ns], "name": "large_orders"}})
    assert status == 204
    assert cat.list_views(ns) == [(ns, "large_orders")]
    renamed = cat.load_view(f"{ns}.large_orders")
    assert renamed.metadata.current_version_id == 2
    cat.drop_view(f"{ns}.large_orders")
    assert cat.list_views(ns) == []
    status, body = rest(eddy, "GET", f"/v1/namespaces/{ns}/views/large_orders")
    assert status == 404 and body["error"]["type"] == "NoSuchViewException"


def sink_commit(eddy, table, ns, name_, df, group, offsets):
    """One step of an exactly-once sink: PyIceberg writes the data files and builds the
    snapshot; the snapshot and the Kafka offsets it covers go in one multi-table commit."""
    from pyiceberg.table import CommitTableRequest, TableIdentifier

    txn = table.transaction()
    txn.append(df)
    change = CommitTableRequest(identifier=TableIdentifier(namespace=[ns], name=name_),
                                requirements=txn._requirements, updates=txn._updates)
    return rest(eddy, "POST", "/v1/transactions/commit", {
        "table-changes": [json.loads(change.model_dump_json(by_alias=True, exclude_none=True))],
        "eddy-kafka-offsets": {"group-id": group, "offsets": [
            {"topic": t, "partition": p, "offset": o} for (t, p), o in offsets.items()]},
    })


def test_a_sink_commits_rows_and_kafka_offsets_together_exactly_once(eddy):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = name("clicks"), name("sink")
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(30):
        p.produce(topic, value=str(i).encode())
    assert p.flush(30) == 0
    cat = catalog(eddy)
    ns = name("sinks")
    cat.create_namespace(ns)
    cat.create_table(f"{ns}.clicks", SCHEMA)

    def consumer():
        # The group's committed offset is where the sink resumes; it reads with
        # assign(), so the group has no members for Kafka to coordinate.
        c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        committed = c.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
        c.assign([TopicPartition(topic, 0, max(committed, 0))])
        return c

    def batch(c, n):
        got = []
        while len(got) < n:
            m = c.poll(10)
            assert m is not None and m.error() is None
            got.append(m)
        return got

    def step(c, crash=False):
        msgs = batch(c, 10)
        df = rows([int(m.value()) for m in msgs])
        table = cat.load_table(f"{ns}.clicks")
        if crash:
            # The data files are written, the commit never sent: the sink died here.
            txn = table.transaction()
            txn.append(df)
            return None
        return sink_commit(eddy, table, ns, "clicks", df, group,
                           {(topic, 0): msgs[-1].offset() + 1})

    c = consumer()
    assert step(c)[0] == 204
    step(c, crash=True)
    c.close()
    c = consumer()  # restarted: resumes after the first batch
    assert step(c)[0] == 204
    assert step(c)[0] == 204
    c.close()
    assert ids_of(cat.load_table(f"{ns}.clicks")) == list(range(30))
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group})
    assert c.committed([TopicPartition(topic, 0)], timeout=30)[0].offset == 30
    c.close()

    # A zombie built on an old snapshot: its rows and its offsets are refused together.
    stale = cat.load_table(f"{ns}.clicks")
    cat.load_table(f"{ns}.clicks").append(rows([100]))
    status, body = sink_commit(eddy, stale, ns, "clicks", rows([99]), group, {(topic, 0): 5})
    assert status == 409, body
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group})
    assert c.committed([TopicPartition(topic, 0)], timeout=30)[0].offset == 30
    c.close()
    assert 99 not in ids_of(cat.load_table(f"{ns}.clicks"))

    # A group Kafka consumers coordinate is not one to commit table offsets under.
    member = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group + "-live",
                       "auto.offset.reset": "earliest"})
    member.subscribe([topic])
    assert member.poll(30) is not None
    member.commit(asynchronous=False)
    status, body = sink_commit(eddy, cat.load_table(f"{ns}.clicks"), ns, "clicks", rows([7]),
                               group + "-live", {(topic, 0): 1})
    assert status == 409 and "coordinated by Kafka consumers" in body["error"]["message"]
    member.close()


def test_maintenance_expires_snapshots_and_removes_orphans_as_the_table_says(tmp_path):
    from conftest import new_eddy

    server = new_eddy(tmp_path, extra_args=["--table-maintenance-secs", "1"]).start()
    try:
        cat = catalog(server)
        ns = name("tidy")
        cat.create_namespace(ns)
        t = cat.create_table(f"{ns}.t", SCHEMA, properties={
            "history.expire.max-snapshot-age-ms": "1",
            "history.expire.min-snapshots-to-keep": "2",
            "eddy.maintenance.orphan-files-older-than-ms": "1000"})
        for i in range(5):
            t.append(rows([i]))
        kept = cat.create_table(f"{ns}.kept", SCHEMA, properties={
            "eddy.maintenance.expire-snapshots": "false",
            "eddy.maintenance.orphan-files-older-than-ms": "-1"})
        for i in range(3):
            kept.append(rows([i]))
        bucket, prefix = t.location().removeprefix("s3://").split("/", 1)
        stray = f"{prefix}/data/stray-upload.parquet"
        s3(server).put_object(Bucket=bucket, Key=stray, Body=b"never committed")
        kept_prefix = kept.location().removeprefix("s3://").split("/", 1)[1]
        s3(server).put_object(Bucket=bucket, Key=f"{kept_prefix}/data/stray.parquet", Body=b"x")

        def expired():
            return len(cat.load_table(f"{ns}.t").snapshots()) == 2 \
                and stray not in keys_under(server, bucket, prefix + "/")

        deadline = time.monotonic() + 60
        while not expired():
            assert time.monotonic() < deadline, cat.load_table(f"{ns}.t").snapshots()
            time.sleep(0.5)
        t = cat.load_table(f"{ns}.t")
        # The rows are all there; only history went.
        assert ids_of(t) == [0, 1, 2, 3, 4]
        oldest = min(t.snapshots(), key=lambda snap: snap.sequence_number)
        assert t.scan(snapshot_id=oldest.snapshot_id).to_arrow().num_rows == 4
        # Every object left under the table is one it references.
        keys = set(keys_under(server, bucket, prefix + "/"))
        manifests = {t.metadata_location} | {s.manifest_list for s in t.snapshots()}
        assert {f"s3://{bucket}/{k}" for k in keys} >= manifests
        assert not any("stray" in k for k in keys)
        # The table that turned maintenance off keeps its history and its stray file.
        kept = cat.load_table(f"{ns}.kept")
        assert len(kept.snapshots()) == 3
        assert f"{kept_prefix}/data/stray.parquet" in keys_under(server, bucket, kept_prefix + "/")
    finally:
        server.stop()


def sigv4_catalog(eddy, secret=None, service="s3tables"):
    return RestCatalog(
        "eddy-sigv4",
        uri=f"{eddy.http_url}/iceberg",
        **{"rest.sigv4-enabled": "true", "rest.signing-region": "us-east-1",
           "rest.signing-name": service, "client.access-key-id": eddy.access_key,
           "client.secret-access-key": secret or eddy.secret_key},
    )


def test_sigv4_signed_requests_are_accepted_as_s3_tables_clients_send_them(eddy):
    from pyiceberg.exceptions import UnauthorizedError

    cat = sigv4_catalog(eddy)
    ns = name("signed")
    cat.create_namespace((ns, "eu"))
    assert (ns, "eu") in cat.list_namespaces(ns)
    t = cat.create_table((ns, "eu", "orders"), SCHEMA)
    t.append(rows([1, 2]))
    assert ids_of(sigv4_catalog(eddy, service="execute-api").load_table((ns, "eu", "orders"))) == [1, 2]
    # The same table through OAuth2: one catalog, two ways in.
    assert ids_of(catalog(eddy).load_table((ns, "eu", "orders"))) == [1, 2]
    with pytest.raises(UnauthorizedError) as e:
        sigv4_catalog(eddy, secret="wrong-secret").load_table((ns, "eu", "orders"))
    assert "signature does not match" in str(e.value)
    with pytest.raises(UnauthorizedError):
        sigv4_catalog(eddy, service="s3").list_namespaces()
