"""Broker views (`[[views]]`): a second Kafka namespace on its own listener, security
mode and users, over the same catalog. Two views each have a topic `orders` and a group
of the same id, and neither sees the other's records, offsets or topic list; the view's
users alone may authenticate on it; policies name the view in their resources; the
per-view metrics count each view's requests and bytes; both survive a restart."""

import re
import subprocess
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import s3util
from conftest import eddy_bin, free_port, new_eddy

CONFIG = """
[[users]]
access_key = "alice"
secret_key = "alice-secret"

[[users]]
access_key = "bob"
secret_key = "bob-secret"

[[views]]
name = "team"
kafka_listen = ["SASL_PLAINTEXT://127.0.0.2:{port}"]
users = ["bob"]
"""


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def eddy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("views")
    port = free_port("127.0.0.2")
    (tmp / "eddy.toml").write_text(CONFIG.format(port=port))
    server = new_eddy(tmp, extra_args=["--config", str(tmp / "eddy.toml")])
    server.team = f"127.0.0.2:{port}"
    server.start()
    yield server
    server.stop()


def team(eddy, user="bob", password="bob-secret"):
    return {"bootstrap.servers": eddy.team, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": password}


def default(eddy):
    return {"bootstrap.servers": eddy.bootstrap}


def create(conf, topic, partitions=1):
    a = AdminClient(conf)
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def produce(conf, topic, *values):
    p = Producer({**conf, "message.timeout.ms": 5000})
    errors = []
    for v in values:
        p.produce(topic, value=v.encode(), on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert len(errors) == len(values)
    return [e.code() if e is not None else None for e in errors]


def read(conf, topic, group):
    """Every value of partition 0, as a group member that commits what it read."""
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0)])
        out = []
        while True:
            m = c.poll(10)
            assert m is not None, "no end of partition"
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                break
            out.append(m.value().decode())
        if out:
            c.commit(asynchronous=False)
        return out
    finally:
        c.close()


def committed(conf, topic, group):
    c = Consumer({**conf, "group.id": group})
    try:
        return c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    finally:
        c.close()


def test_two_views_keep_the_same_topic_and_group_apart(eddy):
    create(default(eddy), "orders")
    create(team(eddy), "orders")
    assert produce(default(eddy), "orders", "d1", "d2", "d3") == [None] * 3
    assert produce(team(eddy), "orders", "t1") == [None]
    assert read(default(eddy), "orders", "billing") == ["d1", "d2", "d3"]
    assert read(team(eddy), "orders", "billing") == ["t1"]
    assert committed(default(eddy), "orders", "billing") == 3
    assert committed(team(eddy), "orders", "billing") == 1
    only_default = name("only-default")
    create(default(eddy), only_default)
    assert only_default in AdminClient(default(eddy)).list_topics(timeout=10).topics
    listed = AdminClient(team(eddy)).list_topics(timeout=10)
    assert only_default not in listed.topics and "orders" in listed.topics
    assert [b.port for b in listed.brokers.values()] == [int(eddy.team.rsplit(":", 1)[1])]


def test_only_the_views_users_may_authenticate_on_it(eddy):
    p = Producer({**team(eddy, "alice", "alice-secret"), "message.timeout.ms": 3000})
    errors = []
    p.produce("orders", b"x", on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert errors and errors[0] is not None, "alice reached the team view"
    assert produce(team(eddy), "orders", "bob's") == [None]


def test_policies_name_the_view(eddy, tmp_path):
    """A Deny of KafkaWrite on `vast:kafka:topic:team:orders` for everyone refuses the
    team view's orders and leaves the default view's orders alone."""
    doc = tmp_path / "p.json"
    doc.write_text('{"Statement":[{"Effect":"Deny","Action":"KafkaWrite","Resource":"vast:kafka:topic:team:orders"}]}')
    env = {"EDDY_ACCESS_KEY": eddy.access_key, "EDDY_SECRET_KEY": eddy.secret_key, "PATH": "/usr/bin:/bin"}
    cli = lambda *a: subprocess.run([eddy_bin(), "policy", "--url", eddy.http_url, *a],  # noqa: E731
                                    capture_output=True, text=True, env=env, timeout=60)
    assert cli("put", "team-orders", "--file", str(doc), "--attach", "*").returncode == 0
    try:
        assert produce(team(eddy), "orders", "no") == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
        assert produce(default(eddy), "orders", "yes") == [None]
    finally:
        assert cli("delete", "team-orders").returncode == 0


def test_per_view_metrics_count_each_views_traffic(eddy):
    assert produce(team(eddy), "orders", "m" * 1000) == [None]
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    def value(pattern):
        m = re.search(pattern, text, re.M)
        return float(m.group(1)) if m else 0
    assert value(r'^eddy_kafka_view_requests_total\{view="team",api="Produce"\} (\S+)') >= 1
    assert value(r'^eddy_kafka_view_produced_bytes_total\{view="team"\} (\S+)') >= 1000
    assert value(r'^eddy_kafka_view_requests_total\{view="default",api="Produce"\} (\S+)') >= 1


def test_views_survive_a_restart(eddy):
    topic = name("durable")
    create(team(eddy), topic)
    assert produce(team(eddy), topic, "kept") == [None]
    eddy.restart()
    assert read(team(eddy), topic, name("g")) == ["kept"]
    assert topic not in AdminClient(default(eddy)).list_topics(timeout=10).topics


def test_a_listener_of_two_views_is_refused_at_start(tmp_path):
    port = free_port()
    (tmp_path / "eddy.toml").write_text(
        f'[[views]]\nname = "x"\nkafka_listen = ["127.0.0.1:{port}"]\n')
    out = subprocess.run([eddy_bin(), "serve", "--data-dir", str(tmp_path / "d"), "--config",
                          str(tmp_path / "eddy.toml"), "--kafka-listen", f"127.0.0.1:{port}",
                          "--s3-listen", f"127.0.0.1:{free_port()}", "--http-listen",
                          f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "belongs to one view" in out.stderr, out.stderr


def test_each_view_has_its_own_iceberg_catalog(eddy):
    """PyIceberg on /iceberg/views/team reads the team view's `orders` table from its
    bucket, and the default catalog the default view's."""
    from pyiceberg.catalog.rest import RestCatalog

    def catalog(path, warehouse):
        uri = f"{eddy.http_url}/iceberg{path}"
        return RestCatalog("eddy", uri=uri, credential=f"{eddy.access_key}:{eddy.secret_key}",
                           warehouse=warehouse, **{"oauth2-server-uri": f"{uri}/v1/oauth/tokens"})
    topic = name("tabled")
    create(team(eddy), topic)
    create(default(eddy), topic)
    assert produce(team(eddy), topic, "team-row") == [None]
    assert produce(default(eddy), topic, "default-row", "second") == [None, None]
    team_rows = catalog("/views/team", "kafka-team").load_table(("kafka_topics", topic)).scan().to_arrow()
    default_rows = catalog("", "kafka").load_table(("kafka_topics", topic)).scan().to_arrow()
    assert [bytes(v).decode() for v in team_rows.column("value").to_pylist()] == ["team-row"]
    assert sorted(bytes(v).decode() for v in default_rows.column("value").to_pylist()) == \
        ["default-row", "second"]
    files = [o["Key"] for o in s3util.client(eddy).list_objects_v2(
        Bucket="kafka-team").get("Contents", [])]
    assert any(topic in k for k in files), files
