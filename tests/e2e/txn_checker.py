"""A Jepsen-style workload and checker for Kafka transactions (KIP-98) on Eddy.

The workload: several transactional producers (confluent-kafka, a thread and a
transactional.id each) write transactions of unique values to a few random partitions
of two topics and commit or abort each at random, while the server is killed with
SIGKILL at random moments and restarted on the same data dir. A read_committed and a
read_uncommitted consumer poll all the while. Each transaction's fate, as its client
knows it, is recorded:

- acked: commit_transaction() returned;
- aborted: commit was never asked for (abort_transaction() was called, or the producer
  failed before it got that far), so the transaction cannot be committed;
- uncertain: commit_transaction() was called but did not return success (in flight at
  a kill, say): committed or not, either is allowed, but all or nothing.

After a failure the producer is dropped and a new one with the same transactional.id
runs init_transactions (which fences the old one and aborts its open transaction).

The producers are confluent-kafka's (librdkafka, which speaks transaction version 1) or,
with `client="java"`, Apache Kafka's Java client (tests/e2e/java/TxnWorker.java, one
thread per transactional id in one process), which speaks KIP-890's transaction version
2 where the broker offers it: every commit and abort bumps the epoch, and partitions
and groups join a transaction by its produce.

The checker then reads every partition from its start at read_committed (to the last
stable offset) and at read_uncommitted (to the high watermark) and reports:

- lost: a value of an acked transaction missing from a final read;
- aborted-read: a value of an aborted transaction seen at read_committed (final or live);
- dirty-read: a value the live read_committed consumer saw that the final
  read_committed read does not hold (a transaction seen before it was decided, then
  aborted);
- atomicity: a transaction with some but not all of its values visible at read_committed;
- duplicate: one value at two offsets;
- offset-conflict: one offset holding two values (across all reads and the offsets the
  producers' delivery reports gave);
- wrong-partition: a value read from a partition it was not written to;
- phantom: a record no producer of this run wrote;
- non-monotonic: a consumer given an offset not above the last one it had in that
  partition;
- rc-not-in-ru: a value at read_committed the read_uncommitted read lacks;
- and from the run itself: stuck (the last stable offset never reached the high
  watermark, a consumer never got to the end), no-progress (no commit went through
  after a restart), consumer-error, open-gauge (eddy_kafka_transactions_open not 0 at the
  end).

`Workload(eddy, ...).run(rounds)` does it all and returns a `Report`.
"""

import gc
import json
import random
import re
import subprocess
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

# Errors a consumer reports while the server is down or coming back; anything else is
# an anomaly.
TRANSIENT = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT,
             KafkaError._RESOLVE, KafkaError.REQUEST_TIMED_OUT}

# How long librdkafka may take to reconnect after a kill (its default grows to 10 s).
CLIENT = {"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
          "retry.backoff.ms": 50, "retry.backoff.max.ms": 500}

VALUE = re.compile(rb"^(?P<run>[0-9a-f]+)/p(?P<p>\d+)/t(?P<t>\d+)/i(?P<i>\d+)$")


class Rec(NamedTuple):
    topic: str
    partition: int
    offset: int
    value: bytes


@dataclass(eq=False)
class Txn:
    producer: int
    number: int
    writes: dict = field(default_factory=dict)     # value -> (topic, partition)
    delivered: dict = field(default_factory=dict)  # value -> (topic, partition, offset)
    commit_asked: bool = False
    outcome: str = "open"                          # acked | aborted | uncertain | open
    errors: list = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0

    @property
    def name(self):
        return f"p{self.producer}/t{self.number}"

    def describe(self):
        d = ", ".join(f"{t}/{p}@{o}" for t, p, o in list(self.delivered.values())[:6])
        e = "; ".join(self.errors[:3])
        return (f"txn {self.name} ({self.outcome}, {len(self.writes)} values, "
                f"delivered at [{d}]{', errors: ' + e if e else ''})")


class History:
    """Every transaction of a run, by (producer, number)."""

    def __init__(self, run=None):
        self.run = run or uuid.uuid4().hex[:8]
        self.txns = {}
        self.events = []  # (time, what), kills and restarts
        self._lock = threading.Lock()

    def new_txn(self, producer, number):
        txn = Txn(producer, number, started=time.time())
        with self._lock:
            self.txns[(producer, number)] = txn
        return txn

    def value(self, txn, i):
        return b"%s/p%d/t%d/i%d" % (self.run.encode(), txn.producer, txn.number, i)

    def owner(self, value):
        """The transaction that wrote `value`, or None."""
        m = VALUE.match(value or b"")
        if m is None or m["run"].decode() != self.run:
            return None
        txn = self.txns.get((int(m["p"]), int(m["t"])))
        return txn if txn is not None and value in txn.writes else None

    def event(self, what):
        with self._lock:
            self.events.append((time.time(), what))


@dataclass
class Read:
    """What one consumer got, in the order it got it."""

    name: str
    committed: bool           # read_committed (else read_uncommitted)
    final: bool               # a whole read of every partition after the workload
    records: list = field(default_factory=list)
    errors: list = field(default_factory=list)


@dataclass
class Report:
    counts: dict
    anomalies: dict
    errors: dict = field(default_factory=dict)  # the producers' errors, by call and name

    @property
    def ok(self):
        return not self.anomalies

    def summary(self, details=8):
        lines = ["transactions: " + ", ".join(f"{k} {v}" for k, v in self.counts.items())]
        if self.ok:
            lines.append("anomalies: none")
        for kind, items in sorted(self.anomalies.items()):
            lines.append(f"ANOMALY {kind}: {len(items)}")
            lines += [f"  {x}" for x in items[:details]]
            if len(items) > details:
                lines.append(f"  ... and {len(items) - details} more")
        return "\n".join(lines)

    __str__ = summary


def check(history, reads, extra=None):
    """Checks the reads against the history (see the module doc); `extra` is a dict of
    anomalies the run found itself."""
    bad = defaultdict(list)
    for kind, items in (extra or {}).items():
        bad[kind] += items
    at = {}      # (topic, partition, offset) -> (value, who)
    where = {}   # value -> (topic, partition, offset, who)

    def place(value, key, who):
        if key in at and at[key][0] != value:
            bad["offset-conflict"].append(
                f"{key[0]}/{key[1]}@{key[2]}: {at[key][0]!r} ({at[key][1]}) "
                f"and {value!r} ({who})")
        at.setdefault(key, (value, who))
        if value in where and where[value][:3] != key:
            w = where[value]
            kind = "offset-conflict" if "delivery" in (who, w[3]) else "duplicate"
            bad[kind].append(f"{value!r} at {w[0]}/{w[1]}@{w[2]} ({w[3]}) "
                             f"and at {key[0]}/{key[1]}@{key[2]} ({who})")
        where.setdefault(value, (*key, who))

    records_read = 0
    for r in reads:
        for e in r.errors:
            bad["consumer-error" if not e.startswith("stuck") else "stuck"].append(
                f"{r.name}: {e}")
        last = {}
        for rec in r.records:
            records_read += 1
            tp = (rec.topic, rec.partition)
            if tp in last and rec.offset <= last[tp]:
                bad["non-monotonic"].append(
                    f"{r.name}: {rec.topic}/{rec.partition} offset {rec.offset} "
                    f"after {last[tp]}")
            last[tp] = max(rec.offset, last.get(tp, -1))
            txn = history.owner(rec.value)
            if txn is None:
                bad["phantom"].append(f"{r.name}: {rec.topic}/{rec.partition}@{rec.offset} "
                                      f"holds {rec.value!r}, which nobody wrote")
                continue
            if txn.writes[rec.value] != tp:
                bad["wrong-partition"].append(
                    f"{r.name}: {rec.value!r} read at {rec.topic}/{rec.partition}@"
                    f"{rec.offset}, written to {txn.writes[rec.value]}")
            place(rec.value, (rec.topic, rec.partition, rec.offset), r.name)
            if r.committed and txn.outcome == "aborted":
                bad["aborted-read"].append(
                    f"{r.name}: {rec.value!r} at {rec.topic}/{rec.partition}@{rec.offset} "
                    f"of {txn.describe()}")
    for txn in history.txns.values():
        for value, key in txn.delivered.items():
            place(value, key, "delivery")

    final_rc = [r for r in reads if r.final and r.committed]
    final_ru = [r for r in reads if r.final and not r.committed]
    visible = {rec.value for rec in final_rc[0].records} if final_rc else set()
    for r in final_rc[1:]:
        got = {rec.value for rec in r.records}
        if got != visible:
            bad["reads-differ"].append(
                f"{r.name} and {final_rc[0].name} differ: {len(got - visible)} values only "
                f"in the first, {len(visible - got)} only in the second")
    everything = {rec.value for r in final_ru for rec in r.records}
    if final_ru:
        for v in sorted(visible - everything):
            bad["rc-not-in-ru"].append(f"{v!r} is in the read_committed read only")
    for r in reads:
        if r.committed and not r.final and final_rc:
            for rec in r.records:
                txn = history.owner(rec.value)
                if txn is not None and txn.outcome != "aborted" and rec.value not in visible:
                    bad["dirty-read"].append(
                        f"{r.name}: {rec.value!r} at {rec.topic}/{rec.partition}@{rec.offset} "
                        f"of {txn.describe()}, not committed in the end")

    counts = Counter()
    for txn in history.txns.values():
        if not txn.writes:
            continue
        outcome = "uncertain" if txn.outcome == "open" else txn.outcome
        counts[outcome] += 1
        counts["values"] += len(txn.writes)
        seen = [v for v in txn.writes if v in visible]
        counts["values visible"] += len(seen)
        if outcome == "acked" and final_rc:
            missing = [v for v in txn.writes if v not in visible]
            if missing:
                bad["lost"].append(f"{len(missing)} values ({missing[0]!r}, ...) of "
                                   f"{txn.describe()} not at read_committed")
        if outcome == "acked" and final_ru:
            missing = [v for v in txn.writes if v not in everything]
            if missing:
                bad["lost"].append(f"{len(missing)} values ({missing[0]!r}, ...) of "
                                   f"{txn.describe()} not at read_uncommitted")
        if outcome == "uncertain" and seen:
            counts["uncertain committed"] += 1
        if 0 < len(seen) < len(txn.writes):
            missing = sorted({txn.writes[v] for v in txn.writes if v not in visible})
            bad["atomicity"].append(f"{len(seen)} of {len(txn.writes)} values visible, none "
                                    f"in {missing}, of {txn.describe()}")
    counts["records read"] = records_read
    counts["kills"] = sum(1 for _, what in history.events if what == "kill")
    order = ["acked", "aborted", "uncertain", "uncertain committed", "values",
             "values visible", "records read", "kills"]
    return Report({k: counts[k] for k in order}, dict(bad))


def end_offsets(bootstrap, tps, committed):
    """The last stable offset (read_committed) or the high watermark of each partition."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    fs = a.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in tps},
                        isolation_level=level, request_timeout=10)
    return {(tp.topic, tp.partition): f.result().offset for tp, f in fs.items()}


def read_log(bootstrap, tps, committed, ends=None, timeout=60, name=None):
    """Every record of the partitions from their start, until each has reported its
    end (the last stable offset at read_committed, the high watermark else), and that
    end is at least `ends[tp]` where given."""
    r = Read(name or ("final read_committed" if committed else "final read_uncommitted"),
             committed, final=True)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "auto.offset.reset": "error", "fetch.wait.max.ms": 100,
                  "isolation.level": "read_committed" if committed else "read_uncommitted",
                  **CLIENT})
    try:
        c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in tps])
        eof = {}
        deadline = time.time() + timeout
        while any(eof.get(tp, -1) < (ends or {}).get(tp, 0) or tp not in eof for tp in tps):
            if time.time() > deadline:
                r.errors.append(f"stuck: {r.name} got to {eof}, wanted {ends}")
                break
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof[(m.topic(), m.partition())] = m.offset()
                elif m.error().code() not in TRANSIENT:
                    r.errors.append(str(m.error()))
                continue
            r.records.append(Rec(m.topic(), m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    return r


class LiveReader(threading.Thread):
    """A consumer polling every partition from its start all through the run."""

    def __init__(self, bootstrap, tps, committed):
        super().__init__(daemon=True)
        self.bootstrap, self.tps = bootstrap, tps
        self.read = Read("live read_committed" if committed else "live read_uncommitted",
                         committed, final=False)
        self.ends = None       # set to drain: read until every partition reached these
        self.drain_deadline = None
        self.done = threading.Event()

    def drain(self, ends, timeout=60):
        self.drain_deadline = time.time() + timeout
        self.ends = ends

    def run(self):
        c = Consumer({"bootstrap.servers": self.bootstrap,
                      "group.id": f"live-{uuid.uuid4().hex[:8]}",
                      "enable.auto.commit": False, "enable.partition.eof": True,
                      "auto.offset.reset": "error", "fetch.wait.max.ms": 100,
                      "isolation.level": ("read_committed" if self.read.committed
                                          else "read_uncommitted"),
                      **CLIENT})
        eof = {}
        try:
            c.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in self.tps])
            while True:
                ends = self.ends
                if ends is not None:
                    if all(eof.get(tp, -1) >= ends[tp] for tp in self.tps):
                        break
                    if time.time() > self.drain_deadline:
                        self.read.errors.append(f"stuck: got to {eof}, the end is {ends}")
                        break
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof[(m.topic(), m.partition())] = m.offset()
                    elif m.error().code() not in TRANSIENT:
                        self.read.errors.append(f"{time.time():.3f} {m.error()}")
                    continue
                self.read.records.append(Rec(m.topic(), m.partition(), m.offset(), m.value()))
        except Exception as e:  # reported, not lost with the thread
            self.read.errors.append(f"{type(e).__name__}: {e}")
        finally:
            c.close()
            self.done.set()


class Workload:
    """Transactional producers, live consumers and a killer against one server."""

    def __init__(self, eddy, producers=4, topics=None, commit_ratio=0.7, writes=(2, 8),
                 partitions_per_txn=(1, 4), txn_timeout_ms=10_000, seed=None, log=None,
                 producer_conf=None, client="confluent"):
        assert client in ("confluent", "java"), client
        self.client = client
        self.eddy = eddy
        self.producer_conf = producer_conf or {}  # more librdkafka settings ("debug": "eos")
        self.seed = random.randrange(1 << 30) if seed is None else seed
        self.rng = random.Random(self.seed)
        self.history = History()
        run = self.history.run
        self.topics = topics or {f"jepsen-a-{run}": 3, f"jepsen-b-{run}": 2}
        self.tps = [(t, p) for t, n in self.topics.items() for p in range(n)]
        self.producers = producers
        self.commit_ratio = commit_ratio
        self.writes = writes
        self.partitions_per_txn = partitions_per_txn
        self.txn_timeout_ms = txn_timeout_ms
        self.log = log or (lambda *a: None)
        self.stopping = threading.Event()
        self.anomalies = defaultdict(list)
        self.producer_errors = Counter()
        self._lock = threading.Lock()

    # -- the producers ----------------------------------------------------------

    def _error(self, what, err):
        with self._lock:
            self.producer_errors[f"{what}: {err.name()}"] += 1

    def _new_producer(self, idx, deadline):
        """A producer for transactional id `idx` past init_transactions, or None."""
        tid = f"jepsen-{self.history.run}-{idx}"
        while time.time() < deadline:
            p = Producer({"bootstrap.servers": self.eddy.bootstrap, "transactional.id": tid,
                          "transaction.timeout.ms": self.txn_timeout_ms, "linger.ms": 2,
                          "client.id": f"jepsen-p{idx}", **CLIENT, **self.producer_conf})
            try:
                p.init_transactions(30)
                return p
            except KafkaException as e:
                self._error("init_transactions", e.args[0])
                del p
                time.sleep(0.1)
        return None

    @staticmethod
    def _retrying(fn, seconds=30):
        deadline = time.time() + seconds
        while True:
            try:
                return fn()
            except KafkaException as e:
                if not e.args[0].retriable() or time.time() > deadline:
                    raise

    def _transaction(self, p, txn, rng):
        p.begin_transaction()
        count = rng.randint(*self.writes)
        tps = rng.sample(self.tps, min(len(self.tps), rng.randint(*self.partitions_per_txn)))

        def delivered(err, msg):
            if err is None:
                txn.delivered[msg.value()] = (msg.topic(), msg.partition(), msg.offset())

        for i in range(count):
            topic, partition = tps[i % len(tps)]
            value = self.history.value(txn, i)
            p.produce(topic, value, key=txn.name.encode(), partition=partition,
                      on_delivery=delivered)
            txn.writes[value] = (topic, partition)
        p.flush(30)
        if rng.random() < self.commit_ratio:
            txn.commit_asked = True
            self._retrying(lambda: p.commit_transaction(30))
            txn.outcome = "acked"
        else:
            txn.outcome = "aborted"
            self._retrying(lambda: p.abort_transaction(30))

    def _producer(self, idx):
        rng = random.Random(self.seed * 1000 + idx)
        p, number = None, 0
        while not self.stopping.is_set():
            if p is None:
                p = self._new_producer(idx, time.time() + 60)
                if p is None:
                    self.anomalies["no-progress"].append(
                        f"producer {idx}: init_transactions failed for 60 s "
                        f"({dict(self.producer_errors)})")
                    return
            txn = self.history.new_txn(idx, number)
            number += 1
            try:
                self._transaction(p, txn, rng)
            except (KafkaException, BufferError) as e:
                err = e.args[0] if isinstance(e, KafkaException) else None
                txn.errors.append(str(err or e))
                if err is not None:
                    self._error("transaction", err)
                if txn.outcome != "aborted":
                    txn.outcome = "uncertain" if txn.commit_asked else "aborted"
                if err is not None and err.txn_requires_abort() and not err.fatal():
                    try:
                        self._retrying(lambda: p.abort_transaction(30))
                        continue
                    except KafkaException as e2:
                        txn.errors.append(f"then abort: {e2.args[0]}")
                        self._error("abort", e2.args[0])
                # A new producer with the same transactional.id fences this one and
                # aborts whatever it left open.
                p = None
            finally:
                txn.ended = time.time()
        # Nothing of this id stays open: a last init_transactions aborts what is.
        if p is None:
            p = self._new_producer(idx, time.time() + 60)
        if p is not None:
            p.close()
        else:
            self.anomalies["stuck"].append(f"producer {idx}: the last init_transactions "
                                           "never succeeded")

    # -- the run ----------------------------------------------------------------

    def acked(self, after=0.0, producer=None):
        return sum(1 for t in list(self.history.txns.values())
                   if t.outcome == "acked" and t.ended >= after
                   and (producer is None or t.producer == producer))

    def _await_progress(self, since, timeout=60):
        """Each producer commits a transaction after `since`."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if all(self.acked(since, i) for i in range(self.producers)):
                return True
            time.sleep(0.05)
        self.anomalies["no-progress"].append(
            f"producers without a commit in the {timeout} s after {since:.3f}: "
            f"{[i for i in range(self.producers) if not self.acked(since, i)]}; "
            f"errors so far: {dict(self.producer_errors)}")
        return False

    def kill(self, down=0.0):
        """SIGKILL, `down` seconds without a server, restart on the same data dir."""
        self.history.event("kill")
        self.log(f"kill -9 after {len(self.history.txns)} transactions, down {down:.1f} s")
        self.eddy.stop(kill=True)
        time.sleep(down)
        self.eddy.start()
        self.history.event("restarted")

    def run(self, rounds, gap=(0.3, 2.0), down=(0.0, 0.5)):
        """`rounds` kills, each `gap` seconds (drawn between the two) after every
        producer committed since the last restart, the server then down for `down`
        seconds (drawn likewise; past the transaction timeout, open transactions are
        aborted by the coordinator when it is back)."""
        a = AdminClient({"bootstrap.servers": self.eddy.bootstrap})
        for t, f in a.create_topics([NewTopic(t, n, 1) for t, n in self.topics.items()]).items():
            f.result(timeout=30)
        readers = [LiveReader(self.eddy.bootstrap, self.tps, c) for c in (True, False)]
        for r in readers:
            r.start()
        if self.client == "java":
            java = JavaProducers(self)
            threads = [java]
        else:
            threads = [threading.Thread(target=self._producer, args=(i,), daemon=True)
                       for i in range(self.producers)]
        start = time.time()
        for t in threads:
            t.start()
        try:
            if self._await_progress(start):
                for _ in range(rounds):
                    time.sleep(self.rng.uniform(*gap))
                    self.kill(self.rng.uniform(*down))
                    if not self._await_progress(time.time()):
                        break
        finally:
            self.stopping.set()
            if self.client == "java":
                java.stop()
            for t in threads:
                t.join(timeout=180)
            if any(t.is_alive() for t in threads):
                self.anomalies["stuck"].append("a producer thread did not finish in 180 s")
            gc.collect()  # the producers dropped after errors go now, not at exit
        self.log(f"workload done: {len(self.history.txns)} transactions, "
                 f"producer errors {dict(self.producer_errors)}")

        # Every transaction is decided: the last stable offset comes up to the high
        # watermark (a transaction left open would be aborted by its timeout).
        deadline = time.time() + self.txn_timeout_ms / 1000 + 20
        while True:
            hw = end_offsets(self.eddy.bootstrap, self.tps, committed=False)
            lso = end_offsets(self.eddy.bootstrap, self.tps, committed=True)
            if lso == hw:
                break
            if time.time() > deadline:
                self.anomalies["stuck"].append(
                    f"the last stable offset stays below the high watermark: "
                    f"{ {tp: (lso[tp], hw[tp]) for tp in self.tps if lso[tp] != hw[tp]} }")
                break
            time.sleep(0.2)
        for r in readers:
            r.drain(lso if r.read.committed else hw)
        for r in readers:
            r.join(timeout=90)
        reads = [read_log(self.eddy.bootstrap, self.tps, True, lso),
                 read_log(self.eddy.bootstrap, self.tps, False, hw)]
        reads += [r.read for r in readers]
        from conftest import metric
        deadline = time.time() + 10
        while metric(self.eddy, "eddy_kafka_transactions_open") != 0:
            if time.time() > deadline:
                self.anomalies["open-gauge"].append(
                    f"eddy_kafka_transactions_open is "
                    f"{metric(self.eddy, 'eddy_kafka_transactions_open')} with every "
                    "transaction decided")
                break
            time.sleep(0.1)
        report = check(self.history, reads, self.anomalies)
        report.counts["producer errors"] = sum(self.producer_errors.values())
        report.errors = dict(self.producer_errors)
        return report


class JavaProducers(threading.Thread):
    """The workload's producers in one Java process (tests/e2e/java/TxnWorker.java):
    this thread turns its JSON lines into the history as they come, in order (a value's
    `write` comes before anything can read it)."""

    def __init__(self, workload):
        super().__init__(daemon=True)
        from conftest import javac, kafka_classpath
        from pathlib import Path
        self.w = workload
        cp = kafka_classpath()
        classes = javac(Path(__file__).parent / "java" / "TxnWorker.java", cp)
        topics = ",".join(f"{t}:{n}" for t, n in workload.topics.items())
        self.proc = subprocess.Popen(
            ["java", "-cp", f"{classes}:{cp}", "TxnWorker", workload.eddy.bootstrap,
             workload.history.run, str(workload.producers), topics, str(workload.seed),
             str(workload.commit_ratio), *map(str, workload.writes),
             *map(str, workload.partitions_per_txn), str(workload.txn_timeout_ms)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.done = set()

    def stop(self):
        try:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    def run(self):
        w, h = self.w, self.w.history
        for line in self.proc.stdout:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            ev, p = e["ev"], e.get("p")
            if ev == "error":
                with w._lock:
                    w.producer_errors[f"{e['call']}: {e['name']}"] += 1
                continue
            if ev == "stuck":
                w.anomalies["stuck" if w.stopping.is_set() else "no-progress"].append(
                    f"producer {p}: {e['what']} ({dict(w.producer_errors)})")
                continue
            if ev == "done":
                self.done.add(p)
                continue
            if ev == "begin":
                h.new_txn(p, e["t"])
                continue
            txn = h.txns[(p, e["t"])]
            if ev == "write":
                txn.writes[e["v"].encode()] = (e["topic"], e["partition"])
            elif ev == "delivered":
                txn.delivered[e["v"].encode()] = (e["topic"], e["partition"], e["offset"])
            elif ev == "commit-asked":
                txn.commit_asked = True
            elif ev in ("acked", "aborted", "failed"):
                txn.outcome = "uncertain" if ev == "failed" else ev
                if "error" in e:
                    txn.errors.append(e["error"])
                txn.ended = time.time()
        self.proc.wait()
        missing = set(range(w.producers)) - self.done
        if missing and not any("stuck" in k for k in w.anomalies):
            w.anomalies["stuck"].append(f"Java producers {sorted(missing)} did not finish "
                                        f"(exit {self.proc.returncode})")
