"""Consumer groups with real clients: members in their own processes (so one can be
killed), librdkafka's eager and cooperative-sticky assignors, static membership,
committed offsets across a kill -9, and the group admin APIs."""

import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka import ConsumerGroupTopicPartitions
import kafka

from conftest import Eddy, free_port

HERE = Path(__file__).resolve().parent


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin(eddy):
    return AdminClient({"bootstrap.servers": eddy.bootstrap})


def create(eddy, topic, partitions):
    a = admin(eddy)  # kept alive until the result is in
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def describe(eddy, group):
    a = admin(eddy)
    return a.describe_consumer_groups([group])[group].result(timeout=10)


def produce(eddy, topic, partitions, count):
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(count):
        p.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert p.flush(30) == 0


def metrics(eddy):
    with urllib.request.urlopen(f"{eddy.http_url}/metrics", timeout=10) as r:
        return r.read().decode()


def wait_until(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Member:
    """A group member process (tests/e2e/group_member.py) and the events it printed."""

    def __init__(self, eddy, topic, group, client="confluent", strategy=None,
                 instance_id=None, session_ms=6000, protocol="classic", assignor=None):
        args = [sys.executable, str(HERE / "group_member.py"), "--client", client,
                "--bootstrap", eddy.bootstrap, "--topic", topic, "--group", group,
                "--session-ms", str(session_ms), "--protocol", protocol]
        if assignor:
            args += ["--assignor", assignor]
        if strategy:
            args += ["--strategy", strategy]
        if instance_id:
            args += ["--instance-id", instance_id]
        self.log = tempfile.NamedTemporaryFile(prefix=f"member-{client}-", suffix=".log",
                                               delete=False)
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.events = []
        self.ended = None
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self._lock:
                self.events.append(json.loads(line))

    def history(self):
        with self._lock:
            return list(self.events)

    def owned(self):
        changes = [e for e in self.history() if e["event"] in ("assign", "revoke")]
        return set(changes[-1]["owned"]) if changes else set()

    def owned_tps(self):
        changes = [e for e in self.history() if e["event"] in ("assign", "revoke")]
        return {tuple(tp) for tp in changes[-1]["owned_tps"]} if changes else set()

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.ended = time.monotonic()

    def close(self, timeout=30):
        """SIGTERM: the member closes its consumer (a static member leaves for now)."""
        self.proc.terminate()
        self.proc.wait(timeout=timeout)
        self.ended = time.monotonic()


def split_exactly(members, partitions):
    """Every partition owned by exactly one member, and every member owns some."""
    owned = [m.owned() for m in members]
    every = [p for o in owned for p in o]
    return sorted(every) == list(range(partitions)) and all(owned)


def test_four_members_share_the_partitions_and_a_killed_one_is_replaced(eddy):
    topic, group = name("shared"), name("g")
    create(eddy, topic, 12)
    members = [Member(eddy, topic, group) for _ in range(3)]
    members.append(Member(eddy, topic, group, client="kafka-python"))
    try:
        wait_until(lambda: split_exactly(members, 12), 60, "12 partitions over 4 members")
        assert [len(m.owned()) for m in members] == [3, 3, 3, 3]
        desc = describe(eddy, group)
        assert desc.state == ConsumerGroupState.STABLE
        assert len(desc.members) == 4

        victim = members.pop(0)
        lost = victim.owned()
        victim.kill()
        # No LeaveGroup from a killed process: its session (6 s) must expire first.
        wait_until(lambda: split_exactly(members, 12), 60, "12 partitions over 3 members")
        assert lost <= set().union(*(m.owned() for m in members))
        desc = describe(eddy, group)
        assert desc.state == ConsumerGroupState.STABLE and len(desc.members) == 3
    finally:
        for m in members:
            m.kill()


def test_cooperative_sticky_moves_only_what_it_must(eddy):
    topic, group = name("coop"), name("g")
    create(eddy, topic, 6)
    first = Member(eddy, topic, group, strategy="cooperative-sticky")
    second = None
    try:
        wait_until(lambda: first.owned() == set(range(6)), 60, "the first member owning all")
        second = Member(eddy, topic, group, strategy="cooperative-sticky")
        wait_until(lambda: split_exactly([first, second], 6), 60, "a 3/3 split")
        assert len(first.owned()) == 3 and len(second.owned()) == 3
        # Incremental: the first member gave up exactly the partitions the second got,
        # and never lost everything on the way (an eager rebalance revokes all six).
        revoked = [set(e["partitions"]) for e in first.history() if e["event"] == "revoke"]
        assert revoked and set().union(*revoked) == second.owned()
        assert all(len(r) < 6 for r in revoked)
    finally:
        first.kill()
        if second:
            second.kill()


def test_static_member_restarts_without_a_rebalance_and_a_duplicate_is_fenced(eddy):
    topic, group = name("static"), name("g")
    create(eddy, topic, 6)
    a = Member(eddy, topic, group, instance_id="a", session_ms=30000)
    b = Member(eddy, topic, group, instance_id="b", session_ms=30000)
    others = []
    try:
        wait_until(lambda: split_exactly([a, b], 6), 60, "a 3/3 split")
        a_parts, b_parts = a.owned(), b.owned()
        b_seen = len(b.history())

        # Killed and restarted within its session: same partitions, nobody rebalances.
        a.kill()
        a2 = Member(eddy, topic, group, instance_id="a", session_ms=30000)
        others.append(a2)
        wait_until(lambda: a2.owned() == a_parts, 30, "the restarted member's partitions")
        assert b.history()[b_seen:] == [], "the other member saw a rebalance"
        desc = describe(eddy, group)
        assert desc.state == ConsumerGroupState.STABLE
        assert sorted(m.group_instance_id for m in desc.members) == ["a", "b"]

        # A second process with b's instance id takes over; the first b is fenced.
        b2 = Member(eddy, topic, group, instance_id="b", session_ms=30000)
        others.append(b2)
        wait_until(lambda: b2.owned() == b_parts, 30, "the new b's partitions")
        # librdkafka reports being fenced as a fatal error.
        def fenced():
            return [e for e in b.history()
                    if e["event"] == "error" and "fenced" in e["text"].lower()]
        wait_until(fenced, 30, "the old b to be fenced")
        assert fenced()[0]["name"] == "_FATAL" or fenced()[0]["fatal"], fenced()
    finally:
        for m in [a, b, *others]:
            m.kill()


def test_committed_offsets_survive_kill_9_and_consumption_resumes(fresh_eddy):
    eddy = fresh_eddy
    topic, group = name("resume"), name("g")
    create(eddy, topic, 3)
    produce(eddy, topic, 3, 90)
    conf = {"bootstrap.servers": eddy.bootstrap, "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    c = Consumer(conf)
    c.subscribe([topic])
    first = []
    while len(first) < 40:
        m = c.poll(1)
        if m is not None and m.error() is None:
            first.append((m.partition(), m.offset()))
    # Commit exactly what was consumed (a message past the 40th may be in hand).
    last = {}
    for p, o in first:
        last[p] = max(last.get(p, -1), o)
    c.commit(offsets=[TopicPartition(topic, p, o + 1) for p, o in last.items()],
             asynchronous=False)
    c.close()

    eddy.stop(kill=True)
    eddy.start()

    # kafka-python sees the committed offsets...
    kc = kafka.KafkaConsumer(bootstrap_servers=eddy.bootstrap, group_id=group,
                             enable_auto_commit=False)
    for p in range(3):
        want = last[p] + 1 if p in last else None
        assert kc.committed(kafka.TopicPartition(topic, p)) == want
    kc.close()
    # ...and a new member of the group goes on from them: everything else, once.
    c = Consumer(conf)
    c.subscribe([topic])
    rest = []
    deadline = time.time() + 60
    while len(rest) < 50 and time.time() < deadline:
        m = c.poll(1)
        if m is not None and m.error() is None:
            rest.append((m.partition(), m.offset()))
    extra = c.poll(1)
    c.close()
    assert extra is None
    assert len(rest) == 50
    consumed = {(p, o) for p, o in first if o <= last[p]} | set(rest)
    assert len(consumed) == 90 and len(set(rest)) == 50


def test_group_admin_apis(eddy):
    topic, group, standalone = name("admin"), name("g"), name("solo")
    create(eddy, topic, 3)
    produce(eddy, topic, 3, 30)
    a = admin(eddy)
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    got = 0
    while got < 30:
        m = c.poll(1)
        if m is not None and m.error() is None:
            got += 1
    c.commit(asynchronous=False)

    stable = a.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(timeout=10)
    assert group in [g.group_id for g in stable.valid]
    desc = a.describe_consumer_groups([group])[group].result(timeout=10)
    assert desc.state == ConsumerGroupState.STABLE and desc.partition_assignor == "range"
    assert sorted(tp.partition for tp in desc.members[0].assignment.topic_partitions) == [0, 1, 2]
    # A group with a member cannot be deleted.
    try:
        a.delete_consumer_groups([group])[group].result(timeout=10)
        raise AssertionError("deleted a group with members")
    except KafkaException as e:
        assert e.args[0].name() == "NON_EMPTY_GROUP"
    offsets = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)])[group].result(timeout=10)
    assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == [
        (0, 10), (1, 10), (2, 10)]
    c.close()

    empty = a.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(timeout=10)
    assert group in [g.group_id for g in empty.valid]
    # Standalone commits: into the now empty group, and into a group that does not exist.
    for g in (group, standalone):
        a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
            g, [TopicPartition(topic, 0, 5)])])[g].result(timeout=10)
    offsets = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(standalone)])[standalone].result(timeout=10)
    assert [(tp.partition, tp.offset) for tp in offsets.topic_partitions] == [(0, 5)]
    listed = {g.group_id: g for g in a.list_consumer_groups().result(timeout=10).valid}
    assert listed[standalone].state == ConsumerGroupState.EMPTY
    # Operators see the lag: partition 0 holds 10 records, 5 are committed.
    series = f'eddy_kafka_consumer_lag{{group="{standalone}",topic="{topic}"}} 5'
    wait_until(lambda: series in metrics(eddy), 30, series)

    results = a.delete_consumer_groups([group, standalone, name("never")])
    results[group].result(timeout=10)
    results[standalone].result(timeout=10)
    missing = [g for g in results if g not in (group, standalone)][0]
    try:
        results[missing].result(timeout=10)
        raise AssertionError("deleted a group that never existed")
    except KafkaException as e:
        assert e.args[0].name() == "GROUP_ID_NOT_FOUND"
    listed = [g.group_id for g in a.list_consumer_groups().result(timeout=10).valid]
    assert group not in listed and standalone not in listed
    offsets = a.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])[group].result(timeout=10)
    assert [tp.offset for tp in offsets.topic_partitions] == [-1001]


def test_groups_across_three_listener_addresses(tmp_path):
    port = free_port()
    server = Eddy(data_dir=tmp_path / "data", s3_port=free_port(), http_port=free_port(),
                  kafka_ports=[port, port, port],
                  kafka_hosts=["127.0.0.1", "127.0.0.2", "127.0.0.3"]).start()
    try:
        topic = name("spread")
        create(server, topic, 6)
        produce(server, topic, 6, 60)
        # Fixed names (a fresh server): the same addresses coordinate them every run.
        groups = [f"spread-{i}" for i in range(6)]
        coordinators = set()
        for g in groups:
            c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": g,
                          "auto.offset.reset": "earliest", "enable.auto.commit": False})
            c.subscribe([topic])
            seen = set()
            deadline = time.time() + 60
            while len(seen) < 60 and time.time() < deadline:
                m = c.poll(1)
                if m is not None and m.error() is None:
                    seen.add(m.value())
            assert len(seen) == 60
            c.commit(asynchronous=False)
            c.close()
            desc = describe(server, g)
            coordinators.add(desc.coordinator.host)
        # The groups hash onto more than one of the three addresses.
        assert len(coordinators) > 1, coordinators
    finally:
        server.stop()
