"""Scale-out (docs/scale-out.md): several Eddy nodes over one drive set, the catalog in
PostgreSQL (Debian's, started by the test). Each node serves any S3 request and commits
through the shared catalog; what one node commits, every node reads."""

import signal
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import postgres
from conftest import Eddy, free_port, metric, read_to_end
from scale_out import Producing, assert_each_acked_once, holders, s3, serving, wait_for

HOSTS = ["127.0.0.1", "127.0.0.2"]
LEASE_MS = 2000

pytestmark = pytest.mark.skipif(not postgres.available(), reason="PostgreSQL is not installed")


@pytest.fixture
def cluster(tmp_path, request):
    """Two nodes (extra `eddy serve` arguments by indirect parametrization)."""
    # Durable: an acknowledged write must survive PostgreSQL's restart (the helper's
    # default, for speed, commits asynchronously).
    pg = postgres.Postgres(fsync=True).start()
    url = f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
    data = tmp_path / "shared"
    kafka_port = free_port()
    nodes = []
    try:
        # Every node is given the whole cluster's Kafka addresses; each serves those its
        # leases give it.
        for i in range(2):
            node = Eddy(data_dir=data, s3_port=free_port(), kafka_ports=[kafka_port] * 2,
                        kafka_hosts=HOSTS, http_port=free_port(),
                        extra_args=["--catalog", url, "--node-id", f"node-{i}",
                                    "--lease-timeout-ms", str(LEASE_MS),
                                    *getattr(request, "param", [])])
            nodes.append(node.start())
        yield nodes, pg
    finally:
        for n in nodes:
            n.stop()
        pg.stop()


def settled(node: Eddy, pg):
    """Waits until each node holds one address and both addresses are served."""
    port = node.kafka_ports[0]
    wait_for(lambda: holders(pg) == {"node-0": 1, "node-1": 1}, 30, "one lease each")
    wait_for(lambda: all(serving(h, port) for h in HOSTS), 30, "both addresses served")


def test_what_one_node_commits_every_node_reads(cluster):
    (a, b), pg = cluster
    s3(a).create_bucket(Bucket="shared")
    body = uuid.uuid4().bytes * 1000
    s3(a).put_object(Bucket="shared", Key="k", Body=body)
    assert s3(b).get_object(Bucket="shared", Key="k")["Body"].read() == body
    # A bucket made through one node exists for the other.
    assert "shared" in [x["Name"] for x in s3(b).list_buckets()["Buckets"]]
    s3(b).put_object(Bucket="shared", Key="k", Body=b"from b")
    assert s3(a).get_object(Bucket="shared", Key="k")["Body"].read() == b"from b"
    assert [o["Key"] for o in s3(a).list_objects_v2(Bucket="shared")["Contents"]] == ["k"]

    # A topic created through the cluster; two producers' records land in its partition
    # (served by whichever node holds its leader's address) with offsets 0..99, each
    # once. Reading another node's batches is catalog/tests/conformance.rs's.
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    created = admin.create_topics([NewTopic("events", 1)])
    for f in created.values():
        f.result(30)
    sent = []
    for node in (a, b):
        p = Producer({"bootstrap.servers": node.bootstrap, "enable.idempotence": True})
        failed = []
        for i in range(50):
            v = f"{node.s3_port}-{i}"
            p.produce("events", value=v.encode(), partition=0,
                      on_delivery=lambda err, _m: err and failed.append(err))
            sent.append(v)
        assert p.flush(30) == 0
        assert not failed, failed
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "g",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition("events", 0, 0)])
    got = []
    while len(got) < len(sent):
        m = c.poll(10)
        assert m is not None, f"only {len(got)} of {len(sent)} records"
        assert m.error() is None, m.error()
        got.append((m.offset(), m.value().decode()))
    c.close()
    assert [o for o, _ in got] == list(range(len(sent)))
    assert sorted(v for _, v in got) == sorted(sent)
    # The catalog is PostgreSQL's: its rows hold the topic.
    rows = pg.psql("SELECT count(*) FROM eddy_kv WHERE t = 'topics'")
    assert int(rows[0][0]) >= 1

    # What an operator reads to tell a slow PostgreSQL from a slow disk: every group
    # commit timed in each of its stages (a stage is recorded before the group is
    # counted, so the two agree once no commit is in flight).
    def stages_agree(node):
        commits = metric(node, "eddy_catalog_group_commits")
        counts = [metric(node, rf'eddy_catalog_commit_stage_seconds_count\{{stage="{s}"\}}')
                  for s in ("apply", "log", "store")]
        return commits > 0 and counts[2] == commits and min(counts) >= commits
    for node in (a, b):
        wait_for(lambda node=node: stages_agree(node), 10, "commit stages on every group commit")


def test_a_killed_nodes_addresses_move_and_its_clients_carry_on(cluster):
    (a, b), pg = cluster
    port = a.kafka_ports[0]
    # One address each, once the first node gave one back, and both served.
    settled(a, pg)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in admin.create_topics([NewTopic("orders", 4)]).values():
        f.result(30)
    load = Producing(b.bootstrap, "orders", timeout_ms=60000)
    wait_for(lambda: len(load.acked) > 200, 30, "records acknowledged before the kill")
    # What an operator watches: the survivor serves one address, and how many it took
    # and lost so far.
    wait_for(lambda: metric(b, "eddy_catalog_addresses_held") == 1, 10, "one address held")
    taken, lost = metric(b, "eddy_catalog_addresses_taken"), metric(b, "eddy_catalog_addresses_lost")
    assert taken >= 1
    killed_at = time.monotonic()
    a.stop(kill=True)
    # Its address is served again, by the survivor, within a few lease timeouts.
    wait_for(lambda: holders(pg) == {"node-1": 2}, 10 * LEASE_MS / 1000,
             "the survivor holds both addresses")
    wait_for(lambda: all(serving(h, port) for h in HOSTS), 10 * LEASE_MS / 1000,
             "the killed node's address served again")
    wait_for(lambda: any(at > killed_at + 1 for at, _ in load.acked), 60, "acks after the kill")
    load.finish()
    # The survivor's metrics say so: one more address taken, none of its own lost.
    assert metric(b, "eddy_catalog_addresses_held") == 2
    assert metric(b, "eddy_catalog_addresses_taken") == taken + 1
    assert metric(b, "eddy_catalog_addresses_lost") == lost
    assert metric(b, "eddy_catalog_lease_round_seconds_count") > 0
    # Read through the survivor.
    assert_each_acked_once(b.bootstrap, "orders", load.values())
    acked = load.acked
    gap = max(y - x for (x, _), (y, _) in zip(acked, acked[1:]))
    print(f"longest pause between acknowledgements: {gap:.2f} s")


def test_a_node_paused_past_its_lease_commits_nothing_when_it_wakes(cluster):
    (a, b), pg = cluster
    settled(a, pg)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in admin.create_topics([NewTopic("paused", 4)]).values():
        f.result(30)
    load = Producing(b.bootstrap, "paused", timeout_ms=90000)
    wait_for(lambda: len(load.acked) > 200, 30, "records acknowledged before the pause")
    a.proc.send_signal(signal.SIGSTOP)
    # Past its lease: the survivor takes its address over (it cannot bind it here, on one
    # host, until the paused process lets go of the socket).
    time.sleep(3 * LEASE_MS / 1000)
    before = len(load.acked)
    a.proc.send_signal(signal.SIGCONT)
    # Woken, it finds its lease gone: the requests it held are refused, by its own
    # clock (its lease ran out while it slept) or as fenced at commit, and it stops
    # serving the address, which the survivor then serves. A write it had taken in
    # would show as a record stored twice or out of order.
    wait_for(lambda: len(load.acked) > before + 200, 60, "acks after the wake")
    load.finish()
    assert_each_acked_once(b.bootstrap, "paused", load.values())


def test_a_postgresql_restart_fails_writes_without_false_acks_and_they_recover(cluster):
    (a, b), pg = cluster
    s3(a).create_bucket(Bucket="restart")
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in admin.create_topics([NewTopic("restart", 2)]).values():
        f.result(30)
    acked_objects = []
    stop = threading.Event()
    load = Producing(b.bootstrap, "restart")

    def put_objects():
        c, i = s3(a), 0
        while not stop.is_set():
            try:
                c.put_object(Bucket="restart", Key=f"k{i}", Body=b"x")
                acked_objects.append(f"k{i}")
            except Exception:  # refused while PostgreSQL is down: not acknowledged
                time.sleep(0.05)
            i += 1

    puts = threading.Thread(target=put_objects)
    puts.start()
    wait_for(lambda: len(load.acked) > 100 and len(acked_objects) > 20, 30, "writes before")
    pg.halt()
    time.sleep(1)
    pg.start()
    n, m = len(load.acked), len(acked_objects)
    wait_for(lambda: len(load.acked) > n + 100 and len(acked_objects) > m + 20, 60,
             "writes acknowledged again after the restart")
    stop.set()
    puts.join(60)
    load.finish()
    assert_each_acked_once(b.bootstrap, "restart", load.values())
    keys = set()
    for page in s3(b).get_paginator("list_objects_v2").paginate(Bucket="restart"):
        keys.update(o["Key"] for o in page.get("Contents", []))
    assert not set(acked_objects) - keys, "an acknowledged object was lost"


def test_transactions_span_nodes(cluster):
    """A transactional producer whose coordinator and partition leaders are spread over
    both nodes: each partition's leader checks the producer's records against the state
    the coordinator on the other node committed, and read_committed readers see exactly
    the committed transactions."""
    (a, b), pg = cluster
    settled(a, pg)
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    for f in admin.create_topics([NewTopic("txn", 4)]).values():
        f.result(30)
    md = admin.list_topics("txn", timeout=30)
    assert len({p.leader for p in md.topics["txn"].partitions.values()}) == 2, \
        "the partitions' leaders are on both nodes"
    p = Producer({"bootstrap.servers": a.bootstrap, "transactional.id": "spanning"})
    p.init_transactions(30)
    committed = []
    for t in range(6):
        p.begin_transaction()
        values = [f"t{t}-{i}" for i in range(8)]
        for i, v in enumerate(values):
            p.produce("txn", value=v.encode(), partition=i % 4)
        if t % 3 == 2:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
            committed += values
    got = [m.value().decode() for m in read_to_end(a.bootstrap, "txn", isolation_level="read_committed")]
    assert sorted(got) == sorted(committed)


def snapshots(node: Eddy) -> int:
    return metric(node, "eddy_tables_snapshots")


@pytest.mark.parametrize("cluster", [["--table-seal-age-secs", "1"]], indirect=True)
def test_one_node_seals_a_topic_table(cluster):
    """The background tabler of the node serving a topic's partition 0 leader seals its
    table; the other node's leaves it alone."""
    (a, b), pg = cluster
    settled(a, pg)
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    for f in admin.create_topics([NewTopic("tabled", 2)]).values():
        f.result(30)
    md = admin.list_topics("tabled", timeout=30)
    leader = md.brokers[md.topics["tabled"].partitions[0].leader]
    rows = pg.psql(f"SELECT node FROM eddy_leases WHERE address = '{leader.host}:{leader.port}'")
    owner, other = (a, b) if rows[0][0] == "node-0" else (b, a)
    p = Producer({"bootstrap.servers": a.bootstrap})
    # Five rounds: were both nodes sealing, the other would win the race to some round.
    for round in range(5):
        for i in range(20):
            p.produce("tabled", value=f"r{round}-{i}".encode(), partition=i % 2)
        assert p.flush(30) == 0
        # Each round's records are sealed by the owner, in a snapshot of their own.
        wait_for(lambda: snapshots(owner) > round, 60, "the owner sealed the table")
    assert snapshots(other) == 0
    assert metric(owner, "eddy_tables_seal_errors") == metric(other, "eddy_tables_seal_errors") == 0


def test_pipeline_links_are_spread_over_the_nodes_and_move_when_one_dies(cluster, tmp_path):
    """A deployed pipeline's link partitions run on the node holding their address's
    lease: both nodes deliver, and when one is killed the other takes its partitions
    from where they were: every upload reaches the function, and the trigger topic holds
    one event per upload."""
    import collections

    from test_pipelines import Function, cli, headers_of
    from test_pipelines import metric_value

    (a, b), pg = cluster
    settled(a, pg)
    index = Function(tmp_path, "index")
    try:
        s3(b).create_bucket(Bucket="spread")
        name = "spread"
        cli(a, "apply", "-f", "-", stdin=f"""
name: {name}
partitions: 6
triggers: [{{name: up, kind: bucket, bucket: spread}}]
functions: [{{name: index, url: '{index.url}'}}]
links: [{{from: up, to: index, retries: 50, backoff_ms: 100}}]
""")
        cli(a, "deploy", name)
        keys = [f"k{i:03d}" for i in range(200)]
        for k in keys[:100]:
            s3(b).put_object(Bucket="spread", Key=k, Body=b"x", IfNoneMatch="*")
        index.wait_for(lambda s: {e["subject"] for e in s} >= set(keys[:100]), timeout=60)

        def per_node():
            return [metric_value(n, "eddy_pipeline_delivered_total", pipeline=name, link="up-index")
                    for n in (a, b)]
        # Handed on once each (a function answers before its hand-off commits).
        wait_for(lambda: sum(per_node()) == 100, 30, "100 events handed on")
        assert all(v > 0 for v in per_node()), per_node()
        a.stop(kill=True)
        for k in keys[100:]:
            s3(b).put_object(Bucket="spread", Key=k, Body=b"x", IfNoneMatch="*")
        index.wait_for(lambda s: {e["subject"] for e in s} >= set(keys), timeout=120)
        trig = collections.Counter(m.key().decode().split("/", 1)[1]
                                   for m in read_to_end(b.bootstrap, f"pipeline.{name}.up"))
        assert trig == collections.Counter(keys)
        dead = [m for m in read_to_end(b.bootstrap, "dead-letter")
                if headers_of(m).get("eddy_pipeline") == name]
        assert dead == []
    finally:
        index.stop()


def test_a_killed_node_is_replaced_before_its_lease_runs_out_and_a_paused_one_is_not(tmp_path):
    """A node that dies frees its liveness lock at once (PostgreSQL closes its session),
    so its addresses move well before its lease would have expired; a paused node keeps
    its session, its lock and its addresses until its lease runs out."""
    lease_ms = 20000
    pg = postgres.Postgres(fsync=True).start()
    url = f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
    kafka_port = free_port()
    nodes = []
    try:
        for i in range(2):
            nodes.append(Eddy(data_dir=tmp_path / "shared", s3_port=free_port(),
                              kafka_ports=[kafka_port] * 2, kafka_hosts=HOSTS,
                              http_port=free_port(),
                              extra_args=["--catalog", url, "--node-id", f"node-{i}",
                                          "--lease-timeout-ms", str(lease_ms)]).start())
        a, b = nodes
        settled(a, pg)
        # A node takes freed locks for dead nodes only once it has held its own for a
        # lease timeout (after a PostgreSQL restart every lock is free at once).
        wait_for(lambda: pg.psql(
            "SELECT count(*) FROM eddy_nodes "
            f"WHERE liveness_since < now() - interval '{lease_ms} milliseconds'")[0][0] == "2",
            3 * lease_ms / 1000, "both nodes holding their liveness locks for a lease timeout")

        # Paused for a fifth of its lease: the other node checks for vacant addresses
        # four times a second all along, and leaves this one's alone.
        held = pg.psql("SELECT address, epoch FROM eddy_leases WHERE node = 'node-0'")
        a.proc.send_signal(signal.SIGSTOP)
        time.sleep(lease_ms / 5000)
        assert pg.psql("SELECT address, epoch FROM eddy_leases WHERE node = 'node-0'") == held
        a.proc.send_signal(signal.SIGCONT)

        [(address, expires)] = pg.psql("SELECT address, expires_at FROM eddy_leases "
                                       "WHERE node = 'node-0'")
        a.stop(kill=True)
        wait_for(lambda: holders(pg) == {"node-1": 2}, lease_ms / 2000,
                 "the survivor holding the killed node's address")
        [(early,)] = pg.psql(f"SELECT now() < '{expires}'::timestamptz")
        assert early == "t", "the address moved only when the killed node's lease ran out"
        host = address.rsplit(":", 1)[0]
        wait_for(lambda: serving(host, kafka_port), 10, "the killed node's address served again")
    finally:
        for n in nodes:
            n.stop(kill=True)
        pg.stop()
