"""Fetch sessions (KIP-227) with real clients: kafka-python and the Java consumer keep a
session, send incremental fetches as they add and drop partitions, read every record
exactly once, and go on through a new session when a restart loses every session."""

import time
import uuid

import kafka
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import metric


def produce(eddy, topic, partitions, n, tag):
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5})
    for part in partitions:
        for i in range(n):
            p.produce(topic, value=f"{tag}-{part}-{i}".encode(), partition=part)
    assert p.flush(30) == 0


def consume(c, want, timeout=60):
    """Polls `c` until it has read every value in `want` (a set); returns what it read."""
    got = []
    deadline = time.time() + timeout
    while not want <= set(got):
        assert time.time() < deadline, f"missing {sorted(want - set(got))[:5]}"
        for records in c.poll(timeout_ms=500).values():
            got.extend(r.value.decode() for r in records)
    return got


def test_kafka_python_reads_through_a_session_as_partitions_come_and_go(fresh_eddy):
    eddy = fresh_eddy
    topic = f"sessions-{uuid.uuid4().hex[:8]}"
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, 8, 1)])[topic].result(timeout=30)
    produce(eddy, topic, range(8), 50, "a")
    c = kafka.KafkaConsumer(bootstrap_servers=eddy.bootstrap, enable_auto_commit=False,
                            auto_offset_reset="earliest", fetch_max_wait_ms=200)
    try:
        tps = [kafka.TopicPartition(topic, p) for p in range(8)]
        c.assign(tps[:4])
        got = consume(c, {f"a-{p}-{i}" for p in range(4) for i in range(50)})
        assert metric(eddy, "eddy_kafka_fetch_sessions") >= 1, "no fetch session was made"
        # Drop 0 and 1, add 4..7: the session forgets two and gains four.
        c.assign(tps[2:])
        c.seek_to_beginning(*tps[4:])
        got += consume(c, {f"a-{p}-{i}" for p in range(4, 8) for i in range(50)})
        # New records on a kept partition arrive through incremental fetches.
        produce(eddy, topic, [2, 7], 20, "b")
        got += consume(c, {f"b-{p}-{i}" for p in (2, 7) for i in range(20)})
        assert len(got) == len(set(got)), "a record was read twice"
        assert not any(v.startswith(("a-0-", "a-1-")) for v in got[200:]), "a dropped partition"
        # A restart loses every session: the client is told and starts another.
        eddy.restart()
        produce(eddy, topic, [3, 5], 10, "c")
        more = consume(c, {f"c-{p}-{i}" for p in (3, 5) for i in range(10)})
        assert len(more) == len(set(more)) == 20, more
        assert metric(eddy, "eddy_kafka_fetch_sessions") >= 1
    finally:
        c.close()


def test_a_session_at_the_end_of_quiet_partitions_sees_each_change(fresh_eddy):
    """A consumer caught up on many quiet partitions is answered from its session without
    re-reading them; every change still reaches it: new records on any one partition, a
    committed transaction (only its markers move the last stable offset a read_committed
    consumer waits at), and an aborted one (whose records it never sees)."""
    eddy = fresh_eddy
    topic = f"quiet-{uuid.uuid4().hex[:8]}"
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, 40, 1)])[topic].result(timeout=30)
    produce(eddy, topic, range(40), 1, "a")
    c = kafka.KafkaConsumer(bootstrap_servers=eddy.bootstrap, enable_auto_commit=False,
                            auto_offset_reset="earliest", fetch_max_wait_ms=100,
                            isolation_level="read_committed")
    try:
        c.assign([kafka.TopicPartition(topic, p) for p in range(40)])
        got = consume(c, {f"a-{p}-0" for p in range(40)})
        # Several incremental fetches at the end of every partition.
        for _ in range(5):
            assert not c.poll(timeout_ms=200)
        for p in (5, 17, 39):
            produce(eddy, topic, [p], 1, "b")
            got += consume(c, {f"b-{p}-0"})
        t = Producer({"bootstrap.servers": eddy.bootstrap, "transactional.id": f"tx-{topic}"})
        t.init_transactions(30)
        t.begin_transaction()
        t.produce(topic, value=b"committed", partition=23)
        t.flush(30)
        # Open: a read_committed consumer stops before it.
        for _ in range(3):
            assert not c.poll(timeout_ms=200), "a record of an open transaction was read"
        t.commit_transaction(30)
        got += consume(c, {"committed"})
        t.begin_transaction()
        t.produce(topic, value=b"aborted", partition=30)
        t.flush(30)
        t.abort_transaction(30)
        produce(eddy, topic, [30], 1, "after-abort")
        got += consume(c, {"after-abort-30-0"})
        assert "aborted" not in got
        assert len(got) == len(set(got)) == 40 + 3 + 2, got
        assert metric(eddy, "eddy_kafka_fetch_sessions") >= 1, "no fetch session was made"
    finally:
        c.close()
