"""Burrow 1.2.1 (LinkedIn's consumer lag monitor, Debian's `burrow`) against eddy: a group
commits offset 60 of a partition holding 100 records and Burrow's HTTP API lists the
group and reports a lag of 40; a later commit of 90 brings it to 10.

Burrow is what many operators watch consumer lag with, and it does not ask the broker
for committed offsets: its `kafka` consumer module reads the `__consumer_offsets` topic
from the oldest offset of each partition (Sarama 1.22: Metadata v5, ListOffsets v1,
Fetch v4 at the client profile's kafka-version 2.1.0) and decodes Kafka's own records:
offset commits (key version 0/1: group, topic, partition; value version 0/1: offset,
metadata, commit timestamp [, expire timestamp], or 3: offset, leader epoch, metadata,
commit timestamp; not 2) and group metadata (key version 2; value version 0/1 only,
while Kafka 2.1+ writes 2 or 3, so owners stay unknown but lag does not need them). A
value version it does not know is logged and skipped; so are tombstones. Its `kafka` cluster
module reads each partition's end offset with ListOffsets v0 (Sarama's OffsetRequest
without a version, whatever the kafka-version) every `offset-refresh` seconds, and a
commit to a partition whose end offset it has not read yet is dropped.

Burrow 1.2.1 also needs ZooKeeper, even with no notifier configured: without a
`[zookeeper]` section it panics ("No Zookeeper servers specified"), and without a
server it exits ("cannot create root path"), so the test runs Debian's ZooKeeper 3.8
standalone (package `zookeeper`) on a free port. If `__consumer_offsets` does not
exist, Burrow's consumer module fails to start and Burrow exits; Eddy writes it with
`--kafka-offsets-topic` (key version 1, value version 3, no group metadata).

A missing Burrow, ZooKeeper or Java fails the test (it does not skip it): the Debian
packages `burrow` and `zookeeper` are part of what scripts/test installs."""

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import new_eddy, free_port

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
CLUSTER = "eddy"


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Service:
    """A process with its output in a log file."""

    def __init__(self, label, argv, log_path, cwd=None):
        self.name = label
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd)

    def tail(self, n=6000):
        if not self.log.closed:
            self.log.flush()
        return f"--- {self.name} log ({self.log_path}):\n{self.log_path.read_text(errors='replace')[-n:]}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def wait_for(cond, timeout, what, services=()):
    """Polls `cond()` until it returns something truthy (returned), failing after
    `timeout` s or as soon as one of `services` exited."""
    deadline = time.time() + timeout
    last = None
    while True:
        last = cond()
        if last:
            return last
        for s in services:
            assert s.proc.poll() is None, f"{s.name} exited ({s.proc.returncode}) waiting for {what}\n{s.tail()}"
        assert time.time() < deadline, (f"timed out after {timeout}s waiting for {what} (last: {last!r})\n"
                                        + "\n".join(s.tail() for s in services))
        time.sleep(0.2)


def zk_serving(port):
    """Whether a ZooKeeper server answers its `srvr` command on `port`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"srvr")
            data = b""
            while chunk := s.recv(4096):
                data += chunk
        return b"Zookeeper version" in data
    except OSError:
        return False


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    """A standalone ZooKeeper (Debian's 3.8) for Burrow, on a free port."""
    java = shutil.which("java")
    if java is None or not ZOOKEEPER_JAR.exists():
        pytest.fail("ZooKeeper (for Burrow) is missing: apt-get install zookeeper", pytrace=False)
    work = tmp_path_factory.mktemp("zookeeper")
    port = free_port()
    zk = Service("zookeeper", [
        java, "-Xmx128m", "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.4lw.commands.whitelist=srvr",
        "-cp", str(ZOOKEEPER_JAR), "org.apache.zookeeper.server.ZooKeeperServerMain",
        str(port), str(work / "data"),
    ], work / "zookeeper.log")
    try:
        wait_for(lambda: zk_serving(port), 60, "ZooKeeper to serve", [zk])
        yield f"127.0.0.1:{port}"
    finally:
        zk.stop()


def burrow_config(bootstrap, zookeeper, http_port, work: Path) -> str:
    return f"""
[general]
pidfile="{work / 'burrow.pid'}"

[logging]
level="debug"

[zookeeper]
servers=["{zookeeper}"]
timeout=6
root-path="/burrow-{work.name}"

[client-profile.eddy]
client-id="burrow-e2e"
kafka-version="2.1.0"

[cluster.{CLUSTER}]
class-name="kafka"
servers=["{bootstrap}"]
client-profile="eddy"
topic-refresh=5
offset-refresh=2

[consumer.{CLUSTER}]
class-name="kafka"
cluster="{CLUSTER}"
servers=["{bootstrap}"]
client-profile="eddy"
offsets-topic="__consumer_offsets"
start-latest=false

[storage.default]
class-name="inmemory"
workers=4
intervals=10
expire-group=604800
min-distance=1

[evaluator.default]
class-name="caching"
expire-cache=1

[httpserver.default]
address="127.0.0.1:{http_port}"
"""


def get(url):
    """(status, JSON body) of a Burrow HTTP API call; (None, error) if it cannot be reached."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")
    except (urllib.error.URLError, OSError) as e:
        return None, str(e)


def commit(eddy, group, topic, partition, offset):
    """A standalone commit of the group (no member: generation -1, as admin tools commit)."""
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, partition, offset)], asynchronous=False)
    finally:
        c.close()


def burrow_reports_the_lag(bootstrap, zookeeper, work: Path, topic, group, commit):
    """Starts Burrow on the cluster at `bootstrap` (which holds 100 records in partition 0
    of `topic`, of which `group` committed 60) and checks what its HTTP API says, before
    and after `commit(90)`."""
    burrow_bin = shutil.which("Burrow")
    if burrow_bin is None:
        pytest.fail("Burrow is missing: apt-get install burrow", pytrace=False)
    http_port = free_port()
    (work / "burrow.toml").write_text(burrow_config(bootstrap, zookeeper, http_port, work))
    burrow = Service("burrow", [burrow_bin, "-config-dir", str(work)], work / "burrow.log", cwd=work)
    api = f"http://127.0.0.1:{http_port}/v3/kafka/{CLUSTER}"
    try:
        # The cluster module read the partition's end offset (ListOffsets v0).
        def topic_offsets():
            status, body = get(f"{api}/topic/{topic}")
            return body["offsets"] if status == 200 else None
        assert wait_for(topic_offsets, 60, f"Burrow's end offsets of {topic}", [burrow]) == [100]

        def consumers():
            status, body = get(f"{api}/consumer")
            return body["consumers"] if status == 200 and group in (body["consumers"] or []) else None
        wait_for(consumers, 60, f"Burrow listing {group}", [burrow])

        def lag(expected):
            def check():
                status, body = get(f"{api}/consumer/{group}/lag")
                if status != 200 or body["status"]["totallag"] != expected:
                    return None
                return body["status"]
            return check
        st = wait_for(lag(40), 60, "a total lag of 40", [burrow])
        assert st["cluster"] == CLUSTER and st["group"] == group
        assert st["partition_count"] == 1 and st["status"] != "NOTFOUND"
        [part] = st["partitions"]
        assert (part["topic"], part["partition"], part["current_lag"]) == (topic, 0, 40)
        assert part["end"]["offset"] == 60 and part["end"]["lag"] == 40
        assert st["maxlag"]["partition"] == 0 and st["maxlag"]["current_lag"] == 40
        # The commit's timestamp is the broker's (milliseconds, now).
        assert abs(part["end"]["timestamp"] - time.time() * 1000) < 600_000

        # Burrow keeps reading __consumer_offsets: a later commit moves the lag.
        commit(90)
        st = wait_for(lag(10), 60, "a total lag of 10 after a commit of 90", [burrow])
        assert st["partitions"][0]["end"]["offset"] == 90

        # The group's detail lists its committed offsets per partition.
        status, body = get(f"{api}/consumer/{group}")
        assert status == 200 and not body["error"]
        offsets = [o for o in body["topics"][topic][0]["offsets"] if o]
        assert offsets[-1]["offset"] == 90
    finally:
        burrow.stop()


@pytest.fixture(scope="module")
def eddy(tmp_path_factory):
    """A server that mirrors commits into __consumer_offsets, which Burrow reads."""
    server = new_eddy(tmp_path_factory.mktemp("eddy"), extra_args=["--kafka-offsets-topic"]).start()
    yield server
    server.stop()


def test_burrow_reports_the_lag_of_committed_offsets(eddy, zookeeper, tmp_path):
    topic, group = name("burrow"), name("burrow-g")
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5})
    for i in range(100):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    assert p.flush(30) == 0
    del p, a
    # Burrow starts after the commit: it reads __consumer_offsets from the start, and
    # its cluster module has read the topic's end offset before its consumer module
    # reads the commit.
    commit(eddy, group, topic, 0, 60)
    burrow_reports_the_lag(eddy.bootstrap, zookeeper, tmp_path, topic, group,
                           lambda offset: commit(eddy, group, topic, 0, offset))


def java_hash_partition(group):
    h = 0
    for c in group.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(c)) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if h == -(1 << 31) else abs(h)) % 50


def test_the_offsets_topic_holds_kafkas_commit_records_and_refuses_clients(eddy):
    """What any reader of __consumer_offsets finds: a commit as Kafka writes it (key
    version 1: group, topic, partition; value version 3: offset, leader epoch, metadata,
    commit time) in the group's partition (Java's hashCode of the group id mod 50); and a
    client's produce to it is refused."""
    import struct

    from confluent_kafka import KafkaError
    from conftest import read_to_end

    group, topic = name("offsets-g"), name("offsets-t")
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    commit(eddy, group, topic, 0, 42)
    partition = java_hash_partition(group)

    def s(b, at):
        n = struct.unpack_from(">h", b, at)[0]
        return b[at + 2:at + 2 + n].decode(), at + 2 + n
    found = []
    for m in read_to_end(eddy.bootstrap, "__consumer_offsets", partitions=[partition]):
        k = m.key()
        if struct.unpack_from(">h", k, 0)[0] != 1:
            continue
        g, at = s(k, 2)
        t, at = s(k, at)
        if (g, t) != (group, topic):
            continue
        v = m.value()
        version, offset, epoch = struct.unpack_from(">hqi", v, 0)
        meta, at = s(v, 14)
        (ts,) = struct.unpack_from(">q", v, at)
        found.append((struct.unpack_from(">i", k, len(k) - 4)[0], version, offset, meta, ts > 0))
    assert found == [(0, 3, 42, "", True)]

    p = Producer({"bootstrap.servers": eddy.bootstrap, "message.send.max.retries": 0})
    errors = []
    p.produce("__consumer_offsets", value=b"x", partition=0, on_delivery=lambda e, m: errors.append(e))
    p.flush(30)
    assert errors and errors[0].code() == KafkaError.TOPIC_EXCEPTION, errors
