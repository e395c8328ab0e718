"""What an operator watches in /metrics besides the counters: a topic's stored bytes and
a consumer group's lag per topic, read from the catalog at each scrape: the lag rises as
records are produced, falls as the group commits, and a topic's size grows with it; a
bucket's bytes (every version) and objects, counted in the background."""

import re
import time
import uuid

import boto3
import pytest
import requests
from botocore.config import Config
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import new_eddy


@pytest.fixture(scope="module")
def eddy(tmp_path_factory):
    """The module's server, counting buckets every second."""
    server = new_eddy(tmp_path_factory.mktemp("operator"), extra_args=["--bucket-usage-secs", "1"]).start()
    yield server
    server.stop()


def gauge(eddy, name, **labels):
    """The value of one sample of `name` with exactly `labels` (None: no such sample)."""
    text = requests.get(f"{eddy.http_url}/metrics", timeout=30).text
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        m = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if m and ",".join(sorted(m.group(1).split(","))) == want:
            return float(m.group(2))
    return None


def commit(eddy, group, topic, offset):
    """Sets the group's committed offset (an empty group, as an operator's reset does)."""
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    futures = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, offset)])])
    for f in futures.values():
        f.result(timeout=30)


def test_topic_bytes_and_group_lag(eddy):
    topic, group = f"lag_{uuid.uuid4().hex[:8]}", f"g_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    assert gauge(eddy, "eddy_kafka_topic_bytes", topic=topic) == 0
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(10):
        p.produce(topic, f"record {i}".encode(), partition=0)
    assert p.flush(30) == 0
    size = gauge(eddy, "eddy_kafka_topic_bytes", topic=topic)
    assert size > 10 * len("record 0")
    assert gauge(eddy, "eddy_kafka_group_lag", group=group, topic=topic) is None
    commit(eddy, group, topic, 4)
    assert gauge(eddy, "eddy_kafka_group_lag", group=group, topic=topic) == 6
    for i in range(5):
        p.produce(topic, b"more", partition=0)
    assert p.flush(30) == 0
    assert gauge(eddy, "eddy_kafka_group_lag", group=group, topic=topic) == 11
    assert gauge(eddy, "eddy_kafka_topic_bytes", topic=topic) > size
    commit(eddy, group, topic, 15)
    assert gauge(eddy, "eddy_kafka_group_lag", group=group, topic=topic) == 0


def await_gauge(eddy, name, want, timeout=30, **labels):
    deadline = time.time() + timeout
    while (got := gauge(eddy, name, **labels)) != want:
        assert time.time() < deadline, f"{name}{labels} is {got}, not {want}"
        time.sleep(0.2)


def test_bucket_bytes_and_objects(eddy):
    s3 = boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=eddy.access_key,
                      aws_secret_access_key=eddy.secret_key, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    bucket = f"usage-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    await_gauge(eddy, "eddy_bucket_objects", 0, bucket=bucket)
    for i in range(3):
        s3.put_object(Bucket=bucket, Key=f"k{i}", Body=b"x" * (100 * (i + 1)))
    await_gauge(eddy, "eddy_bucket_objects", 3, bucket=bucket)
    await_gauge(eddy, "eddy_bucket_bytes", 600, bucket=bucket)
    # Versions count toward the bytes; a delete marker ends an object, not its bytes.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=bucket, Key="k0", Body=b"y" * 50)
    s3.delete_object(Bucket=bucket, Key="k1")
    await_gauge(eddy, "eddy_bucket_objects", 2, bucket=bucket)
    await_gauge(eddy, "eddy_bucket_bytes", 650, bucket=bucket)
