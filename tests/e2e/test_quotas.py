"""Client quotas with real clients: the Java admin client sets, describes (with its
filters) and removes them, and gets Kafka's errors for what Eddy does not enforce;
confluent-kafka producers and consumers over their byte-rate quotas see librdkafka's
throttle callback and move no faster than the quota, while a client without one is
not throttled; a request-time quota throttles a client that only asks for metadata;
quotas are stored and apply again after a restart. The server measures rates over two
one-second samples so the tests need only a few seconds of traffic."""

import json
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient

from conftest import new_eddy
from connect import classpath
from test_groups import create, name

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")

JAVA_DIR = Path(__file__).parent / "java"
SERVER_ARGS = ["--kafka-quota-window-num", "2", "--kafka-quota-window-size-seconds", "1"]
RATE = 200_000  # bytes per second
VALUE = b"x" * 10_000


@pytest.fixture(scope="module")
def eddy(tmp_path_factory):
    server = new_eddy(tmp_path_factory.mktemp("eddy"), extra_args=SERVER_ARGS).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    out = tmp_path_factory.mktemp("quota-java")
    javac = subprocess.run(["javac", "-cp", classpath(), "-d", str(out), str(JAVA_DIR / "ClientQuotas.java")],
                           capture_output=True, text=True, timeout=300)
    assert javac.returncode == 0, javac.stderr[-4000:]

    def run(bootstrap, *args):
        p = subprocess.run(["java", "-cp", f"{out}:{classpath()}", "ClientQuotas", bootstrap, *args],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-4000:]
        return p.stdout.strip().splitlines()
    return run


def described(java, eddy, *filters):
    return sorted((json.dumps(d["entity"], sort_keys=True), d["values"])
                  for d in map(json.loads, java(eddy.bootstrap, "describe", *filters)))


def throttled(eddy, quota):
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf'^eddy_kafka_throttled_total\{{quota="{quota}"\}} (\d+)', text, re.M)
    return int(m.group(1)) if m else 0


def test_java_admin_sets_describes_and_removes_quotas(eddy, java):
    client = name("admin-quota")
    assert java(eddy.bootstrap, "alter", f"client-id={client}", "producer_byte_rate=1000000",
                "request_percentage=50") == ["ok"]
    assert java(eddy.bootstrap, "alter", "user=ANONYMOUS,client-id=<default>",
                "consumer_byte_rate=2000000") == ["ok"]
    mine = described(java, eddy, f"client-id={client}")
    assert mine == [(json.dumps({"client-id": client}),
                     {"producer_byte_rate": 1000000.0, "request_percentage": 50.0})]
    # A non-strict filter on client-id defaults also finds the user+client entity;
    # a strict one does not.
    loose = described(java, eddy, "client-id=<default>")
    assert (json.dumps({"client-id": None, "user": "ANONYMOUS"}, sort_keys=True),
            {"consumer_byte_rate": 2000000.0}) in loose
    assert described(java, eddy, "strict", "client-id=<default>") == []

    # Removing a key keeps the others; removing the last removes the entity.
    assert java(eddy.bootstrap, "alter", f"client-id={client}", "request_percentage=-") == ["ok"]
    assert described(java, eddy, f"client-id={client}") == [
        (json.dumps({"client-id": client}), {"producer_byte_rate": 1000000.0})]
    assert java(eddy.bootstrap, "alter", f"client-id={client}", "producer_byte_rate=-") == ["ok"]
    assert described(java, eddy, f"client-id={client}") == []
    assert java(eddy.bootstrap, "alter", "user=ANONYMOUS,client-id=<default>",
                "consumer_byte_rate=-") == ["ok"]

    # What Eddy does not enforce is refused, never stored.
    for entity, op in [(f"client-id={client}", "controller_mutation_rate=10"),
                       (f"client-id={client}", "producer_byte_rate=-5"),
                       ("ip=127.0.0.1", "connection_creation_rate=10")]:
        out = java(eddy.bootstrap, "alter", entity, op)
        assert out[0].startswith("InvalidRequestException"), (entity, op, out)
    assert described(java, eddy, f"client-id={client}") == []


def test_a_producer_over_its_byte_rate_is_throttled_and_one_without_is_not(eddy, java):
    topic = name("q-produce")
    create(eddy, topic, 1)
    slow, fast = name("slow-producer"), name("fast-producer")
    assert java(eddy.bootstrap, "alter", f"client-id={slow}", f"producer_byte_rate={RATE}") == ["ok"]
    before = throttled(eddy, "produce")

    def run(client_id, records):
        events, errors = [], []
        # Small batches, so the megabyte takes many requests and the quota can pace them
        # (one request is never split, as in Kafka).
        p = Producer({"bootstrap.servers": eddy.bootstrap, "client.id": client_id, "linger.ms": 5,
                      "batch.size": 20_000, "throttle_cb": events.append, "error_cb": errors.append})
        acked = []
        start = time.monotonic()
        for i in range(records):
            p.produce(topic, value=VALUE, on_delivery=lambda err, m: acked.append(err))
            p.poll(0)
        assert p.flush(120) == 0
        elapsed = time.monotonic() - start
        p.poll(0.5)  # throttle events reported with the last responses
        assert errors == [] and acked == [None] * records
        return events, elapsed

    events, elapsed = run(slow, 100)
    rate = 100 * len(VALUE) / elapsed
    assert [e for e in events if e.throttle_time > 0], "librdkafka saw no throttle"
    # The first second's worth goes at once, the rest at the quota: well under twice it.
    assert rate < 2 * RATE, f"{rate:.0f} B/s through a {RATE} B/s quota"
    assert throttled(eddy, "produce") > before

    events, _ = run(fast, 100)
    assert [e for e in events if e.throttle_time > 0] == []


def test_a_consumer_over_its_byte_rate_is_throttled_and_reads_everything_once(eddy, java):
    topic = name("q-fetch")
    create(eddy, topic, 1)
    # Batches of at most 5 values: a fetch returns at least one whole stored batch, so
    # batches up to librdkafka's default batch.size (1 MB, all 100 values, as a slow
    # run produced once) would let one fetch carry everything before any throttle.
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5, "batch.size": 5 * len(VALUE) + 1000})
    for _ in range(100):
        p.produce(topic, value=VALUE)
    assert p.flush(60) == 0
    reader = name("slow-consumer")
    assert java(eddy.bootstrap, "alter", f"client-id={reader}", f"consumer_byte_rate={RATE}") == ["ok"]
    events = []
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "client.id": reader, "group.id": name("g"),
                  "throttle_cb": events.append, "fetch.max.bytes": 200_000, "message.max.bytes": 100_000,
                  "max.partition.fetch.bytes": 100_000})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    offsets = []
    start = time.monotonic()
    deadline = start + 120
    while len(offsets) < 100 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            offsets.append(m.offset())
    elapsed = time.monotonic() - start
    c.close()
    # Nothing is lost or read twice.
    assert offsets == list(range(100))
    assert [e for e in events if e.throttle_time > 0], "librdkafka saw no throttle"
    assert 100 * len(VALUE) / elapsed < 2 * RATE
    assert throttled(eddy, "fetch") > 0


def test_a_request_time_quota_throttles_a_client_that_only_asks_for_metadata(eddy, java):
    client = name("busy")
    assert java(eddy.bootstrap, "alter", f"client-id={client}", "request_percentage=0.01") == ["ok"]
    events = []
    a = AdminClient({"bootstrap.servers": eddy.bootstrap, "client.id": client, "throttle_cb": events.append})
    deadline = time.monotonic() + 60
    while not events and time.monotonic() < deadline:
        a.list_topics(timeout=10)
        a.poll(0)
    assert events and events[0].throttle_time > 0
    assert throttled(eddy, "request") > 0


def test_quotas_are_stored_and_apply_after_a_restart(tmp_path, java):
    server = new_eddy(tmp_path, extra_args=SERVER_ARGS).start()
    try:
        topic, client = name("q-restart"), name("kept")
        create(server, topic, 1)
        assert java(server.bootstrap, "alter", f"client-id={client}", f"producer_byte_rate={RATE}") == ["ok"]
        server.restart()
        assert described(java, server, f"client-id={client}") == [
            (json.dumps({"client-id": client}), {"producer_byte_rate": float(RATE)})]
        events = []
        p = Producer({"bootstrap.servers": server.bootstrap, "client.id": client, "throttle_cb": events.append})
        for _ in range(60):
            p.produce(topic, value=VALUE)
            p.poll(0)
        assert p.flush(120) == 0
        p.poll(0.5)
        assert [e for e in events if e.throttle_time > 0]
    finally:
        server.stop()
