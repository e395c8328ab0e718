"""Retention (retention.ms, retention.bytes) against the real binary, with librdkafka
(confluent-kafka) and kafka-python as the clients that produce, alter and observe it.
The server runs a retention pass every 200 ms so the tests wait for conditions, not
for the default five minutes."""

import os
import tempfile
import time
import uuid
from pathlib import Path

import kafka
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from pyiceberg.catalog.rest import RestCatalog

from conftest import first_message, metric, new_eddy

HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def eddy():
    with tempfile.TemporaryDirectory(prefix="eddy-e2e-") as tmp:
        server = new_eddy(
            Path(tmp), extra_args=["--kafka-retention-check-interval-ms", "200"]
        ).start()
        yield server
        server.stop()


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create(eddy, topic, partitions, config):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(timeout=30)


def produce(eddy, topic, partition, values, timestamp=None, key=None):
    """One batch per value (flushed one by one), CreateTime `timestamp` if given."""
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 0,
                  "compression.type": "none"})
    for v in values:
        if timestamp is None:
            p.produce(topic, key=key, value=v, partition=partition)
        else:
            p.produce(topic, key=key, value=v, partition=partition, timestamp=timestamp)
        assert p.flush(10) == 0


def watermarks(eddy, topic, partition):
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": name("w")})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        c.close()


def await_low(eddy, topic, partition, at_least, timeout=30):
    """Waits until the partition's log start offset reaches `at_least`; returns it."""
    deadline = time.time() + timeout
    while True:
        low, _ = watermarks(eddy, topic, partition)
        if low >= at_least or time.time() > deadline:
            return low
        time.sleep(0.1)


def await_full_pass(eddy, timeout=30):
    """Waits until a retention pass has started and ended after this call: two more
    completed passes than now."""
    start = metric(eddy, "eddy_kafka_retention_passes")
    deadline = time.time() + timeout
    while metric(eddy, "eddy_kafka_retention_passes") < start + 2:
        assert time.time() < deadline, "no retention pass completed"
        time.sleep(0.1)


def read_from_earliest(eddy, topic, partition, expected):
    """kafka-python: a new consumer with auto_offset_reset=earliest reads the partition."""
    c = kafka.KafkaConsumer(bootstrap_servers=eddy.bootstrap, auto_offset_reset="earliest",
                            enable_auto_commit=False, consumer_timeout_ms=10_000)
    tp = kafka.TopicPartition(topic, partition)
    c.assign([tp])
    got = []
    for m in c:
        got.append((m.offset, m.value))
        if len(got) == expected:
            break
    c.close()
    return got


def test_retention_ms_deletes_old_batches_and_keeps_the_rest(eddy):
    compact = name("compact")
    create(eddy, compact, 1, {"cleanup.policy": "compact", "retention.ms": "1"})
    topic = name("age")
    create(eddy, topic, 2, {"retention.ms": str(HOUR_MS)})
    before = metric(eddy, "eddy_kafka_retention_deleted_records")
    now = int(time.time() * 1000)
    # Distinct keys (compacted topics refuse keyless records; compaction keeps both).
    produce(eddy, compact, 0, [b"c0"], timestamp=now - 2 * HOUR_MS, key=b"a")
    produce(eddy, compact, 0, [b"c1"], timestamp=now - 2 * HOUR_MS, key=b"b")
    produce(eddy, topic, 0, [b"old%d" % i for i in range(5)], timestamp=now - 2 * HOUR_MS)
    produce(eddy, topic, 0, [b"new0", b"new1", b"new2"])
    produce(eddy, topic, 1, [b"p1-%d" % i for i in range(4)])

    assert await_low(eddy, topic, 0, 5) == 5
    assert watermarks(eddy, topic, 0) == (5, 8)
    assert read_from_earliest(eddy, topic, 0, 3) == [(5, b"new0"), (6, b"new1"), (7, b"new2")]
    # Young data and a compact-only topic are untouched, also by a whole later pass.
    await_full_pass(eddy)
    assert watermarks(eddy, topic, 1) == (0, 4)
    assert watermarks(eddy, compact, 0) == (0, 2)
    assert metric(eddy, "eddy_kafka_retention_deleted_records") - before == 5


def test_retention_bytes_keeps_the_smallest_suffix_over_the_limit(eddy):
    topic = name("size")
    create(eddy, topic, 1, {"retention.ms": "-1", "retention.bytes": "50000"})
    values = [os.urandom(10_000) for _ in range(20)]
    produce(eddy, topic, 0, values)
    # Each batch holds one ~10,070-byte record: five batches are over 50,000 bytes and
    # four are under, so exactly the last five stay.
    assert await_low(eddy, topic, 0, 15) == 15
    assert watermarks(eddy, topic, 0) == (15, 20)
    got = read_from_earliest(eddy, topic, 0, 5)
    assert got == [(15 + i, v) for i, v in enumerate(values[15:])]


def test_altered_retention_applies_to_stored_data(eddy):
    topic = name("alter")
    create(eddy, topic, 1, {"retention.ms": "-1"})
    now = int(time.time() * 1000)
    produce(eddy, topic, 0, [b"a", b"b", b"c"], timestamp=now - 2 * HOUR_MS)
    produce(eddy, topic, 0, [b"d"])
    assert watermarks(eddy, topic, 0) == (0, 4)
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", str(HOUR_MS), incremental_operation=AlterConfigOpType.SET),
    ])
    a.incremental_alter_configs([res])[res].result(timeout=10)
    assert await_low(eddy, topic, 0, 3) == 3
    assert read_from_earliest(eddy, topic, 0, 1) == [(3, b"d")]
    # A consumer positioned below the new start follows auto.offset.reset.
    m = first_message(eddy.bootstrap, topic, 0, 1, **{"auto.offset.reset": "earliest"})
    assert m is not None and m.error() is None
    assert (m.offset(), m.value()) == (3, b"d")


def test_the_topic_table_follows_retention(eddy):
    """The topic's Iceberg table (read with PyIceberg), sealed before retention applies,
    drops what retention then deletes."""
    topic = name("tbl")
    create(eddy, topic, 1, {"retention.ms": "-1"})
    values = [os.urandom(10_000) for _ in range(12)]
    produce(eddy, topic, 0, values)
    cat = RestCatalog(
        "eddy", uri=f"{eddy.http_url}/iceberg",
        credential=f"{eddy.access_key}:{eddy.secret_key}", warehouse="kafka",
        **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"})

    def table_rows():
        rows = cat.load_table(("kafka_topics", topic)).scan().to_arrow().to_pylist()
        return sorted((r["offset"], r["value"]) for r in rows)

    assert table_rows() == list(enumerate(values))  # loading sealed all twelve
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.bytes", "50000", incremental_operation=AlterConfigOpType.SET),
    ])
    a.incremental_alter_configs([res])[res].result(timeout=10)
    assert await_low(eddy, topic, 0, 7) == 7
    assert table_rows() == [(7 + i, v) for i, v in enumerate(values[7:])]
