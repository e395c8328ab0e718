"""Real Kafka Connect 4.3 distributed workers (tests/e2e/connect.py) against the real eddy
binary: compacted internal topics, two workers rebalancing connectors and tasks with the
`sessioned` protocol, the `eager` one and one of each, a worker killed with SIGKILL, a
source connector that carries on across a SIGKILL of eddy (at-least-once: nothing lost
or invented), and a sink connector whose committed offsets survive a worker restart."""

import random
import re
import shutil
import threading
import time
import urllib.request
import uuid

import kafka
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from confluent_kafka import ConsumerGroupTopicPartitions

from conftest import new_eddy
from connect import Worker, client_config, read_topic, wait_for

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="Java is not installed")

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"

# Quick failure detection, so the kill tests take seconds, not minutes: the worker's group
# session (eddy's minimum is 6 s) and, for the incremental protocols, how long the
# leader keeps a vanished worker's connectors and tasks for it before moving them.
FAST = {
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "1000",
    "scheduled.rebalance.max.delay.ms": "5000",
    # The sink tasks' consumers too (Kafka's default session is 45 s): a moved task's
    # consumer joins a group whose dead member must expire first.
    "consumer.session.timeout.ms": "6000",
    "consumer.heartbeat.interval.ms": "1000",
}


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap, topic, partitions=1, **config):
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(timeout=30)


def produce(bootstrap, topic, values, partition=None):
    p = Producer({"bootstrap.servers": bootstrap})
    for i, v in enumerate(values):
        kw = {} if partition is None else {"partition": partition(i)}
        p.produce(topic, value=v.encode(), **kw)
    assert p.flush(30) == 0


def committed(bootstrap, group, topic, partitions=1):
    """The group's committed offsets on `topic` (partition -> offset; -1001 = none)."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    res = a.list_consumer_group_offsets([req])[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def api_requests(eddy, api):
    """eddy_kafka_requests_total for one Kafka API, from eddy's /metrics."""
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf'^eddy_kafka_requests_total\{{api="{api}"\}} (\d+)', text, re.M)
    return int(m.group(1)) if m else 0


def start_all(workers):
    """Starts the workers side by side (each JVM takes several seconds to come up); on any
    failure every started one is killed."""
    errors = []

    def run(w):
        try:
            w.start()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for w in workers:
            w.kill()
        raise errors[0]
    return workers


# connect.protocol of each of the two workers, and what the group must agree on: the
# protocol name (Connect calls eager "default") and its version in the workers' log.
# "mixed" is a rolling downgrade: the broker must pick the one protocol both support.
PROTOCOLS = {
    "sessioned": (("sessioned", "sessioned"), "sessioned", 2),
    "eager": (("eager", "eager"), "default", 0),
    "mixed": (("sessioned", "eager"), "default", 0),
}


@pytest.fixture(scope="module", params=list(PROTOCOLS))
def cluster(request, eddy, tmp_path_factory):
    """Two workers in one Connect group, with the `connect.protocol`s of PROTOCOLS[param].
    Shared by the tests of one param; the kill test (the last of them) leaves one worker."""
    protocol = request.param
    # Under pytest's base temp dir, which keeps the workers' logs of the last runs.
    tmp = tmp_path_factory.mktemp(f"connect-{protocol}")
    group = name(f"connect-{protocol}")
    workers = [Worker(tmp, eddy.bootstrap, group, f"w{i}",
                      dict(FAST, **{"connect.protocol": p}))
               for i, p in enumerate(PROTOCOLS[protocol][0], 1)]
    try:
        start_all(workers)
        yield protocol, workers
    finally:
        for w in workers:
            w.kill()


def test_internal_topics_are_compacted(eddy, cluster):
    """Connect creates its three internal topics compacted (and refuses to start on a
    topic whose DescribeConfigs says otherwise): the broker keeps and reports that."""
    _, workers = cluster
    group = workers[0].group
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    topics = {f"{group}-configs": 1, f"{group}-offsets": 25, f"{group}-status": 5}
    md = a.list_topics(timeout=30).topics
    for t, parts in topics.items():
        assert t in md, f"{t} not created"
        # Connect's defaults: one config partition, 25 offset, 5 status partitions.
        assert len(md[t].partitions) == parts, t
    res = a.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics])
    for r, fut in res.items():
        configs = fut.result(timeout=30)
        assert configs["cleanup.policy"].value == "compact", (r.name, configs["cleanup.policy"])
        assert not configs["cleanup.policy"].is_default, r.name
    # What every starting worker's CreateTopics gets for them: TOPIC_ALREADY_EXISTS.
    fut = a.create_topics([NewTopic(f"{group}-configs", 1, 1,
                                    config={"cleanup.policy": "compact"})])[f"{group}-configs"]
    with pytest.raises(KafkaException) as e:
        fut.result(timeout=30)
    assert e.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS, e.value


def wait_spread(worker, connector, workers, tasks=2, timeout=120):
    """Waits until `connector`'s tasks all run and sit on every one of `workers`."""
    ids = {w.worker_id for w in workers}

    def spread(st):
        ts = st.get("tasks", [])
        return (st["connector"]["state"] == "RUNNING" and len(ts) == tasks
                and all(t["state"] == "RUNNING" for t in ts)
                and {t["worker_id"] for t in ts} == ids)
    return worker.wait_status(connector, spread, timeout, f"{connector}'s tasks on {sorted(ids)}")


def printed(worker, marker):
    """Values a FileStreamSink without a file printed (to the worker's stdout)."""
    text = (worker.dir / "stdout.log").read_text(errors="replace")
    return set(re.findall(rf"{marker}-\d+", text))


def test_tasks_spread_over_both_workers(eddy, cluster):
    """A connector with tasks.max=2 gets one task on each worker, and the records of both
    partitions flow through the two tasks' consumers (one sink group, two members)."""
    protocol, (w1, w2) = cluster
    topic = name(f"spread-{protocol}")
    create_topic(eddy.bootstrap, topic, partitions=2)
    connector = name("spread")
    # No `file`: FileStreamSink prints each value on the worker's stdout.
    w1.put_config(connector, {
        "connector.class": FILE_SINK, "tasks.max": "2", "topics": topic,
        "value.converter": STRING, "key.converter": STRING,
    })
    st = wait_spread(w1, connector, [w1, w2])
    assert st["type"] == "sink"
    # A group of protocol type connect (ListGroups), and the members agreed on the
    # expected protocol (each worker's last join says which).
    _, chosen, version = PROTOCOLS[protocol]
    # (kafka-python: librdkafka lists and describes consumer-protocol groups only.) The
    # group may still be settling: Connect rebalances after task configs are written.
    def listed():
        admin = kafka.KafkaAdminClient(bootstrap_servers=eddy.bootstrap)
        try:
            g = {g["group_id"]: g for g in admin.list_groups()}[w1.group]
        finally:
            admin.close()
        return g if g["group_state"] == "Stable" else None
    assert wait_for(listed, 30, "a stable worker group")["protocol_type"] == "connect"
    for w in (w1, w2):
        joins = re.findall(r"Joined group at generation \d+ with protocol version (\d+)",
                           w.log_text())
        assert joins and int(joins[-1]) == version, (w.name, joins)
    marker = name("v")
    values = [f"{marker}-{i}" for i in range(40)]
    produce(eddy.bootstrap, topic, values, partition=lambda i: i % 2)
    wait_for(lambda: printed(w1, marker) | printed(w2, marker) == set(values), 60,
             "every value printed by the sink tasks")
    # Each worker's task has one partition, so each printed its half.
    assert printed(w1, marker) and printed(w2, marker)
    assert printed(w1, marker).isdisjoint(printed(w2, marker))
    # The sink tasks' consumer group commits both partitions' offsets.
    wait_for(lambda: committed(eddy.bootstrap, f"connect-{connector}", topic, 2) == {0: 20, 1: 20},
             60, "the sink group's committed offsets")


def test_killed_worker_hands_over(eddy, cluster):
    """SIGKILL of the worker that runs the connector: after its session times out the
    other worker runs the connector and both tasks, and records keep flowing."""
    protocol, (w1, w2) = cluster
    topic = name(f"handover-{protocol}")
    create_topic(eddy.bootstrap, topic, partitions=2)
    connector = name("handover")
    w1.put_config(connector, {
        "connector.class": FILE_SINK, "tasks.max": "2", "topics": topic,
        "value.converter": STRING, "key.converter": STRING,
    })
    t0 = time.time()
    st = wait_spread(w1, connector, [w1, w2])
    print(f"\n[{protocol}] tasks spread {time.time() - t0:.1f}s after the PUT")
    victim = w1 if st["connector"]["worker_id"] == w1.worker_id else w2
    if protocol == "mixed":
        # The sessioned one, whatever it runs. Killing the eager one instead upgrades the
        # group to sessioned (the survivor's first choice, as Kafka picks too), and then
        # Connect 4.3 stops the survivor's tasks "to be restarted after rebalance" and
        # never rebalances: they stay stopped while REST says RUNNING (docs/connect.md).
        victim = w1
    survivor = w2 if victim is w1 else w1
    t0 = time.time()
    victim.kill()

    def moved(st):
        ts = st.get("tasks", [])
        return (st["connector"]["state"] == "RUNNING"
                and st["connector"]["worker_id"] == survivor.worker_id and len(ts) == 2
                and all(t["state"] == "RUNNING" and t["worker_id"] == survivor.worker_id
                        for t in ts))
    survivor.wait_status(connector, moved, 90, f"{connector} moved to {survivor.name}")
    print(f"\n[{protocol}] connector and tasks moved {time.time() - t0:.1f}s after SIGKILL")
    marker = name("after")
    values = [f"{marker}-{i}" for i in range(20)]
    produce(eddy.bootstrap, topic, values, partition=lambda i: i % 2)
    try:
        wait_for(lambda: printed(survivor, marker) == set(values), 60,
                 "the survivor's tasks printing both partitions' records")
    except AssertionError:
        survivor.dump_threads()
        raise


def test_sink_offsets_survive_worker_restart(eddy, tmp_path):
    """FileStreamSink into a file: the sink group's committed offset follows the file,
    and after a worker restart only new records are appended (nothing re-delivered)."""
    topic = name("sink")
    create_topic(eddy.bootstrap, topic)
    out = tmp_path / "sink.txt"
    connector = name("sink")
    group = f"connect-{connector}"
    w = Worker(tmp_path, eddy.bootstrap, name("connect-sink"), "w1", FAST)
    try:
        w.start()
        w.put_config(connector, {
            "connector.class": FILE_SINK, "tasks.max": "1", "topics": topic, "file": str(out),
            "value.converter": STRING, "key.converter": STRING,
        })
        w.wait_running(connector, 1)
        first = [f"first-{i}" for i in range(10)]
        produce(eddy.bootstrap, topic, first)
        lines = lambda: out.read_text().splitlines() if out.exists() else []  # noqa: E731
        wait_for(lambda: lines() == first, 60, "the first records in the file")
        wait_for(lambda: committed(eddy.bootstrap, group, topic) == {0: 10}, 60,
                 "the first commit")

        w.stop()
        second = [f"second-{i}" for i in range(5)]
        produce(eddy.bootstrap, topic, second)  # while no worker runs
        w.start()
        w.wait_running(connector, 1)
        wait_for(lambda: len(lines()) >= 15, 60, "the second records in the file")
        wait_for(lambda: committed(eddy.bootstrap, group, topic) == {0: 15}, 60,
                 "the commit after the restart")
        # Exactly once each: the task resumed at the committed offset 10.
        assert lines() == first + second
    finally:
        w.kill()


def test_source_carries_on_across_eddy_kill(tmp_path):
    """FileStreamSource tails a file the test keeps appending to while eddy is killed
    with SIGKILL and restarted on the same ports and data dir. Afterwards the topic holds
    every line of the file, and nothing else; duplicates (at-least-once) are counted.
    The task's producer keeps idempotence and compresses (lz4): neither needs turning off."""
    eddy = new_eddy(tmp_path).start()
    w = None
    stop = threading.Event()
    src = tmp_path / "source.txt"
    src.write_text("")
    written = []

    def writer():
        # Steady appends, flushed line by line, so the kill lands mid-stream.
        with open(src, "a") as f:
            i = 0
            while not stop.is_set():
                line = f"line-{i:06d}-{random.randrange(1 << 30):08x}"
                f.write(line + "\n")
                f.flush()
                written.append(line)
                i += 1
                time.sleep(0.005)

    t = threading.Thread(target=writer)
    try:
        topic = name("source")
        create_topic(eddy.bootstrap, topic)
        # Idempotence and compression on, for the task's producer and (compression) the
        # worker's own: eddy needs neither turned off. The worker loses its coordinator
        # while eddy is down, stops the task and restarts it from its committed offsets.
        w = Worker(tmp_path, eddy.bootstrap, name("connect-source"), "w1", dict(
            FAST, **{"producer.enable.idempotence": "true", "producer.compression.type": "lz4",
                     "enable.idempotence": "true", "compression.type": "gzip"}))
        w.start()
        connector = name("source")
        w.put_config(connector, {
            "connector.class": FILE_SOURCE, "tasks.max": "1", "topic": topic, "file": str(src),
            "value.converter": STRING, "key.converter": STRING,
        })
        w.wait_running(connector, 1)
        t.start()
        count = lambda: sum(1 for _ in read_topic(eddy.bootstrap, topic))  # noqa: E731
        wait_for(lambda: count() >= 300, 60, "the first lines in the topic")

        init_producer_ids = api_requests(eddy, "InitProducerId")
        eddy.stop(kill=True)
        at_kill = len(written)
        # Down for a few seconds, so the worker's clients notice (requests fail, they
        # reconnect and retry) while the task keeps reading lines it cannot send.
        wait_for(lambda: len(written) >= at_kill + 600, 30, "lines written while eddy is down")
        eddy.start()
        at_restart = len(written)
        # Carries on: lines written after the restart reach the topic; then stop writing.
        wait_for(lambda: count() >= at_restart + 300, 120, "lines written after the restart")
        stop.set()
        t.join()
        total = len(written)

        def caught_up():
            got = [v.decode() for (_, _, _, v) in read_topic(eddy.bootstrap, topic)]
            return got if set(got) >= set(written) else None
        got = wait_for(caught_up, 120, f"all {total} lines in the topic")
        assert set(got) == set(written), "records in the topic that the file never had"
        dups = len(got) - len(set(got))
        print(f"\n{total} lines, {len(got)} records, {dups} duplicates (at-least-once)")
        st = w.status(connector)
        assert st["tasks"][0]["state"] == "RUNNING", st
        # The task's producer was idempotent and compressed with lz4 (as the worker log
        # shows its config), and eddy answered its InitProducerId (counted before the kill).
        cfg = client_config(w.log_text(), "ProducerConfig", f"connector-producer-{connector}-0")
        assert "enable.idempotence = true" in cfg and "compression.type = lz4" in cfg, cfg
        # The worker's own producers compress too (Connect itself turns idempotence off
        # for them outside exactly-once mode, whatever the worker config says).
        cfg = client_config(w.log_text(), "ProducerConfig", f"{w.group}-offsets")
        assert "compression.type = gzip" in cfg, cfg
        assert init_producer_ids > 0, "no InitProducerId reached eddy"
    finally:
        stop.set()
        if t.is_alive():
            t.join()
        if w is not None:
            w.kill()
        eddy.stop(kill=True)
