"""Bucket notifications: object changes made with boto3 and aws-cli append event records
to an Eddy topic in the same transaction, read back with a confluent-kafka consumer
(explicit partition assignment, no consumer group).

Each test checks the exact set of records a topic holds (the high watermarks bound it, so
"nothing else" is checked without waiting), their S3 event JSON and their CloudEvents
headers."""

import hashlib
import json
import re
import threading
import time
import urllib.parse
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
import urllib3
from botocore.exceptions import BotoCoreError, ClientError
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import first_message, metric, new_eddy
from s3util import aws, client, error_code, new_bucket, status

ALL_EVENTS = ["s3:ObjectCreated:*", "s3:ObjectRemoved:*", "s3:ObjectTagging:*"]


def name(prefix="ev"):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(eddy, partitions=3, topic=None):
    topic = topic or name()
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    return topic


def delete_topic(eddy, topic):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.delete_topics([topic])[topic].result(timeout=30)


def arn(topic):
    return f"arn:aws:sns:us-east-1:eddy:{topic}"


def configure(s3, bucket, *configs):
    """Sets the bucket's TopicConfigurations: each is (topic ARN or name, events,
    filter rules as {name: value}, id)."""
    topics = []
    for c in configs:
        topic, events = c[0], c[1]
        rules = c[2] if len(c) > 2 else {}
        t = {"TopicArn": topic, "Events": events}
        if len(c) > 3:
            t["Id"] = c[3]
        if rules:
            t["Filter"] = {"Key": {"FilterRules": [{"Name": k, "Value": v} for k, v in rules.items()]}}
        topics.append(t)
    s3.put_bucket_notification_configuration(
        Bucket=bucket, NotificationConfiguration={"TopicConfigurations": topics}
    )


def read_topic(eddy, topic, timeout=30):
    """Every record of the topic, read from offset 0 of each partition up to the high
    watermarks taken first (every change was acknowledged before, so they are final)."""
    c = Consumer({
        "bootstrap.servers": eddy.bootstrap,
        "group.id": name("reader"),
        "enable.auto.commit": False,
    })
    md = c.list_topics(topic, timeout=10)
    parts = sorted(md.topics[topic].partitions)
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
    want = sum(ends.values())
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    got = []
    deadline = time.time() + timeout
    while len(got) < want and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        headers = {k: v.decode() for k, v in (m.headers() or [])}
        got.append({
            "partition": m.partition(),
            "offset": m.offset(),
            "key": m.key().decode(),
            "headers": headers,
            "value": json.loads(m.value()),
            "timestamp": m.timestamp()[1],
        })
    c.close()
    assert len(got) == want, f"read {len(got)} of {want} records"
    return got


def record(ev):
    return ev["value"]["Records"][0]


def summary(events):
    """(eventName, bucket/key) of each record, in topic order per partition."""
    return sorted((record(e)["eventName"], e["key"]) for e in events)


def murmur2_partition(eddy, key, partitions):
    """The partition librdkafka's murmur2 partitioner (Kafka's default) picks for `key`:
    produced to a scratch topic with the same partition count."""
    scratch = create_topic(eddy, partitions)
    p = Producer({"bootstrap.servers": eddy.bootstrap, "partitioner": "murmur2"})
    out = []
    p.produce(scratch, key=key.encode(), value=b"x", on_delivery=lambda err, m: out.append((err, m)))
    p.flush(30)
    assert out and out[0][0] is None, out
    return out[0][1].partition()


def check_record(eddy, ev, *, bucket, key, event_name, ce_type, principal="eddyadmin",
                 etag=None, size=None, version_id=None, request_id=None, partitions=3):
    h = ev["headers"]
    r = record(ev)
    assert ev["key"] == f"{bucket}/{key}"
    assert h["ce_specversion"] == "1.0"
    assert re.fullmatch(r"[0-9a-f-]{36}", h["ce_id"]), h
    assert h["ce_source"] == f"arn:aws:s3:::{bucket}"
    assert h["ce_type"] == ce_type
    assert h["ce_subject"] == key
    assert h["ce_elementpath"] == f"{bucket}/{key}"
    assert h["ce_eventname"] == f"s3:{event_name}"
    assert h["content-type"] == "application/json"
    assert h["ce_time"] == r["eventTime"]
    t = datetime.strptime(r["eventTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    assert abs(t.timestamp() - time.time()) < 300
    assert abs(ev["timestamp"] / 1000 - t.timestamp()) < 1
    assert r["eventVersion"] == "2.1"
    assert r["eventSource"] == "aws:s3"
    assert r["awsRegion"] == "us-east-1"
    assert r["eventName"] == event_name
    assert r["userIdentity"]["principalId"] == principal
    assert r["requestParameters"]["sourceIPAddress"] == "127.0.0.1"
    if request_id is not None:
        assert r["responseElements"]["x-amz-request-id"] == request_id
    s3 = r["s3"]
    assert s3["s3SchemaVersion"] == "1.0"
    assert s3["bucket"] == {
        "name": bucket,
        "ownerIdentity": {"principalId": "eddyadmin"},
        "arn": f"arn:aws:s3:::{bucket}",
    }
    o = s3["object"]
    # Keys are URL-encoded as AWS does: form encoding, '/' kept.
    assert o["key"] == "/".join(urllib.parse.quote_plus(seg, safe="*") for seg in key.split("/"))
    assert urllib.parse.unquote_plus(o["key"]) == key
    assert re.fullmatch(r"[0-9A-F]{16}", o["sequencer"]), o
    if etag is None:
        assert "eTag" not in o and "size" not in o, o
    else:
        assert o["eTag"] == etag.strip('"')
        assert o["size"] == size
    if version_id is None:
        assert "versionId" not in o, o
    else:
        assert o["versionId"] == version_id
    assert ev["partition"] == murmur2_partition(eddy, ev["key"], partitions)


def rid(resp):
    return resp["ResponseMetadata"]["RequestId"]


# The default ce_type prefix is Eddy's own; `--notify-ce-type-prefix vastdata.com:` gives
# the VAST event format's types (test_kill9_under_load_events_match_committed_changes).
CREATED = "eddy:Element.ElementCreated"
DELETED = "eddy:Element.ElementDeleted"


def test_configuration_round_trip_and_errors(eddy):
    s3 = client(eddy)
    b = new_bucket(s3)
    t1, t2 = create_topic(eddy), create_topic(eddy, 1)
    assert s3.get_bucket_notification_configuration(Bucket=b).get("TopicConfigurations") is None
    configure(
        s3, b,
        (arn(t1), ["s3:ObjectCreated:*", "s3:ObjectTagging:Put"], {"prefix": "img/", "suffix": ".jpg"}, "images"),
        (t2, ["s3:ObjectRemoved:DeleteMarkerCreated"]),
    )
    got = s3.get_bucket_notification_configuration(Bucket=b)["TopicConfigurations"]
    assert len(got) == 2
    assert got[0]["Id"] == "images"
    assert got[0]["TopicArn"] == arn(t1)
    assert got[0]["Events"] == ["s3:ObjectCreated:*", "s3:ObjectTagging:Put"]
    assert got[0]["Filter"]["Key"]["FilterRules"] == [
        {"Name": "prefix", "Value": "img/"}, {"Name": "suffix", "Value": ".jpg"},
    ]
    assert got[1]["TopicArn"] == t2 and got[1]["Id"], got[1]
    assert "Filter" not in got[1]

    # aws-cli reads the same configuration.
    out = json.loads(aws(eddy, "s3api", "get-bucket-notification-configuration", "--bucket", b).stdout)
    assert [c["TopicArn"] for c in out["TopicConfigurations"]] == [arn(t1), t2]

    def refused(*configs, code="InvalidArgument", http=400):
        with pytest.raises(ClientError) as e:
            configure(s3, b, *configs)
        assert error_code(e) == code, e.value.response
        assert status(e) == http

    refused((arn("no-such-topic"), ["s3:ObjectCreated:*"]))
    refused(("no-such-topic", ["s3:ObjectCreated:*"]))
    refused((t1, ["s3:ObjectCreated:Nope"]))
    refused((t1, ["s3:ObjectRestore:Post"]))
    refused((t1, ["s3:ObjectCreated:*"], {"middle": "x"}))
    refused(("arn:aws:sns:events", ["s3:ObjectCreated:*"]))
    refused(("bad/topic", ["s3:ObjectCreated:*"]))
    refused((t1, ["s3:ObjectCreated:*"], {}, "same"), (t2, ["s3:ObjectRemoved:*"], {}, "same"))
    with pytest.raises(ClientError) as e:
        s3.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={
            "TopicConfigurations": [{
                "TopicArn": t1, "Events": ["s3:ObjectCreated:*"],
                "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "a"}, {"Name": "prefix", "Value": "b"}]}},
            }],
        })
    assert error_code(e) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={
            "LambdaFunctionConfigurations": [{
                "LambdaFunctionArn": "arn:aws:lambda:us-east-1:1:function:f", "Events": ["s3:ObjectCreated:*"],
            }],
        })
    assert error_code(e) == "NotImplemented"
    with pytest.raises(ClientError) as e:
        s3.get_bucket_notification_configuration(Bucket=name("nobucket"))
    assert error_code(e) == "NoSuchBucket"
    # The refused configurations left the stored one alone.
    assert len(s3.get_bucket_notification_configuration(Bucket=b)["TopicConfigurations"]) == 2

    # A MinIO-style QueueConfiguration naming the topic works too and comes back as one.
    s3.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={
        "QueueConfigurations": [{"QueueArn": f"arn:minio:sqs::primary:{t1}", "Events": ["s3:ObjectCreated:Put"]}],
    })
    got = s3.get_bucket_notification_configuration(Bucket=b)
    assert got.get("TopicConfigurations") is None
    assert got["QueueConfigurations"][0]["QueueArn"] == f"arn:minio:sqs::primary:{t1}"
    s3.put_object(Bucket=b, Key="q", Body=b"queue")
    assert summary(read_topic(eddy, t1)) == [("ObjectCreated:Put", f"{b}/q")]

    # An empty configuration turns notifications off.
    s3.put_bucket_notification_configuration(Bucket=b, NotificationConfiguration={})
    assert s3.get_bucket_notification_configuration(Bucket=b).get("QueueConfigurations") is None
    s3.put_object(Bucket=b, Key="after-off", Body=b"x")
    assert len(read_topic(eddy, t1)) == 1


def test_boto3_uploads(eddy):
    s3 = client(eddy)
    b = new_bucket(s3)
    topic = create_topic(eddy)
    configure(s3, b, (arn(topic), ["s3:ObjectCreated:*"], {}, "uploads"))

    single = s3.put_object(Bucket=b, Key="dir/my file (1).txt", Body=b"hello world")
    parts = [b"a" * (5 << 20), b"b" * 1000]
    mpu = s3.create_multipart_upload(Bucket=b, Key="big.bin")
    etags = [
        s3.upload_part(Bucket=b, Key="big.bin", UploadId=mpu["UploadId"], PartNumber=i + 1, Body=p)["ETag"]
        for i, p in enumerate(parts)
    ]
    done = s3.complete_multipart_upload(
        Bucket=b, Key="big.bin", UploadId=mpu["UploadId"],
        MultipartUpload={"Parts": [{"ETag": e, "PartNumber": i + 1} for i, e in enumerate(etags)]},
    )
    copy = s3.copy_object(Bucket=b, Key="copy/é.txt", CopySource={"Bucket": b, "Key": "dir/my file (1).txt"})
    # A browser-form upload (presigned POST).
    post = s3.generate_presigned_post(b, "posted.txt")
    resp = urllib3.PoolManager().request(
        "POST", post["url"], fields={**post["fields"], "file": ("posted.txt", b"posted body")},
    )
    assert resp.status == 204, resp.data
    # An aborted upload and a failed precondition raise nothing.
    aborted = s3.create_multipart_upload(Bucket=b, Key="aborted")
    s3.abort_multipart_upload(Bucket=b, Key="aborted", UploadId=aborted["UploadId"])
    with pytest.raises(ClientError):
        s3.put_object(Bucket=b, Key="big.bin", Body=b"x", IfNoneMatch="*")

    events = read_topic(eddy, topic)
    assert summary(events) == sorted([
        ("ObjectCreated:Put", f"{b}/dir/my file (1).txt"),
        ("ObjectCreated:CompleteMultipartUpload", f"{b}/big.bin"),
        ("ObjectCreated:Copy", f"{b}/copy/é.txt"),
        ("ObjectCreated:Post", f"{b}/posted.txt"),
    ])
    by_key = {record(e)["s3"]["object"]["key"]: e for e in events}
    check_record(eddy, by_key["dir/my+file+%281%29.txt"], bucket=b, key="dir/my file (1).txt",
                 event_name="ObjectCreated:Put", ce_type=CREATED, etag=single["ETag"], size=11,
                 request_id=rid(single))
    check_record(eddy, by_key["big.bin"], bucket=b, key="big.bin",
                 event_name="ObjectCreated:CompleteMultipartUpload", ce_type=CREATED,
                 etag=done["ETag"], size=sum(map(len, parts)), request_id=rid(done))
    assert done["ETag"].endswith('-2"')
    check_record(eddy, by_key["copy/%C3%A9.txt"], bucket=b, key="copy/é.txt",
                 event_name="ObjectCreated:Copy", ce_type=CREATED,
                 etag=copy["CopyObjectResult"]["ETag"], size=11, request_id=rid(copy))
    check_record(eddy, by_key["posted.txt"], bucket=b, key="posted.txt",
                 event_name="ObjectCreated:Post", ce_type=CREATED,
                 etag=hashlib.md5(b"posted body").hexdigest(), size=11,
                 request_id=resp.headers["x-amz-request-id"])
    assert all(record(e)["s3"]["configurationId"] == "uploads" for e in events)
    assert len({e["headers"]["ce_id"] for e in events}) == len(events)


def test_aws_cli_uploads_copies_and_deletes(eddy, tmp_path):
    s3 = client(eddy)
    b = new_bucket(s3)
    topic = create_topic(eddy, 4)
    configure(s3, b, (topic, ALL_EVENTS))
    small = tmp_path / "small.txt"
    small.write_bytes(b"small file")
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * (9 * 4096))  # 9 MiB: aws-cli uploads it in parts
    aws(eddy, "s3", "cp", str(small), f"s3://{b}/cli/small.txt")
    aws(eddy, "s3", "cp", str(big), f"s3://{b}/cli/big.bin")
    aws(eddy, "s3", "cp", f"s3://{b}/cli/small.txt", f"s3://{b}/cli/copied.txt")
    aws(eddy, "s3", "rm", f"s3://{b}/cli/small.txt")
    events = read_topic(eddy, topic)
    assert summary(events) == sorted([
        ("ObjectCreated:Put", f"{b}/cli/small.txt"),
        ("ObjectCreated:CompleteMultipartUpload", f"{b}/cli/big.bin"),
        ("ObjectCreated:Copy", f"{b}/cli/copied.txt"),
        ("ObjectRemoved:Delete", f"{b}/cli/small.txt"),
    ])
    by = {(record(e)["eventName"], e["key"]): e for e in events}
    head = s3.head_object(Bucket=b, Key="cli/big.bin")
    check_record(eddy, by[("ObjectCreated:CompleteMultipartUpload", f"{b}/cli/big.bin")], bucket=b,
                 key="cli/big.bin", event_name="ObjectCreated:CompleteMultipartUpload", ce_type=CREATED,
                 etag=head["ETag"], size=big.stat().st_size, partitions=4)
    check_record(eddy, by[("ObjectRemoved:Delete", f"{b}/cli/small.txt")], bucket=b, key="cli/small.txt",
                 event_name="ObjectRemoved:Delete", ce_type=DELETED, partitions=4)
    # One object's events share a partition.
    assert by[("ObjectCreated:Put", f"{b}/cli/small.txt")]["partition"] == \
        by[("ObjectRemoved:Delete", f"{b}/cli/small.txt")]["partition"]


def test_deletes_delete_objects_and_delete_markers(eddy):
    s3 = client(eddy)
    b = new_bucket(s3)
    topic = create_topic(eddy)
    for k in ["a", "b", "c"]:
        s3.put_object(Bucket=b, Key=k, Body=k.encode())
    configure(s3, b, (topic, ["s3:ObjectRemoved:*"]))
    d = s3.delete_object(Bucket=b, Key="a")
    s3.delete_object(Bucket=b, Key="never-existed")  # no change, no event
    many = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "b"}, {"Key": "c"}, {"Key": "ghost"}]})
    events = read_topic(eddy, topic)
    assert summary(events) == [
        ("ObjectRemoved:Delete", f"{b}/a"), ("ObjectRemoved:Delete", f"{b}/b"), ("ObjectRemoved:Delete", f"{b}/c"),
    ]
    by = {e["key"]: e for e in events}
    check_record(eddy, by[f"{b}/a"], bucket=b, key="a", event_name="ObjectRemoved:Delete",
                 ce_type=DELETED, request_id=rid(d))
    for k in ["b", "c"]:
        check_record(eddy, by[f"{b}/{k}"], bucket=b, key=k, event_name="ObjectRemoved:Delete",
                     ce_type=DELETED, request_id=rid(many))

    # Versioned bucket: a delete makes a marker; deleting a version removes it.
    vb = new_bucket(s3)
    s3.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Enabled"})
    vtopic = create_topic(eddy)
    configure(s3, vb, (vtopic, ALL_EVENTS))
    v1 = s3.put_object(Bucket=vb, Key="doc", Body=b"one")
    marker = s3.delete_object(Bucket=vb, Key="doc")
    assert marker["DeleteMarker"] is True
    gone = s3.delete_object(Bucket=vb, Key="doc", VersionId=v1["VersionId"])
    multi = s3.delete_objects(Bucket=vb, Delete={"Objects": [{"Key": "doc"}, {"Key": "other"}]})
    markers = {d["Key"]: d["DeleteMarkerVersionId"] for d in multi["Deleted"]}
    events = read_topic(eddy, vtopic)
    assert summary(events) == sorted([
        ("ObjectCreated:Put", f"{vb}/doc"),
        ("ObjectRemoved:DeleteMarkerCreated", f"{vb}/doc"),
        ("ObjectRemoved:Delete", f"{vb}/doc"),
        ("ObjectRemoved:DeleteMarkerCreated", f"{vb}/doc"),
        ("ObjectRemoved:DeleteMarkerCreated", f"{vb}/other"),
    ])
    # In commit order within the object's partition.
    doc = sorted((e for e in events if e["key"] == f"{vb}/doc"), key=lambda e: e["offset"])
    assert [record(e)["eventName"] for e in doc] == [
        "ObjectCreated:Put", "ObjectRemoved:DeleteMarkerCreated", "ObjectRemoved:Delete",
        "ObjectRemoved:DeleteMarkerCreated",
    ]
    seqs = [record(e)["s3"]["object"]["sequencer"] for e in doc]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    check_record(eddy, doc[0], bucket=vb, key="doc", event_name="ObjectCreated:Put", ce_type=CREATED,
                 etag=v1["ETag"], size=3, version_id=v1["VersionId"], request_id=rid(v1))
    check_record(eddy, doc[1], bucket=vb, key="doc", event_name="ObjectRemoved:DeleteMarkerCreated",
                 ce_type=DELETED, version_id=marker["VersionId"], request_id=rid(marker))
    check_record(eddy, doc[2], bucket=vb, key="doc", event_name="ObjectRemoved:Delete",
                 ce_type=DELETED, version_id=v1["VersionId"], request_id=rid(gone))
    check_record(eddy, doc[3], bucket=vb, key="doc", event_name="ObjectRemoved:DeleteMarkerCreated",
                 ce_type=DELETED, version_id=markers["doc"], request_id=rid(multi))
    other = next(e for e in events if e["key"] == f"{vb}/other")
    assert record(other)["s3"]["object"]["versionId"] == markers["other"]


def test_tagging(eddy):
    s3 = client(eddy)
    b = new_bucket(s3)
    topic, minio = create_topic(eddy), create_topic(eddy)
    put = s3.put_object(Bucket=b, Key="t.txt", Body=b"tagged")
    configure(
        s3, b,
        (topic, ["s3:ObjectTagging:*"]),
        # MinIO's names for the same two events.
        (minio, ["s3:ObjectCreated:PutTagging", "s3:ObjectCreated:DeleteTagging"]),
    )
    tp = s3.put_object_tagging(Bucket=b, Key="t.txt", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    td = s3.delete_object_tagging(Bucket=b, Key="t.txt")
    with pytest.raises(ClientError):
        s3.put_object_tagging(Bucket=b, Key="missing", Tagging={"TagSet": []})
    aws(eddy, "s3api", "put-object-tagging", "--bucket", b, "--key", "t.txt",
        "--tagging", "TagSet=[{Key=cli,Value=yes}]")
    for t in (topic, minio):
        events = sorted(read_topic(eddy, t), key=lambda e: e["offset"])
        assert [record(e)["eventName"] for e in events] == [
            "ObjectTagging:Put", "ObjectTagging:Delete", "ObjectTagging:Put",
        ]
        check_record(eddy, events[0], bucket=b, key="t.txt", event_name="ObjectTagging:Put",
                     ce_type="eddy:Element.ElementTagCreated", etag=put["ETag"], size=6,
                     request_id=rid(tp))
        check_record(eddy, events[1], bucket=b, key="t.txt", event_name="ObjectTagging:Delete",
                     ce_type="eddy:Element.ElementTagDeleted", etag=put["ETag"], size=6,
                     request_id=rid(td))
        assert [e["headers"]["ce_minioeventname"] for e in events] == [
            "s3:ObjectCreated:PutTagging", "s3:ObjectCreated:DeleteTagging", "s3:ObjectCreated:PutTagging",
        ]


def test_filters_and_two_configurations(eddy):
    s3 = client(eddy)
    b = new_bucket(s3)
    images, removals = create_topic(eddy, 2), create_topic(eddy, 5)
    configure(
        s3, b,
        (arn(images), ["s3:ObjectCreated:Put"], {"prefix": "img/", "suffix": ".jpg"}, "jpegs"),
        (images, ["s3:ObjectCreated:*"], {"suffix": ".png"}, "pngs"),
        (arn(removals), ["s3:ObjectRemoved:*"], {"prefix": "img/"}, "removals"),
        # Overlaps "jpegs": a change matching both gets a record for each.
        (removals, ["s3:ObjectCreated:*"], {"prefix": "img/big"}, "big"),
    )
    for k in ["img/a.jpg", "img/a.png", "doc/a.jpg", "img/a.jpeg", "a.png", "img/big.jpg", "other.txt"]:
        s3.put_object(Bucket=b, Key=k, Body=k.encode())
    s3.copy_object(Bucket=b, Key="img/copy.jpg", CopySource={"Bucket": b, "Key": "img/a.jpg"})  # not a Put
    s3.delete_object(Bucket=b, Key="img/a.png")
    s3.delete_object(Bucket=b, Key="a.png")
    got = read_topic(eddy, images)
    assert sorted((record(e)["s3"]["configurationId"], e["key"]) for e in got) == sorted([
        ("jpegs", f"{b}/img/a.jpg"), ("pngs", f"{b}/img/a.png"), ("pngs", f"{b}/a.png"), ("jpegs", f"{b}/img/big.jpg"),
    ])
    got = read_topic(eddy, removals)
    assert sorted((record(e)["s3"]["configurationId"], record(e)["eventName"], e["key"]) for e in got) == sorted([
        ("big", "ObjectCreated:Put", f"{b}/img/big.jpg"),
        ("removals", "ObjectRemoved:Delete", f"{b}/img/a.png"),
    ])


def test_sequencers_of_one_key_follow_its_commit_order(eddy):
    """Eight boto3 clients overwrite one key at once: in its partition, the events'
    sequencers rise with their offsets (the order the changes committed in), and the
    highest one belongs to the version the key holds in the end, as consumers that
    order one key's events by sequencer rely on."""
    s3 = client(eddy)
    b = new_bucket(s3)
    topic = create_topic(eddy)
    configure(s3, b, (topic, ["s3:ObjectCreated:*"]))

    def put(i):
        c = client(eddy)
        for n in range(10):
            c.put_object(Bucket=b, Key="hot", Body=f"{i}-{n}".encode())

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = sorted(read_topic(eddy, topic), key=lambda e: e["offset"])
    assert len(events) == 80 and len({e["partition"] for e in events}) == 1
    seqs = [int(record(e)["s3"]["object"]["sequencer"], 16) for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == 80
    final = s3.head_object(Bucket=b, Key="hot")["ETag"].strip('"')
    assert record(events[-1])["s3"]["object"]["eTag"] == final


def test_events_on_a_log_append_time_topic_carry_the_append_time(eddy):
    """confluent-kafka reads the events of a LogAppendTime topic as log-append-time
    records, stamped between the request and its answer."""
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

    s3 = client(eddy)
    b = new_bucket(s3)
    topic = name()
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1, config={"message.timestamp.type": "LogAppendTime"})])[
        topic].result(timeout=30)
    configure(s3, b, (topic, ["s3:ObjectCreated:*"]))
    before = int(time.time() * 1000)
    s3.put_object(Bucket=b, Key="stamped", Body=b"x")
    after = int(time.time() * 1000)
    m = first_message(eddy.bootstrap, topic, 0, 0)
    assert m is not None and m.error() is None
    kind, ts = m.timestamp()
    assert kind == TIMESTAMP_LOG_APPEND_TIME
    assert before - 5 <= ts <= after + 5


def test_deleted_topic_drops_events_and_recreated_topic_gets_them(eddy):
    s3 = client(eddy)
    b = new_bucket(s3)
    topic = create_topic(eddy)
    configure(s3, b, (topic, ["s3:ObjectCreated:*"]))
    s3.put_object(Bucket=b, Key="before", Body=b"1")
    delete_topic(eddy, topic)
    dropped = metric(eddy, "eddy_notify_dropped_events")
    s3.put_object(Bucket=b, Key="while-gone", Body=b"2")  # the change still commits
    assert s3.get_object(Bucket=b, Key="while-gone")["Body"].read() == b"2"
    assert metric(eddy, "eddy_notify_dropped_events") == dropped + 1
    create_topic(eddy, 2, topic)
    s3.put_object(Bucket=b, Key="after", Body=b"3")
    assert summary(read_topic(eddy, topic)) == [("ObjectCreated:Put", f"{b}/after")]
    assert metric(eddy, "eddy_notify_events") >= 2


def test_uploads_while_the_topic_is_deleted_and_recreated(eddy):
    """Every upload succeeds while another client deletes and recreates the event topic
    (a commit that finds its topic gone is rebuilt), and the records that exist are
    for uploads that happened, once each."""
    s3 = client(eddy)
    b = new_bucket(s3)
    topic = create_topic(eddy, 2)
    configure(s3, b, (topic, ["s3:ObjectCreated:*"]))
    stop = threading.Event()
    toggles = []

    def toggle():
        a = AdminClient({"bootstrap.servers": eddy.bootstrap})
        while not stop.is_set():
            a.delete_topics([topic])[topic].result(timeout=30)
            a.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
            toggles.append(1)

    t = threading.Thread(target=toggle, daemon=True)
    t.start()
    keys = [f"k{i}" for i in range(150)]
    try:
        for k in keys:
            s3.put_object(Bucket=b, Key=k, Body=k.encode())
    finally:
        stop.set()
        t.join(timeout=60)
    assert len(toggles) >= 5, len(toggles)
    events = read_topic(eddy, topic)
    got = [e["key"] for e in events]
    assert len(got) == len(set(got))
    assert set(got) <= {f"{b}/{k}" for k in keys}


# --- kill -9 under load -------------------------------------------------------------


class Worker(threading.Thread):
    """Puts, deletes, DeleteObjects and taggings on keys of its own (so the last request
    on a key is the one in flight when the server dies) until a request fails."""

    def __init__(self, eddy, bucket, wid, rnd_seed):
        super().__init__(daemon=True)
        import random
        self.rnd = random.Random(rnd_seed)
        self.s3 = client(eddy, connect_timeout=5, read_timeout=20)
        self.bucket = bucket
        self.keys = [f"w{wid}/k{i}" for i in range(4)]
        self.wid = wid
        self.acked = []  # (request id, key, event name, detail)
        self.in_flight = None  # (op, keys, token, error) of the request that failed
        self.failed_at = None
        self.n = 0

    def run(self):
        while True:
            self.n += 1
            op = self.rnd.choice(["put", "put", "delete", "delete_objects", "tag", "untag"])
            key = self.rnd.choice(self.keys)
            token = f"{self.wid}-{self.n}-{uuid.uuid4().hex[:6]}"
            try:
                if op == "put":
                    body = token.encode()
                    r = self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)
                    self.acked.append((rid(r), key, "ObjectCreated:Put", r["VersionId"]))
                elif op == "delete":
                    r = self.s3.delete_object(Bucket=self.bucket, Key=key)
                    self.acked.append((rid(r), key, "ObjectRemoved:DeleteMarkerCreated", r["VersionId"]))
                elif op == "delete_objects":
                    ks = self.rnd.sample(self.keys, 2)
                    key = ks
                    r = self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in ks]})
                    assert not r.get("Errors"), r
                    for d in r["Deleted"]:
                        self.acked.append((rid(r), d["Key"], "ObjectRemoved:DeleteMarkerCreated",
                                           d["DeleteMarkerVersionId"]))
                elif op == "tag":
                    try:
                        r = self.s3.put_object_tagging(
                            Bucket=self.bucket, Key=key, Tagging={"TagSet": [{"Key": "op", "Value": token}]})
                    except ClientError as e:
                        if error_code_of(e) in ("MethodNotAllowed", "NoSuchKey"):
                            continue  # the key is deleted: no change
                        raise
                    self.acked.append((rid(r), key, "ObjectTagging:Put", r["VersionId"]))
                else:
                    try:
                        r = self.s3.delete_object_tagging(Bucket=self.bucket, Key=key)
                    except ClientError as e:
                        if error_code_of(e) in ("MethodNotAllowed", "NoSuchKey"):
                            continue
                        raise
                    self.acked.append((rid(r), key, "ObjectTagging:Delete", r["VersionId"]))
            except (BotoCoreError, ClientError, OSError) as e:
                self.failed_at = time.time()
                self.in_flight = (op, key, token, repr(e))
                return


def error_code_of(e):
    return e.response["Error"]["Code"]


def all_versions(s3, bucket):
    out = []
    kw = {}
    while True:
        r = s3.list_object_versions(Bucket=bucket, **kw)
        out += [(v["Key"], v["VersionId"], "ObjectCreated:Put", v["ETag"].strip('"')) for v in r.get("Versions", [])]
        out += [(m["Key"], m["VersionId"], "ObjectRemoved:DeleteMarkerCreated", None)
                for m in r.get("DeleteMarkers", [])]
        if not r.get("IsTruncated"):
            return out
        kw = {"KeyMarker": r["NextKeyMarker"], "VersionIdMarker": r["NextVersionIdMarker"]}


def test_kill9_under_load_events_match_committed_changes(tmp_path):
    import random
    server = new_eddy(tmp_path, env={"EDDY_NOTIFY_CE_TYPE_PREFIX": "vastdata.com:"})
    server.start()
    try:
        s3 = client(server)
        b = new_bucket(s3)
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        topic = create_topic(server, 4)
        configure(s3, b, (arn(topic), ALL_EVENTS))
        acked, in_flight = [], []
        for round_no in range(5):
            workers = [Worker(server, b, f"{round_no}{w}", random.random()) for w in range(6)]
            for w in workers:
                w.start()
            deadline = time.time() + 20
            # Let the load run a random while, then kill at an arbitrary moment.
            target = random.randint(60, 400)
            while sum(len(w.acked) for w in workers) < target and time.time() < deadline:
                time.sleep(0.02)
            killed_at = time.time()
            server.stop(kill=True)
            for w in workers:
                w.join(timeout=60)
                assert not w.is_alive()
                assert w.in_flight is not None, "a worker stopped without a failed request"
                # Only the kill may fail a request.
                assert w.failed_at >= killed_at, w.in_flight
                acked += w.acked
                in_flight.append(w.in_flight)
            server.start()
        s3 = client(server)
        events = read_topic(server, topic, timeout=60)
        assert len(acked) >= 150, len(acked)

        # No duplicates: every record has its own CloudEvents id and each change
        # (request id, key) appears once.
        ids = [e["headers"]["ce_id"] for e in events]
        assert len(ids) == len(set(ids))
        seen = {}
        for e in events:
            r = record(e)
            assert e["headers"]["ce_type"].startswith("vastdata.com:Element."), e["headers"]
            k = (r["responseElements"]["x-amz-request-id"], e["key"][len(b) + 1:])
            assert k not in seen, f"duplicate event for {k}"
            seen[k] = e

        # No event missing for an acknowledged change, with the fields it acknowledged.
        for request_id, key, event_name, version in acked:
            e = seen.get((request_id, key))
            assert e is not None, f"no event for acknowledged {event_name} of {key} ({request_id})"
            assert record(e)["eventName"] == event_name
            assert record(e)["s3"]["object"]["versionId"] == version

        # Events match the committed state exactly: every version and delete marker
        # that exists has one creating event, and every creating event's version
        # exists (an event for a change that never committed would have no version).
        state = all_versions(s3, b)
        creating = [e for e in events if record(e)["eventName"] in
                    ("ObjectCreated:Put", "ObjectRemoved:DeleteMarkerCreated")]
        from_events = sorted(
            (e["key"][len(b) + 1:], record(e)["s3"]["object"]["versionId"], record(e)["eventName"],
             record(e)["s3"]["object"].get("eTag"))
            for e in creating
        )
        assert from_events == sorted(state)

        # Taggings: an event whose request was not acknowledged must be a tagging
        # that committed (the request in flight at a kill), visible in the state.
        acked_ids = {(a[0], a[1]) for a in acked}
        for (request_id, key), e in seen.items():
            name_ = record(e)["eventName"]
            if not name_.startswith("ObjectTagging:") or (request_id, key) in acked_ids:
                continue
            version = record(e)["s3"]["object"]["versionId"]
            tags = s3.get_object_tagging(Bucket=b, Key=key, VersionId=version)["TagSet"]
            flight = [f for f in in_flight if f[0] in ("tag", "untag") and f[1] == key]
            assert flight, f"tagging event for {key} matches no request"
            op, _, token, _ = flight[0]
            assert tags == ([{"Key": "op", "Value": token}] if op == "tag" else [])
        # And a tagging in flight that committed has its event.
        for op, key, token, _ in in_flight:
            if op != "tag":
                continue
            try:
                tags = s3.get_object_tagging(Bucket=b, Key=key)["TagSet"]
            except ClientError:
                continue
            if tags == [{"Key": "op", "Value": token}]:
                assert any(k == key and (r, k) not in acked_ids and record(e)["eventName"] == "ObjectTagging:Put"
                           for (r, k), e in seen.items()), f"committed tagging of {key} has no event"
        unacked = sum(1 for k in seen if k not in acked_ids)
        print(f"kill -9 x5: {len(acked)} acknowledged changes, {len(events)} events, "
              f"{unacked} events of requests in flight at a kill")
    finally:
        server.stop()
