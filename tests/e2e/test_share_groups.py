"""Share groups (KIP-932) with Apache Kafka 4.4's own KafkaShareConsumer
(tests/e2e/java/ShareConsume.java, explicit acknowledgement) against a real eddy: more
consumers than partitions all receiving records, each record accepted once; a consumer
killed while holding records, whose records come back after their lock with delivery
count 2; a rejected record never delivered again and a poison record archived at the
delivery limit; group configs set and read with Kafka's Admin client; and eddy killed
with SIGKILL mid-stream, after which every one of 10,000 records is acknowledged, none
twice, and none delivered again once acknowledged. Kafka's kafka-share-groups tool
lists, describes, resets and deletes a group's offsets and the group; policies refuse a
denied group and a denied topic over SASL; a record whose lock the consumer renews
(ShareFetch/ShareAcknowledge v2) stays with it past three lock durations. librdkafka's
share consumer (confluent-kafka's ShareConsumer) accepts, releases and rejects too."""

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


def test_confluent_kafka_share_consumers(eddy):
    """librdkafka's share consumer (confluent-kafka 2.16's ShareConsumer, explicit
    acknowledgement): two consumers on one group over two partitions get every record
    once between them; a record released comes back with delivery count 2, a rejected
    one never; after commit_sync and close nothing is left for a later consumer."""
    from confluent_kafka import AcknowledgeType, ShareConsumer
    topic, group = name("share-rd"), name("g-rd")
    create_topic(eddy.bootstrap, topic, 2)
    configure(eddy.bootstrap, group, "share.auto.offset.reset=earliest")
    values = [f"m-{i}" for i in range(40)] + ["release-me", "reject-me"]
    for i, v in enumerate(values):
        produce(eddy.bootstrap, topic, [v], partition=i % 2)
    conf = {"bootstrap.servers": eddy.bootstrap, "group.id": group,
            "share.acknowledgement.mode": "explicit"}
    seen = defaultdict(list)
    lock = threading.Lock()
    released = threading.Event()

    def consume():
        c = ShareConsumer(conf)
        c.subscribe([topic])
        deadline = time.time() + 60
        try:
            while time.time() < deadline:
                with lock:
                    accepted = sum(1 for v, ds in seen.items() if v != "reject-me" and ds)
                if accepted >= len(values) - 1 and released.is_set() and \
                        len(seen["release-me"]) >= 2:
                    break
                for m in c.poll(0.5):
                    if m.error():
                        continue
                    v = m.value().decode()
                    with lock:
                        seen[v].append(m.delivery_count())
                    if v == "release-me" and not released.is_set():
                        released.set()
                        c.acknowledge(m, AcknowledgeType.RELEASE)
                    elif v == "reject-me":
                        c.acknowledge(m, AcknowledgeType.REJECT)
                    else:
                        c.acknowledge(m, AcknowledgeType.ACCEPT)
                c.commit_sync(30)
        finally:
            c.close()

    threads = [threading.Thread(target=consume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(seen) == sorted(values)
    assert seen["release-me"] == [1, 2], seen["release-me"]
    assert seen["reject-me"] == [1]
    assert all(ds == [1] for v, ds in seen.items() if v not in ("release-me",)), seen
    late = ShareConsumer({**conf, "share.acknowledgement.mode": "implicit"})
    late.subscribe([topic])
    try:
        deadline, got = time.time() + 5, []
        while time.time() < deadline:
            got += [m for m in late.poll(0.5) if not m.error()]
        assert got == []
    finally:
        late.close()


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


def share_groups_tool(eddy, *args):
    """Kafka 4.4's kafka-share-groups (ShareGroupCommand): its output and exit code."""
    out = subprocess.run(
        ["java", "-cp", kafka_classpath(), "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
         "--bootstrap-server", eddy.bootstrap, *args],
        capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


def rows(text, group):
    """The table rows of `group` in the tool's output, split on blanks."""
    return [line.split() for line in text.splitlines() if line.startswith(group + " ")]


def test_kafka_share_groups_tool_lists_describes_resets_and_deletes(eddy):
    topic, group = name("share5"), name("g5")
    create_topic(eddy.bootstrap, topic, 2)
    configure(eddy.bootstrap, group, "share.auto.offset.reset=earliest")
    produce(eddy.bootstrap, topic, [f"v{i}" for i in range(50)], partition=0)
    c = Consumer(eddy.bootstrap, group, topic, 3000)
    c.wait()
    assert len(c.marked("acked")) == 50
    code, out = share_groups_tool(eddy, "--list")
    assert code == 0 and group in out.split(), out
    code, out = share_groups_tool(eddy, "--describe", "--group", group)
    assert code == 0, out
    starts = {(r[1], r[2]): r[3] for r in rows(out, group)}
    assert starts == {(topic, "0"): "50", (topic, "1"): "0"}, out
    code, out = share_groups_tool(eddy, "--describe", "--group", group, "--state")
    assert code == 0 and rows(out, group)[0][-2:] == ["Empty", "0"], out
    code, out = share_groups_tool(eddy, "--reset-offsets", "--group", group, "--topic", topic,
                                  "--to-earliest", "--execute")
    assert code == 0, out
    # The reset takes: the group reads partition 0 again from its start.
    again = Consumer(eddy.bootstrap, group, topic, 3000)
    again.wait()
    assert sorted(o for _, o, _, _ in again.records()) == list(range(50))
    code, out = share_groups_tool(eddy, "--delete-offsets", "--group", group, "--topic", topic)
    assert code == 0 and "Successful" in out, out
    code, out = share_groups_tool(eddy, "--describe", "--group", group)
    assert code == 0 and not rows(out, group), out
    code, out = share_groups_tool(eddy, "--delete", "--group", group)
    assert code == 0 and "successful" in out, out
    code, out = share_groups_tool(eddy, "--list")
    assert group not in out.split(), out


def test_policies_refuse_share_groups_and_topics(tmp_path):
    """A SASL user whose policy denies KafkaRead on a group, or on a topic, is refused by
    the share consumer's requests (GROUP_ / TOPIC_AUTHORIZATION_FAILED), and nothing of
    the group is stored."""
    from test_policies import ok, put_policy, start, statement

    eddy = start(tmp_path)
    try:
        ok(eddy, "user", "put", "bob", "--s3-secret", "bob-s3-secret", "--kafka-password", "bob-pw")
        topic, secret = name("open"), name("closed")
        for t in (topic, secret):
            create_topic(eddy.bootstrap, t, 1)
            produce(eddy.bootstrap, t, ["x", "y"])
        put_policy(eddy, tmp_path, "no-share", {"Version": "2012-10-17", "Statement": [
            {"Sid": "g", "Effect": "Deny", "Action": "KafkaRead",
             "Resource": "vast:kafka:group:default:denied-*"},
            {"Sid": "t", "Effect": "Deny", "Action": "KafkaRead",
             "Resource": f"vast:kafka:topic:default:{secret}"}]}, "bob")
        sasl = [f"prop:{k}={v}" for k, v in {
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                'required username="bob" password="bob-pw";'}.items()]
        bootstrap = f"127.0.0.1:{eddy.sasl_port}"
        denied = Consumer(bootstrap, name("denied"), topic, 20000, *sasl)
        assert denied.proc.wait(timeout=120) == 3
        assert "error GroupAuthorizationException" in denied.lines, denied.lines + denied.err[-20:]
        closed = Consumer(bootstrap, name("allowed"), secret, 20000, *sasl)
        assert closed.proc.wait(timeout=120) == 3
        assert "error TopicAuthorizationException" in closed.lines, closed.lines + closed.err[-20:]
        assert closed.records() == []
        code, out = share_groups_tool(eddy, "--list")
        assert code == 0 and "denied-" not in out, out
        # The same user reads an allowed topic in an allowed group.
        fine = Consumer(bootstrap, name("allowed"), topic, 3000, *sasl)
        fine.wait()
    finally:
        eddy.stop()


def test_a_renewed_record_stays_with_its_consumer_past_its_lock(eddy):
    """ShareFetch/ShareAcknowledge v2 (KIP-1222): a consumer that renews a record's lock
    every second keeps it for three lock durations; it is never acquired again (its
    delivery count stays 1) and in the end accepted."""
    topic, group = name("share6"), name("g6")
    create_topic(eddy.bootstrap, topic, 1)
    configure(eddy.bootstrap, group, "share.auto.offset.reset=earliest",
              "share.record.lock.duration.ms=2000")
    produce(eddy.bootstrap, topic, ["slow", "after"], one_per_batch=True)
    first = Consumer(eddy.bootstrap, group, topic, 4000, "renew:slow:6")
    wait_for(first.records, 60, "the first consumer to get the records")
    # Another member, which would get the record once its lock ran out.
    other = Consumer(eddy.bootstrap, group, topic, 12000)
    first.wait()
    other.wait()
    assert len([line for line in first.lines if line.startswith("renewed ")]) == 6, first.lines
    slow = [(c is first, d) for c in (first, other) for _, _, d, v in c.records() if v == "slow"]
    assert slow and all(s == (True, 1) for s in slow), slow
    assert (0, 0) in first.marked("acked") and not first.marked("failed")
