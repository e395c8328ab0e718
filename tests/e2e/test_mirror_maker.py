"""MirrorMaker 2 (Apache Kafka's connect-mirror 4.3, dedicated mode) between a real Apache
Kafka 4.4 broker (scripts/kafka start, KRaft, started here on loopback) and eddy, both
ways at once: topics matching `up-.*` are copied from Kafka into eddy and `down-.*` from
eddy into Kafka, with their consumer groups' offsets translated (checkpoints and
`sync.group.offsets.enabled`), so a consumer of the same group on the other side reads
exactly the records that came after where the group was. (MirrorMaker translates a
group's offset exactly at its latest offset sync, a caught-up group's; an offset further
back only through the sparse syncs it keeps, or not at all: its design, the same against
Kafka.) MM2 keeps its Connect state (configs, offsets, status topics, compacted)
and its heartbeats, checkpoints and offset syncs in topics on both sides, and runs a
Connect group on each: all of that on eddy too."""

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import connect
from conftest import free_port, log4j2_to_file, read_to_end

ROOT = Path(__file__).resolve().parents[2]
RECORDS = 100
COORDINATOR_NOT_READY = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                         KafkaError.COORDINATOR_NOT_AVAILABLE}


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def wait_for(cond, timeout, what, logs=(), proc=None):
    deadline = time.time() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.time() > deadline or (proc is not None and proc.poll() is not None):
            tails = "\n".join(f"--- {p}\n{Path(p).read_text(errors='replace')[-3000:]}"
                              for p in logs if Path(p).exists())
            why = f"exited {proc.returncode}" if proc is not None and proc.poll() is not None \
                else f"timed out after {timeout} s"
            raise AssertionError(f"{why} waiting for {what}\n{tails}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """A single-node Apache Kafka 4.4 on a free port (and the next, its controller)."""
    tmp = tmp_path_factory.mktemp("kafka")
    port = free_port()
    log = tmp / "kafka.log"
    proc = subprocess.Popen([str(ROOT / "scripts" / "kafka"), "start", str(tmp / "data"), str(port)],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    bootstrap = f"127.0.0.1:{port}"

    def up():
        if proc.poll() is not None:
            raise AssertionError(f"Kafka exited {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
            return True
        except KafkaException:
            return False

    wait_for(up, 180, "Apache Kafka to start", [log], proc)
    yield bootstrap
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def mirror_classpath():
    """A Kafka Connect 4.3 worker's classpath (scripts/connect-jars) with connect-mirror
    4.3 (scripts/kafka mirror): Maven Central serves no connect-mirror 4.4 here, and 4.3's
    does not run on 4.4's clients."""
    out = subprocess.run([str(ROOT / "scripts" / "kafka"), "mirror"], check=True,
                         capture_output=True, text=True, timeout=600).stdout
    jars = next(line.split("=", 1)[1] for line in out.splitlines() if line.startswith("MIRROR_CP="))
    return f"{connect.classpath()}:{jars}"


def create(bootstrap, topic, partitions):
    a = AdminClient({"bootstrap.servers": bootstrap})  # kept until its futures resolve
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def produce(bootstrap, topic, partitions, n):
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, f"{topic}:{i}".encode(), partition=i % partitions)
    assert p.flush(30) == 0


def produce_more(bootstrap, topic):
    """Records RECORDS..RECORDS+19, alternating over the two partitions as before."""
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS, RECORDS + 20):
        p.produce(topic, f"{topic}:{i}".encode(), partition=i % 2)
    assert p.flush(30) == 0


def commit(bootstrap, group, offsets):
    """Commits `offsets` ({(topic, partition): offset}) for `group` (retried while a new
    Kafka broker is still making its offsets topic: NOT_COORDINATOR)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.time() + 60
    try:
        while True:
            try:
                c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                         asynchronous=False)
                return
            except KafkaException as e:
                if e.args[0].code() not in COORDINATOR_NOT_READY or time.time() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        c.close()


def committed(bootstrap, group, tps):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return {(tp.topic, tp.partition): tp.offset
                for tp in c.committed([TopicPartition(t, p) for t, p in tps], timeout=10)}
    finally:
        c.close()


def end_offsets(bootstrap, topic, partitions):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": name("ends")})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)]
    except KafkaException:
        return None
    finally:
        c.close()


def resume(bootstrap, group, topic, partitions):
    """What a consumer of `group` reads on `topic` from the group's committed offsets to
    the end: {partition: [values]}."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "error", "enable.partition.eof": True})
    got, eof = {p: [] for p in range(partitions)}, set()
    try:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])  # committed offsets
        deadline = time.time() + 60
        while len(eof) < partitions and time.time() < deadline:
            m = c.poll(1)
            if m is None:
                continue
            if m.error():
                eof.add(m.partition())
                continue
            got[m.partition()].append(m.value().decode())
    finally:
        c.close()
    return got


def test_mirror_maker_2_copies_topics_and_translates_group_offsets_both_ways(kafka, eddy, tmp_path):
    up, down = name("up-orders"), name("down-events")
    up_group, down_group = name("up-app"), name("down-app")
    create(kafka, up, 2)
    produce(kafka, up, 2, RECORDS)
    # Each group has read its topic to the end (MirrorMaker translates a group's offset
    # exactly at its latest offset sync, the partition's end; further back only through
    # the sparse syncs it keeps, or not at all).
    commit(kafka, up_group, {(up, 0): 50, (up, 1): 50})
    create(eddy.bootstrap, down, 2)
    produce(eddy.bootstrap, down, 2, RECORDS)
    commit(eddy.bootstrap, down_group, {(down, 0): 50, (down, 1): 50})

    props = tmp_path / "mm2.properties"
    props.write_text("\n".join([
        "clusters = kafka, eddy",
        f"kafka.bootstrap.servers = {kafka}",
        f"eddy.bootstrap.servers = {eddy.bootstrap}",
        "kafka->eddy.enabled = true",
        "kafka->eddy.topics = up-.*",
        "kafka->eddy.groups = up-.*",
        "eddy->kafka.enabled = true",
        "eddy->kafka.topics = down-.*",
        "eddy->kafka.groups = down-.*",
        "replication.factor = 1",
        "checkpoints.topic.replication.factor = 1",
        "heartbeats.topic.replication.factor = 1",
        "offset-syncs.topic.replication.factor = 1",
        "offset.storage.replication.factor = 1",
        "status.storage.replication.factor = 1",
        "config.storage.replication.factor = 1",
        "sync.group.offsets.enabled = true",
        "sync.group.offsets.interval.seconds = 1",
        "emit.checkpoints.interval.seconds = 1",
        "refresh.topics.interval.seconds = 2",
        "refresh.groups.interval.seconds = 2",
        # An offset sync for every record, sent at every offset flush (once a second, not
        # Connect's minute): the last record's sync is what translates a group at the end.
        "offset.lag.max = 0",
        "offset.flush.interval.ms = 1000",
        "",
    ]))
    log = tmp_path / "mm2.log"
    log4j = log4j2_to_file(tmp_path / "log4j2.properties", log, root="WARN",
                           org_apache_kafka_connect_mirror="INFO")
    mm2 = subprocess.Popen(["java", "-Xmx768m", f"-Dlog4j2.configurationFile={log4j}",
                            "-cp", mirror_classpath(),
                            "org.apache.kafka.connect.mirror.MirrorMaker", str(props)],
                           stdout=open(tmp_path / "mm2.out", "w"), stderr=subprocess.STDOUT)
    try:
        # The topics, copied whole, under the source cluster's name (the default policy).
        wait_for(lambda: end_offsets(eddy.bootstrap, f"kafka.{up}", 2) == [50, 50], 180,
                 f"kafka.{up} on eddy", [log], mm2)
        wait_for(lambda: end_offsets(kafka, f"eddy.{down}", 2) == [50, 50], 180,
                 f"eddy.{down} on Kafka", [log], mm2)
        assert sorted(m.value().decode() for m in read_to_end(eddy.bootstrap, f"kafka.{up}")) == \
            sorted(f"{up}:{i}" for i in range(RECORDS))
        # The groups' offsets, translated onto the copies.
        ends = {0: 50, 1: 50}
        for bootstrap, group, topic in ((eddy.bootstrap, up_group, f"kafka.{up}"),
                                        (kafka, down_group, f"eddy.{down}")):
            wait_for(lambda: committed(bootstrap, group, [(topic, 0), (topic, 1)]) ==
                     {(topic, p): o for p, o in ends.items()}, 120,
                     f"{group}'s offsets translated onto {topic}", [log], mm2)
        # Both sides go on: new records are copied too.
        produce_more(kafka, up)
        produce_more(eddy.bootstrap, down)
        wait_for(lambda: end_offsets(eddy.bootstrap, f"kafka.{up}", 2) == [60, 60], 120,
                 f"the new records of {up} on eddy", [log], mm2)
        wait_for(lambda: end_offsets(kafka, f"eddy.{down}", 2) == [60, 60], 120,
                 f"the new records of {down} on Kafka", [log], mm2)
    finally:
        mm2.send_signal(signal.SIGTERM)
        try:
            mm2.wait(timeout=60)
        except subprocess.TimeoutExpired:
            mm2.kill()
    # A consumer of each group, on the other side, reads exactly what came after where
    # the group was.
    for bootstrap, group, topic, source in ((eddy.bootstrap, up_group, f"kafka.{up}", up),
                                            (kafka, down_group, f"eddy.{down}", down)):
        got = resume(bootstrap, group, topic, 2)
        assert got == {p: [f"{source}:{i}" for i in range(RECORDS + p, RECORDS + 20, 2)]
                       for p in range(2)}, got

