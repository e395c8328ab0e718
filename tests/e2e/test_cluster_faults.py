"""A three-node cluster through its faults (docs/scale-out.md): PostgreSQL (Debian's,
started here, durable), three nodes on 127.0.0.1, 127.0.0.2 and 127.0.0.3 over one drive
set, and throughout an idempotent producer, a consumer group of two members and boto3
PUTs into a bucket whose changes notify a topic. The faults come one after another, each
bounded: SIGKILL of a node (then it starts again), SIGSTOP of another past its lease (then
SIGCONT), a PostgreSQL restart. Afterwards every acknowledged write is there once, no
offset was given twice, every stored object has exactly one notification and no
notification names an object that is not there, and the group is stable with both
members and its offsets at the end."""

import json
import signal
import threading
import time

import pytest
from botocore.exceptions import BotoCoreError, ClientError
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import postgres
from conftest import Eddy, free_port, read_to_end
from scale_out import Producing, assert_each_acked_once, holders, s3, serving, wait_for

HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
LEASE_MS = 2000
PARTITIONS = 6

pytestmark = pytest.mark.skipif(not postgres.available(), reason="PostgreSQL is not installed")


class Putting:
    """boto3 PUTs of `obj-0`, `obj-1`, ... in the background, each to the next live node
    (any node serves S3). A PUT that fails or times out is not acknowledged; it may still
    have committed, which the notification check allows for."""

    def __init__(self, nodes: list, bucket: str):
        self.nodes, self.bucket = nodes, bucket
        self.acked = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self):
        clients = [s3(n, connect_timeout=2, read_timeout=5) for n in self.nodes]
        i = 0
        while not self._stop.is_set():
            key = f"obj-{i}"
            try:
                clients[i % len(clients)].put_object(Bucket=self.bucket, Key=key, Body=key.encode())
                self.acked.append(key)
            except (BotoCoreError, ClientError):
                time.sleep(0.05)
            i += 1

    def finish(self):
        self._stop.set()
        self._thread.join(60)


class Member:
    """A consumer group member (confluent-kafka, classic protocol) reading `topic` in the
    background; `seen` holds the values it read, `errors` the errors librdkafka reports
    as fatal."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str):
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
            "auto.offset.reset": "earliest", "enable.auto.commit": True,
            "auto.commit.interval.ms": 500, "session.timeout.ms": 30000,
        })
        self.seen, self.errors, self.assigned = set(), [], 0
        self._stop = threading.Event()
        self.consumer.subscribe([topic], on_assign=self._on_assign)
        # A daemon: a test that fails before `stop` must not leave the process polling.
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_assign(self, _c, _partitions):
        self.assigned += 1

    def _run(self):
        while not self._stop.is_set():
            m = self.consumer.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().fatal():
                    self.errors.append(m.error())
                continue
            self.seen.add(m.value().decode())

    def stop(self):
        """Stops reading and commits where it is (the group stays until `close`)."""
        self._stop.set()
        self._thread.join(30)
        try:
            self.consumer.commit(asynchronous=False)
        except Exception as e:  # nothing new to commit since the last auto-commit
            assert getattr(e.args[0], "code", lambda: None)() == KafkaError._NO_OFFSET, e

    def close(self):
        self.consumer.close()


def every_partition_acked_since(load: Producing, since: float) -> bool:
    return len(load.by_partition) == PARTITIONS and all(
        times[-1] > since for times in list(load.by_partition.values()))


def holder(pg, address: str) -> str:
    """The node holding `address` (`host:port`) now."""
    rows = pg.psql(f"SELECT node FROM eddy_leases WHERE expires_at > now() AND address = '{address}'")
    assert rows, f"nobody holds {address}"
    return rows[0][0]


def stop_mid_commit(node: Eddy, node_id: str, pg) -> float:
    """SIGSTOPs `node` while its committer's transaction is open (its session stays
    `idle in transaction`), trying again after a SIGCONT when the stop missed one;
    returns when it was stopped."""
    for _ in range(100):
        at = time.monotonic()
        node.proc.send_signal(signal.SIGSTOP)
        open_ = pg.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                        f"'eddy committer {node_id}' AND state = 'idle in transaction'")
        if int(open_[0][0]):
            return at
        node.proc.send_signal(signal.SIGCONT)
        time.sleep(0.02)
    raise AssertionError(f"{node_id} was never stopped in the middle of a commit")


@pytest.fixture
def cluster3(tmp_path):
    pg = postgres.Postgres(fsync=True).start()
    url = f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
    kafka_port = free_port()
    nodes = []
    try:
        for i in range(3):
            node = Eddy(data_dir=tmp_path / "shared", s3_port=free_port(),
                        kafka_ports=[kafka_port] * 3, kafka_hosts=HOSTS, http_port=free_port(),
                        extra_args=["--catalog", url, "--node-id", f"node-{i}",
                                    "--lease-timeout-ms", str(LEASE_MS)])
            nodes.append(node.start())
        yield nodes, pg
    finally:
        for n in nodes:
            n.stop(kill=True)
        pg.stop()


def test_three_nodes_through_a_kill_a_pause_and_a_postgresql_restart(cluster3):
    nodes, pg = cluster3
    port = nodes[0].kafka_ports[0]
    one_each = {"node-0": 1, "node-1": 1, "node-2": 1}
    wait_for(lambda: holders(pg) == one_each, 30, "one lease each")
    wait_for(lambda: all(serving(h, port) for h in HOSTS), 30, "every address served")
    bootstrap = nodes[0].bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("orders", PARTITIONS),
                                  NewTopic("uploads-events", 3)]).values():
        f.result(30)
    s3(nodes[1]).create_bucket(Bucket="uploads")
    s3(nodes[2]).put_bucket_notification_configuration(
        Bucket="uploads", NotificationConfiguration={"TopicConfigurations": [
            {"TopicArn": "arn:aws:sns:us-east-1:eddy:uploads-events",
             "Events": ["s3:ObjectCreated:*"]}]})

    members = [Member(bootstrap, "orders", "consumers", f"reader-{i}") for i in range(2)]
    load = Producing(bootstrap, "orders", timeout_ms=120000)
    puts = Putting(nodes, "uploads")
    pauses = {}
    try:
        wait_for(lambda: len(load.acked) > 200 and len(puts.acked) > 20, 60, "writes before")

        # SIGKILL of the group's coordinator: its address is served again by a survivor,
        # which takes the group over from the catalog, and clients go on. (The group's
        # coordinator, xxh3 of its name onto the address list, also leads partitions 2
        # and 5 of orders' six, which start round-robin at xxh3 of the topic's name:
        # broker/src/cluster.rs.)
        wait_for(lambda: admin.describe_consumer_groups(["consumers"])["consumers"].result(30)
                 .state.name == "STABLE", 60, "the group formed")
        coordinator = admin.describe_consumer_groups(["consumers"])["consumers"].result(30).coordinator
        victim_id = holder(pg, f"{coordinator.host}:{coordinator.port}")
        victim = nodes[int(victim_id.removeprefix("node-"))]
        killed_at = time.monotonic()
        victim.stop(kill=True)
        wait_for(lambda: victim_id not in holders(pg) and sum(holders(pg).values()) == 3,
                 10 * LEASE_MS / 1000, "the killed node's address taken over")
        wait_for(lambda: all(serving(h, port) for h in HOSTS), 10 * LEASE_MS / 1000,
                 "every address served again")
        wait_for(lambda: every_partition_acked_since(load, killed_at + 1), 60,
                 "every partition acknowledging again after the kill")
        pauses["kill"] = load.longest_pause(killed_at - 1, time.monotonic())
        # It comes back and gets its share again.
        victim.start()
        wait_for(lambda: holders(pg) == one_each, 30, "the restarted node holds one again")

        # SIGSTOP past the lease, then SIGCONT: nothing it tries to commit is accepted.
        # The node paused is the one serving partition 1's leader (another address than
        # the killed one's), so it holds produce requests when it wakes. It is stopped
        # in the middle of a commit: an open SERIALIZABLE transaction can make the other
        # nodes' commits fail to serialize until PostgreSQL ends it (with 15 s stops,
        # every partition went 6-10 s without an acknowledgement in 4 of 9 runs by hand
        # before the committer's idle-in-transaction timeout; this test's 6 s stop did
        # not show it in 4 runs without the timeout).
        md = admin.list_topics("orders", timeout=30)
        leader = md.brokers[md.topics["orders"].partitions[1].leader]
        sleeper_id = holder(pg, f"{leader.host}:{leader.port}")
        sleeper = nodes[int(sleeper_id.removeprefix("node-"))]
        stopped_at = stop_mid_commit(sleeper, sleeper_id, pg)
        # The survivors' partitions acknowledge again while it is still stopped.
        others = {p.id for p in md.topics["orders"].partitions.values()
                  if md.brokers[p.leader].host != leader.host}
        wait_for(lambda: all(load.by_partition[p][-1] > stopped_at + LEASE_MS / 1000
                             for p in others),
                 3 * LEASE_MS / 1000, "the other nodes' partitions acknowledged during the pause")
        # Hold the fault past the lease (whatever the wait took).
        time.sleep(max(0.0, stopped_at + 3 * LEASE_MS / 1000 - time.monotonic()))
        assert sleeper_id not in holders(pg), "a survivor took the paused node's lease"
        sleeper.proc.send_signal(signal.SIGCONT)
        # Woken, it refuses what it held (its lease ran out by its own clock, or the
        # commit is fenced); a write it took in would show in the checks below as a
        # record stored twice or an offset out of order.
        wait_for(lambda: holders(pg) == one_each, 30, "the woken node holds one again")
        woken_at = time.monotonic()
        wait_for(lambda: every_partition_acked_since(load, woken_at), 60,
                 "every partition acknowledging again after the pause")
        pauses["pause"] = load.longest_pause(stopped_at - 1, time.monotonic())

        # A PostgreSQL restart: writes fail while it is down, none falsely acknowledged,
        # and they come back by themselves.
        down_at = time.monotonic()
        pg.halt()
        time.sleep(1)
        pg.start()
        up_at, m = time.monotonic(), len(puts.acked)
        wait_for(lambda: every_partition_acked_since(load, up_at) and len(puts.acked) > m + 20,
                 90, "writes acknowledged again after the restart")
        pauses["postgresql"] = load.longest_pause(down_at - 1, time.monotonic())
    finally:
        puts.finish()
        load.finish()
    print("longest time a partition went without a produce acknowledgement, per fault: "
          + ", ".join(f"{k} {v:.2f} s" for k, v in pauses.items()))
    # When each fault began, on the clock of the acknowledgement times below.
    print(f"faults at: kill {killed_at:.2f}, pause {stopped_at:.2f}, postgresql {down_at:.2f}")

    # Every acknowledged record once, offsets 0.. without a gap or a repeat per partition.
    assert_each_acked_once(bootstrap, "orders", load.values(),
                           acked_at={v: t for t, v in load.acked})
    offsets = {}
    for msg in read_to_end(bootstrap, "orders"):
        offsets.setdefault(msg.partition(), []).append(msg.offset())
    for p, got in offsets.items():
        assert got == list(range(len(got))), f"partition {p}: offsets not 0..{len(got) - 1}"

    # Exactly one notification per stored object, none for an object not stored.
    keys = set()
    for page in s3(nodes[2]).get_paginator("list_objects_v2").paginate(Bucket="uploads"):
        keys.update(o["Key"] for o in page.get("Contents", []))
    assert not set(puts.acked) - keys, "an acknowledged object was lost"
    notified = []
    for msg in read_to_end(bootstrap, "uploads-events"):
        r = json.loads(msg.value())["Records"][0]
        assert r["eventName"] == "ObjectCreated:Put", r
        notified.append(r["s3"]["object"]["key"])
    assert len(notified) == len(set(notified)), "an object change notified twice"
    assert set(notified) == keys, (
        f"{len(keys - set(notified))} stored objects without a notification, "
        f"{len(set(notified) - keys)} notifications of objects not stored")

    # The group read everything acknowledged, is stable with both members sharing every
    # partition, and its committed offsets are at the end. Asked by a new admin client, as
    # an operator would: the one made before the faults had seen every connection reset
    # several times, and on a loaded machine librdkafka was seen holding a describe unsent
    # for 30 s with its coordinator's connection up (its debug log: "Received CONNECT op"
    # while UP, then no request), while the members' own group requests were answered.
    wait_for(lambda: load.values() <= members[0].seen | members[1].seen, 60,
             "the group read every acknowledged record")
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def settled() -> bool:
        desc = admin.describe_consumer_groups(["consumers"])["consumers"].result(30)
        owned = sorted(tp.partition for m in desc.members for tp in m.assignment.topic_partitions)
        return (desc.state.name == "STABLE" and owned == list(range(PARTITIONS))
                and sorted(m.client_id for m in desc.members) == ["reader-0", "reader-1"])

    # Asked while the members poll: a rebalance the faults started completes only then.
    wait_for(settled, 60, "the group stable with both members sharing every partition")
    for mb in members:
        mb.stop()
        assert not mb.errors, mb.errors
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "consumers"})
    parts = [TopicPartition("orders", p) for p in range(PARTITIONS)]
    committed = {tp.partition: tp.offset for tp in reader.committed(parts, timeout=30)}
    ends = {p: reader.get_watermark_offsets(TopicPartition("orders", p), timeout=30)[1]
            for p in range(PARTITIONS)}
    reader.close()
    assert committed == ends
    print(f"assignments per member in the whole run (1: no rebalance): {[mb.assigned for mb in members]}")
    for mb in members:
        mb.close()
