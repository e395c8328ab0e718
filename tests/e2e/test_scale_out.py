"""Scale-out (docs/scale-out.md): several Eddy nodes over one drive set, the catalog in
PostgreSQL (Debian's, started by the test). Each node serves any S3 request and commits
through the shared catalog; what one node commits, every node reads."""

import uuid

import boto3
import pytest
from botocore.config import Config
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import postgres
from conftest import Eddy, free_port

pytestmark = pytest.mark.skipif(not postgres.available(), reason="PostgreSQL is not installed")


def s3(node: Eddy):
    return boto3.client(
        "s3", endpoint_url=node.s3_url, aws_access_key_id=node.access_key,
        aws_secret_access_key=node.secret_key, region_name="us-east-1",
        config=Config(retries={"max_attempts": 0}))


@pytest.fixture
def cluster(tmp_path):
    pg = postgres.Postgres().start()
    url = f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
    data = tmp_path / "shared"
    kafka_port = free_port()
    nodes = []
    try:
        for i, host in enumerate(["127.0.0.1", "127.0.0.2"]):
            node = Eddy(data_dir=data, s3_port=free_port(), kafka_ports=[kafka_port],
                        kafka_hosts=[host], http_port=free_port(),
                        extra_args=["--catalog", url, "--node-id", f"node-{i}"])
            nodes.append(node.start())
        yield nodes, pg
    finally:
        for n in nodes:
            n.stop()
        pg.stop()


def test_what_one_node_commits_every_node_reads(cluster):
    (a, b), pg = cluster
    s3(a).create_bucket(Bucket="shared")
    body = uuid.uuid4().bytes * 1000
    s3(a).put_object(Bucket="shared", Key="k", Body=body)
    assert s3(b).get_object(Bucket="shared", Key="k")["Body"].read() == body
    # A bucket made through one node exists for the other.
    assert "shared" in [x["Name"] for x in s3(b).list_buckets()["Buckets"]]
    s3(b).put_object(Bucket="shared", Key="k", Body=b"from b")
    assert s3(a).get_object(Bucket="shared", Key="k")["Body"].read() == b"from b"
    assert [o["Key"] for o in s3(a).list_objects_v2(Bucket="shared")["Contents"]] == ["k"]

    # A topic created through one node; records produced through both are read through
    # either, in order, with no offset given twice however the two interleave.
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    created = admin.create_topics([NewTopic("events", 1)])
    for f in created.values():
        f.result(30)
    sent = []
    for node in (a, b):
        p = Producer({"bootstrap.servers": node.bootstrap, "enable.idempotence": True})
        failed = []
        for i in range(50):
            v = f"{node.kafka_hosts[0]}-{i}"
            p.produce("events", value=v.encode(), partition=0,
                      on_delivery=lambda err, _m: err and failed.append(err))
            sent.append(v)
        assert p.flush(30) == 0
        assert not failed, failed
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "g",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition("events", 0, 0)])
    got = []
    while len(got) < len(sent):
        m = c.poll(10)
        assert m is not None, f"only {len(got)} of {len(sent)} records"
        assert m.error() is None, m.error()
        got.append((m.offset(), m.value().decode()))
    c.close()
    assert [o for o, _ in got] == list(range(len(sent)))
    assert sorted(v for _, v in got) == sorted(sent)
    # The catalog is PostgreSQL's: its rows hold the topic.
    rows = pg.psql("SELECT count(*) FROM eddy_kv WHERE t = 'topics'")
    assert int(rows[0][0]) >= 1
