"""Topic tables and blob expansions see what read_committed consumers see: a committed
transaction's records become rows, an aborted one's never do, and an open one's appear
once it commits (sealing stops at the last stable offset). Real clients: confluent-kafka
transactional producers, pyiceberg through the REST catalog."""

import json

from confluent_kafka import Producer

from test_expansion import attach, create, field, name, target_rows
from test_iceberg import catalog

NS = "kafka_topics"


def txn_producer(eddy, tid):
    p = Producer({"bootstrap.servers": eddy.bootstrap, "transactional.id": tid,
                  "linger.ms": 1})
    p.init_transactions(30)
    return p


def in_txn(p, topic, values, commit, partition=0):
    p.begin_transaction()
    for v in values:
        p.produce(topic, key=b"k", value=v, partition=partition)
    assert p.flush(30) == 0
    (p.commit_transaction if commit else p.abort_transaction)(30)


def topic_values(eddy, topic):
    t = catalog(eddy).load_table(f"{NS}.{topic}").scan().to_arrow()
    return sorted((r["partition"], r["offset"], r["value"]) for r in t.to_pylist())


def plain(eddy, topic, value, partition=0):
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    offsets = []
    p.produce(topic, value=value, key=b"k", partition=partition,
              on_delivery=lambda err, msg: offsets.append((err, msg.offset())))
    assert p.flush(30) == 0
    assert offsets[0][0] is None, offsets
    return offsets[0][1]


def test_aborted_records_never_become_rows_and_open_ones_wait_for_their_commit(eddy):
    topic = name("txtable")
    create(eddy, topic, partitions=2)
    p = txn_producer(eddy, f"tid-{topic}")
    in_txn(p, topic, [b"c1", b"c2"], commit=True)
    in_txn(p, topic, [b"a1", b"a2"], commit=False)
    in_txn(p, topic, [b"c3"], commit=True, partition=1)
    rows = topic_values(eddy, topic)
    assert [v for _, _, v in rows] == [b"c1", b"c2", b"c3"], rows
    # Offsets keep their gaps: c1 c2 at 0 1, the commit marker at 2, a1 a2 at 3 4, the
    # abort marker at 5.
    assert [(pt, o) for pt, o, _ in rows] == [(0, 0), (0, 1), (1, 0)]

    # An open transaction holds back its own rows and a later plain record's.
    p.begin_transaction()
    p.produce(topic, key=b"k", value=b"open", partition=0)
    assert p.flush(30) == 0
    later = plain(eddy, topic, b"after-open")
    assert [v for _, _, v in topic_values(eddy, topic)] == [b"c1", b"c2", b"c3"]
    p.commit_transaction(30)
    rows = topic_values(eddy, topic)
    assert [v for _, _, v in rows] == [b"c1", b"c2", b"open", b"after-open", b"c3"], rows
    assert (0, later, b"after-open") in rows


def test_an_expansion_expands_only_committed_records(eddy):
    topic = name("txexp")
    target = name("txrows")
    create(eddy, topic)
    attach(eddy, topic, {"type": "struct", "fields": [field("n", "long")]},
           f"expanded.{target}")
    p = txn_producer(eddy, f"tid-{topic}")
    in_txn(p, topic, [json.dumps({"n": 1}).encode()], commit=True)
    in_txn(p, topic, [json.dumps({"n": 2}).encode()], commit=False)
    in_txn(p, topic, [json.dumps({"n": 3}).encode()], commit=True)
    rows = target_rows(eddy, target)
    assert sorted(r["n"] for r in rows.values()) == [1, 3], rows
    assert all(not r["_parse_error"] for r in rows.values())
