"""Share groups (KIP-932) with Apache Kafka 4.4's own KafkaShareConsumer
(tests/e2e/java/ShareConsume.java, explicit acknowledgement) against a real eddy: more
consumers than partitions all receiving records, each record accepted once; a consumer
killed while holding records, whose records come back after their lock with delivery
count 2; a rejected record never delivered again and a poison record archived at the
delivery limit; group configs set and read with Kafka's Admin client; and eddy killed
with SIGKILL mid-stream, after which every one of 10,000 records is acknowledged, none
twice, and none delivered again once acknowledged."""

import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import javac, kafka_classpath

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")

JAVA = Path(__file__).parent / "java" / "ShareConsume.java"


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def java(*args, timeout=120):
    cp = kafka_classpath()
    out = subprocess.run(["java", "-cp", f"{javac(JAVA, cp)}:{cp}", "ShareConsume", *args],
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


class Consumer:
    """One KafkaShareConsumer process; its output lines as they come."""

    def __init__(self, bootstrap, group, topic, idle_ms, *rules):
        cp = kafka_classpath()
        self.proc = subprocess.Popen(
            ["java", "-cp", f"{javac(JAVA, cp)}:{cp}", "ShareConsume", "consume", bootstrap,
             group, topic, str(idle_ms), *rules],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.err = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True).start()

    @staticmethod
    def _read(stream, into):
        for line in stream:
            into.append(line.rstrip("\n"))

    def records(self):
        """(partition, offset, delivery count, value) of every record delivered."""
        out = []
        for line in list(self.lines):
            if line.startswith("rec "):
                _, p, o, d, v = line.split(" ", 4)
                out.append((int(p), int(o), int(d), v))
        return out

    def marked(self, word):
        """(partition, offset) of every `acked` or `failed` line."""
        return [(int(p), int(o)) for w, p, o in
                (line.split(" ") for line in list(self.lines) if line.startswith(word + " "))]

    def wait(self, timeout=180):
        code = self.proc.wait(timeout=timeout)
        assert code == 0 and self.lines and self.lines[-1] == "done", \
            "\n".join(self.lines[-20:] + self.err[-40:])

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def create_topic(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)


def produce(bootstrap, topic, values, partition=0, one_per_batch=False):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0 if one_per_batch else 5})
    for v in values:
        p.produce(topic, v.encode(), partition=partition)
        if one_per_batch:
            p.flush(30)
    assert p.flush(30) == 0


def configure(bootstrap, group, *pairs):
    out = java("config", bootstrap, group, *pairs)
    for pair in pairs:
        assert f"config {pair}" in out.splitlines(), out
    return out


def test_group_configs_are_checked_and_described(eddy):
    group = name("cfg")
    out = configure(eddy.bootstrap, group, "share.auto.offset.reset=earliest",
                    "share.record.lock.duration.ms=4000")
    # Unset keys are described with the broker's values.
    assert "config share.delivery.count.limit=5" in out.splitlines()
    bad = subprocess.run(
        ["java", "-cp", f"{javac(JAVA, kafka_classpath())}:{kafka_classpath()}", "ShareConsume",
         "config", eddy.bootstrap, group, "share.record.lock.duration.ms=10"],
        capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "InvalidConfigurationException" in bad.stderr, bad.stderr[-2000:]


def test_more_consumers_than_partitions_all_receive(eddy):
    topic, group = name("share1"), name("g1")
    create_topic(eddy.bootstrap, topic, 1)
    configure(eddy.bootstrap, group, "share.auto.offset.reset=earliest")
    values = [f"v-{i}" for i in range(300)]
    produce(eddy.bootstrap, topic, values, one_per_batch=True)
    consumers = [Consumer(eddy.bootstrap, group, topic, 6000, "sleep:20") for _ in range(4)]
    for c in consumers:
        c.wait()
    accepted = Counter(a for c in consumers for a in c.marked("acked"))
    assert sorted(accepted) == [(0, o) for o in range(300)]
    assert set(accepted.values()) == {1}
    for c in consumers:
        assert c.records(), "every consumer of the group receives records"
        assert not c.marked("failed")


def test_a_killed_consumers_records_come_back_after_their_lock(eddy):
    topic, group = name("share2"), name("g2")
    create_topic(eddy.bootstrap, topic, 1)
    configure(eddy.bootstrap, group, "share.auto.offset.reset=earliest",
              "share.record.lock.duration.ms=3000")
    produce(eddy.bootstrap, topic, [f"r-{i}" for i in range(10)])
    holder = Consumer(eddy.bootstrap, group, topic, 60000, "hold")
    wait_for(lambda: "holding" in holder.lines, 60, "the first consumer to hold records")
    held = {(p, o) for p, o, d, _ in holder.records()}
    assert held and all(d == 1 for *_, d, _ in holder.records())
    holder.kill()
    taker = Consumer(eddy.bootstrap, group, topic, 8000)
    taker.wait()
    again = {(p, o): d for p, o, d, _ in taker.records()}
    assert held <= set(again)
    assert all(again[tp] == 2 for tp in held), again
    assert sorted(taker.marked("acked")) == [(0, o) for o in range(10)]


def test_rejected_is_not_redelivered_and_poison_is_archived(eddy):
    topic, group = name("share3"), name("g3")
    create_topic(eddy.bootstrap, topic, 1)
    configure(eddy.bootstrap, group, "share.auto.offset.reset=earliest",
              "share.delivery.count.limit=2")
    produce(eddy.bootstrap, topic, ["a", "reject-me", "poison", "b"], one_per_batch=True)
    c = Consumer(eddy.bootstrap, group, topic, 6000, "reject:reject-me", "release:poison")
    c.wait()
    deliveries = defaultdict(list)
    for _, _, d, v in c.records():
        deliveries[v].append(d)
    assert deliveries["reject-me"] == [1]
    assert deliveries["poison"] == [1, 2], "released twice, then archived at the limit of 2"
    assert deliveries["a"] == [1] and deliveries["b"] == [1]
    # Nothing is left for a later consumer of the group.
    late = Consumer(eddy.bootstrap, group, topic, 3000)
    late.wait()
    assert late.records() == []


def test_every_record_acknowledged_once_across_a_kill_9(fresh_eddy):
    eddy = fresh_eddy
    topic, group = name("share4"), name("g4")
    create_topic(eddy.bootstrap, topic, 2)
    configure(eddy.bootstrap, group, "share.auto.offset.reset=earliest",
              "share.record.lock.duration.ms=4000")
    n = 5000
    for p in range(2):
        produce(eddy.bootstrap, topic, [f"{p}-{i}" for i in range(n)], partition=p)
    consumers = [Consumer(eddy.bootstrap, group, topic, 20000, "sleep:1") for _ in range(2)]
    wait_for(lambda: sum(len(c.marked("acked")) for c in consumers) >= 3000, 120,
             "3,000 acknowledgements")
    eddy.stop(kill=True)
    eddy.start()
    for c in consumers:
        c.wait(timeout=300)
    acked = Counter(a for c in consumers for a in c.marked("acked"))
    failed = {f for c in consumers for f in c.marked("failed")}
    delivered = {(p, o) for c in consumers for p, o, _, _ in c.records()}
    everything = {(p, o) for p in range(2) for o in range(n)}
    assert delivered == everything
    twice = [tp for tp, k in acked.items() if k > 1]
    assert not twice, f"acknowledged twice: {twice[:10]}"
    # An acknowledgement whose answer was lost to the kill may have landed (the record is
    # then never delivered again) or not (delivered again and acknowledged then).
    missing = everything - set(acked) - failed
    assert not missing, f"never acknowledged: {sorted(missing)[:10]}"
    late = Consumer(eddy.bootstrap, group, topic, 3000)
    late.wait()
    assert late.records() == [], "nothing is left once every record is acknowledged"
