"""Overload: many confluent-kafka producers sending large produce requests at once, and
thousands of idle connections beyond the connection cap. The server's peak RSS (VmHWM)
stays within a bound set by the request budget, not by what clients send; connections
over the cap are closed and counted; the producers under the cap keep being served; and
every acknowledged record reads back."""

import hashlib
import re
import resource
import socket
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import metric, new_eddy

BUDGET_MB = 32
FRAME_MB = 8
CAP = 600
IDLE = 3000
PRODUCERS = 8
PER_PRODUCER_MB = 24
MESSAGE = 64 << 10


def status_kb(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def kafka_listener(eddy, name):
    """A Kafka listener metric (eddy_listener_refused_total, eddy_listener_connections)."""
    import urllib.request
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf'^{name}\{{listener="kafka"\}} (\d+)', text, re.M)
    return int(m.group(1)) if m else 0


def value(p, i):
    head = f"{p}:{i}:".encode()
    return head + hashlib.sha256(head).digest() * ((MESSAGE - len(head)) // 32)


def test_large_produces_and_idle_floods_stay_within_the_budget(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 3 * IDLE + 1024)), hard))
    # This process holds every idle socket; the server inherits the same limit.
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > IDLE + 512, "open-files limit too low"
    config = tmp_path / "eddy.toml"
    config.write_text(f"kafka_max_frame_mb = {FRAME_MB}\n")
    eddy = new_eddy(tmp_path, extra_args=[
        "--config", str(config),
        "--max-connections", str(CAP),
        "--kafka-max-request-mb-in-flight", str(BUDGET_MB),
        # The tabler's own memory is not what this measures.
        "--table-seal-mb", "100000", "--table-seal-age-secs", "100000",
    ]).start()
    idle = []
    try:
        admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
        admin.create_topics([NewTopic("flood", PRODUCERS, 1, config={"retention.ms": "-1", "max.message.bytes": str(FRAME_MB << 20)})])[
            "flood"].result(timeout=30)
        baseline_kb = status_kb(eddy.proc.pid, "VmRSS")

        acked, errors = [], []
        lock = threading.Lock()
        connected = threading.Barrier(PRODUCERS + 1)

        def produce(p):
            prod = Producer({
                "bootstrap.servers": eddy.bootstrap, "linger.ms": 200, "acks": "all",
                "batch.size": FRAME_MB << 19, "message.max.bytes": FRAME_MB << 20,
                "queue.buffering.max.kbytes": 256 << 10, "max.in.flight": 5,
                "message.timeout.ms": 120_000})
            prod.list_topics("flood", timeout=30)
            connected.wait()

            def report(err, msg):
                with lock:
                    (errors if err else acked).append(err or (msg.partition(), msg.offset(), msg.value()[:16]))

            for i in range((PER_PRODUCER_MB << 20) // MESSAGE):
                while True:
                    try:
                        prod.produce("flood", value=value(p, i), partition=p, on_delivery=report)
                        break
                    except BufferError:
                        prod.poll(0.1)
                prod.poll(0)
            assert prod.flush(120) == 0

        threads = [threading.Thread(target=produce, args=(p,)) for p in range(PRODUCERS)]
        for t in threads:
            t.start()
        connected.wait(timeout=60)
        # The producers are connected (under the cap); now thousands of idle clients.
        for _ in range(IDLE):
            idle.append(socket.create_connection(("127.0.0.1", eddy.kafka_ports[0]), timeout=10))
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors[:3]
        assert len(acked) == PRODUCERS * ((PER_PRODUCER_MB << 20) // MESSAGE)

        # Over the cap, connections are closed as they arrive (IDLE - CAP of them, less the
        # slots the clients' own short-lived connections free while the flood runs).
        assert kafka_listener(eddy, "eddy_listener_connections") <= CAP
        closed = kafka_listener(eddy, "eddy_listener_refused_total")
        assert closed >= IDLE // 2, closed
        peak_kb = status_kb(eddy.proc.pid, "VmHWM")
        # The bound: what the process held before the load, plus the request budget three
        # times over (the frame, its decoded batches, their copy in the log record), plus
        # 96 MiB for buffers, connections and allocator slack. Without the budget the
        # producers alone can have 8 x 5 requests of 8 MiB in flight.
        bound_kb = baseline_kb + 3 * (BUDGET_MB << 10) + (96 << 10)
        # What waits for the committer is bounded the same way: a produce request holds its
        # share of the budget until its response, which comes after its commit.
        queued = metric(eddy, "eddy_catalog_commit_queue_peak_bytes")
        print(f"VmRSS before {baseline_kb >> 10} MiB, VmHWM {peak_kb >> 10} MiB, "
              f"bound {bound_kb >> 10} MiB, refused {closed}, commit queue peak {queued >> 10} KiB")
        assert 0 < queued <= (BUDGET_MB << 20), queued
        assert peak_kb <= bound_kb, f"VmHWM {peak_kb >> 10} MiB over the bound {bound_kb >> 10} MiB"
    except BaseException:
        eddy.stop(kill=True)
        raise
    finally:
        for s in idle:
            s.close()

    # Every acknowledged record reads back, exactly.
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": "flood-check",
                  "enable.auto.commit": False, "fetch.max.bytes": 16 << 20})
    c.assign([TopicPartition("flood", p, 0) for p in range(PRODUCERS)])
    want = {(p, o): v for p, o, v in acked}
    got = {}
    deadline = time.time() + 120
    while len(got) < len(want):
        assert time.time() < deadline, f"{len(got)} of {len(want)} records read back"
        for m in c.consume(500, timeout=1):
            if not m.error():
                got[(m.partition(), m.offset())] = m.value()[:16]
    c.close()
    assert got == want
    eddy.stop()
