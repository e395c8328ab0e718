"""Message formats v0 and v1 (Produce v0-2, Fetch v0-3), which Kafka 4.0 removed and
clients pinned to old broker versions still use: kafka-python with `api_version` (0, 9)
(magic 0) and (0, 10, 0) / (0, 10, 1) (magic 1), with every codec those formats have.

What a user checks: what an old producer wrote reads back unchanged with a modern client
(keys, values, the timestamps magic 1 carries), what a modern producer wrote reads back
with an old consumer (headers dropped, as Kafka drops them), an old consumer never sees
an aborted transaction's records or a marker, and a corrupt message set gets
CORRUPT_MESSAGE with nothing appended."""

import socket
import struct
import time
import uuid
import zlib

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from conftest import read_to_end

PINNED = [(0, 9), (0, 10, 0), (0, 10, 1)]
CODECS = [None, "gzip", "snappy", "lz4"]


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create(eddy, topic, partitions=2):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def old_consume(eddy, topic, api_version, expected, timeout=30, **conf):
    """Every record a kafka-python consumer pinned to `api_version` reads from the start
    of `topic` (assigned, no group), until `expected` have come or `timeout` passed."""
    c = KafkaConsumer(bootstrap_servers=eddy.bootstrap, api_version=api_version,
                      enable_auto_commit=False, auto_offset_reset="earliest",
                      consumer_timeout_ms=1000, **conf)
    try:
        parts = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic))]
        c.assign(parts)
        c.seek_to_beginning(*parts)
        got = []
        deadline = time.time() + timeout
        while len(got) < expected and time.time() < deadline:
            for batch in c.poll(timeout_ms=500).values():
                got.extend(batch)
        return got
    finally:
        c.close()


@pytest.mark.parametrize("api_version", PINNED, ids=lambda v: ".".join(map(str, v)))
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
def test_an_old_producer_writes_what_a_modern_consumer_reads(eddy, api_version, codec):
    topic = name("oldprod")
    create(eddy, topic)
    p = KafkaProducer(bootstrap_servers=eddy.bootstrap, api_version=api_version,
                      compression_type=codec, linger_ms=20, batch_size=64 << 10)
    sent_at = int(time.time() * 1000)
    stamps = {}
    futures = []
    for i in range(60):
        ts = 1_700_000_000_000 + i
        stamps[f"v{i}"] = ts
        futures.append(p.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(),
                              partition=i % 2, timestamp_ms=ts))
    metas = [f.get(timeout=30) for f in futures]
    p.close()
    # Acknowledged offsets are the ones the records are read at.
    acked = {(m.partition, m.offset) for m in metas}
    assert len(acked) == 60

    got = read_to_end(eddy.bootstrap, topic)
    assert sorted(m.value().decode() for m in got) == sorted(stamps)
    assert {(m.partition(), m.offset()) for m in got} == acked
    for m in got:
        v = m.value().decode()
        assert m.key().decode() == "k" + v[1:]
        assert m.partition() == int(v[1:]) % 2
        ts_type, ts = m.timestamp()
        if api_version >= (0, 10, 0):
            assert ts == stamps[v], (v, ts)
        else:
            # Magic 0 has no timestamp: the broker's receive time.
            assert sent_at - 1000 <= ts <= int(time.time() * 1000), (v, ts)


@pytest.mark.parametrize("api_version", PINNED, ids=lambda v: ".".join(map(str, v)))
def test_an_old_consumer_reads_committed_records_without_markers(eddy, api_version):
    topic = name("oldcons")
    create(eddy, topic, partitions=1)
    plain = Producer({"bootstrap.servers": eddy.bootstrap, "compression.type": "zstd"})
    for i in range(5):
        plain.produce(topic, key=f"k{i}", value=f"plain{i}", timestamp=1_600_000_000_000 + i,
                      headers=[("h", b"x")])
    plain.flush(30)
    tx = Producer({"bootstrap.servers": eddy.bootstrap, "transactional.id": name("tx")})
    tx.init_transactions(30)
    tx.begin_transaction()
    for i in range(3):
        tx.produce(topic, value=f"aborted{i}")
    tx.flush(30)
    tx.abort_transaction(30)
    tx.begin_transaction()
    for i in range(3):
        tx.produce(topic, value=f"committed{i}")
    tx.commit_transaction(30)
    plain.produce(topic, value="last")
    plain.flush(30)

    modern = read_to_end(eddy.bootstrap, topic, isolation_level="read_committed")
    want = [(m.offset(), m.value().decode()) for m in modern]
    assert [v for _, v in want] == [f"plain{i}" for i in range(5)] + \
        [f"committed{i}" for i in range(3)] + ["last"]

    got = old_consume(eddy, topic, api_version, expected=len(want))
    assert [(r.offset, r.value.decode()) for r in got] == want
    assert [r.key.decode() for r in got[:5]] == [f"k{i}" for i in range(5)]
    if api_version >= (0, 10, 0):
        assert [r.timestamp for r in got[:5]] == [1_600_000_000_000 + i for i in range(5)]
    # Nothing more arrives: the markers and the aborted records are not records.
    assert old_consume(eddy, topic, api_version, expected=len(want) + 1, timeout=3) == got
    # A partition limit smaller than a stored batch's messages: a message per fetch, from
    # inside the batch, and the consumer still moves through all of them.
    small = old_consume(eddy, topic, api_version, expected=len(want),
                        max_partition_fetch_bytes=40)
    assert [(r.offset, r.value.decode()) for r in small] == want


def test_an_old_consumer_group_commits_and_resumes(eddy):
    """A kafka-python consumer group pinned to 0.10.1 (Fetch v3, OffsetCommit v2)
    resumes where it committed."""
    topic, group = name("oldgroup"), name("g")
    create(eddy, topic)
    p = KafkaProducer(bootstrap_servers=eddy.bootstrap, api_version=(0, 10, 1))
    for i in range(20):
        p.send(topic, value=f"a{i}".encode(), partition=i % 2)
    p.flush(30)

    def consume(n):
        c = KafkaConsumer(topic, bootstrap_servers=eddy.bootstrap, api_version=(0, 10, 1),
                          group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False, consumer_timeout_ms=1000)
        got = []
        deadline = time.time() + 60
        while len(got) < n and time.time() < deadline:
            for batch in c.poll(timeout_ms=500).values():
                got.extend(batch)
        c.commit()
        c.close()
        return got

    first = consume(20)
    assert sorted(r.value.decode() for r in first) == sorted(f"a{i}" for i in range(20))
    for i in range(20, 30):
        p.send(topic, value=f"a{i}".encode(), partition=i % 2)
    p.flush(30)
    p.close()
    second = consume(10)
    assert sorted(r.value.decode() for r in second) == sorted(f"a{i}" for i in range(20, 30))


def _frame(api_key, version, correlation, body):
    client = b"eddy-test"
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client
    return struct.pack(">i", len(header) + len(body)) + header + body


def _roundtrip(eddy, frame):
    host, port = eddy.bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        data = b""
        while len(data) < size:
            data += s.recv(size - len(data))
        return data


def _message(value, flip=False):
    m = struct.pack(">bbq", 1, 0, int(time.time() * 1000)) + struct.pack(">i", -1) + \
        struct.pack(">i", len(value)) + value
    crc = zlib.crc32(m) ^ (1 if flip else 0)
    return struct.pack(">qiI", 0, len(m) + 4, crc) + m


def _produce_v2(topic, message_set):
    t = topic.encode()
    body = struct.pack(">hii", 1, 10000, 1) + struct.pack(">h", len(t)) + t + \
        struct.pack(">ii", 1, 0) + struct.pack(">i", len(message_set)) + message_set
    return _frame(0, 2, 7, body)


def test_a_corrupt_message_set_gets_corrupt_message_and_nothing_is_appended(eddy):
    topic = name("corrupt")
    create(eddy, topic, partitions=1)
    resp = _roundtrip(eddy, _produce_v2(topic, _message(b"good")))
    # correlation, topics=1, name, partitions=1, index, error, base offset, append time, throttle
    t = topic.encode()
    off = 4 + 4 + 2 + len(t) + 4
    index, error, base = struct.unpack(">ihq", resp[off:off + 14])
    assert (index, error, base) == (0, 0, 0)

    for bad in (_message(b"bad crc", flip=True), _message(b"cut")[:-2]):
        resp = _roundtrip(eddy, _produce_v2(topic, bad))
        index, error, _ = struct.unpack(">ihq", resp[off:off + 14])
        assert (index, error) == (0, 2), "CORRUPT_MESSAGE"
    got = read_to_end(eddy.bootstrap, topic)
    assert [m.value() for m in got] == [b"good"]
