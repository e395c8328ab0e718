"""Kafka transactions (KIP-98) with real clients: confluent-kafka (librdkafka), kafka-python
and kafkajs.

Commit and abort across partitions and topics (markers take an offset each), zombie
fencing by a second producer with the same transactional.id, an open transaction holding
back the last stable offset, consume-transform-produce with the group's offsets committed
in the transaction, the coordinator aborting a transaction past its timeout, the
server's maximum timeout, read_committed in three clients, kafkajs and kafka-python
transactional producers, the transaction admin APIs (kafka-python), a retried EndTxn,
transactions across kill -9, and a Jepsen-style run (txn_checker.py) that kills the
server while producers commit and abort (TXN_KILL_ROUNDS kills, default 3; TXN_SEED
repeats a run's choices; bench/txn_jepsen.py is the long version)."""

import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import kafka
import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import metric, new_eddy, npm_ci
from txn_checker import History, Read, Rec, Workload, check, end_offsets, read_log

NODE_DIR = Path(__file__).parent / "node"
# The coordinator looks for transactions past their timeout every 200 ms.
ABORT_FAST = ["--kafka-transaction-abort-interval-ms", "200"]
FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


@pytest.fixture(scope="module")
def eddy():
    with tempfile.TemporaryDirectory(prefix="eddy-e2e-") as tmp:
        server = new_eddy(Path(tmp), extra_args=ABORT_FAST).start()
        yield server
        server.stop()


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create(eddy, topic, partitions):
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def txn_producer(eddy, tid=None, **conf):
    p = Producer({"bootstrap.servers": eddy.bootstrap, "transactional.id": tid or name("tid"),
                  "linger.ms": 5, **conf})
    p.init_transactions(30)
    return p


def send(p, topic, values, partitions=1):
    """Produces the values (value i to partition i % partitions) and waits for their
    delivery; returns {value: (partition, offset)}."""
    out, errors = {}, []

    def on(err, msg):
        if err is not None:
            errors.append(err)
        else:
            out[msg.value()] = (msg.partition(), msg.offset())

    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % partitions, on_delivery=on)
    assert p.flush(30) == 0 and not errors, errors
    return out


def read(eddy, topic, partitions, committed):
    """Every record of the topic as (partition, offset, value), at read_committed up to
    the last stable offset, else up to the high watermark; partition by partition, in
    the order the consumer got them (the offsets checked to increase)."""
    tps = [(topic, p) for p in range(partitions)]
    r = read_log(eddy.bootstrap, tps, committed, end_offsets(eddy.bootstrap, tps, committed),
                 timeout=30)
    assert not r.errors, r.errors
    got = sorted(((rec.partition, rec.offset, rec.value) for rec in r.records),
                 key=lambda x: x[0])
    for a, b in zip(got, got[1:]):
        assert a[0] != b[0] or a[1] < b[1], f"offsets out of order: {a} then {b}"
    return got


def values(records):
    return [v for _, _, v in records]


def lso(eddy, topic, partition=0):
    return end_offsets(eddy.bootstrap, [(topic, partition)], True)[(topic, partition)]


def hw(eddy, topic, partition=0):
    return end_offsets(eddy.bootstrap, [(topic, partition)], False)[(topic, partition)]


def wait_until(cond, timeout, what):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)


def counters(eddy):
    return {k: metric(eddy, f"eddy_kafka_transactions_{k}")
            for k in ("committed", "aborted", "timed_out", "open")}


def poll(c, n, timeout=20):
    """The next `n` messages a consumer gets (fewer if `timeout` s pass first)."""
    got = []
    deadline = time.time() + timeout
    while len(got) < n and time.time() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append(m)
    return got


def test_commit_and_abort_across_partitions_and_topics(eddy):
    a, b = name("multi-a"), name("multi-b")
    create(eddy, a, 3)
    create(eddy, b, 1)
    before = counters(eddy)
    p = txn_producer(eddy)
    tps = [(a, 0), (a, 1), (a, 2), (b, 0)]
    delivered = {}

    def transaction(tag, commit):
        p.begin_transaction()
        written = []
        for topic, part in tps:
            vs = [f"{tag}/{topic}/{part}/{i}".encode() for i in range(2)]
            for v in vs:
                p.produce(topic, v, partition=part,
                          on_delivery=lambda err, m: delivered.__setitem__(
                              m.value(), err or (m.topic(), m.partition(), m.offset())))
            written += vs
        assert p.flush(30) == 0
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
        return written

    first = transaction("c1", True)
    aborted = transaction("a2", False)
    last = transaction("c3", True)
    assert all(isinstance(d, tuple) for d in delivered.values()), delivered
    for topic, parts in ((a, 3), (b, 1)):
        committed = read(eddy, topic, parts, committed=True)
        everything = read(eddy, topic, parts, committed=False)
        mine = lambda vs: [v for v in vs if f"/{topic}/".encode() in v]  # noqa: E731
        assert sorted(values(committed)) == sorted(mine(first + last))
        assert sorted(values(everything)) == sorted(mine(first + aborted + last))
        for part, off, v in everything:
            assert delivered[v] == (topic, part, off), f"{v} read at {part}@{off}"
        for part in range(parts):
            # Two records a transaction, then its marker: the markers are gaps.
            assert [o for q, o, _ in everything if q == part] == [0, 1, 3, 4, 6, 7]
            assert [o for q, o, _ in committed if q == part] == [0, 1, 6, 7]
            assert lso(eddy, topic, part) == hw(eddy, topic, part) == 9
    after = counters(eddy)
    assert after["committed"] - before["committed"] == 2
    assert after["aborted"] - before["aborted"] == 1
    assert after["open"] == before["open"]


def test_a_second_producer_with_the_same_id_fences_the_first(eddy):
    topic = name("zombie")
    create(eddy, topic, 2)
    tid = name("zombie-id")
    zombie = txn_producer(eddy, tid)
    zombie.begin_transaction()
    send(zombie, topic, [b"a-%d" % i for i in range(4)], partitions=2)
    before = counters(eddy)
    assert before["open"] >= 1
    # The second producer's init_transactions aborts the first's transaction ...
    successor = txn_producer(eddy, tid)
    after_init = counters(eddy)
    assert after_init["aborted"] == before["aborted"] + 1
    assert after_init["open"] == before["open"] - 1
    # ... and the first is fenced: its next produce and its commit fail for good.
    late = []
    zombie.produce(topic, b"a-late", partition=0, on_delivery=lambda err, m: late.append(err))
    with pytest.raises(KafkaException) as e:
        zombie.commit_transaction(30)
    err = e.value.args[0]
    zombie.flush(5)
    assert late and late[0] is not None, "the zombie's late record was accepted"
    successor.begin_transaction()
    send(successor, topic, [b"b-%d" % i for i in range(4)], partitions=2)
    successor.commit_transaction(30)
    assert sorted(values(read(eddy, topic, 2, committed=True))) == [b"b-%d" % i for i in range(4)]
    everything = sorted(values(read(eddy, topic, 2, committed=False)))
    assert everything == sorted([b"a-%d" % i for i in range(4)] + [b"b-%d" % i for i in range(4)])
    # The zombie's error was fatal, not one a retry after abort_transaction() might get
    # past. (Kafka answers a produce of a fenced epoch INVALID_PRODUCER_EPOCH, which
    # librdkafka makes a fatal _FENCED; it takes any other error there for an abortable
    # one.)
    assert err.fatal() and err.code() in FENCED, f"the zombie was not fenced for good: {err}"


def test_an_open_transaction_holds_back_later_records_at_read_committed(eddy):
    topic = name("held")
    create(eddy, topic, 1)
    open_before = counters(eddy)["open"]
    t = txn_producer(eddy)
    t.begin_transaction()
    assert send(t, topic, [b"t-0", b"t-1"]) == {b"t-0": (0, 0), b"t-1": (0, 1)}
    plain = Producer({"bootstrap.servers": eddy.bootstrap, "enable.idempotence": True})
    assert send(plain, topic, [b"plain"]) == {b"plain": (0, 2)}
    assert counters(eddy)["open"] == open_before + 1
    # The last stable offset is the open transaction's first offset.
    assert (lso(eddy, topic), hw(eddy, topic)) == (0, 3)

    def consumer(level):
        c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": name("held"),
                      "isolation.level": level, "enable.auto.commit": False,
                      "fetch.wait.max.ms": 100})
        c.assign([TopicPartition(topic, 0, 0)])
        return c

    ru, rc = consumer("read_uncommitted"), consumer("read_committed")
    try:
        got = [(m.offset(), m.value()) for m in poll(ru, 3)]
        assert got == [(0, b"t-0"), (1, b"t-1"), (2, b"plain")]
        # Nothing for read_committed while the transaction is open (a short look) ...
        assert poll(rc, 1, timeout=2) == []
        t.commit_transaction(30)
        # ... and then all three, in offset order.
        got = [(m.offset(), m.value()) for m in poll(rc, 3)]
        assert got == [(0, b"t-0"), (1, b"t-1"), (2, b"plain")]
        assert poll(rc, 1, timeout=0.5) == []
    finally:
        ru.close()
        rc.close()
    assert (lso(eddy, topic), hw(eddy, topic)) == (4, 4)
    assert counters(eddy)["open"] == open_before


def test_consume_transform_produce_commits_the_offsets_with_the_output(eddy):
    src, dst = name("ctp-in"), name("ctp-out")
    create(eddy, src, 2)
    create(eddy, dst, 2)
    send(Producer({"bootstrap.servers": eddy.bootstrap}), src,
         [b"in-%d" % i for i in range(12)], partitions=2)
    group = name("ctp")
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed"})
    c.subscribe([src])
    p = txn_producer(eddy)
    parts = [TopicPartition(src, 0), TopicPartition(src, 1)]

    def committed(level, timeout=10):
        """The group's committed offsets as a consumer of that isolation level sees them."""
        o = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group,
                      "isolation.level": level})
        try:
            return {tp.partition: tp.offset for tp in o.committed(parts, timeout=timeout)}
        finally:
            o.close()

    def pending_is_unstable():
        """A read_committed consumer (OffsetFetch with require_stable) does not get an
        offset a transaction holds: librdkafka retries UNSTABLE_OFFSET_COMMIT until its
        timeout."""
        try:
            got = committed("read_committed", timeout=3)
        except KafkaException as e:
            return e.args[0].code() in (KafkaError._TIMED_OUT, KafkaError.UNSTABLE_OFFSET_COMMIT)
        return f"got {got}"

    def transform(msgs):
        p.begin_transaction()
        for m in msgs:
            p.produce(dst, b"out-" + m.value(), partition=m.partition())
        positions = c.position(c.assignment())
        p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), 30)
        return {tp.partition: tp.offset for tp in positions if tp.offset >= 0}

    first = poll(c, 6, timeout=30)
    assert len(first) == 6
    want = transform(first)
    assert committed("read_uncommitted") == {0: OFFSET_INVALID, 1: OFFSET_INVALID}
    assert pending_is_unstable() is True
    p.commit_transaction(30)
    after_first = {q: want.get(q, OFFSET_INVALID) for q in (0, 1)}
    assert committed("read_committed") == after_first
    assert committed("read_uncommitted") == after_first

    second = poll(c, 6)
    assert len(second) == 6
    transform(second)
    assert pending_is_unstable() is True
    p.abort_transaction(30)
    # The aborted round leaves the offsets as they were: the records are read again.
    assert committed("read_committed") == after_first
    for q, off in after_first.items():
        c.seek(TopicPartition(src, q, off if off >= 0 else OFFSET_BEGINNING))
    again = poll(c, 6)
    assert sorted(m.value() for m in again) == sorted(m.value() for m in second)
    transform(again)
    p.commit_transaction(30)
    c.close()
    assert committed("read_committed") == {0: 6, 1: 6}
    out = read(eddy, dst, 2, committed=True)
    assert sorted(values(out)) == sorted(b"out-in-%d" % i for i in range(12))
    for part, _, v in out:
        assert int(v.rsplit(b"-", 1)[1]) % 2 == part
    assert len(read(eddy, dst, 2, committed=False)) == 18


def test_a_transaction_past_its_timeout_is_aborted(eddy):
    topic = name("timeout")
    create(eddy, topic, 1)
    before = counters(eddy)
    tid = name("slow")
    # 4 s: long enough that the open transaction is still seen holding the last stable
    # offset on a loaded machine (at 1 s, a CI run saw it aborted before the check).
    p = txn_producer(eddy, tid, **{"transaction.timeout.ms": 4000})
    p.begin_transaction()
    assert send(p, topic, [b"late-0", b"late-1"]) == {b"late-0": (0, 0), b"late-1": (0, 1)}
    assert lso(eddy, topic) == 0
    # The coordinator aborts it: its marker at 2, the last stable offset past it.
    wait_until(lambda: lso(eddy, topic) == 3, 30, "the last stable offset to move past")
    assert hw(eddy, topic) == 3
    after = counters(eddy)
    assert after["timed_out"] == before["timed_out"] + 1
    assert after["aborted"] == before["aborted"] + 1
    assert after["open"] == before["open"]
    assert read(eddy, topic, 1, committed=True) == []
    assert values(read(eddy, topic, 1, committed=False)) == [b"late-0", b"late-1"]
    # The producer learns it at its commit: the coordinator bumped its epoch.
    with pytest.raises(KafkaException) as e:
        p.commit_transaction(10)
    err = e.value.args[0]
    assert err.fatal() and err.code() in FENCED, err
    assert read(eddy, topic, 1, committed=True) == []
    # A new producer of that id starts afresh.
    q = txn_producer(eddy, tid, **{"transaction.timeout.ms": 10000})
    q.begin_transaction()
    send(q, topic, [b"on-time"])
    q.commit_transaction(30)
    assert read(eddy, topic, 1, committed=True) == [(0, 3, b"on-time")]


def test_a_timeout_above_the_server_maximum_is_refused(tmp_path):
    eddy = new_eddy(tmp_path, extra_args=["--kafka-transaction-max-timeout-ms", "5000"]).start()
    try:
        p = Producer({"bootstrap.servers": eddy.bootstrap, "transactional.id": name("long"),
                      "transaction.timeout.ms": 10000})
        with pytest.raises(KafkaException) as e:
            p.init_transactions(30)
        assert e.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT, e.value
        del p
        topic = name("max")
        create(eddy, topic, 1)
        q = txn_producer(eddy, **{"transaction.timeout.ms": 5000})
        q.begin_transaction()
        send(q, topic, [b"fits"])
        q.commit_transaction(30)
        assert values(read(eddy, topic, 1, committed=True)) == [b"fits"]
        del q
    finally:
        eddy.stop()


@pytest.fixture(scope="module")
def mixed(eddy):
    """A topic of two partitions where two producers' transactions interleave (one
    commits, one aborts) with plain records, and ends with an aborted transaction:
    (topic, the committed values, every value, the end offsets)."""
    topic = name("mixed")
    create(eddy, topic, 2)
    p1, p2 = txn_producer(eddy), txn_producer(eddy)
    plain = Producer({"bootstrap.servers": eddy.bootstrap, "enable.idempotence": True})
    committed, everything = [], []
    p1.begin_transaction()
    p2.begin_transaction()
    for i in range(12):
        for p, tag, keep in ((p1, "c1", True), (p2, "a2", False)):
            v = f"{tag}-{i}".encode()
            p.produce(topic, v, partition=i % 2)
            assert p.flush(30) == 0
            everything.append(v)
            if keep:
                committed.append(v)
        if i % 4 == 0:
            v = f"plain-{i}".encode()
            plain.produce(topic, v, partition=i % 2)
            assert plain.flush(30) == 0
            everything.append(v)
            committed.append(v)
    p2.abort_transaction(30)
    p1.commit_transaction(30)
    p1.begin_transaction()
    tail = [b"a1-tail-0", b"a1-tail-1"]
    send(p1, topic, tail, partitions=2)
    p1.abort_transaction(30)
    everything += tail
    ends = end_offsets(eddy.bootstrap, [(topic, 0), (topic, 1)], True)
    assert ends == end_offsets(eddy.bootstrap, [(topic, 0), (topic, 1)], False)
    assert sorted(values(read(eddy, topic, 2, committed=True))) == sorted(committed)
    assert sorted(values(read(eddy, topic, 2, committed=False))) == sorted(everything)
    return topic, committed, everything, {p: ends[(topic, p)] for p in (0, 1)}


@pytest.mark.parametrize("level", ["read_committed", "read_uncommitted"])
def test_kafka_python_reads_at_its_isolation_level(eddy, mixed, level):
    topic, committed, everything, ends = mixed
    kc = kafka.KafkaConsumer(bootstrap_servers=eddy.bootstrap, isolation_level=level,
                             enable_auto_commit=False, auto_offset_reset="earliest")
    tps = [kafka.TopicPartition(topic, p) for p in (0, 1)]
    kc.assign(tps)
    kc.seek_to_beginning()
    got = []
    deadline = time.time() + 30
    try:
        while any(kc.position(tp) < ends[tp.partition] for tp in tps):
            assert time.time() < deadline, (
                f"kafka-python at {[kc.position(tp) for tp in tps]}, the end is {ends}; "
                f"got {len(got)} records")
            for msgs in kc.poll(timeout_ms=200).values():
                got += [(m.partition, m.offset, m.value) for m in msgs]
    finally:
        kc.close()
    want = committed if level == "read_committed" else everything
    assert sorted(v for _, _, v in got) == sorted(want)
    reference = set(read(eddy, topic, 2, committed=False))
    assert set(got) <= reference, "kafka-python got other offsets than librdkafka"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_kafkajs_reads_only_committed_values(eddy, mixed):
    topic, committed, everything, ends = mixed
    out = node(eddy, "consume", TOPIC=topic, GROUP=name("kjs"), ENDS=json.dumps(ends))
    got = [(r["partition"], r["offset"], r["value"].encode()) for r in json.loads(out)]
    assert sorted(v for _, _, v in got) == sorted(committed)
    assert set(got) <= set(read(eddy, topic, 2, committed=False))


def node(eddy, mode, **env):
    npm_ci("kafkajs")
    out = subprocess.run(["node", "kafkajs_read_committed.js", mode], cwd=NODE_DIR,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "BOOTSTRAP": eddy.bootstrap, **env})
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_kafkajs_transactional_producer(eddy):
    topic = name("kjs-txn")
    create(eddy, topic, 2)
    out = json.loads(node(eddy, "produce", TOPIC=topic, TXN_ID=name("kjs"), PARTITIONS="2"))
    assert sorted(values(read(eddy, topic, 2, committed=True))) == sorted(
        v.encode() for v in out["committed"])
    assert sorted(values(read(eddy, topic, 2, committed=False))) == sorted(
        v.encode() for v in out["committed"] + out["aborted"])


def test_kafka_python_transactional_producer(eddy):
    topic = name("kp-txn")
    create(eddy, topic, 2)
    kp = kafka.KafkaProducer(bootstrap_servers=eddy.bootstrap, transactional_id=name("kp"))
    kp.init_transactions()
    kp.begin_transaction()
    for i in range(4):
        kp.send(topic, b"kp-c-%d" % i, partition=i % 2)
    kp.commit_transaction()
    kp.begin_transaction()
    for i in range(4):
        kp.send(topic, b"kp-a-%d" % i, partition=i % 2)
    kp.flush()
    kp.abort_transaction()
    kp.close()
    assert sorted(values(read(eddy, topic, 2, committed=True))) == [b"kp-c-%d" % i
                                                                     for i in range(4)]
    assert len(read(eddy, topic, 2, committed=False)) == 8


def test_admin_apis_describe_an_open_transaction(eddy):
    """ListTransactions, DescribeTransactions and DescribeProducers through kafka-python's
    admin client (confluent-kafka's has none of them), while a transaction is open and
    after its commit."""
    from kafka.admin._transactions import TransactionState
    from kafka.errors import TransactionalIdNotFoundError

    topic, tid = name("admin-txn"), name("admin-id")
    create(eddy, topic, 2)
    send(Producer({"bootstrap.servers": eddy.bootstrap, "enable.idempotence": True}), topic,
         [b"before"])
    started = time.time()
    p = txn_producer(eddy, tid, **{"transaction.timeout.ms": 45000})
    p.begin_transaction()
    send(p, topic, [b"x-0", b"x-1"], partitions=2)
    admin = kafka.KafkaAdminClient(bootstrap_servers=eddy.bootstrap)
    tps = [kafka.TopicPartition(topic, q) for q in (0, 1)]
    try:
        mine = [t for ts in admin.list_transactions().values() for t in ts
                if t.transactional_id == tid]
        assert len(mine) == 1 and mine[0].state == TransactionState.ONGOING, mine
        pid = mine[0].producer_id
        ongoing = admin.list_transactions(state_filters=["Ongoing"])
        assert tid in [t.transactional_id for ts in ongoing.values() for t in ts]
        done = admin.list_transactions(state_filters=["CompleteCommit", "CompleteAbort"])
        assert tid not in [t.transactional_id for ts in done.values() for t in ts]
        d = admin.describe_transactions([tid])[tid]
        assert d.state == TransactionState.ONGOING
        assert (d.producer_id, d.transaction_timeout_ms) == (pid, 45000)
        assert d.topic_partitions == set(tps)
        assert started - 5 <= d.transaction_start_time_ms / 1000 <= time.time() + 5
        producers = admin.describe_producers(tps)
        # Partition 0 holds a plain record before the transaction's first one.
        for tp, first in zip(tps, (1, 0)):
            active = {x.producer_id: x for x in producers[tp].active_producers}
            assert pid in active, (tp, producers[tp])
            assert active[pid].current_transaction_start_offset == first
            assert active[pid].producer_epoch == d.producer_epoch
        p.commit_transaction(30)
        d = admin.describe_transactions([tid])[tid]
        assert d.state == TransactionState.COMPLETE_COMMIT, d
        ongoing = admin.list_transactions(state_filters=["Ongoing"])
        assert tid not in [t.transactional_id for ts in ongoing.values() for t in ts]
        for tp, x in admin.describe_producers(tps).items():
            active = {a.producer_id: a for a in x.active_producers}
            assert active[pid].current_transaction_start_offset == -1, (tp, x)
        with pytest.raises(TransactionalIdNotFoundError):
            admin.describe_transactions([name("nobody")])
    finally:
        admin.close()


def end_txn(eddy, tid, producer_id, epoch, commit):
    """A bare EndTxn v1 request (what librdkafka sends) to the server; its error code."""
    def kstr(s):
        return struct.pack(">h", len(s.encode())) + s.encode()

    msg = (struct.pack(">hhi", 26, 1, 7) + kstr("e2e-raw") + kstr(tid)
           + struct.pack(">qh?", producer_id, epoch, commit))
    with socket.create_connection(("127.0.0.1", eddy.kafka_ports[0]), timeout=10) as s:
        s.sendall(struct.pack(">i", len(msg)) + msg)
        f = s.makefile("rb")
        (size,) = struct.unpack(">i", f.read(4))
        correlation, _throttle, error = struct.unpack(">iih", f.read(size)[:10])
    assert correlation == 7
    return error


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_a_retried_end_txn_gets_the_first_answer(eddy, outcome):
    """What a client retries after a kill that lost the response: the same EndTxn again
    succeeds, the opposite one is INVALID_TXN_STATE, an old epoch is fenced."""
    topic, tid = name("retry"), name("retry-id")
    create(eddy, topic, 1)
    p = txn_producer(eddy, tid)
    p.begin_transaction()
    send(p, topic, [b"once"])
    getattr(p, f"{outcome}_transaction")(30)
    admin = kafka.KafkaAdminClient(bootstrap_servers=eddy.bootstrap)
    try:
        d = admin.describe_transactions([tid])[tid]
        commit = outcome == "commit"
        assert end_txn(eddy, tid, d.producer_id, d.producer_epoch, commit) == 0
        assert end_txn(eddy, tid, d.producer_id, d.producer_epoch, not commit) == \
            KafkaError.INVALID_TXN_STATE
        assert admin.describe_transactions([tid])[tid].state == d.state
        txn_producer(eddy, tid)
        # Kafka answers INVALID_PRODUCER_EPOCH to EndTxn v0 and v1, PRODUCER_FENCED after.
        assert end_txn(eddy, tid, d.producer_id, d.producer_epoch, commit) in (
            KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.PRODUCER_FENCED)
    finally:
        admin.close()
    want = [b"once"] if outcome == "commit" else []
    assert values(read(eddy, topic, 1, committed=True)) == want
    assert (lso(eddy, topic), hw(eddy, topic)) == (2, 2)


def test_transactions_survive_kill_9(tmp_path):
    eddy = new_eddy(tmp_path, extra_args=ABORT_FAST).start()
    try:
        topic, short = name("durable"), name("short")
        create(eddy, topic, 2)
        create(eddy, short, 1)
        tid = name("durable-id")
        p = txn_producer(eddy, tid)
        p.begin_transaction()
        send(p, topic, [b"c-%d" % i for i in range(4)], partitions=2)
        p.commit_transaction(30)
        p.begin_transaction()
        left_open = send(p, topic, [b"o-%d" % i for i in range(4)], partitions=2)
        first_open = {q: min(o for part, o in left_open.values() if part == q) for q in (0, 1)}
        assert first_open == {0: 3, 1: 3}
        # Another one, with a short timeout, open at the kill as well.
        q = txn_producer(eddy, **{"transaction.timeout.ms": 3000})
        q.begin_transaction()
        send(q, short, [b"q-0"])
        eddy.stop(kill=True)
        eddy.start()

        committed = [b"c-%d" % i for i in range(4)]
        opened = [b"o-%d" % i for i in range(4)]
        assert sorted(values(read(eddy, topic, 2, committed=True))) == committed
        assert sorted(values(read(eddy, topic, 2, committed=False))) == committed + opened
        # Still open: it holds the last stable offset at its first record.
        for part in (0, 1):
            assert (lso(eddy, topic, part), hw(eddy, topic, part)) == (3, 5)
        assert counters(eddy)["open"] >= 1
        # The short one is aborted by its timeout after the restart.
        wait_until(lambda: lso(eddy, short) == 2, 20, "the timed-out transaction's abort")
        assert read(eddy, short, 1, committed=True) == []
        assert values(read(eddy, short, 1, committed=False)) == [b"q-0"]
        # A new producer with the same transactional.id aborts the one left open.
        p2 = txn_producer(eddy, tid)
        for part in (0, 1):
            assert (lso(eddy, topic, part), hw(eddy, topic, part)) == (6, 6)
        assert counters(eddy)["open"] == 0
        p2.begin_transaction()
        send(p2, topic, [b"n-%d" % i for i in range(2)], partitions=2)
        p2.commit_transaction(30)
        # The producer from before the kill is fenced.
        with pytest.raises(KafkaException) as e:
            p.commit_transaction(10)
        assert e.value.args[0].fatal() and e.value.args[0].code() in FENCED, e.value
        want_rc = committed + [b"n-0", b"n-1"]
        assert sorted(values(read(eddy, topic, 2, committed=True))) == want_rc
        # And all of it again after another kill.
        eddy.stop(kill=True)
        eddy.start()
        assert sorted(values(read(eddy, topic, 2, committed=True))) == want_rc
        assert sorted(values(read(eddy, topic, 2, committed=False))) == sorted(want_rc + opened)
        for part in (0, 1):
            assert lso(eddy, topic, part) == hw(eddy, topic, part) == 8
        del p, p2, q
    finally:
        eddy.stop()


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_jepsen_transactions_under_kill_9(tmp_path, client):
    """The checker of txn_checker.py over three kills: with librdkafka's producers
    (transaction version 1) and with the Java client's (version 2: an epoch bump at
    every commit and abort, partitions added by produce)."""
    rounds = int(os.environ.get("TXN_KILL_ROUNDS", "3"))
    seed = int(os.environ["TXN_SEED"]) if os.environ.get("TXN_SEED") else None
    eddy = new_eddy(tmp_path, extra_args=ABORT_FAST).start()
    try:
        # Down for up to 4 s, past the transactions' timeout now and then.
        w = Workload(eddy, producers=3, txn_timeout_ms=3000, seed=seed, log=print,
                     client=client)
        report = w.run(rounds, gap=(0.2, 1.5), down=(0.0, 4.0))
        print(f"seed {w.seed}\n{report.summary()}\nproducer errors: {report.errors}")
        assert report.ok, f"seed {w.seed}\n{report.summary()}"
        assert report.counts["kills"] == rounds
        assert report.counts["acked"] >= 3 * (rounds + 1)
    finally:
        eddy.stop()


def test_the_checker_reports_each_anomaly():
    """The checker against made-up histories: clean passes, each anomaly is named."""
    h = History("abcd1234")
    A, B = ("a", 0), ("b", 0)

    def txn(p, n, outcome):
        t = h.new_txn(p, n)
        t.outcome = outcome
        for i, tp in enumerate((A, B)):
            t.writes[h.value(t, i)] = tp
        return t

    acked, aborted, unsure = txn(0, 0, "acked"), txn(0, 1, "aborted"), txn(1, 0, "uncertain")

    def rec(t, i, offset, tp=None):
        v = h.value(t, i)
        return Rec(*(tp or t.writes[v]), offset, v)

    log = {t: [rec(t, 0, n), rec(t, 1, n)] for n, t in enumerate((acked, aborted, unsure))}
    ru = [log[acked][0], log[aborted][0], log[unsure][0], log[acked][1], log[aborted][1],
          log[unsure][1]]
    rc = [log[acked][0], log[unsure][0], log[acked][1], log[unsure][1]]
    for t in (acked, aborted, unsure):
        for r in log[t]:
            t.delivered[r.value] = (r.topic, r.partition, r.offset)

    def kinds(rc=rc, ru=ru, live=()):
        reads = [Read("rc", True, True, list(rc)), Read("ru", False, True, list(ru))]
        reads += [Read("live", True, False, list(live))]
        return set(check(h, reads).anomalies)

    assert kinds() == set()
    assert kinds(rc=[r for r in rc if r != log[unsure][1] and r != log[unsure][0]]) == set()
    assert kinds(rc=rc[1:]) == {"lost", "atomicity"}
    assert kinds(rc=[r for r in rc if r != log[unsure][1]]) == {"atomicity"}
    assert "aborted-read" in kinds(rc=rc + [log[aborted][0]])
    assert kinds(live=[log[aborted][1]]) == {"aborted-read"}
    no_unsure = [r for r in rc if r.value not in unsure.writes]
    assert kinds(rc=no_unsure, live=[log[unsure][0]]) == {"dirty-read"}
    assert kinds(ru=ru + [rec(acked, 0, 7)]) == {"duplicate"}
    assert kinds(ru=ru + [Rec("a", 0, 2, h.value(aborted, 0))]) >= {"offset-conflict"}
    assert kinds(ru=[ru[2], ru[0], ru[1]] + ru[3:]) == {"non-monotonic"}
    junk = Rec("a", 0, 9, b"junk")
    assert kinds(rc=rc + [junk], ru=ru + [junk]) == {"phantom"}
    assert "wrong-partition" in kinds(ru=ru + [rec(acked, 0, 5, tp=B)])
    assert kinds(ru=[r for r in ru if r != log[unsure][0]]) == {"rc-not-in-ru"}
    acked.delivered[h.value(acked, 0)] = ("a", 0, 4)
    assert "offset-conflict" in kinds()


def test_an_unused_transactional_id_expires_and_an_open_one_does_not(tmp_path):
    """Ids with no open transaction are forgotten after
    --kafka-transactional-id-expiration-ms (Kafka's transactional.id.expiration.ms), also
    across a restart; an id whose transaction is open is kept however long it waits."""
    eddy = new_eddy(tmp_path, extra_args=ABORT_FAST + [
        "--kafka-transactional-id-expiration-ms", "1000"]).start()
    admin = kafka.KafkaAdminClient(bootstrap_servers=eddy.bootstrap)
    try:
        topic, idle, busy = name("expire"), name("idle-id"), name("busy-id")
        create(eddy, topic, 1)
        p = txn_producer(eddy, idle)
        p.begin_transaction()
        send(p, topic, [b"done"])
        p.commit_transaction(30)
        q = txn_producer(eddy, busy, **{"transaction.timeout.ms": 60000})
        q.begin_transaction()
        send(q, topic, [b"open"])

        def listed():
            return {t.transactional_id for ts in admin.list_transactions().values() for t in ts}

        assert {idle, busy} <= listed()
        deadline = time.time() + 30
        while idle in listed():
            assert time.time() < deadline, "the idle id was never forgotten"
            time.sleep(0.2)
        assert busy in listed(), "an id with an open transaction expired"
        eddy.restart()
        admin.close()
        admin = kafka.KafkaAdminClient(bootstrap_servers=eddy.bootstrap)
        assert idle not in listed() and busy in listed()
        # The forgotten id starts afresh; the open transaction still commits.
        again = txn_producer(eddy, idle)
        again.begin_transaction()
        send(again, topic, [b"again"])
        again.commit_transaction(30)
        assert idle in listed()
        q.commit_transaction(30)
    finally:
        admin.close()
        eddy.stop()
