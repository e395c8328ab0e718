"""The Go Kafka ecosystem against eddy: IBM/sarama 1.61.1 and segmentio/kafka-go 0.4.51,
the versions tests/go/go.mod and go.sum pin, built in module mode with Go 1.26.

Go programs are what much Kafka tooling is (Burrow, kafka exporters, operators). Sarama
takes each request's version from the Kafka version it is configured with, lowered to
what eddy's ApiVersions advertises; kafka-go picks the highest of a few versions it
knows that eddy advertises for some requests (its Conn's Metadata, Fetch, JoinGroup,
CreateTopics and DeleteTopics, and whatever its Writer sends) and sends the others at
fixed versions. What they send here (each request frame's header, read off the clients'
socket writes during a run of this module):

- Sarama at its newest version (sarama.MaxVersion, 4.3.1): ApiVersions v4, Metadata v11,
  Produce v10, Fetch v12, ListOffsets v6, FindCoordinator v3, JoinGroup v8, SyncGroup
  v5, Heartbeat v4, LeaveGroup v5, OffsetCommit v8, OffsetFetch v8, ListGroups v5,
  DescribeGroups v5, CreateTopics v7, DeleteTopics v6, DescribeConfigs v4.
- Sarama at 0.11.0.0, the oldest version whose Produce and Fetch carry record batches:
  ApiVersions v3, Metadata v4, Produce v3, Fetch v5, ListOffsets v2, FindCoordinator v1,
  JoinGroup v2, SyncGroup/Heartbeat/LeaveGroup v1, OffsetCommit v3 (with the retention
  time of `Consumer.Offsets.Retention`, or -1 for Kafka's default), OffsetFetch v3,
  ListGroups v1, DescribeGroups v0; at 1.0.0 its admin calls are CreateTopics v2,
  Metadata v5 and DeleteTopics v1.
- kafka-go: ApiVersions v0; its Writer Metadata v8 and Produce v8 (record batches); its
  Reader Fetch v10, ListOffsets v1, FindCoordinator v0, JoinGroup v2, SyncGroup,
  Heartbeat and LeaveGroup v0, OffsetCommit v2 (with a 24 h retention time) and
  OffsetFetch v1; its Conn Metadata v6, CreateTopics v2 and DeleteTopics v1.

The CLIs are tests/go/sarama_client and tests/go/kafkago_client (one JSON line per
event on stdout); a session fixture builds them into ~/.cache/eddy/go, keyed on a hash
of the source, go.mod, go.sum and the Go version, with Go's module and build caches
beside them. Checked: a Sarama ConsumerGroup of two member processes reads every
produced message exactly once, its commits are the offsets confluent-kafka's admin
client reads, and a restarted member resumes at them (at Sarama's newest version and at
0.11, with and without a retention time); Sarama's records keep their time for
retention and ListOffsets; Sarama's ClusterAdmin topic and group calls agree with
kafka-python; kafka-go's Writer and group Reader round-trip keyed messages with
commits; kafka-go's Conn creates, reads and deletes topics.

A missing Go toolchain or library fails these tests (it does not skip them): Go 1.26
comes with the machine (/usr/local/go, used when `go` is not on PATH), and the build
fetches the libraries go.sum names through the Go module proxy (into the module cache,
once)."""

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

from conftest import cache_lock, metric, new_eddy

GO_DIR = Path(__file__).resolve().parents[1] / "go"
# The Go of the machines the tests run on: /usr/local/go, also when it is not on PATH.
GO_FALLBACK = Path("/usr/local/go/bin/go")
# The built programs and Go's module and build caches, outside the clone (CI keeps them).
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "eddy" / "go"
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


def go_tool() -> str:
    """The `go` command: on PATH, else /usr/local/go/bin/go; a failure saying so if neither."""
    go = shutil.which("go") or (str(GO_FALLBACK) if os.access(GO_FALLBACK, os.X_OK) else None)
    if go is None:
        pytest.fail(f"the Go toolchain is missing: no `go` on PATH nor at {GO_FALLBACK} "
                    "(tests/go/go.mod needs Go 1.26; install it from https://go.dev/dl into /usr/local/go)",
                    pytrace=False)
    return go


def go_build(program: str) -> Path:
    """tests/go/<program> built once per source, go.mod, go.sum and Go version into the
    cache (module mode: the libraries are the versions tests/go/go.sum pins, fetched
    through the module proxy into the module cache under ~/.cache/eddy/go); older builds
    of it are removed."""
    go = go_tool()
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout
    sources = [GO_DIR / program / "main.go", GO_DIR / "go.mod", GO_DIR / "go.sum"]
    key = hashlib.sha256(b"".join(f.read_bytes() for f in sources) + version.encode()).hexdigest()[:16]
    out = CACHE / f"{program}-{key}" / program
    if out.exists():
        return out
    with cache_lock(f"go-{program}"):
        return _go_build(go, program, out)


def _go_build(go: str, program: str, out: Path) -> Path:
    """go_build's work, under its lock."""
    if out.exists():
        return out
    for old in CACHE.glob(f"{program}-*"):
        shutil.rmtree(old, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GO111MODULE": "on", "GOWORK": "off",
           "GOMODCACHE": str(CACHE / "mod"), "GOCACHE": str(CACHE / "build"),
           # go.mod and go.sum as committed (a library missing from them fails the build
           # instead of being added); module cache files deletable like the rest of the
           # cache; no VCS stamp (it needs git to trust the clone, and the key already
           # covers the source).
           "GOFLAGS": "-mod=readonly -modcacherw -buildvcs=false",
           # The Go at hand builds, or the build says which Go go.mod needs (no toolchain
           # download).
           "GOTOOLCHAIN": "local",
           # cgo off: a static binary, and Sarama's pure-Go zstd (no C compiler needed).
           "CGO_ENABLED": "0"}
    tmp = out.with_name(f".{program}.{os.getpid()}")
    built = subprocess.run([go, "build", "-o", str(tmp), f"./{program}"], cwd=GO_DIR, env=env,
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
    # Sarama's newest version (sarama.MaxVersion): flexible OffsetCommit v8, which has no
    # retention time.
    ("newest", "0s"),
    # The oldest version whose Produce and Fetch carry record batches (Sarama sends
    # Produce v3 and Fetch v5); commits are OffsetCommit v3, with Kafka's default
    # retention (-1) ...
    ("0.11.0.0", "0s"),
    # ... or with a retention time of their own.
    ("0.11.0.0", "24h"),
], ids=["newest", "v0.11.0.0-default-retention", "v0.11.0.0-retention-24h"])
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
    """Sarama's record batches (Produce v10) give the time in the records (first
    timestamp plus deltas), so time-based retention, ListOffsets by timestamp and
    max_timestamp see when the records were written. (Sarama 1.22, which Debian's
    Burrow still carries, left the batch header's max timestamp at -1; Sarama 1.61 sets
    it, and broker/src/batch.rs's unit tests cover the unset header.)"""
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


@pytest.mark.parametrize("version", ["newest", "1.0.0"])
def test_sarama_admin_creates_describes_and_deletes_topics(eddy, sarama, version):
    """CreateTopic, DescribeTopics (Metadata) and DeleteTopic: CreateTopics v7, Metadata
    v11 and DeleteTopics v6 at Sarama's newest version, v2, v5 and v1 at 1.0.0; checked
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
    """ListTopics (Metadata, then DescribeConfigs for every topic) and DescribeConfig
    (DescribeConfigs v4 at Sarama's newest version), checked against kafka-python."""
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
    """kafka-go's Writer (Produce v8, hash balancer) and a Reader with a GroupID
    (Fetch v10, OffsetCommit v2 per message) read back every keyed message once; the
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
    """kafka-go's Conn: CreateTopics (v2), ReadPartitions (Metadata v6) and DeleteTopics
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
