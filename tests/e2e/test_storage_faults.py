"""Storage faults reach clients as storage errors: with more than `m` drives' copies of some
data corrupt, boto3 gets 503 ServiceUnavailable (with its request id) for exactly the bytes
that cannot be rebuilt, and a confluent-kafka consumer is answered KAFKA_STORAGE_ERROR
("Disk error when trying to access log file on disk"), never "no such key", "unknown
topic" or invented records. Once the drives are good again, everything reads back."""

import logging
import os
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import s3util

M = 2  # the default code is 4+2


def corrupt(paths, at):
    """Flips one byte at each offset in `at` of every file; returns the original bytes."""
    saved = {}
    for p in paths:
        data = bytearray(p.read_bytes())
        saved[p] = bytes(data)
        for i in at:
            if i < len(data):
                data[i] ^= 0xFF
        with open(p, "r+b") as f:
            f.write(data)
    return saved


def restore(saved):
    for p, data in saved.items():
        with open(p, "r+b") as f:
            f.write(data)


def test_unreadable_object_data_is_503_and_reads_again_once_repaired(eddy):
    s3 = s3util.client(eddy)
    bucket = s3util.new_bucket(s3, "faults")
    body = os.urandom(2_500_000)  # three stripes of 1 MiB
    s3.put_object(Bucket=bucket, Key="big", Body=body)
    shard_files = sorted(eddy.data_dir.glob("drive-*/blobs/*/*"))
    before = {p for p in shard_files if p.name != "spares"}
    # One byte in the first stripe's block of m+1 drives' shards (the header is 64 bytes).
    victims = [p for p in before if int(p.parts[-4].split("-")[1]) <= M]
    saved = corrupt(victims, [100])
    try:
        with pytest.raises(s3util.ClientError) as e:
            s3.get_object(Bucket=bucket, Key="big")["Body"].read()
        assert s3util.status(e) == 503
        assert s3util.error_code(e) == "ServiceUnavailable"
        meta = e.value.response["ResponseMetadata"]
        assert meta.get("RequestId") and meta["HTTPHeaders"].get("x-amz-request-id") == meta["RequestId"]
        # The object is still there, and its other stripes read.
        assert s3.head_object(Bucket=bucket, Key="big")["ContentLength"] == len(body)
        tail = s3.get_object(Bucket=bucket, Key="big", Range="bytes=2000000-")["Body"].read()
        assert tail == body[2_000_000:]
    finally:
        restore(saved)
    assert s3.get_object(Bucket=bucket, Key="big")["Body"].read() == body


def test_unreadable_log_is_kafka_storage_error_and_reads_again_once_repaired(eddy):
    topic = f"faults-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "-1"})])[topic].result(
        timeout=30)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(10):
        p.produce(topic, value=f"v{i}".encode())
    assert p.flush(30) == 0
    segments = sorted(eddy.data_dir.glob("drive-*/wal/*.wal"))
    victims = [s for s in segments if int(s.parts[-3].split("-")[1]) <= M]
    saved = corrupt(victims, range(40, 1 << 20, 50))

    seen = []

    class Log(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    log = logging.getLogger(f"rdkafka-{topic}")
    log.addHandler(Log())
    log.setLevel(logging.DEBUG)
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": topic,
                  "enable.auto.commit": False, "debug": "fetch"}, logger=log)
    got = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.time() + 30
        while not any("Disk error when trying to access log file" in s for s in seen):
            assert time.time() < deadline, "the consumer never saw KAFKA_STORAGE_ERROR"
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
        assert got == [], "records were returned from an unreadable log"
        restore(saved)
        deadline = time.time() + 30
        while len(got) < 10:
            assert time.time() < deadline, f"{len(got)} of 10 records after the repair"
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        restore(saved)
        c.close()
    assert got == [f"v{i}".encode() for i in range(10)]
