"""Bucket lifecycle with boto3 and aws-cli: configurations validated with AWS's error codes,
the `x-amz-expiration` header, and the background worker removing exactly what the rules
say on unversioned and versioned buckets, across a restart, with `LifecycleExpiration:*`
notification records for what it expires.

The server runs with lifecycle days of two seconds (`--s3-lifecycle-day-secs 2`) and a
pass every 200 ms, so `Days: 1` expires an object two to four seconds after it was written
(AWS rounds expiry up to the next day boundary; Eddy does the same with its shorter days).
Every wait is for a condition, with a deadline."""

import json
import re
import subprocess
import time
import uuid
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

import pytest
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import eddy_bin, new_eddy
from s3util import aws, client, error_code, new_bucket, status

DAY_SECS = 2
LIFECYCLE_ARGS = ["--s3-lifecycle-day-secs", str(DAY_SECS), "--s3-lifecycle-interval-ms", "200"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    eddy = new_eddy(tmp_path_factory.mktemp("lifecycle"), extra_args=LIFECYCLE_ARGS).start()
    yield eddy
    eddy.stop()


@pytest.fixture
def s3(server):
    return client(server)


def wait_for(what, check, timeout=40):
    """Polls `check` until it returns something true; fails naming `what` otherwise."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def keys(s3, bucket):
    out = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    return sorted(o["Key"] for o in out)


def versions(s3, bucket, prefix=""):
    """(key, version id, 'marker' or the body) of every version, newest first per key."""
    r = s3.list_object_versions(Bucket=bucket, Prefix=prefix)
    out = [(v["Key"], v["VersionId"], v["LastModified"], "version") for v in r.get("Versions", [])]
    out += [(m["Key"], m["VersionId"], m["LastModified"], "marker") for m in r.get("DeleteMarkers", [])]
    return sorted(out, key=lambda t: (t[0], -t[2].timestamp()))


def rule(rule_id, prefix=None, **actions):
    r = {"ID": rule_id, "Status": "Enabled", "Filter": {"Prefix": prefix or ""}}
    r.update(actions)
    return r


def test_configuration_round_trip_and_aws_errors(s3, server):
    b = new_bucket(s3, "lc")
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=b)
    assert error_code(e) == "NoSuchLifecycleConfiguration" and status(e) == 404
    rules = [
        rule("logs", "logs/", Expiration={"Days": 30}),
        {"Status": "Disabled", "Filter": {"Tag": {"Key": "tmp", "Value": "1"}},
         "Expiration": {"Date": datetime(2030, 1, 1, tzinfo=timezone.utc)}},
        {"ID": "sizes", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "big/", "ObjectSizeGreaterThan": 1000,
                            "Tags": [{"Key": "a", "Value": "b"}]}},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 3, "NewerNoncurrentVersions": 2}},
        rule("uploads", AbortIncompleteMultipartUpload={"DaysAfterInitiation": 7}),
    ]
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
    assert [r.get("ID") for r in got][0] == "logs"
    assert got[0]["Expiration"] == {"Days": 30}
    # A rule without an id gets one, as AWS gives it.
    assert got[1]["ID"] and got[1]["Status"] == "Disabled"
    assert got[1]["Expiration"]["Date"] == datetime(2030, 1, 1, tzinfo=timezone.utc)
    assert got[2]["Filter"]["And"]["ObjectSizeGreaterThan"] == 1000
    assert got[2]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 3, "NewerNoncurrentVersions": 2}
    assert got[3]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 7}

    def refused(rules_, code, http=400):
        with pytest.raises(ClientError) as e:
            s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": rules_})
        assert (error_code(e), status(e)) == (code, http), rules_

    refused([rule("zero", Expiration={"Days": 0})], "InvalidArgument")
    refused([rule("none")], "InvalidRequest")
    refused([rule("dup", Expiration={"Days": 1}), rule("dup", Expiration={"Days": 2})], "InvalidArgument")
    refused([rule("noon", Expiration={"Date": datetime(2030, 1, 1, 12, tzinfo=timezone.utc)})],
            "InvalidArgument")
    refused([rule("both", Expiration={"Days": 1, "ExpiredObjectDeleteMarker": True})], "InvalidArgument")
    refused([{"ID": "tagged", "Status": "Enabled", "Filter": {"Tag": {"Key": "k", "Value": "v"}},
              "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}], "InvalidRequest")
    refused([rule("few", NoncurrentVersionExpiration={"NoncurrentDays": 1, "NewerNoncurrentVersions": 101})],
            "InvalidArgument")
    refused([rule("glacier", Transitions=[{"Days": 30, "StorageClass": "GLACIER"}])], "NotImplemented", 501)
    # A refused configuration left the stored one alone.
    assert len(s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]) == 4
    with pytest.raises(ClientError) as e:
        s3.put_bucket_lifecycle_configuration(Bucket=f"missing-{uuid.uuid4().hex[:8]}",
                                              LifecycleConfiguration={"Rules": rules[:1]})
    assert error_code(e) == "NoSuchBucket"

    # aws-cli reads and writes the same documents.
    doc = json.dumps({"Rules": [rule("cli", "cli/", Expiration={"Days": 5})]})
    aws(server, "s3api", "put-bucket-lifecycle-configuration", "--bucket", b,
        "--lifecycle-configuration", doc)
    out = json.loads(aws(server, "s3api", "get-bucket-lifecycle-configuration", "--bucket", b).stdout)
    assert out["Rules"] == [{"ID": "cli", "Status": "Enabled", "Filter": {"Prefix": "cli/"},
                             "Expiration": {"Days": 5}}]
    s3.delete_bucket_lifecycle(Bucket=b)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_lifecycle_configuration(Bucket=b)
    assert error_code(e) == "NoSuchLifecycleConfiguration"
    # Deleting what is not there is a 204 too.
    assert s3.delete_bucket_lifecycle(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"] == 204


def expiry_of(header):
    m = re.fullmatch(r'expiry-date="([^"]+)", rule-id="([^"]+)"', header)
    assert m, header
    return parsedate_to_datetime(m.group(1)), m.group(2)


def test_expiration_header_on_put_get_and_head(s3):
    b = new_bucket(s3, "lch")
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        rule("far", "docs/", Expiration={"Days": 100_000}),
        rule("dated", "old/", Expiration={"Date": datetime(2099, 1, 1, tzinfo=timezone.utc)}),
    ]})
    put = s3.put_object(Bucket=b, Key="docs/a", Body=b"x")
    at, rule_id = expiry_of(put["Expiration"])
    assert rule_id == "far"
    # 100,000 two-second days, rounded up to a day boundary.
    want = datetime.now(timezone.utc) + timedelta(seconds=100_000 * DAY_SECS)
    assert abs((at - want).total_seconds()) <= 2 * DAY_SECS + 5
    assert at.timestamp() % DAY_SECS == 0
    assert expiry_of(s3.get_object(Bucket=b, Key="docs/a")["Expiration"]) == (at, "far")
    assert expiry_of(s3.head_object(Bucket=b, Key="docs/a")["Expiration"]) == (at, "far")
    s3.put_object(Bucket=b, Key="old/a", Body=b"x")
    assert expiry_of(s3.head_object(Bucket=b, Key="old/a")["Expiration"]) == (
        datetime(2099, 1, 1, tzinfo=timezone.utc), "dated")
    s3.put_object(Bucket=b, Key="other", Body=b"x")
    assert "Expiration" not in s3.head_object(Bucket=b, Key="other")


def test_expiration_header_on_reads_of_noncurrent_versions(s3):
    """A GET or HEAD naming a noncurrent version reports when NoncurrentVersionExpiration
    removes it, counted from when the next newer version was written; the newest
    noncurrent versions NewerNoncurrentVersions keeps report none; naming the current
    version reports the current expiry."""
    b = new_bucket(s3, "lcn")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        rule("old", "k", NoncurrentVersionExpiration={"NoncurrentDays": 50_000,
                                                      "NewerNoncurrentVersions": 1}),
        rule("far", "k", Expiration={"Days": 100_000}),
    ]})
    ids = [s3.put_object(Bucket=b, Key="k", Body=f"v{i}".encode())["VersionId"] for i in range(3)]
    v1_written = s3.head_object(Bucket=b, Key="k", VersionId=ids[1])["LastModified"]
    # ids[1] is the newest noncurrent version: kept by NewerNoncurrentVersions.
    assert "Expiration" not in s3.head_object(Bucket=b, Key="k", VersionId=ids[1])
    at, rule_id = expiry_of(s3.get_object(Bucket=b, Key="k", VersionId=ids[0])["Expiration"])
    assert rule_id == "old"
    want = v1_written + timedelta(seconds=50_000 * DAY_SECS)
    assert 0 <= (at - want).total_seconds() <= DAY_SECS + 1
    assert expiry_of(s3.head_object(Bucket=b, Key="k", VersionId=ids[0])["Expiration"]) == (
        at, "old")
    current = expiry_of(s3.head_object(Bucket=b, Key="k")["Expiration"])
    assert current[1] == "far"
    assert expiry_of(s3.head_object(Bucket=b, Key="k", VersionId=ids[2])["Expiration"]) == current


def create_topic(eddy):
    topic = f"lc-{uuid.uuid4().hex[:8]}"
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    return topic


def events(eddy, topic):
    """(eventName, key) of every record the topic holds (up to its high watermark)."""
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": f"r-{uuid.uuid4().hex}",
                  "enable.auto.commit": False})
    end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.time() + 30
    while len(out) < end and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            r = json.loads(m.value())["Records"][0]
            out.append((r["eventName"], r["s3"]["object"]["key"]))
    c.close()
    assert len(out) == end
    return sorted(out)


def test_unversioned_expiration_removes_exactly_what_the_rules_say(s3, server):
    b = new_bucket(s3, "lcu")
    lifecycle_topic, removed_topic = create_topic(server), create_topic(server)
    s3.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={"TopicConfigurations": [
        {"TopicArn": f"arn:aws:sns:us-east-1:eddy:{lifecycle_topic}", "Events": ["s3:LifecycleExpiration:*"]},
        {"TopicArn": f"arn:aws:sns:us-east-1:eddy:{removed_topic}", "Events": ["s3:ObjectRemoved:*"]},
    ]})
    s3.put_object(Bucket=b, Key="tmp/a", Body=b"a")
    s3.put_object(Bucket=b, Key="tmp/b", Body=b"b" * 100)
    s3.put_object(Bucket=b, Key="keep/c", Body=b"c")
    s3.put_object(Bucket=b, Key="tagged/x", Body=b"x", Tagging="expire=yes")
    s3.put_object(Bucket=b, Key="tagged/y", Body=b"y", Tagging="expire=no")
    s3.put_object(Bucket=b, Key="sized/small", Body=b"s")
    s3.put_object(Bucket=b, Key="sized/large", Body=b"L" * 5000)
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        rule("tmp", "tmp/", Expiration={"Days": 1}),
        {"ID": "tagged", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "tagged/", "Tags": [{"Key": "expire", "Value": "yes"}]}},
         "Expiration": {"Days": 1}},
        {"ID": "large", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "sized/", "ObjectSizeGreaterThan": 1000}},
         "Expiration": {"Days": 1}},
        {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": "keep/"}, "Expiration": {"Days": 1}},
    ]})
    left = ["keep/c", "sized/small", "tagged/y"]
    wait_for("the expired keys to go", lambda: keys(s3, b) == left)
    # Later passes leave the rest alone: one more day goes by, and nothing else goes.
    time.sleep(2 * DAY_SECS)
    assert keys(s3, b) == left
    assert events(server, lifecycle_topic) == [
        ("LifecycleExpiration:Delete", k) for k in ["sized/large", "tagged/x", "tmp/a", "tmp/b"]]
    # A client's delete raises ObjectRemoved; an expiration does not (as on AWS).
    assert events(server, removed_topic) == []
    s3.delete_object(Bucket=b, Key="keep/c")
    assert events(server, removed_topic) == [("ObjectRemoved:Delete", "keep/c")]


def test_incomplete_uploads_are_aborted(s3):
    b = new_bucket(s3, "lcm")
    s3.create_multipart_upload(Bucket=b, Key="up/a")
    kept = s3.create_multipart_upload(Bucket=b, Key="other/b")["UploadId"]
    up = s3.create_multipart_upload(Bucket=b, Key="up/c")["UploadId"]
    s3.upload_part(Bucket=b, Key="up/c", UploadId=up, PartNumber=1, Body=b"p" * 1000)
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        rule("abort", "up/", AbortIncompleteMultipartUpload={"DaysAfterInitiation": 1}),
    ]})

    def uploads():
        return sorted((u["Key"], u["UploadId"]) for u in
                      s3.list_multipart_uploads(Bucket=b).get("Uploads", []))

    wait_for("the up/ uploads to be aborted", lambda: uploads() == [("other/b", kept)])
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=b, Key="up/c", UploadId=up)
    assert error_code(e) == "NoSuchUpload"


def test_versioned_expiration_noncurrent_versions_and_markers_across_a_restart(tmp_path):
    eddy = new_eddy(tmp_path, extra_args=LIFECYCLE_ARGS).start()
    try:
        s3 = client(eddy)
        b = new_bucket(s3, "lcv")
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        topic = create_topic(eddy)
        s3.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={"TopicConfigurations": [
            {"TopicArn": f"arn:aws:sns:us-east-1:eddy:{topic}", "Events": ["s3:LifecycleExpiration:*"]}]})
        ids = [s3.put_object(Bucket=b, Key="cur/k", Body=f"v{i}".encode())["VersionId"] for i in range(3)]
        s3.put_object(Bucket=b, Key="dm/k", Body=b"gone")
        s3.delete_object(Bucket=b, Key="dm/k")
        s3.put_object(Bucket=b, Key="plain/k", Body=b"stays")
        s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            # The current version gets a delete marker; of the noncurrent ones the newest
            # is kept.
            rule("cur", "cur/", Expiration={"Days": 1},
                 NoncurrentVersionExpiration={"NoncurrentDays": 1, "NewerNoncurrentVersions": 1}),
            # The noncurrent version goes, then the marker left alone goes too.
            rule("dm", "dm/", Expiration={"ExpiredObjectDeleteMarker": True},
                 NoncurrentVersionExpiration={"NoncurrentDays": 1}),
        ]})
        # The rules are durable: a restart before anything is due loses none of them.
        eddy.restart()
        s3 = client(eddy)

        def cur_settled():
            v = versions(s3, b, "cur/")
            return [(k, kind) for k, _, _, kind in v] == [("cur/k", "marker"), ("cur/k", "version")] and v

        v = wait_for("cur/k to end as a marker over its newest version", cur_settled)
        assert v[1][1] == ids[2]
        assert s3.get_object(Bucket=b, Key="cur/k", VersionId=ids[2])["Body"].read() == b"v2"
        wait_for("dm/k to go entirely", lambda: versions(s3, b, "dm/") == [])
        assert s3.get_object(Bucket=b, Key="plain/k")["Body"].read() == b"stays"
        got = events(eddy, topic)
        assert got.count(("LifecycleExpiration:DeleteMarkerCreated", "cur/k")) == 1
        # v0 and v1 of cur/k, then dm/k's version and its marker.
        assert got.count(("LifecycleExpiration:Delete", "cur/k")) == 2
        assert got.count(("LifecycleExpiration:Delete", "dm/k")) == 2
        assert len(got) == 5
    finally:
        eddy.stop()


def test_lifecycle_is_refused_to_users_without_the_permission(s3, server):
    """Put/Get lifecycle are their own IAM actions: a user without them is denied."""
    b = new_bucket(s3, "lca")
    env = {"EDDY_ACCESS_KEY": server.access_key, "EDDY_SECRET_KEY": server.secret_key,
           "PATH": "/usr/bin:/bin"}
    subprocess.run([eddy_bin(), "user", "--url", server.http_url, "put", "carol", "--s3-secret",
                    "carol-secret-key"], check=True, capture_output=True, timeout=60, env=env)
    carol = client(server, access_key="carol", secret_key="carol-secret-key")
    with pytest.raises(ClientError) as e:
        carol.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            rule("x", Expiration={"Days": 1})]})
    assert error_code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        carol.get_bucket_lifecycle_configuration(Bucket=b)
    assert error_code(e) == "AccessDenied"
