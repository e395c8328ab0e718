"""franz-go (kgo v1.22.3, kadm v1.20.0, pinned by tests/go/go.mod) against eddy: the Go
client that speaks Kafka 4's newer protocols. tests/go/franz_client is its CLI (one JSON
line per event), built like the other Go clients (test_go_clients.go_build).

Checked: kgo's transactional producer takes KIP-890's transaction version 2 from
eddy's ApiVersions (each commit and abort moves it to the next epoch, which kadm's
DescribeTransactions agrees with; against a server offering version 1 the epoch stays)
and its committed transactions are exactly what read_committed returns; a
GroupTransactSession copies a topic exactly once with the group's offsets in the
transaction (TxnOffsetCommit v5 adds the group itself); kgo's share consumer (KIP-932)
gets every record once, accepts or rejects it, and the share group's start offsets
(kadm) end at the log's end."""

import json
import subprocess
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from conftest import new_eddy, read_to_end
from test_go_clients import go_build


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def franz():
    return go_build("franz_client")


def run(franz, *args, timeout=120):
    """The client's events; it must exit 0."""
    out = subprocess.run([str(franz), *map(str, args)], capture_output=True, text=True,
                         timeout=timeout)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert out.returncode == 0, f"franz_client {args} exited {out.returncode}: {out.stdout}\n{out.stderr[-3000:]}"
    return events


def admin(franz, eddy, op, **kw):
    args = [a for k, v in kw.items() for a in (f"-{k}", v)]
    return run(franz, "admin", op, "-brokers", eddy.bootstrap, *args)[-1]


def read_committed(eddy, topic):
    """The values of `topic` at read_committed, from the start to the last stable offset."""
    return [m.value().decode()
            for m in read_to_end(eddy.bootstrap, topic, isolation_level="read_committed")]


@pytest.mark.parametrize("level", [2, 1])
def test_kgo_transactions_follow_the_offered_transaction_version(eddy, franz, tmp_path, level):
    server = eddy if level == 2 else new_eddy(
        tmp_path, extra_args=["--kafka-transaction-version", "1"]).start()
    try:
        topic, txid = name("franz-txn"), name("franz-tid")
        admin(franz, server, "create", topic=topic, partitions=2)
        ended = run(franz, "txn", "-brokers", server.bootstrap, "-topic", topic, "-txid", txid,
                    "-n", 6)
        assert [e["commit"] for e in ended] == [True, False, True, True, False, True]
        epochs = [e["epoch"] for e in ended]
        first = epochs[0]
        if level == 2:
            assert epochs == list(range(first, first + 6)), epochs
        else:
            assert epochs == [first] * 6, epochs
        assert len({e["producer_id"] for e in ended}) == 1
        described = admin(franz, server, "describe-txn", txid=txid)
        assert (described["state"], described["epoch"]) == ("CompleteCommit", epochs[-1])
        want = sorted(f"t{i}-r{j}" for i in (0, 2, 3, 5) for j in range(3))
        assert sorted(read_committed(server, topic)) == want
    finally:
        if server is not eddy:
            server.stop()


def test_kgo_group_transact_session_copies_exactly_once(eddy, franz):
    src, dst, group = name("franz-in"), name("franz-out"), name("franz-ctp")
    admin(franz, eddy, "create", topic=src, partitions=2)
    admin(franz, eddy, "create", topic=dst, partitions=2)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(40):
        p.produce(src, f"v{i}".encode(), partition=i % 2)
    p.flush(30)
    events = run(franz, "ctp", "-brokers", eddy.bootstrap, "-in", src, "-out", dst,
                 "-group", group, "-txid", name("franz-ctp-tid"), "-n", 40)
    assert events[-1] == {"event": "done", "copied": 40}, events
    assert sorted(read_committed(eddy, dst)) == sorted(f"copy-v{i}" for i in range(40))
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group})
    try:
        committed = c.committed([TopicPartition(src, 0), TopicPartition(src, 1)], timeout=10)
    finally:
        c.close()
    assert [tp.offset for tp in committed] == [20, 20]


def test_kgo_share_consumer_gets_each_record_once(eddy, franz):
    topic, group = name("franz-share"), name("franz-sg")
    admin(franz, eddy, "create", topic=topic, partitions=2)
    admin(franz, eddy, "share-earliest", group=group)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    values = [f"r{i}" + ("-bad" if i % 10 == 0 else "") for i in range(30)]
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), partition=i % 2)
    p.flush(30)
    events = run(franz, "share", "-brokers", eddy.bootstrap, "-topic", topic, "-group", group,
                 "-n", 30, "-reject", "-bad")
    records = [e for e in events if e["event"] == "record"]
    assert sorted(e["value"] for e in records) == sorted(values)
    assert {e["delivery"] for e in records} == {1}
    assert sorted(e["value"] for e in records if e["rejected"]) == ["r0-bad", "r10-bad", "r20-bad"]
    starts = admin(franz, eddy, "share-offsets", group=group)["start"]
    assert starts == {f"{topic}/0": 15, f"{topic}/1": 15}, starts
