"""Consumer groups with @confluentinc/kafka-javascript (librdkafka underneath) through its
promisified KafkaJS-compatible API (tests/e2e/node/kjs_group.js, one node process per
client): two members of one group split a 4-partition topic, read every keyed record
exactly once between them and commit; a member started later alone in the group resumes
at the committed offsets and reads only what came after; the admin client lists and
describes the group and fetches its offsets."""

import json
import shutil
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import NODE_DIR, npm_ci

PARTITIONS = 4
BINDING = "@confluentinc/kafka-javascript/build/Release/confluent-kafka-javascript.node"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def kjs():
    npm_ci(BINDING)
    npm_ci("kafkajs")
    out = subprocess.run(["node", "-e", "console.log(require('@confluentinc/kafka-javascript').librdkafkaVersion)"],
                         cwd=NODE_DIR, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def create_topic(eddy, topic):
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)


def run(eddy, *args, timeout=120):
    """One short kjs_group.js run (produce or admin): its single JSON line."""
    out = subprocess.run(["node", "kjs_group.js", args[0], eddy.bootstrap, *map(str, args[1:])],
                         cwd=NODE_DIR, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{args[0]} exited {out.returncode}\n{out.stdout}\n{out.stderr[-6000:]}"
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    assert lines and lines[-1]["event"] == args[0].replace("produce", "produced"), out.stdout
    return lines[-1]


class Member:
    """A `kjs_group.js consume` process: its events as they come (a reader thread), its
    log in a file of its own."""

    def __init__(self, eddy, topic, group, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(["node", "kjs_group.js", "consume", eddy.bootstrap, topic, group],
                                     cwd=NODE_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        self.events = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("{"):
                with self.lock:
                    self.events.append(json.loads(line))

    def of(self, kind):
        with self.lock:
            return [e for e in self.events if e["event"] == kind]

    def assignment(self):
        """The partitions of the last assignment, None while revoked or never assigned."""
        with self.lock:
            last = [e for e in self.events if e["event"] in ("assigned", "revoked")]
        return last[-1]["partitions"] if last and last[-1]["event"] == "assigned" else None

    def messages(self):
        return self.of("message")

    def stop(self, timeout=60):
        """Asks for the commit and the leave; returns the `committed` event."""
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        self.log.close()
        assert code == 0 and self.of("done"), f"member exited {code}: {self.tail()}"
        return self.of("committed")[-1]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def tail(self):
        with self.lock:
            events = self.events[-5:]
        return f"events {events}\n--- log {self.log_path}\n{self.log_path.read_text(errors='replace')[-6000:]}"


def wait_for(cond, what, members, timeout=60):
    deadline = time.time() + timeout
    while not cond():
        for m in members:
            assert m.proc.poll() is None, f"a member exited while waiting for {what}: {m.tail()}"
        assert time.time() < deadline, f"timed out waiting for {what}\n" + "\n".join(m.tail() for m in members)
        time.sleep(0.1)


def test_two_members_share_a_topic_and_a_later_member_resumes_at_the_commits(eddy, kjs, tmp_path):
    topic, group = name("kjs-group"), name("kjs-g")
    create_topic(eddy, topic)

    # Two members join; the group settles on two disjoint halves of the partitions.
    a = Member(eddy, topic, group, tmp_path / "member-a.log")
    b = Member(eddy, topic, group, tmp_path / "member-b.log")
    members = [a, b]
    try:
        def settled():
            sa, sb = a.assignment(), b.assignment()
            return bool(sa) and bool(sb) and not set(sa) & set(sb) and \
                sorted(sa + sb) == list(range(PARTITIONS))
        wait_for(settled, "both members assigned", members, timeout=90)
        halves = [m.assignment() for m in members]
        rebalances = [len(m.of("assigned")) + len(m.of("revoked")) for m in members]

        # N keyed records; between them the two members read each exactly once, each from
        # its own partitions only.
        n = 400
        produced = run(eddy, "produce", topic, 0, n)
        per_partition = {int(p): c for p, c in produced["perPartition"].items()}
        assert sum(per_partition.values()) == n
        wait_for(lambda: len(a.messages()) + len(b.messages()) >= n, f"{n} records read", members)
        assert [len(m.of("assigned")) + len(m.of("revoked")) for m in members] == rebalances, \
            "a rebalance while reading"
        committed = [m.stop() for m in members]
        got = a.messages() + b.messages()
        keys = [r["k"] for r in got]
        assert len(keys) == n and set(keys) == {f"k{i}" for i in range(n)}, \
            f"{len(keys)} records read, {len(set(keys))} distinct"
        for m, half in zip(members, halves):
            assert {r["p"] for r in m.messages()} == set(half), "a record from another member's partition"
        for r in got:
            assert r["v"] == "v" + r["k"][1:]
        for p in range(PARTITIONS):
            offs = sorted(r["o"] for r in got if r["p"] == p)
            assert offs == list(range(per_partition.get(p, 0))), f"partition {p}: offsets {offs[:5]}..."
        assert sorted(sum((c["assignment"] for c in committed), [])) == list(range(PARTITIONS))
    finally:
        for m in members:
            m.kill()

    # The group is empty now, with the offsets both members committed.
    info = run(eddy, "admin", topic, group)
    assert info["group"]["state"] == "EMPTY", info
    assert info["group"]["members"] == [], info
    assert {o["partition"]: o["offset"] for o in info["offsets"]} == \
        {p: per_partition.get(p, 0) for p in range(PARTITIONS)}, info["offsets"]

    # More records; a member started now, alone in the group, takes every partition and
    # reads only those: nothing the group committed comes again.
    more = 100
    produced = run(eddy, "produce", topic, n, more)
    for p, c in produced["perPartition"].items():
        per_partition[int(p)] = per_partition.get(int(p), 0) + c
    c = Member(eddy, topic, group, tmp_path / "member-c.log")
    try:
        wait_for(lambda: c.assignment() == list(range(PARTITIONS)), "the restarted member assigned", [c], timeout=90)
        wait_for(lambda: len(c.messages()) >= more, f"{more} new records read", [c])

        # The admin client while it runs: listed and described, one member owning all four.
        info = run(eddy, "admin", topic, group)
        listed = [g for g in info["listed"] if g["groupId"] == group]
        assert len(listed) == 1 and listed[0]["protocolType"] == "consumer", info["listed"]
        assert listed[0]["state"] == "STABLE", listed
        assert not listed[0]["isSimpleConsumerGroup"], listed
        g = info["group"]
        assert g["error"] is None and g["protocolType"] == "consumer", g
        assert g["state"] == "STABLE" and g["type"] == "CLASSIC", g
        assert g["protocol"] == "roundrobin", g
        assert len(g["members"]) == 1 and g["members"][0]["clientId"] == "eddy-kjs-consume", g
        assert g["members"][0]["partitions"] == list(range(PARTITIONS)), g

        c.stop()
    finally:
        c.kill()
    keys = [r["k"] for r in c.messages()]
    assert sorted(keys) == sorted(f"k{i}" for i in range(n, n + more)), \
        f"the restarted member read {len(keys)}: {sorted(set(keys) - {f'k{i}' for i in range(n, n + more)})[:5]} already committed"
    info = run(eddy, "admin", topic, group)
    assert {o["partition"]: o["offset"] for o in info["offsets"]} == per_partition, info["offsets"]
