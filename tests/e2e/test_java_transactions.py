"""Kafka transactions with the Java client (kafka-clients 4.3, which speaks KIP-890's
transaction version 2 as eddy offers it, and version 1 when a server offers only that)
and with Kafka Connect.

The Java scenarios are tests/e2e/java/TxnClient.java, compiled against the Connect
classpath (scripts/connect-jars) and run one per test against a real eddy: commits and
aborts over two topics at both isolation levels, a zombie fenced by its successor,
consume-transform-produce with the group's offsets in the transaction, the last stable
offset holding back a later plain record, the transaction admin APIs (listTransactions,
describeTransactions, describeProducers, fenceProducers), the coordinator's timeout, and
an open transaction that survives eddy's kill -9. Then an exactly-once source connector
(FileStreamSource, `exactly.once.support=required`) on a worker with
`exactly.once.source.support=enabled`, killed with SIGKILL mid-transaction: its
successor gives every line of the file exactly once at read_committed."""

import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import log4j2_to_file, new_eddy
from connect import Worker, classpath, client_config, http, wait_for

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")

JAVA_DIR = Path(__file__).parent / "java"
# The server's maximum transaction.timeout.ms in this module (Kafka's default is 900000)
# and how often its coordinator looks for expired transactions (default 10 s).
MAX_TIMEOUT_MS = 300_000
SERVER_ARGS = ["--kafka-transaction-max-timeout-ms", str(MAX_TIMEOUT_MS),
               "--kafka-transaction-abort-interval-ms", "200"]


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def eddy(tmp_path_factory):
    server = new_eddy(tmp_path_factory.mktemp("eddy"), extra_args=SERVER_ARGS).start()
    yield server
    server.stop()


class Java:
    """TxnClient compiled once; `run` starts one scenario and checks it said `ok`. The
    client logs to a file of its own per run (INFO; EDDY_JAVA_LOG=DEBUG for the wire)."""

    def __init__(self, out):
        self.out = out
        javac = subprocess.run(["javac", "-cp", classpath(), "-d", str(out), str(JAVA_DIR / "TxnClient.java")],
                               timeout=300, capture_output=True, text=True)
        assert javac.returncode == 0, javac.stderr[-6000:]
        self.runs = 0

    def run(self, bootstrap, scenario, prefix, *args, timeout=180):
        self.runs += 1
        log = self.out / f"{self.runs:02d}-{scenario}.log"
        conf = log4j2_to_file(self.out / f"{self.runs:02d}-{scenario}.log4j2.properties", log,
                              root=os.environ.get("EDDY_JAVA_LOG", "INFO"))
        out = subprocess.run(
            ["java", f"-Dlog4j2.configurationFile={conf}", "-cp", f"{self.out}:{classpath()}",
             "TxnClient", bootstrap, scenario, prefix, *map(str, args)],
            capture_output=True, text=True, timeout=timeout)
        lines = out.stdout.strip().splitlines()
        if out.returncode != 0 or not lines or lines[-1] != "ok":
            # The log without the clients' config dumps (tab-indented lines).
            text = log.read_text(errors="replace") if log.exists() else ""
            tail = "\n".join(l for l in text.splitlines()
                             if not l.startswith(("\t", " (org.apache.kafka.common.config")))[-8000:]
            raise AssertionError(
                f"TxnClient {scenario} exited {out.returncode}\n--- stdout\n{out.stdout}"
                f"\n--- stderr\n{out.stderr[-6000:]}\n--- client log ({log})\n{tail}")
        return lines


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    return Java(tmp_path_factory.mktemp("txn-java"))


def test_commit_and_abort_across_two_topics(eddy, java):
    """Commit, abort, commit over the 5 partitions of two topics: read_committed gives the
    committed values only, read_uncommitted all of them; each marker takes an offset, so
    the last stable offset and the high watermark are both 12 at the end."""
    java.run(eddy.bootstrap, "commit-abort", name("txn-ca"))


@pytest.mark.parametrize("level", [2, 1])
def test_the_transaction_version_offered_is_the_one_kafka_4_clients_speak(eddy, java, tmp_path, level):
    """Kafka 4 clients read `transaction.version` from ApiVersions (describeFeatures shows
    it: supported up to 2, finalized at the server's level). At 2 (the default) each
    commit and abort moves the producer to the next epoch (KIP-890) and the partitions
    and group come into the transaction by produce and TxnOffsetCommit alone; with
    `--kafka-transaction-version 1` the same client keeps its epoch. Either way the
    committed values and the group's offset are the committed transactions'."""
    if level == 2:
        java.run(eddy.bootstrap, "epochs", name("txn-v2"), level)
        return
    server = new_eddy(tmp_path, extra_args=["--kafka-transaction-version", "1"]).start()
    try:
        java.run(server.bootstrap, "epochs", name("txn-v1"), level)
    finally:
        server.stop()


def test_zombie_is_fenced_by_a_new_producer(eddy, java):
    """InitProducerId for a transactional id with an open transaction aborts it (marker
    written) and fences the old producer: its next produce and its commit fail, its
    rejected record is not in the log, its aborted one is at read_uncommitted only."""
    java.run(eddy.bootstrap, "zombie", name("txn-zombie"))


def test_consume_transform_produce(eddy, java):
    """sendOffsetsToTransaction with the consumer's group metadata (a generation of a real
    group): the offsets appear only when the transaction commits (require_stable fetches
    get UNSTABLE_OFFSET_COMMIT meanwhile), an aborted round leaves them as they were,
    and the round redone from them gives each output record once."""
    java.run(eddy.bootstrap, "ctp", name("txn-ctp"))


def test_open_transaction_holds_back_a_later_plain_record(eddy, java):
    """A non-transactional record after an open transaction's first record is not
    readable at read_committed (ListOffsets read_committed = the last stable offset = the
    transaction's first offset) until the transaction commits."""
    java.run(eddy.bootstrap, "lso", name("txn-lso"))


def test_transaction_admin_apis(eddy, java):
    """listTransactions (with state and producer id filters), describeTransactions and
    describeProducers on an open transaction, then after its commit (CompleteCommit, no
    partitions, no current transaction start offset); fenceProducers fences a live
    producer in the middle of a transaction, which is aborted; a timed-out transaction
    is CompleteAbort with its epoch bumped."""
    java.run(eddy.bootstrap, "admin", name("txn-admin"))


def test_transaction_timeout(eddy, java):
    """transaction.timeout.ms=1000 with the coordinator looking every 200 ms: the open
    transaction is aborted (its marker moves the last stable offset) and the
    producer's next produce and commit fail; a timeout above the server's maximum is
    refused with INVALID_TRANSACTION_TIMEOUT, the maximum itself accepted."""
    java.run(eddy.bootstrap, "timeout", name("txn-timeout"), MAX_TIMEOUT_MS)


def test_open_transaction_survives_kill_9(tmp_path, java):
    """A committed transaction (with a group offset) and an open one (records and a group
    offset), then eddy is killed with SIGKILL and restarted: the committed one is there,
    the open one still open (records held back, offset unstable; Ongoing with its
    partitions for describeTransactions and describeProducers) until a new producer with
    its transactional id aborts it."""
    server = new_eddy(tmp_path, extra_args=SERVER_ARGS).start()
    try:
        prefix = name("txn-durable")
        java.run(server.bootstrap, "durable-prepare", prefix)
        server.stop(kill=True)
        server.start()
        # The admin APIs' view first (read-only); its failure is reported after the
        # data checks, which must run before anything else touches the transaction.
        try:
            java.run(server.bootstrap, "durable-admin", prefix)
            admin_error = None
        except AssertionError as e:
            admin_error = e
        java.run(server.bootstrap, "durable-check", prefix)
        if admin_error is not None:
            raise admin_error
    finally:
        server.stop()


# Exactly-once Kafka Connect source ------------------------------------------------

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"
# Quick failure detection (as in test_connect.py): the killed worker leaves the group
# after 6 s and its task is reassigned at most 5 s later.
FAST = {
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "1000",
    "scheduled.rebalance.max.delay.ms": "5000",
}


def read_values(bootstrap, topic, isolation, timeout=60):
    """The values of partition 0 of `topic` in offset order, from the log start to its
    end at `isolation` (librdkafka reports the partition's end at the last stable offset
    for read_committed, at the high watermark for read_uncommitted)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": name("reader"),
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out = []
        deadline = time.time() + timeout
        while True:
            assert time.time() < deadline, f"{topic} not read to its end at {isolation}"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise KafkaException(m.error())
            out.append(m.value().decode())
    finally:
        c.close()


def stable_and_high(bootstrap, topic):
    """(last stable offset, high watermark) of partition 0: ListOffsets at read_committed
    and at read_uncommitted (librdkafka sends the consumer's isolation level)."""
    out = []
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": name("offsets"),
                      "isolation.level": isolation})
        try:
            out.append(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1])
        finally:
            c.close()
    return tuple(out)


class LineWriter(threading.Thread):
    """Appends numbered fixed-width lines to `path` (11 bytes each, so line i starts at
    byte 11 * i) every `interval` s, until `stop_at` lines (set later) are written."""

    def __init__(self, path, interval=0.025):
        super().__init__(daemon=True)
        self.path, self.interval = path, interval
        self.count = 0
        self.stop_at = None
        self.halt = threading.Event()

    @staticmethod
    def line(i):
        return f"line-{i:05d}"

    def run(self):
        with open(self.path, "a") as f:
            while not self.halt.is_set() and (self.stop_at is None or self.count < self.stop_at):
                f.write(self.line(self.count) + "\n")
                f.flush()
                self.count += 1
                time.sleep(self.interval)

    def stop(self):
        self.halt.set()
        if self.is_alive():
            self.join()


def test_exactly_once_source_connector_across_a_worker_kill(eddy, tmp_path_factory):
    """A FileStreamSource connector with exactly.once.support=required on a worker with
    exactly.once.source.support=enabled: its task's records and source offsets go in one
    transaction every 3 s (transaction.boundary=interval). The worker is killed with
    SIGKILL while a transaction holds records; a new worker's task producer (same
    transactional id) aborts it, resumes at the committed source offset, and the topic
    holds each line exactly once at read_committed, the aborted copies only at
    read_uncommitted. Then, with the connector stopped, its offsets are reset through
    the REST API (which under exactly-once first fences the task's producers with
    Admin.fenceProducers): resumed, it re-reads from there, once again."""
    tmp = tmp_path_factory.mktemp("connect-eos")
    group = name("eos")
    connector = name("eos-file")
    topic = name("eos-lines")
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    src = tmp / "lines.txt"
    src.write_text("")
    props = dict(FAST, **{"exactly.once.source.support": "enabled"})
    w1 = Worker(tmp, eddy.bootstrap, group, "w1", props)
    w2 = Worker(tmp, eddy.bootstrap, group, "w2", props)
    writer = LineWriter(src)
    config = {
        "connector.class": FILE_SOURCE, "tasks.max": "1", "topic": topic, "file": str(src),
        "key.converter": STRING, "value.converter": STRING,
        "exactly.once.support": "required",
        "transaction.boundary": "interval", "transaction.boundary.interval.ms": "3000",
    }
    try:
        w1.start()
        w1.put_config(connector, config)
        w1.wait_running(connector, 1, timeout=120)
        writer.start()

        # Mid-way: some lines committed, and a transaction open with records in it (the
        # last stable offset the same before and after the high watermark was read, so
        # no commit came in between).
        def mid_transaction():
            stable, high = stable_and_high(eddy.bootstrap, topic)
            if stable >= 40 and high > stable and stable_and_high(eddy.bootstrap, topic)[0] == stable:
                return stable, high
            return None
        stable, high = wait_for(mid_transaction, 60, "committed lines and an open transaction")
        w1.kill()
        # The file keeps growing while no worker runs, and after the new one starts.
        writer.stop_at = writer.count + 150
        w2.start()
        # The status topic still says RUNNING on w1 until w2 takes the task over.
        w2.wait_status(connector, lambda st: st["connector"]["state"] == "RUNNING" and [
            (t["state"], t["worker_id"]) for t in st.get("tasks", [])] == [("RUNNING", w2.worker_id)],
            120, "the task running on the new worker")
        writer.join(timeout=60)
        assert not writer.is_alive()
        want = [LineWriter.line(i) for i in range(writer.count)]

        def all_lines():
            got = read_values(eddy.bootstrap, topic, "read_committed")
            return got if len(got) >= len(want) else None
        got = wait_for(all_lines, 120, f"all {len(want)} lines at read_committed")
        assert got == want, "each line exactly once, in order, at read_committed"
        wait_for(lambda: (lambda s, h: s == h)(*stable_and_high(eddy.bootstrap, topic)), 30,
                 "the last transaction's marker")
        raw = read_values(eddy.bootstrap, topic, "read_uncommitted")
        dups = sorted({v for v in raw if raw.count(v) > 1})
        # The killed worker's open transaction had records on the broker (the high
        # watermark was past the last stable offset): aborted, then sent again.
        assert dups and set(raw) == set(want), (len(raw), len(want), dups[:5])
        assert len(raw) >= len(want) + (high - stable), (len(raw), len(want), stable, high)
        print(f"\n{len(want)} lines; killed with offsets {stable}..{high} open; "
              f"{len(dups)} lines aborted and redone")

        # Transactional producers: the task's (its id is <group>-<connector>-<task>) and
        # the worker's config-topic producer (connect-cluster-<group>).
        for w in (w1, w2):
            cfg = client_config(w.log_text(), "ProducerConfig", f"connector-producer-{connector}-0")
            assert f"transactional.id = {group}-{connector}-0\n" in cfg, cfg
        assert f"transactional.id = connect-cluster-{group}\n" in w2.log_text()
        # The worker reads its internal topics at read_committed.
        assert "isolation.level = read_committed" in client_config(
            w2.log_text(), "ConsumerConfig", f"{group}-offsets")

        # Offsets reset under exactly-once: stop, fence + rewrite the offsets, resume.
        status, body = http("PUT", f"{w2.url}/connectors/{connector}/stop")
        assert status in (200, 202, 204), (status, body)
        w2.wait_status(connector, lambda st: st["connector"]["state"] == "STOPPED", 60)
        restart_at = len(want) - 20
        status, body = http("PATCH", f"{w2.url}/connectors/{connector}/offsets", {"offsets": [{
            "partition": {"filename": str(src)}, "offset": {"position": 11 * restart_at}}]})
        assert status == 200, (status, body)
        status, body = http("GET", f"{w2.url}/connectors/{connector}/offsets")
        assert status == 200 and body["offsets"][0]["offset"] == {"position": 11 * restart_at}, body
        status, body = http("PUT", f"{w2.url}/connectors/{connector}/resume")
        assert status in (200, 202, 204), (status, body)
        w2.wait_running(connector, 1, timeout=120)
        again = want + want[restart_at:]

        def reread():
            got = read_values(eddy.bootstrap, topic, "read_committed")
            return got if len(got) >= len(again) else None
        assert wait_for(reread, 120, "the last 20 lines again") == again
    finally:
        writer.stop()
        w1.kill()
        w2.kill()
