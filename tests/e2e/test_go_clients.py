"""The Go Kafka ecosystem from Debian packages against eddy: Sarama 1.22.1
(golang-github-shopify-sarama-dev) and segmentio/kafka-go 0.2.1
(golang-github-segmentio-kafka-go-dev), built with Debian's Go 1.19 in GOPATH mode.

Go programs are what much Kafka tooling is (Burrow, kafka exporters, operators), and
these two libraries speak old, fixed protocol versions that no other suite sends: Sarama
1.22 at its newest known version (2.2.0) sends Metadata v5, Produce v3, Fetch v4,
ListOffsets v1, FindCoordinator v0, JoinGroup v1, SyncGroup/Heartbeat/LeaveGroup v0,
OffsetCommit v1 (v2 once `Consumer.Offsets.Retention` is set), OffsetFetch v1,
CreateTopics v2, DeleteTopics v1, DescribeConfigs v0, ListGroups/DescribeGroups v0;
kafka-go 0.2.1 sends Produce v2 and Fetch v2 (message sets of magic 0/1), Metadata v1,
CreateTopics v0, DeleteTopics v1, OffsetCommit v2, OffsetFetch v1, JoinGroup v1.

The CLIs are tests/go/sarama_client and tests/go/kafkago_client (one JSON line per
event on stdout); a session fixture builds them into ~/.cache/eddy/go, keyed on a hash
of the source and the Go version. Checked: a Sarama ConsumerGroup of two member
processes reads every produced message exactly once, its commits are the offsets
confluent-kafka's admin client reads, and a restarted member resumes at them (at
Sarama's newest version and at 0.11, the oldest whose Produce and Fetch carry record
batches); Sarama's batches, whose header leaves the max timestamp unset, keep their
records' time for retention and ListOffsets; Sarama's ClusterAdmin topic and group
calls agree with kafka-python; kafka-go's Writer and group Reader round-trip keyed
messages with commits; kafka-go's Conn creates, reads and deletes topics.

A missing Go toolchain or library fails these tests (it does not skip them): the Debian
packages golang-go, golang-github-shopify-sarama-dev and
golang-github-segmentio-kafka-go-dev are part of what scripts/test installs."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from conftest import metric, new_eddy

GO_DIR = Path(__file__).resolve().parents[1] / "go"
GOPATH = Path("/usr/share/gocode")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eddy" / "go"
# What each program imports, and the Debian package that installs it under GOPATH.
LIBRARIES = {
    "sarama_client": ("github.com/Shopify/sarama", "golang-github-shopify-sarama-dev"),
    "kafkago_client": ("github.com/segmentio/kafka-go", "golang-github-segmentio-kafka-go-dev"),
}
PARTITIONS = 3

def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(cond, timeout, what, procs=()):
    """Polls `cond()` until it returns something truthy (returned), failing after
    `timeout` s or as soon as one of `procs` exited."""
    deadline = time.time() + timeout
    last = None
    while True:
        last = cond()
        if last:
            return last
        for p in procs:
            assert p.proc.poll() is None, f"{p.name} exited while waiting for {what}: {p.tail()}"
        assert time.time() < deadline, (f"timed out after {timeout}s waiting for {what} (last: {last!r})\n"
                                        + "\n".join(p.tail() for p in procs))
        time.sleep(0.1)


def go_build(program: str) -> Path:
    """tests/go/<program>/main.go built once per source, Go version and library version
    (GOPATH mode, Debian's library sources), into the cache; older builds of it are
    removed."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("the Go toolchain is missing: apt-get install golang-go", pytrace=False)
    lib, package = LIBRARIES[program]
    if not (GOPATH / "src" / lib).is_dir():
        pytest.fail(f"{lib} is missing under {GOPATH}/src: apt-get install {package}", pytrace=False)
    src = GO_DIR / program / "main.go"
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout
    # And the library package's Debian version: an upgrade rebuilds.
    version += subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                              capture_output=True, text=True).stdout if shutil.which("dpkg-query") else ""
    key = hashlib.sha256(src.read_bytes() + version.encode()).hexdigest()[:16]
    out = CACHE / f"{program}-{key}" / program
    if out.exists():
        return out
    for old in CACHE.glob(f"{program}-*"):
        shutil.rmtree(old, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    # cgo off: Sarama then uses its pure-Go zstd (no C compiler or libzstd needed).
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": str(GOPATH), "GOCACHE": str(CACHE / "build"),
           "GOFLAGS": "", "CGO_ENABLED": "0"}
    tmp = out.with_name(f".{program}.{os.getpid()}")
    built = subprocess.run([go, "build", "-o", str(tmp), "main.go"], cwd=src.parent, env=env,
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"go build {program} failed:\n{built.stdout}\n{built.stderr[-6000:]}"
    os.replace(tmp, out)
    return out


@pytest.fixture(scope="session")
def sarama():
    return go_build("sarama_client")


@pytest.fixture(scope="session")
def kafkago():
    return go_build("kafkago_client")


def run(binary, *args, timeout=120, ok=True):
    """One short run of a Go CLI: its JSON lines (the last one is its result)."""
    out = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    if ok:
        assert out.returncode == 0 and lines, (f"{binary.name} {' '.join(map(str, args))} exited "
                                               f"{out.returncode}\n{out.stdout[-6000:]}\n{out.stderr[-6000:]}")
    return lines


class Proc:
    """A long-running Go CLI (a group member): its JSON events as they come, its stderr in
    a file of its own."""

    def __init__(self, binary, args, log_path, label):
        self.name = label
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([str(binary), *map(str, args)], stdout=subprocess.PIPE,
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

    def claims(self):
        """(generation, partitions) of the member's current assignment, None between a
        revoke and the next assignment."""
        with self.lock:
            last = [e for e in self.events if e["event"] in ("assign", "revoke")]
        if not last or last[-1]["event"] != "assign":
            return None
        e = last[-1]
        return e["generation"], sorted(p for ps in e["claims"].values() for p in ps)

    def messages(self):
        return self.of("message")

    def stop(self, timeout=60):
        """SIGTERM: the member leaves its group, committing what it consumed. Returns its
        `exit` event."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout=120):
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        self.log.close()
        exits = self.of("exit")
        assert code == 0 and exits, f"{self.name} exited {code}: {self.tail()}"
        return exits[-1]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def tail(self):
        with self.lock:
            events = self.events[-8:]
        if not self.log.closed:
            self.log.flush()
        return (f"--- {self.name}: events {events}\n--- stderr {self.log_path}\n"
                f"{self.log_path.read_text(errors='replace')[-4000:]}")


def create_topic(eddy, topic, partitions=PARTITIONS, config=None):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1, config=config or {})])[topic].result(timeout=30)


def max_timestamp(eddy, topic, partition):
    """ListOffsets for max_timestamp (-3): (offset, timestamp)."""
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    tp = TopicPartition(topic, partition)
    res = a.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(timeout=30)
    return res.offset, res.timestamp


def committed(eddy, group, topic, partitions=PARTITIONS):
    """The group's committed offsets as confluent-kafka's admin client reads them
    (partition -> offset; -1001 = none)."""
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    res = a.list_consumer_group_offsets([req])[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def ends(acked):
    """partition -> next offset, from produce acknowledgements."""
    out = {}
    for a in acked:
        out[a["partition"]] = max(out.get(a["partition"], 0), a["offset"] + 1)
    return out


@pytest.mark.parametrize("version,retention", [
    # Sarama's newest version and its default offset settings: commits are OffsetCommit v1.
    ("2.2.0", "0s"),
    # With a retention time Sarama commits with OffsetCommit v2.
    ("2.2.0", "24h"),
    # The oldest version whose Produce (v3) and Fetch (v4) carry record batches.
    ("0.11.0.0", "24h"),
], ids=["v2.2.0-default-commit", "v2.2.0-retention-commit", "v0.11.0.0-retention-commit"])
def test_sarama_group_of_two_reads_each_message_once_and_resumes(eddy, sarama, tmp_path, version, retention):
    topic, group = name("sarama"), name("sarama-g")
    create_topic(eddy, topic)
    common = ["-brokers", eddy.bootstrap, "-version", version, "-offsets-retention", retention]
    members = [Proc(sarama, ["consume-group", *common, "-topic", topic, "-group", group],
                    tmp_path / f"member-{i}.log", f"member-{i}") for i in range(2)]
    try:
        # The group settles before anything is produced, so no rebalance hands over a
        # partition with uncommitted messages (which Kafka's at-least-once delivery
        # would read again).
        def settled():
            c = [m.claims() for m in members]
            if None in c or c[0][0] != c[1][0]:
                return None
            parts = c[0][1] + c[1][1]
            return c if sorted(parts) == list(range(PARTITIONS)) and c[0][1] and c[1][1] else None
        claims = wait_for(settled, 60, "both members sharing the partitions in one generation", members)

        acked = run(sarama, "produce", *common, "-topic", topic, "-count", 60)
        assert len(acked) == 60 and all(a["event"] == "acked" for a in acked)
        assert len({(a["partition"], a["offset"]) for a in acked}) == 60
        # Sarama's hash partitioner spread the 60 keys over every partition.
        assert set(ends(acked)) == set(range(PARTITIONS))
        sent = {(a["partition"], a["offset"]): (a["key"], a["value"]) for a in acked}

        wait_for(lambda: sum(len(m.messages()) for m in members) >= 60, 60,
                 "the group reading 60 messages", members)

        # The admin client sees the running group.
        listed = run(sarama, "admin", "groups", *common)[-1]["groups"]
        assert listed.get(group) == "consumer"
        desc = run(sarama, "admin", "describe-groups", *common, "-group", group)[-1]["groups"]
        assert len(desc) == 1 and desc[0]["state"] == "Stable" and desc[0]["error"] is None
        assert desc[0]["protocol_type"] == "consumer" and desc[0]["protocol"] == "range"
        assigned = sorted(p for m in desc[0]["members"].values() for p in m.get("assignment", {}).get(topic, []))
        assert len(desc[0]["members"]) == 2 and assigned == list(range(PARTITIONS))
        assert all(m["client_id"] == "eddy-e2e-sarama" for m in desc[0]["members"].values())
        exits = [m.stop() for m in members]
    finally:
        for m in members:
            m.kill()

    got = {}
    for m, (_, parts) in zip(members, claims):
        for msg in m.messages():
            key = (msg["partition"], msg["offset"])
            assert key not in got, f"{key} read twice"
            assert msg["partition"] in parts, f"{m.name} read {key} outside its claims {parts}"
            got[key] = (msg["key"], msg["value"])
    assert got == sent
    assert all(e["consumed"] > 0 and "error" not in e for e in exits), exits
    errors = sorted({e["error"] for m in members for e in m.of("error")})

    # The members committed every message when they left: what confluent-kafka reads,
    # and what Sarama's admin client reads.
    assert committed(eddy, group, topic) == ends(acked), f"errors the members saw: {errors}"
    assert not errors
    offsets = run(sarama, "admin", "offsets", *common, "-group", group, "-topic", topic)[-1]
    assert offsets["error"] is None
    assert {int(p): o["offset"] for p, o in offsets["offsets"][topic].items()} == ends(acked)

    # A restarted member resumes at the commits: it reads only what came after.
    more = run(sarama, "produce", *common, "-topic", topic, "-count", 9, "-start", 60)
    restarted = Proc(sarama, ["consume-group", *common, "-topic", topic, "-group", group, "-idle", "3s"],
                     tmp_path / "restarted.log", "restarted")
    try:
        done = restarted.wait()
    finally:
        restarted.kill()
    assert done["consumed"] == 9 and "error" not in done, restarted.tail()
    assert sorted((m["partition"], m["offset"]) for m in restarted.messages()) == \
        sorted((a["partition"], a["offset"]) for a in more)
    assert committed(eddy, group, topic) == ends(acked + more)


@pytest.fixture
def retention_eddy():
    """A server of the test's own, running a retention pass every 200 ms."""
    with tempfile.TemporaryDirectory(prefix="eddy-e2e-") as tmp:
        server = new_eddy(Path(tmp), extra_args=["--kafka-retention-check-interval-ms", "200"]).start()
        yield server
        server.stop()


def test_sarama_batches_keep_their_records_time(retention_eddy, sarama):
    """Sarama 1.22 leaves a batch's max timestamp unset (-1 on the wire) and gives the
    time in the records (first timestamp plus deltas); Kafka's log validator rewrites
    the batch's max timestamp from its records, so time-based retention, ListOffsets by
    timestamp and max_timestamp see when the records were written."""
    topic = name("sarama-time")
    create_topic(retention_eddy, topic, 1, {"retention.ms": "3600000"})
    before = int(time.time() * 1000)
    acked = run(sarama, "produce", "-brokers", retention_eddy.bootstrap, "-topic", topic, "-count", 5)
    assert [x["offset"] for x in acked] == list(range(5))
    c = Consumer({"bootstrap.servers": retention_eddy.bootstrap, "group.id": name("time"),
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        stamps = []
        deadline = time.time() + 30
        while len(stamps) < 5:
            assert time.time() < deadline, (f"read {len(stamps)} of 5, watermarks "
                                            f"{c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)}")
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                stamps.append(m.timestamp()[1])
        assert all(before - 1000 <= t <= time.time() * 1000 + 1000 for t in stamps), (before, stamps)

        # Two more completed retention passes than now: one ran entirely after the
        # produce. Records seconds old stay under an hour's retention.
        start = metric(retention_eddy, "eddy_kafka_retention_passes")
        wait_for(lambda: metric(retention_eddy, "eddy_kafka_retention_passes") >= start + 2, 30,
                 "two retention passes")
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 5)

        found = c.offsets_for_times([TopicPartition(topic, 0, before - 60_000)], timeout=10)
        assert found[0].offset == 0, found
    finally:
        c.close()
    assert max_timestamp(retention_eddy, topic, 0) == (stamps.index(max(stamps)), max(stamps)), stamps


@pytest.mark.parametrize("version", ["2.2.0", "1.0.0"])
def test_sarama_admin_creates_describes_and_deletes_topics(eddy, sarama, version):
    """CreateTopic (v2), DescribeTopics (Metadata v5) and DeleteTopic (v1), checked
    against kafka-python's view of the same topic."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = name("sarama-admin")
    common = ["-brokers", eddy.bootstrap, "-version", version]
    run(sarama, "admin", "create", *common, "-topic", topic, "-partitions", 4,
        "-config", "retention.ms=3600000,cleanup.policy=compact")
    kp = KafkaAdminClient(bootstrap_servers=eddy.bootstrap)
    try:
        theirs = kp.describe_topics([topic])[0]
        assert theirs["error_code"] == 0 and len(theirs["partitions"]) == 4
        configs = kp.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                      config_filter="all")["topic"][topic]
        assert configs["retention.ms"]["value"] == "3600000"
        assert configs["cleanup.policy"]["value"] == "compact"

        ours = run(sarama, "admin", "describe", *common, "-topic", topic)[-1]["topics"]
        assert len(ours) == 1 and ours[0]["name"] == topic and ours[0]["error"] is None
        assert not ours[0]["internal"]
        assert [(p["id"], p["leader"], p["replicas"], p["isr"], p["error"]) for p in ours[0]["partitions"]] == [
            (p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"], None)
            for p in sorted(theirs["partitions"], key=lambda p: p["partition_index"])]

        # Creating it again is refused with Kafka's error.
        again = run(sarama, "admin", "create", *common, "-topic", topic, "-partitions", 1, ok=False)
        assert again[-1]["event"] == "error" and "already exists" in again[-1]["error"], again

        run(sarama, "admin", "delete", *common, "-topic", topic)
        assert topic not in kp.list_topics()
        gone = run(sarama, "admin", "describe", *common, "-topic", topic)[-1]["topics"]
        assert gone[0]["error"] is not None and "does not exist" in gone[0]["error"], gone
        again = run(sarama, "admin", "delete", *common, "-topic", topic, ok=False)
        assert again[-1]["event"] == "error" and "does not exist" in again[-1]["error"], again
    finally:
        kp.close()


def test_sarama_admin_lists_topics_and_describes_configs(eddy, sarama):
    """ListTopics (Metadata, then DescribeConfigs v0 for every topic) and DescribeConfig
    (DescribeConfigs v0), checked against kafka-python."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    topic = name("sarama-cfg")
    common = ["-brokers", eddy.bootstrap]
    run(sarama, "admin", "create", *common, "-topic", topic, "-partitions", 2, "-config", "retention.ms=7200000")

    listed = run(sarama, "admin", "list", *common)[-1]["topics"]
    assert listed[topic]["partitions"] == 2 and listed[topic]["replication_factor"] == 1
    assert listed[topic]["configs"].get("retention.ms") == "7200000"

    ours = run(sarama, "admin", "config", *common, "-topic", topic)[-1]["configs"]
    kp = KafkaAdminClient(bootstrap_servers=eddy.bootstrap)
    try:
        theirs = kp.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                     config_filter="all")["topic"][topic]
    finally:
        kp.close()
    assert ours["retention.ms"]["value"] == "7200000" and not ours["retention.ms"]["default"]
    assert ours["max.message.bytes"]["default"]
    assert {k: v["value"] for k, v in ours.items()} == {k: v["value"] for k, v in theirs.items()}


def test_kafkago_writer_and_group_reader_round_trip(eddy, kafkago, tmp_path):
    """kafka-go's Writer (Produce v2, hash balancer) and a Reader with a GroupID
    (Fetch v2, OffsetCommit v2 per message) read back every keyed message once; the
    commits are what confluent-kafka reads, and a second reader of the group finds
    nothing left."""
    topic, group = name("kafkago"), name("kafkago-g")
    create_topic(eddy, topic)
    common = ["-brokers", eddy.bootstrap, "-topic", topic]
    written = run(kafkago, "produce", *common, "-count", 45)[-1]
    assert written == {"event": "written", "count": 45}

    reader = Proc(kafkago, ["consume-group", *common, "-group", group, "-max", 45, "-idle", "20s"],
                  tmp_path / "reader.log", "reader")
    try:
        done = reader.wait()
    finally:
        reader.kill()
    msgs = reader.messages()
    assert done["consumed"] == 45 and "error" not in done, reader.tail()
    assert sorted(m["value"] for m in msgs) == sorted(f"v{i}" for i in range(45))
    assert all(m["key"] == "k" + m["value"][1:] for m in msgs)
    assert len({(m["partition"], m["offset"]) for m in msgs}) == 45
    # The hash balancer put each key on one partition, spread over all of them.
    by_partition = {}
    for m in msgs:
        by_partition.setdefault(m["partition"], []).append(m["offset"])
    assert set(by_partition) == set(range(PARTITIONS))
    assert all(sorted(o) == list(range(len(o))) for o in by_partition.values())
    assert committed(eddy, group, topic) == {p: len(o) for p, o in by_partition.items()}

    again = Proc(kafkago, ["consume-group", *common, "-group", group, "-idle", "4s"],
                 tmp_path / "again.log", "again")
    try:
        done = again.wait()
    finally:
        again.kill()
    assert done["consumed"] == 0 and "error" not in done, again.tail()


def test_kafkago_conn_creates_reads_and_deletes_topics(eddy, kafkago):
    """kafka-go's Conn: CreateTopics (v0), ReadPartitions (Metadata v1) and DeleteTopics
    (v1), checked against kafka-python."""
    from kafka import KafkaAdminClient

    topic = name("kafkago-admin")
    common = ["-brokers", eddy.bootstrap, "-topic", topic]
    run(kafkago, "create-topic", *common, "-partitions", 5)
    kp = KafkaAdminClient(bootstrap_servers=eddy.bootstrap)
    try:
        theirs = kp.describe_topics([topic])[0]
        assert theirs["error_code"] == 0 and len(theirs["partitions"]) == 5
        parts = run(kafkago, "partitions", *common)[-1]["partitions"]
        assert [p["id"] for p in parts] == list(range(5))
        assert all(p["topic"] == topic and p["replicas"] == 1 and p["isr"] == 1 for p in parts)
        assert {p["leader"] for p in parts} <= set(eddy.bootstrap.split(","))
        # CreateTopics of an existing topic is no error to kafka-go (it ignores
        # TOPIC_ALREADY_EXISTS) and changes nothing.
        run(kafkago, "create-topic", *common, "-partitions", 1)
        assert len(kp.describe_topics([topic])[0]["partitions"]) == 5
        run(kafkago, "delete-topic", *common)
        assert topic not in kp.list_topics()
    finally:
        kp.close()
