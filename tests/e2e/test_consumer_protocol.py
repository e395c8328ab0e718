"""The KIP-848 consumer group protocol with real clients: librdkafka members
(`group.protocol=consumer`) in their own processes, so one can be killed and a static
one restarted, checked from every member's own rebalance callbacks that no partition is
ever owned by two members at once and that the group ends with every partition owned
by exactly one; a regex subscription that picks up a topic created later; the
server-side assignors; classic and consumer groups side by side, and an empty classic
group converted with its committed offsets; the Java client 4.x consuming and
committing, and its admin client describing the group."""

import json
import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from conftest import new_eddy
from connect import classpath
from test_groups import Member, create, name, wait_until

JAVA_DIR = Path(__file__).parent / "java"
# Short sessions so a killed member is noticed in seconds, and heartbeats often enough
# that a freed partition moves in under a second.
SERVER_ARGS = ["--kafka-consumer-group-session-timeout-ms", "4000",
               "--kafka-consumer-group-heartbeat-interval-ms", "300"]


@pytest.fixture(scope="module")
def eddy(tmp_path_factory):
    server = new_eddy(tmp_path_factory.mktemp("eddy"), extra_args=SERVER_ARGS).start()
    yield server
    server.stop()


def consumer_member(eddy, topic, group, **kw):
    return Member(eddy, topic, group, protocol="consumer", **kw)


def split_exactly(members, partitions):
    """Every partition of `partitions` (a set of (topic, p)) owned by exactly one member."""
    owned = [m.owned_tps() for m in members]
    every = sorted(tp for o in owned for tp in o)
    return every == sorted(partitions) and all(owned)


def assert_never_shared(members):
    """From the members' callbacks: for each partition, the spans from an assign to the
    matching revoke (or to the member's death) of different members never overlap. A
    member gets a partition only after its holder revoked it, so this holds at every
    epoch, not just at the end."""
    spans = {}
    now = time.monotonic()
    for i, m in enumerate(members):
        start = {}
        for e in m.history():
            for tp in map(tuple, e.get("tps", [])):
                if e["event"] == "assign":
                    start[tp] = e["m"]
                elif e["event"] == "revoke" and tp in start:
                    spans.setdefault(tp, []).append((start.pop(tp), e["m"], i))
        for tp, t in start.items():
            spans.setdefault(tp, []).append((t, m.ended or now, i))
    for tp, s in spans.items():
        s.sort()
        for (a0, a1, i), (b0, b1, j) in zip(s, s[1:]):
            assert b0 >= a1, f"{tp} owned by members {i} and {j} at once: {a0:.3f}-{a1:.3f} and {b0:.3f}-"


def refused_with(errors, code, text):
    """Whether librdkafka reported the broker's `code`: it raises the consumer protocol's
    refusals as fatal errors, reported as _FATAL with the broker error's text."""
    return any(e.code() == code or (e.code() == KafkaError._FATAL and text in e.str())
               for e in errors)


def heartbeats(eddy):
    """ConsumerGroupHeartbeat requests the server answered since it started."""
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r'^eddy_kafka_requests_total\{api="ConsumerGroupHeartbeat"\} (\d+)', text, re.M)
    return int(m.group(1)) if m else 0


def describe(eddy, group):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    return a.describe_consumer_groups([group])[group].result(timeout=10)


def test_three_members_a_kill_and_a_static_restart(eddy):
    topic, group = name("k848"), name("g")
    create(eddy, topic, 12)
    every = {(topic, p) for p in range(12)}
    members = [consumer_member(eddy, topic, group),
               consumer_member(eddy, topic, group),
               consumer_member(eddy, topic, group, instance_id="static-1")]
    everyone = list(members)
    try:
        wait_until(lambda: split_exactly(members, every), 60, "12 partitions over 3 members")
        assert sorted(len(m.owned_tps()) for m in members) == [4, 4, 4]
        d = describe(eddy, group)
        assert len(d.members) == 3
        assert str(d.type).endswith("CONSUMER"), d.type
        assert d.partition_assignor == "uniform"
        described = sorted((tp.topic, tp.partition) for m in d.members
                           for tp in m.assignment.topic_partitions)
        assert described == sorted(every)

        # kill -9: no leave; the session (4 s) expires and the others take its share.
        victim = members.pop(0)
        lost = victim.owned_tps()
        victim.kill()
        wait_until(lambda: split_exactly(members, every), 60, "12 partitions over 2 members")
        assert lost <= members[0].owned_tps() | members[1].owned_tps()

        # The static member closes (epoch -2: it keeps its partitions) and comes back
        # under the same instance id: same partitions, and the other member is not
        # rebalanced for it.
        static = members.pop()
        kept = static.owned_tps()
        other_events = len(members[0].history())
        static.close()
        again = consumer_member(eddy, topic, group, instance_id="static-1")
        everyone.append(again)
        members.append(again)
        wait_until(lambda: again.owned_tps() == kept, 60, "the static member's partitions back")
        assert split_exactly(members, every)
        moved = [e for e in members[0].history()[other_events:] if e["event"] in ("assign", "revoke")]
        assert moved == [], f"the other member was rebalanced: {moved}"
    finally:
        for m in members:
            m.kill()
    assert_never_shared(everyone)
    errors = [e for m in everyone for e in m.history() if e["event"] == "error"]
    assert errors == []


def test_a_regex_subscription_picks_up_a_new_topic(eddy):
    prefix = name("ev")
    create(eddy, f"{prefix}-a", 2)
    create(eddy, name("other"), 2)
    m = consumer_member(eddy, f"^{prefix}-.*", name("g"))
    try:
        wait_until(lambda: m.owned_tps() == {(f"{prefix}-a", 0), (f"{prefix}-a", 1)}, 60,
                   "the matching topic")
        create(eddy, f"{prefix}-b", 3)
        want = {(f"{prefix}-a", p) for p in range(2)} | {(f"{prefix}-b", p) for p in range(3)}
        wait_until(lambda: m.owned_tps() == want, 60, "the new topic")
    finally:
        m.kill()


def test_range_assignor_gives_contiguous_ranges(eddy):
    topic, group = name("range"), name("g")
    create(eddy, topic, 6)
    every = {(topic, p) for p in range(6)}
    members = [consumer_member(eddy, topic, group, assignor="range") for _ in range(2)]
    try:
        wait_until(lambda: split_exactly(members, every), 60, "6 partitions over 2 members")
        ranges = sorted(sorted(p for _, p in m.owned_tps()) for m in members)
        assert ranges == [[0, 1, 2], [3, 4, 5]]
        assert describe(eddy, group).partition_assignor == "range"
    finally:
        for m in members:
            m.kill()
    assert_never_shared(members)


def test_unknown_assignor_is_refused(eddy):
    topic = name("noassign")
    create(eddy, topic, 1)
    errors = []
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": name("g"),
                  "group.protocol": "consumer", "group.remote.assignor": "sticky",
                  "error_cb": errors.append})
    try:
        c.subscribe([topic])
        deadline = time.time() + 30
        while not errors and time.time() < deadline:
            msg = c.poll(0.2)
            if msg is not None and msg.error():
                errors.append(msg.error())
        assert refused_with(errors, KafkaError.UNSUPPORTED_ASSIGNOR, "assignor"), errors
    finally:
        c.close()


def test_classic_and_consumer_groups_coexist_and_an_empty_classic_group_converts(eddy):
    topic = name("mixed")
    create(eddy, topic, 2)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(20):
        p.produce(topic, value=str(i).encode(), partition=i % 2)
    assert p.flush(30) == 0

    # A classic member holds its group: a consumer-protocol member is refused there.
    classic_group = name("classic")
    classic = Member(eddy, topic, classic_group)
    try:
        wait_until(lambda: classic.owned() == {0, 1}, 60, "the classic member's assignment")
        errors = []
        c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": classic_group,
                      "group.protocol": "consumer", "error_cb": errors.append})
        c.subscribe([topic])
        deadline = time.time() + 30
        while not errors and time.time() < deadline:
            msg = c.poll(0.2)
            if msg is not None and msg.error():
                errors.append(msg.error())
        c.close()
        assert refused_with(errors, KafkaError.GROUP_ID_NOT_FOUND, "group id does not exist"), errors
        assert classic.owned() == {0, 1}, "the classic group kept its member"
    finally:
        classic.kill()

    # A group that only has committed offsets (from a classic consumer) becomes a
    # consumer group when a consumer-protocol member joins, and that member resumes
    # from the offsets.
    group = name("convert")
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 3)], asynchronous=False)
    c.close()
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    first = {}
    deadline = time.time() + 60
    while len(first) < 2 and time.time() < deadline:
        msg = c.poll(0.2)
        if msg is not None and not msg.error():
            first.setdefault(msg.partition(), msg.offset())
    c.close()
    assert first == {0: 7, 1: 3}
    assert str(describe(eddy, group).type).endswith("CONSUMER")

    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    listed = a.list_consumer_groups().result(timeout=10).valid
    kinds = {g.group_id: str(g.type) for g in listed}
    assert kinds[group].endswith("CONSUMER") and kinds[classic_group].endswith("CLASSIC"), kinds


def test_commits_of_a_stale_member_epoch_are_refused(eddy):
    """A member's commits carry its member epoch (OffsetCommit v9): librdkafka's commit
    goes through with the current one."""
    topic, group = name("commit848"), name("g")
    create(eddy, topic, 1)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(5):
        p.produce(topic, value=str(i).encode())
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.time() + 60
    while len(got) < 5 and time.time() < deadline:
        msg = c.poll(0.2)
        if msg is not None and not msg.error():
            got.append(msg)
    assert len(got) == 5
    committed = c.commit(message=got[-1], asynchronous=False)
    assert committed[0].error is None and committed[0].offset == 5
    c.close()
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    from confluent_kafka import ConsumerGroupTopicPartitions
    res = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=10)
    assert [(tp.partition, tp.offset) for tp in res.topic_partitions] == [(0, 5)]


@pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")
def test_java_members_consume_every_record_once_and_admin_describes_them(eddy, tmp_path):
    topic, group = name("j848"), name("g")
    create(eddy, topic, 6)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(600):
        p.produce(topic, key=str(i).encode(), value=str(i).encode(), partition=i % 6)
    assert p.flush(30) == 0
    cp = classpath()
    javac = subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path), str(JAVA_DIR / "ConsumerProtocol.java")],
                           capture_output=True, text=True, timeout=300)
    assert javac.returncode == 0, javac.stderr[-4000:]

    def java(*args, **kw):
        return subprocess.Popen(["java", "-cp", f"{tmp_path}:{cp}", "ConsumerProtocol", eddy.bootstrap, *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)

    # Two members split the topic; together they read each record once and commit.
    procs = [java("consume", topic, group, "600") for _ in range(2)]
    outs = [proc.communicate(timeout=180) for proc in procs]
    for proc, (out, err) in zip(procs, outs):
        assert proc.returncode == 0, err[-4000:]
    values = [json.loads(l)["value"] for out, _ in outs for l in out.splitlines() if l.startswith("{")]
    assert sorted(values, key=int) == [str(i) for i in range(600)], "each record exactly once"

    desc = java("describe", group)
    out, err = desc.communicate(timeout=120)
    assert desc.returncode == 0, err[-4000:]
    info = json.loads(out.strip().splitlines()[-1])
    assert info["type"] == "CONSUMER" and info["state"] == "EMPTY", info
    assert info["offsets"] == {str(p): 100 for p in range(6)}


def test_the_group_survives_a_restart_without_a_rebalance(tmp_path):
    """The group epoch, target assignment and members' holdings are in the catalog: after
    the server restarts, members that keep heartbeating keep their partitions and epoch."""
    server = new_eddy(tmp_path, extra_args=SERVER_ARGS).start()
    topic, group = name("restart848"), name("g")
    members = []
    try:
        create(server, topic, 4)
        every = {(topic, p) for p in range(4)}
        members = [consumer_member(server, topic, group) for _ in range(2)]
        wait_until(lambda: split_exactly(members, every), 60, "4 partitions over 2 members")
        before = describe(server, group)
        seen = [len(m.history()) for m in members]
        server.restart()
        # Heartbeats go on against the restarted server (300 ms apart); after ten of
        # them the members are where they were.
        wait_until(lambda: heartbeats(server) >= 10, 60, "heartbeats after the restart")
        after = describe(server, group)
        assert sorted(m.member_id for m in after.members) == sorted(m.member_id for m in before.members)
        # (The restart itself shows as non-fatal transport errors while librdkafka
        # reconnects.)
        moved = [e for m, n in zip(members, seen) for e in m.history()[n:]
                 if e["event"] in ("assign", "revoke") or e.get("fatal")]
        assert moved == [], moved
        assert split_exactly(members, every)
    finally:
        for m in members:
            m.kill()
        server.stop()
