"""aiokafka (asyncio, its own protocol implementation) against eddy: an idempotent
producer, a consumer group of two members that share the partitions and together read
every record once, committed offsets a restarted member resumes from, and the admin
client's topic calls."""

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=120))


async def produce(bootstrap, topic, n):
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all")
    await p.start()
    try:
        sent = []
        for i in range(n):
            md = await p.send_and_wait(topic, f"v{i}".encode(), key=f"k{i}".encode(),
                                       partition=i % 3)
            sent.append((md.partition, md.offset, f"v{i}"))
        return sent
    finally:
        await p.stop()


async def admin_create(bootstrap, topic):
    a = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await a.start()
    try:
        await a.create_topics([NewTopic(topic, 3, 1)])
        described = await a.describe_topics([topic])
        return described
    finally:
        await a.close()


def test_producer_group_and_committed_offsets(eddy):
    topic, group = name("aio"), name("aio-group")
    described = run(admin_create(eddy.bootstrap, topic))
    assert len(described[0]["partitions"]) == 3 and described[0]["error_code"] == 0
    sent = run(produce(eddy.bootstrap, topic, 60))
    assert len({(p, o) for p, o, _ in sent}) == 60

    async def group_reads():
        members = [AIOKafkaConsumer(topic, bootstrap_servers=eddy.bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
                   for _ in range(2)]
        for m in members:
            await m.start()
        got = {}
        try:
            # The group settles first (the joins run in the background), so no rebalance
            # hands a partition over while records are read (which would re-deliver the
            # uncommitted ones, as Kafka's at-least-once delivery may).
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not (all(m.assignment() for m in members)
                       and len(set().union(*(m.assignment() for m in members))) == 3):
                assert loop.time() < deadline, "the group never settled"
                await asyncio.sleep(0.1)
            while len(got) < 60:
                for m in members:
                    batch = await m.getmany(timeout_ms=200)
                    for tp, msgs in batch.items():
                        for msg in msgs:
                            key = (tp.partition, msg.offset)
                            assert key not in got, f"{key} read twice"
                            got[key] = msg.value.decode()
                    if batch:
                        await m.commit()
            owned = [m.assignment() for m in members]
            return got, owned
        finally:
            for m in members:
                await m.stop()

    got, owned = run(group_reads())
    assert got == {(p, o): v for p, o, v in sent}
    # Both members held partitions at the end, none twice.
    held = [tp for a in owned for tp in a]
    assert len(held) == len(set(held)) == 3 and all(owned)

    async def resume():
        c = AIOKafkaConsumer(topic, bootstrap_servers=eddy.bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        try:
            committed = {p: await c.committed(TopicPartition(topic, p)) for p in range(3)}
            more = await c.getmany(timeout_ms=1000)
            return committed, sum(len(v) for v in more.values())
        finally:
            await c.stop()

    committed, more = run(resume())
    ends = {}
    for p, o, _ in sent:
        ends[p] = max(ends.get(p, -1), o + 1)
    assert committed == ends
    assert more == 0, "a restarted member re-read committed records"


@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd"])
def test_compressed_batches_round_trip(eddy, codec):
    topic = name(f"aio-{codec}")
    run(admin_create(eddy.bootstrap, topic))

    async def go():
        p = AIOKafkaProducer(bootstrap_servers=eddy.bootstrap, compression_type=codec,
                             linger_ms=20)
        await p.start()
        try:
            futures = [await p.send(topic, f"{codec}-{i}".encode() * 20, partition=0)
                       for i in range(50)]
            offsets = [(await f).offset for f in futures]
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=eddy.bootstrap, auto_offset_reset="earliest")
        await c.start()
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            await c.seek_to_beginning(tp)
            got = []
            while len(got) < 50:
                batch = await c.getmany(tp, timeout_ms=1000)
                got.extend(m.value for m in batch.get(tp, []))
            return offsets, got
        finally:
            await c.stop()

    offsets, got = run(go())
    assert offsets == list(range(50))
    assert got == [f"{codec}-{i}".encode() * 20 for i in range(50)]
