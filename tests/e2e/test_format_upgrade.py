"""Upgrades: every fixture data dir under tests/fixtures (written by an earlier build with
real clients, see make_format_fixture.py) opens with this build, and everything its manifest
lists reads back with boto3, confluent-kafka and PyIceberg: objects, versions, tags,
uploads, notification configs, records of every codec, committed offsets and table rows,
and (fixtures of format 2 on) a topic the earlier build compacted before its checkpoint and
after it, and (format 3 on) a topic whose JSON values the earlier build expanded into a
target table, which reads back row for row and goes on expanding new records, and
(format 4 on) committed and aborted transactions, read back at both isolation levels
with the offsets they committed, and (format 6 on) users, identity policies and bucket
policies: each user's S3 secret and SCRAM password still work, the requests and topics
the policies allow pass and the ones they deny get AccessDenied and
TOPIC_AUTHORIZATION_FAILED, anonymous GETs reach exactly the prefix the bucket policy
opens, and the admin API lists the users and policies as they were left, and (format 7
on) bucket lifecycle and CORS configurations: every bucket's GetBucketLifecycleConfiguration
and GetBucketCors answer as they did (or NoSuchLifecycleConfiguration and
NoSuchCORSConfiguration where none is left), objects under the rules carry the same
`x-amz-expiration`, none of them expired, and CORS preflights get the same
Access-Control-Allow-Origin or refusal. Then the store takes writes, and a restart reads
old and new data together; a transactional producer commits and aborts on an upgraded
data dir. A data dir of a newer format is refused with both versions named, and left as
it was."""

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
import urllib3
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from pyiceberg.catalog.rest import RestCatalog

import s3util
from conftest import ROOT, eddy_bin, free_port, javac, metric, new_eddy, read_to_end
from test_expansion import admin, jsonable_value

FIXTURES = sorted((ROOT / "tests" / "fixtures").glob("format-*/manifest.json"))


def test_the_fixtures_are_there():
    """The upgrade tests cannot be skipped by losing their data."""
    kinds = {json.loads(m.read_text())["kind"] for m in FIXTURES}
    assert {"clean", "killed"} <= kinds, FIXTURES


def md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


def open_fixture(tmp_path, manifest_path, drop_store):
    """A copy of the fixture's data dir, served by this build. With `drop_store`, the
    embedded store file is removed first, so the catalog is rebuilt from the fixture's
    checkpoint and log."""
    eddy = new_eddy(tmp_path, extra_args=["--kafka-compaction-check-interval-ms", "100"])
    if "iam" in json.loads(manifest_path.read_text()):
        # A SASL listener beside the plaintext one, for the fixture's users (check_iam).
        with_sasl_listener(eddy)
    shutil.copytree(manifest_path.parent / "data", eddy.data_dir, symlinks=True)
    if drop_store:
        stores = list(eddy.data_dir.glob("drive-*/catalog/catalog.redb"))
        assert stores, "the fixture has a store file"
        for s in stores:
            s.unlink()
    return eddy.start()


def read_all(eddy, topic):
    """Every record of a topic, from offset 0 up to the high watermarks."""
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": "upgrade-reader",
                  "enable.auto.commit": False})
    parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    out = []
    deadline = time.time() + 60
    while len(out) < sum(ends.values()):
        assert time.time() < deadline, f"{topic}: {len(out)} of {sum(ends.values())} records"
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append(m)
    c.close()
    return out, ends


def as_manifest(m):
    def s(x):
        return None if x is None else x.decode()
    return {
        "partition": m.partition(), "offset": m.offset(), "key": s(m.key()), "value": s(m.value()),
        "headers": [[k, s(v)] for k, v in (m.headers() or [])], "timestamp": m.timestamp()[1],
    }


def check_objects(eddy, manifest):
    s3 = s3util.client(eddy)
    for o in manifest["objects"]:
        got = s3.get_object(Bucket=o["bucket"], Key=o["key"])
        data = got["Body"].read()
        assert (len(data), md5(data)) == (o["size"], o["md5"]), o["key"]
        if "content_type" in o:
            assert got["ContentType"] == o["content_type"]
        assert got["Metadata"] == o["metadata"], o["key"]
        if "etag" in o:
            assert got["ETag"].strip('"') == o["etag"]
        tags = s3.get_object_tagging(Bucket=o["bucket"], Key=o["key"])["TagSet"]
        assert {t["Key"]: t["Value"] for t in tags} == o["tags"], o["key"]
    for o in manifest.get("absent", []):
        with pytest.raises(s3util.ClientError) as e:
            s3.head_object(Bucket=o["bucket"], Key=o["key"])
        assert s3util.status(e) == 404
    for name, b in manifest["buckets"].items():
        assert s3.get_bucket_versioning(Bucket=name).get("Status") == b["versioning"], name
        if b["tags"]:
            tags = s3.get_bucket_tagging(Bucket=name)["TagSet"]
            assert {t["Key"]: t["Value"] for t in tags} == b["tags"]
    # Versions and delete markers.
    listed = s3.list_object_versions(Bucket="versioned")
    got = {(v["Key"], v["VersionId"], False) for v in listed.get("Versions", [])}
    got |= {(v["Key"], v["VersionId"], True) for v in listed.get("DeleteMarkers", [])}
    want = {(v["key"], v["version_id"], v["delete_marker"]) for v in manifest["versions"]}
    assert got == want
    for v in manifest["versions"]:
        if v["delete_marker"]:
            continue
        data = s3.get_object(Bucket="versioned", Key=v["key"], VersionId=v["version_id"])["Body"].read()
        assert md5(data) == v["md5"], v
        tags = s3.get_object_tagging(Bucket="versioned", Key=v["key"], VersionId=v["version_id"])
        assert {t["Key"]: t["Value"] for t in tags["TagSet"]} == v.get("tags", {}), v
    # The notification config, and its events.
    cfg = s3.get_bucket_notification_configuration(Bucket="notified")["TopicConfigurations"]
    assert [(c["Id"], c["TopicArn"], sorted(c["Events"])) for c in cfg] == [
        (c["Id"], c["TopicArn"], sorted(c["Events"]))
        for c in manifest["notification"]["TopicConfigurations"]]
    events, _ = read_all(eddy, "bucket-events")
    names = [json.loads(m.value())["Records"][0]["eventName"] for m in events]
    assert names[:len(manifest["event_names"])] == manifest["event_names"]


def check_compacted(eddy, manifest, opened=False):
    """A topic the fixture's build compacted (its `compacted` section) reads from offset 0
    as exactly the records it read then: none invented, none lost, at their offsets, the
    log start and end where they were. Just `opened`, no pass of this build has run: what
    is read is the fixture's compaction (the checkpoint's, and the pass in the log after
    it), not a new one."""
    if "compacted" not in manifest:
        return
    topic = manifest["compacted"]["topic"]

    def s(x):
        return None if x is None else x.decode()
    got = sorted(([m.partition(), m.offset(), s(m.key()), s(m.value())]
                  for m in read_to_end(eddy.bootstrap, topic)), key=lambda r: (r[0], r[1]))
    assert got == manifest["compacted"]["records"], topic
    ends = manifest["compacted"]["ends"]
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": "upgrade-reader"})
    marks = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
             for p in range(len(ends))]
    c.close()
    assert marks == [(0, end) for end in ends], topic
    if opened:
        assert metric(eddy, "eddy_kafka_compaction_passes") == 0, "this build compacted again"



def check_transactions(eddy, manifest):
    """A topic the fixture's build wrote transactions into (its `transactions` section):
    read_committed gets exactly the committed values, in order per partition, and
    read_uncommitted the aborted ones too; the offsets a committed transaction sent are
    the group's."""
    if "transactions" not in manifest:
        return
    t = manifest["transactions"]

    def values(isolation):
        return sorted([m.partition(), m.value().decode()]
                      for m in read_to_end(eddy.bootstrap, t["topic"], isolation_level=isolation))
    assert values("read_committed") == sorted(t["committed"])
    assert values("read_uncommitted") == sorted(t["committed"] + t["aborted"])
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": t["group"]})
    got = c.committed([TopicPartition(topic, p) for topic, p, _ in t["offsets"]], timeout=10)
    c.close()
    assert [[x.topic, x.partition, x.offset] for x in got] == t["offsets"]


def check_quotas(eddy, manifest):
    """Client quotas the fixture's build set (its `quotas` section) are described by the
    Java admin client exactly as that build described them."""
    if "quotas" not in manifest:
        return
    from connect import classpath
    out = javac(Path(__file__).parent / "java" / "ClientQuotas.java", classpath())
    p = subprocess.run(["java", "-cp", f"{out}:{classpath()}", "ClientQuotas", eddy.bootstrap, "describe"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-4000:]
    got = sorted((json.loads(line) for line in p.stdout.splitlines()),
                 key=lambda d: json.dumps(d["entity"], sort_keys=True))
    assert got == manifest["quotas"]


def with_sasl_listener(eddy):
    """Adds a SASL_PLAINTEXT Kafka listener (at `eddy.sasl_port`) to a server not yet
    started."""
    eddy.sasl_port = free_port()
    eddy.kafka_listeners = [*eddy.kafka_listeners, f"SASL_PLAINTEXT://127.0.0.1:{eddy.sasl_port}"]
    return eddy


def sasl_conf(eddy, user, password, mechanism):
    return {"bootstrap.servers": f"127.0.0.1:{eddy.sasl_port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def kafka_error(e):
    return {"error": e.name()}


def kafka_read(conf, topic):
    """Reads partition 0 of `topic` from offset 0 to its end as `conf`'s user: the values,
    or the error (an authentication failure included)."""
    errors = []
    c = Consumer({**conf, "group.id": f"iam-reader-{time.time_ns()}", "enable.auto.commit": False,
                  "enable.partition.eof": True, "error_cb": errors.append, "log_level": 0})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        values = []
        deadline = time.time() + 30
        while time.time() < deadline:
            auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
            if auth:
                return kafka_error(auth[0])
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return {"values": values}
                return kafka_error(m.error())
            values.append(m.value().decode())
        raise AssertionError(f"{topic}: neither its end nor an error: {errors}")
    finally:
        c.close()


def kafka_write(conf, topic):
    """Produces one record to `topic` as `conf`'s user: ok, or the error."""
    errors, delivered = [], []
    p = Producer({**conf, "message.timeout.ms": 8000, "error_cb": errors.append, "log_level": 0})
    p.produce(topic, value=b"from check_iam", partition=0,
              on_delivery=lambda err, msg: delivered.append(err))
    p.flush(20)
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    if auth:
        return kafka_error(auth[0])
    assert delivered, f"{topic}: no delivery report: {errors}"
    return {"ok": True} if delivered[0] is None else kafka_error(delivered[0])


def unsigned_get(eddy, bucket, key):
    """An anonymous GET (no credentials, plain urllib): the body's md5, or the S3 error code."""
    url = f"{eddy.s3_url}/{bucket}/{urllib.parse.quote(key)}"
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return {"md5": md5(r.read())}
    except urllib.error.HTTPError as e:
        raw = e.read().decode(errors="replace")
        code = raw.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in raw else str(e.code)
        return {"error": code, "status": e.code}


def iam_request(eddy, users, r):
    """Makes one request of an `iam` section's `requests` as its user, with real clients:
    boto3 with the user's S3 keys, confluent-kafka over SASL with the user's password and
    mechanism, or urllib unsigned (`user` null). Returns what the client saw: the data
    read (`md5`, `keys`, `values`), `ok`, or `error` (the S3 error code or the Kafka
    error's name)."""
    if r["api"] == "kafka":
        conf = sasl_conf(eddy, r["user"], r.get("password") or users[r["user"]]["kafka_password"],
                         r["mechanism"])
        return kafka_read(conf, r["topic"]) if r["op"] == "read" else kafka_write(conf, r["topic"])
    if r["user"] is None:
        assert r["op"] == "get", r
        return unsigned_get(eddy, r["bucket"], r["key"])
    s3 = s3util.client(eddy, r["user"], r.get("s3_secret") or users[r["user"]]["s3_secret"])
    try:
        if r["op"] == "get":
            return {"md5": md5(s3.get_object(Bucket=r["bucket"], Key=r["key"])["Body"].read())}
        if r["op"] == "put":
            s3.put_object(Bucket=r["bucket"], Key=r["key"], Body=f"put by {r['user']}".encode())
            return {"ok": True}
        if r["op"] == "delete":
            s3.delete_object(Bucket=r["bucket"], Key=r["key"])
            return {"ok": True}
        if r["op"] == "list":
            got = s3.list_objects_v2(Bucket=r["bucket"], Prefix=r["prefix"])
            return {"keys": [o["Key"] for o in got.get("Contents", [])]}
    except s3util.ClientError as e:
        return {"error": e.response["Error"]["Code"]}
    raise ValueError(r)


def iam_listing(eddy):
    """What the admin API lists: every user (name, administrator, S3 access and SCRAM
    mechanisms with their iterations, never keys) and every policy (document and
    attachments)."""
    status, users = admin(eddy, "GET", "/v1/users")
    assert status == 200, users
    status, policies = admin(eddy, "GET", "/v1/policies")
    assert status == 200, policies
    return {
        "users": [{"name": u["name"], "admin": u.get("admin", False), "s3": u["s3"],
                   "scram": sorted([c["mechanism"], c["iterations"]] for c in u["scram"])}
                  for u in sorted(users["users"], key=lambda u: u["name"])],
        "policies": [{"name": p["name"], "document": p["document"], "attached": sorted(p["attached"])}
                     for p in sorted(policies["policies"], key=lambda p: p["name"])],
    }


def check_iam(eddy, manifest):
    """Users, identity policies and bucket policies the fixture's build kept (its `iam`
    section; some made before its checkpoint, some changed after it): the admin API lists
    the same users and policies, the bucket policies read back, and every request the
    section lists (S3 with each user's secret, Kafka over SASL with each user's
    password, unsigned GETs) sees exactly what it saw on that build: the allowed ones
    their data, the denied ones AccessDenied or TOPIC_AUTHORIZATION_FAILED, a changed
    password's old value and a deleted user's keys refused."""
    if "iam" not in manifest:
        return
    iam = manifest["iam"]
    assert iam_listing(eddy) == iam["listing"]
    s3 = s3util.client(eddy)
    for bucket, doc in iam["bucket_policies"].items():
        assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == doc, bucket
    got = [iam_request(eddy, iam["users"], r) for r in iam["requests"]]
    assert [dict(r, saw=g) for r, g in zip(iam["requests"], got)] == iam["requests"]
    seen = {r["saw"].get("error") for r in iam["requests"]}
    assert {"AccessDenied", "TOPIC_AUTHORIZATION_FAILED"} <= seen, "the fixture denies nothing"


def jsonable_config(x):
    """A boto3 answer as JSON, without its ResponseMetadata: datetimes (a lifecycle rule's
    `Date`) as ISO 8601 in UTC."""
    if isinstance(x, dict):
        return {k: jsonable_config(v) for k, v in x.items() if k != "ResponseMetadata"}
    if isinstance(x, list):
        return [jsonable_config(v) for v in x]
    if isinstance(x, datetime):
        return x.astimezone(timezone.utc).isoformat()
    return x


def acl_state(eddy, bucket):
    """What a bucket's ACLs say (the `acls` section of a fixture's manifest): its object
    ownership, and per object its grants (grantee id or group URI, permission) and the
    status an anonymous GET gets."""
    s3 = s3util.client(eddy)
    ownership = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    objects = []
    for key in ("public", "private", "signed-in", "later"):
        grants = s3.get_object_acl(Bucket=bucket, Key=key)["Grants"]
        grants = sorted([g["Grantee"].get("ID") or g["Grantee"].get("URI"), g["Permission"]]
                        for g in grants)
        try:
            with urllib.request.urlopen(f"{eddy.s3_url}/{bucket}/{key}", timeout=30) as r:
                status = r.status
        except urllib.error.HTTPError as e:
            status = e.code
        objects.append({"key": key, "grants": grants, "anonymous_get": status})
    return {"bucket": bucket, "ownership": ownership, "objects": objects}


def check_acls(eddy, manifest):
    """ACLs the fixture's build stored (put before its checkpoint, changed after it):
    ownership, grants and anonymous reads answer as they did on that build."""
    if "acls" not in manifest:
        return
    assert acl_state(eddy, manifest["acls"]["bucket"]) == manifest["acls"]


def bucket_configs(eddy, bucket):
    """What boto3's GetBucketLifecycleConfiguration and GetBucketCors return for `bucket`
    (in JSON, see jsonable_config), or the S3 error and status each got."""
    s3 = s3util.client(eddy)
    out = {}
    for name, get in (("lifecycle", s3.get_bucket_lifecycle_configuration),
                      ("cors", s3.get_bucket_cors)):
        try:
            out[name] = jsonable_config(get(Bucket=bucket))
        except s3util.ClientError as e:
            out[name] = {"error": e.response["Error"]["Code"],
                         "status": e.response["ResponseMetadata"]["HTTPStatusCode"]}
    return out


def configured_object(eddy, o):
    """A GET of one object of a `bucket_configs` section: of the key (a current version) or
    of its version (a noncurrent one): the body's md5, the version answered, and the
    `x-amz-expiration` the lifecycle rules give it (None if none)."""
    s3 = s3util.client(eddy)
    extra = {} if o["current"] else {"VersionId": o["version_id"]}
    got = s3.get_object(Bucket=o["bucket"], Key=o["key"], **extra)
    return {"md5": md5(got["Body"].read()), "version_id": got.get("VersionId"),
            "expiration": got.get("Expiration")}


def cors_preflight(eddy, p):
    """An unsigned CORS preflight (`OPTIONS` with Origin and Access-Control-Request-Method,
    urllib3, as a browser sends it): the status, the Access-Control-Allow-Origin and
    -Methods answered (None if absent) and the S3 error code of a refusal."""
    url = f"{eddy.s3_url}/{p['bucket']}/{urllib.parse.quote(p['key'])}"
    r = urllib3.PoolManager().request("OPTIONS", url, headers={
        "Origin": p["origin"], "Access-Control-Request-Method": p["method"]})
    raw = r.data.decode(errors="replace")
    return {"status": r.status,
            "allow_origin": r.headers.get("Access-Control-Allow-Origin"),
            "allow_methods": r.headers.get("Access-Control-Allow-Methods"),
            "error": raw.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in raw else None}


def check_schemas(eddy, manifest):
    """The schema registry of a fixture written with `--schemas` answers as it did: every
    subject's versions with their ids and schemas, each id, the subject's level; and it
    takes a new version, whose id is above them all."""
    if "schemas" not in manifest:
        return
    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    from make_format_fixture import orders_schema, registry
    want = manifest["schemas"]
    subjects = {s: [registry(eddy, "GET", f"/subjects/{s}/versions/{v}")
                    for v in registry(eddy, "GET", f"/subjects/{s}/versions")]
                for s in sorted(registry(eddy, "GET", "/subjects"))}
    assert subjects == want["subjects"]
    for i, schema in want["ids"].items():
        assert registry(eddy, "GET", f"/schemas/ids/{i}")["schema"] == schema
    for s, level in want["config"].items():
        assert registry(eddy, "GET", f"/config/{s}") == level
    subject = next(iter(want["config"]))
    new = registry(eddy, "POST", f"/subjects/{subject}/versions",
                   {"schema": orders_schema("note", "channel", "upgraded")})
    assert new["id"] > max(int(i) for i in want["ids"]), new


def check_bucket_configs(eddy, manifest):
    """Lifecycle and CORS configurations the fixture's build kept (its `bucket_configs`
    section; put before its checkpoint, some replaced, deleted or added after it): each
    bucket's Gets answer exactly as they did on that build (the configuration, or
    NoSuchLifecycleConfiguration / NoSuchCORSConfiguration), the objects under the rules
    (versions too) and the pending upload are all still there (nothing was expired,
    the rules' days being a century) with the same `x-amz-expiration`, and every CORS
    preflight gets the same answer: the allowed origins their Access-Control-Allow-Origin,
    the refused ones AccessForbidden."""
    if "bucket_configs" not in manifest:
        return
    c = manifest["bucket_configs"]
    assert {b: bucket_configs(eddy, b) for b in c["buckets"]} == c["buckets"]
    got = [dict(o, saw=configured_object(eddy, o)) for o in c["objects"]]
    assert got == c["objects"]
    s3 = s3util.client(eddy)
    for bucket, want in c["versions"].items():
        listed = s3.list_object_versions(Bucket=bucket)
        assert sorted([v["Key"], v["VersionId"]] for v in listed.get("Versions", [])) == want, bucket
    for up in c["uploads"]:
        listed = s3.list_multipart_uploads(Bucket=up["bucket"]).get("Uploads", [])
        assert [u["UploadId"] for u in listed if u["Key"] == up["key"]] == [up["upload_id"]], up
    got = [dict(p, saw=cors_preflight(eddy, p)) for p in c["preflights"]]
    assert got == c["preflights"]
    answers = {p["saw"]["allow_origin"] is not None for p in c["preflights"]}
    assert answers == {True, False}, "the fixture's preflights are all allowed or all refused"


def target_rows(eddy, manifest):
    """The expansion target's rows, loaded through the REST catalog as test_expansion.py
    does (the load seals the topic first): (schema field names, rows in JSON sorted by
    partition and offset)."""
    table = rest_catalog(eddy).load_table(tuple(manifest["expanded"]["target"]))
    rows = [jsonable_value(r) for r in table.scan().to_arrow().to_pylist()]
    rows.sort(key=lambda r: (r["_kafka_partition"], r["_offset"]))
    keys = [(r["_kafka_partition"], r["_offset"]) for r in rows]
    assert len(set(keys)) == len(keys), "two rows for one record"
    return [f.name for f in table.schema().fields], rows


def check_expanded(eddy, manifest):
    """A topic whose values the fixture's build expanded (its `expanded` section): the
    topic reads back as recorded, the expansion is still attached as it was left, and its
    target reads back exactly the recorded rows, every column, none more."""
    if "expanded" not in manifest:
        return
    e = manifest["expanded"]
    got, _ = read_all(eddy, e["topic"])
    assert sorted((as_manifest(m) for m in got), key=lambda r: (r["partition"], r["offset"])) \
        == e["records"], e["topic"]
    topic_rows = rest_catalog(eddy).load_table(("kafka_topics", e["topic"])).scan().to_arrow()
    assert sorted((r["partition"], r["offset"], r["key"] and r["key"].decode(),
                   r["value"] and r["value"].decode()) for r in topic_rows.to_pylist()) == \
        [(r["partition"], r["offset"], r["key"], r["value"]) for r in e["records"]]
    status, view = admin(eddy, "GET", f"/v1/topics/{urllib.parse.quote(e['topic'], safe='')}/expansion")
    assert status == 200, view
    for k in ("target", "source_column", "format", "schema", "flatten_path", "flatten_delimiter",
              "copy_source_column", "missing_values_output", "excess_values_output", "columns",
              "since", "backfilled"):
        assert view.get(k) == e["view"].get(k), (k, view.get(k), e["view"].get(k))
    columns, rows = target_rows(eddy, manifest)
    assert columns == e["columns"]
    assert rows == e["rows"]


def expand_after_upgrade(eddy, manifest):
    """Records produced after the upgrade are expanded by the expansion the fixture's build
    attached (with the column it added), next to the old rows."""
    if "expanded" not in manifest:
        return None
    e = manifest["expanded"]
    values = [
        {"id": 900, "name": "after upgrade", "qty": 9, "price": "9.99", "paid": True,
         "ratio": 0.5, "tags": ["new"], "attrs": {"a": 1}, "customer": {"name": "n", "zip": 9},
         "at": "2026-12-02T00:00:00Z", "note": "new"},
        {"id": 901, "surplus": True},
        None,
    ]
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5})
    delivered = []
    for i, v in enumerate(values):
        p.produce(e["topic"], partition=i % e["partitions"], key=f"new-{i}".encode(),
                  value=None if v is None else json.dumps(v).encode(),
                  on_delivery=lambda err, m, i=i: delivered.append((err, i, m.partition(), m.offset())))
    assert p.flush(30) == 0
    assert all(err is None for err, *_ in delivered), delivered
    new = {i: (part, off) for _, i, part, off in delivered}
    columns, rows = target_rows(eddy, manifest)
    assert columns == e["columns"]
    old_keys = {(r["_kafka_partition"], r["_offset"]) for r in e["rows"]}
    assert [r for r in rows if (r["_kafka_partition"], r["_offset"]) in old_keys] == e["rows"]
    added = {(r["_kafka_partition"], r["_offset"]): r for r in rows
             if (r["_kafka_partition"], r["_offset"]) not in old_keys}
    assert set(added) == set(new.values()), "the new records' rows"
    full, partial, tomb = (added[new[i]] for i in range(3))
    assert (full["id"], full["name"], full["price"], full["customer__name"], full["customer__zip"],
            full["tags"], full["attrs"], full["note"]) == \
        (900, "after upgrade", "9.99", "n", 9, ["new"], [["a", 1]], "new")
    assert full["at"] == "2026-12-02T00:00:00+00:00"
    assert (full["_parse_error"], full["_missing_values"], full["_excess_values"]) == (0, 0, 0)
    assert full["value"] == "base64:" + base64.b64encode(json.dumps(values[0]).encode()).decode()
    assert (partial["id"], partial["name"], partial["_excess_values"], partial["_parse_error"]) == \
        (901, None, 1, 0)
    assert tomb["_parse_error"] == 0 and tomb["id"] is None and tomb["value"] is None
    return rows


def check_expanded_after_restart(eddy, manifest, rows):
    if rows is None:
        return
    assert target_rows(eddy, manifest) == (manifest["expanded"]["columns"], rows)


def check_uploads(eddy, manifest):
    s3 = s3util.client(eddy)
    for up in manifest["uploads"]:
        listed = s3.list_multipart_uploads(Bucket=up["bucket"]).get("Uploads", [])
        assert [(u["Key"], u["UploadId"]) for u in listed] == [(up["key"], up["upload_id"])]
        parts = s3.list_parts(Bucket=up["bucket"], Key=up["key"], UploadId=up["upload_id"])["Parts"]
        assert [(p["PartNumber"], p["ETag"].strip('"'), p["Size"]) for p in parts] == [
            (p["number"], p["etag"], p["size"]) for p in up["parts"]]
        # The upload a user started before the upgrade completes after it (with its last
        # part only: the first is under the 5 MiB minimum for a part that is not last).
        last = up["parts"][-1]
        s3.complete_multipart_upload(
            Bucket=up["bucket"], Key=up["key"], UploadId=up["upload_id"],
            MultipartUpload={"Parts": [{"PartNumber": last["number"], "ETag": last["etag"]}]})
        data = s3.get_object(Bucket=up["bucket"], Key=up["key"])["Body"].read()
        assert md5(data) == last["md5"]


def check_topics(eddy, manifest):
    for topic, records in manifest["topics"].items():
        got, _ = read_all(eddy, topic)
        assert sorted((as_manifest(m) for m in got), key=lambda r: (r["partition"], r["offset"])) \
            == records, topic
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": "fixture-group"})
    for group, offsets in manifest["offsets"].items():
        assert group == "fixture-group"
        got = c.committed([TopicPartition(t, p) for t, p, _, _ in offsets], timeout=10)
        assert [(g.topic, g.partition, g.offset, g.metadata) for g in got] == \
            [tuple(o) for o in offsets]
    c.close()


def rest_catalog(eddy):
    return RestCatalog(
        "eddy", uri=f"{eddy.http_url}/iceberg", credential=f"{eddy.access_key}:{eddy.secret_key}",
        warehouse="kafka", **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"})


def check_tables(eddy, manifest):
    cat = rest_catalog(eddy)
    for topic, records in manifest["topics"].items():
        rows = cat.load_table(("kafka_topics", topic)).scan().to_arrow().to_pylist()
        got = sorted(
            (r["partition"], r["offset"], r["key"] and r["key"].decode(),
             r["value"] and r["value"].decode()) for r in rows)
        assert got == [(r["partition"], r["offset"], r["key"], r["value"]) for r in records], topic


def check_killed(eddy, manifest):
    k = manifest["killed"]
    got, _ = read_all(eddy, "under-load")
    stored = {(m.partition(), m.offset()): m.value().decode() for m in got}
    for partition, offset, value in k["acked"]:
        assert stored.get((partition, offset)) == value, (partition, offset)
    assert set(stored.values()) <= set(k["attempted"]), "records nobody produced"
    s3 = s3util.client(eddy)
    present = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket="plain", Prefix="load/"):
        for o in page.get("Contents", []):
            present[o["Key"]] = md5(s3.get_object(Bucket="plain", Key=o["Key"])["Body"].read())
    for o in k["objects_acked"]:
        assert present.get(o["key"]) == o["md5"], o["key"]
    attempted = {o["key"]: o["md5"] for o in k["objects_attempted"]}
    for key, digest in present.items():
        assert attempted.get(key) == digest, key


def check_writes(eddy, manifest):
    """The upgraded store takes new writes of every kind next to the old data."""
    s3 = s3util.client(eddy)
    s3.put_object(Bucket="plain", Key="after-upgrade", Body=b"new" * 20_000)
    s3.put_object(Bucket="notified", Key="in/after-upgrade", Body=b"event")
    s3.put_object_tagging(Bucket="plain", Key="size/00000001",
                          Tagging={"TagSet": [{"Key": "after", "Value": "upgrade"}]})
    s3.create_bucket(Bucket="new-bucket")
    topic = "codec-zstd"
    _, ends = read_all(eddy, topic)
    p = Producer({"bootstrap.servers": eddy.bootstrap, "enable.idempotence": True,
                  "compression.type": "zstd"})
    delivered = []
    for i in range(20):
        p.produce(topic, value=f"after-{i}".encode(), partition=i % 2,
                  on_delivery=lambda err, m: delivered.append((err, m.partition(), m.offset())))
    assert p.flush(30) == 0
    assert all(err is None for err, _, _ in delivered)
    for part in (0, 1):
        offsets = sorted(o for _, pp, o in delivered if pp == part)
        assert offsets[0] == ends[part], "offsets continue where the old log ended"
    return {"topic": topic, "ends": ends, "count": len(delivered)}


def check_compaction(eddy, manifest):
    """Format-1 batches compact: a topic of the fixture made compacted keeps every keyed
    record (its keys are unique; tombstones kept, delete.retention.ms being long) and
    loses the keyless ones, at their offsets."""
    topic = "codec-lz4"
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in {
            "cleanup.policy": "compact", "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": str(10 * 365 * 86_400_000),
        }.items()])
    for f in a.incremental_alter_configs([res]).values():
        f.result(timeout=30)
    want = [r for r in manifest["topics"][topic] if r["key"] is not None]
    assert len(want) < len(manifest["topics"][topic])
    deadline = time.time() + 60
    while True:
        got = sorted((as_manifest(m) for m in read_to_end(eddy.bootstrap, topic)),
                     key=lambda r: (r["partition"], r["offset"]))
        if got == want or time.time() > deadline:
            break
        time.sleep(0.2)
    assert got == want


def check_after_restart(eddy, manifest, written):
    s3 = s3util.client(eddy)
    assert s3.get_object(Bucket="plain", Key="after-upgrade")["Body"].read() == b"new" * 20_000
    tags = s3.get_object_tagging(Bucket="plain", Key="size/00000001")["TagSet"]
    assert tags == [{"Key": "after", "Value": "upgrade"}]
    got, ends = read_all(eddy, written["topic"])
    assert sum(ends.values()) == sum(written["ends"].values()) + written["count"]
    events, _ = read_all(eddy, "bucket-events")
    keys = [json.loads(m.value())["Records"][0]["s3"]["object"]["key"] for m in events]
    assert "in/after-upgrade" in keys


def upgrade_cases():
    """Every fixture opened with its store; and rebuilt from its checkpoint, the killed
    fixture of every format (its checkpoint decoders and the replay of what followed)
    and the clean one of the newest format. The clean fixtures of older formats rebuilt
    from their checkpoints read the same layouts the killed ones do, and took 9 x 13 s
    of every CI run."""
    newest = max(FIXTURES, key=lambda m: int(m.parent.name.split("-")[1].removeprefix("v")))
    newest_format = newest.parent.name.split("-")[1]
    cases = []
    for m in FIXTURES:
        cases.append(pytest.param(m, False, id=f"{m.parent.name}-store"))
        kind = json.loads(m.read_text())["kind"]
        if kind == "killed" or m.parent.name.split("-")[1] == newest_format:
            cases.append(pytest.param(m, True, id=f"{m.parent.name}-rebuilt-from-checkpoint"))
    return cases


def with_current_column_names(manifest):
    """The fixture's expansion expectations under this build's column names: expansion
    targets made before the rename call the partition column `_partition` (one of
    Iceberg's reserved metadata column names); opened by this build it reads back as
    `_kafka_partition`, the same field, every value kept."""
    e = manifest.get("expanded")
    if e is None:
        return manifest

    def rename(name):
        return "_kafka_partition" if name == "_partition" else name

    e["columns"] = [rename(c) for c in e["columns"]]
    e["rows"] = [{rename(k): v for k, v in r.items()} for r in e["rows"]]
    if isinstance(e.get("view", {}).get("columns"), list):
        e["view"]["columns"] = [rename(c) if isinstance(c, str) else c
                                for c in e["view"]["columns"]]
    return manifest


@pytest.mark.parametrize("manifest_path,drop_store", upgrade_cases())
def test_a_fixture_reads_back_and_takes_writes(tmp_path, manifest_path, drop_store):
    manifest = with_current_column_names(json.loads(manifest_path.read_text()))
    eddy = open_fixture(tmp_path, manifest_path, drop_store)
    try:
        check_objects(eddy, manifest)
        check_topics(eddy, manifest)
        check_compacted(eddy, manifest, opened=True)
        check_transactions(eddy, manifest)
        check_quotas(eddy, manifest)
        check_iam(eddy, manifest)
        check_bucket_configs(eddy, manifest)
        check_acls(eddy, manifest)
        check_schemas(eddy, manifest)
        check_tables(eddy, manifest)
        check_expanded(eddy, manifest)
        if manifest["kind"] == "killed":
            check_killed(eddy, manifest)
        check_uploads(eddy, manifest)
        written = check_writes(eddy, manifest)
        expanded = expand_after_upgrade(eddy, manifest)
        check_compaction(eddy, manifest)
        eddy.restart()
        check_after_restart(eddy, manifest, written)
        check_compacted(eddy, manifest)
        check_transactions(eddy, manifest)
        check_expanded_after_restart(eddy, manifest, expanded)
    finally:
        eddy.stop()


def read_isolated(eddy, topic, isolation):
    """Every record of `topic` a consumer of `isolation` reads from each log start up to
    its partition ends (for read_committed, the last stable offset)."""
    return read_to_end(eddy.bootstrap, topic, isolation_level=isolation)


TXN_FIXTURE = ROOT / "tests" / "fixtures" / "format-v3-04a6f31-clean" / "manifest.json"


@pytest.mark.parametrize("drop_store", [False, True], ids=["store", "rebuilt-from-checkpoint"])
def test_a_transactional_producer_works_on_an_upgraded_data_dir(tmp_path, drop_store):
    """Format 4 (Kafka transactions) on a format-3 data dir: a transactional producer
    commits one transaction and aborts another on a topic (with an expansion) the old build
    wrote; read_committed sees the old records and the committed values only, before and
    after a restart, and only the committed ones reach the expansion's target."""
    manifest = json.loads(TXN_FIXTURE.read_text())
    e = manifest["expanded"]
    topic = e["topic"]
    eddy = open_fixture(tmp_path, TXN_FIXTURE, drop_store)
    try:
        p = Producer({"bootstrap.servers": eddy.bootstrap, "transactional.id": "upgrade-txn",
                      "linger.ms": 5})
        p.init_transactions(30)
        sent = {}
        for outcome in ("committed", "aborted"):
            p.begin_transaction()
            for i in range(4):
                value = json.dumps({"id": 5000 + i, "name": f"txn-{outcome}-{i}"})
                p.produce(topic, partition=i % e["partitions"], key=f"txn-{i}".encode(),
                          value=value.encode())
                sent.setdefault(outcome, []).append(value)
            assert p.flush(30) == 0
            if outcome == "committed":
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
        old = [r["value"] for r in e["records"]]

        def values(isolation):
            return [m.value().decode() if m.value() is not None else None
                    for m in read_isolated(eddy, topic, isolation)]

        def by_sort(xs):
            return sorted(xs, key=lambda v: (v is not None, v or ""))

        committed = by_sort(values("read_committed"))
        assert committed == by_sort(old + sent["committed"])
        uncommitted = by_sort(values("read_uncommitted"))
        assert uncommitted == by_sort(old + sent["committed"] + sent["aborted"])
        _, rows = target_rows(eddy, manifest)
        names = sorted(r["name"] for r in rows if r["name"] and r["name"].startswith("txn-"))
        assert names == sorted(json.loads(v)["name"] for v in sent["committed"])
        eddy.restart()
        assert by_sort(values("read_committed")) == committed
    finally:
        eddy.stop()


def tree_digest(root: Path):
    return {str(p.relative_to(root)): md5(p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_newer_drive_format_is_refused_and_left_alone(tmp_path):
    clean = next(m for m in FIXTURES if json.loads(m.read_text())["kind"] == "clean")
    data = tmp_path / "data"
    shutil.copytree(clean.parent / "data", data)
    for f in data.glob("drive-*/.eddy-drive.json"):
        fmt = json.loads(f.read_text())
        fmt["format"] = 2
        f.write_text(json.dumps(fmt))
    before = tree_digest(data)
    eddy = new_eddy(tmp_path)
    proc = subprocess.run(
        [eddy_bin(), "serve", "--data-dir", str(data), "--s3-listen", f"127.0.0.1:{eddy.s3_port}",
         "--http-listen", f"127.0.0.1:{eddy.http_port}", "--kafka-listen", eddy.bootstrap],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "is format 2, but this build reads formats up to 1" in proc.stderr, proc.stderr
    assert tree_digest(data) == before, "a refused data dir must not be written"
