"""Helpers of the scale-out tests (docs/scale-out.md): reaching a node, waiting for the
leases, a background idempotent producer, and the read-back check."""

import socket
import threading
import time

import boto3
from botocore.config import Config
from confluent_kafka import Producer

from conftest import Eddy, read_to_end


def s3(node: Eddy, **config):
    """A boto3 client of one node's S3 endpoint that does not retry (extra botocore
    `Config` settings in `config`)."""
    return boto3.client(
        "s3", endpoint_url=node.s3_url, aws_access_key_id=node.access_key,
        aws_secret_access_key=node.secret_key, region_name="us-east-1",
        config=Config(retries={"max_attempts": 0}, **config))


def serving(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


def holders(pg) -> dict:
    """Live address leases per node."""
    rows = pg.psql("SELECT node, count(*) FROM eddy_leases WHERE expires_at > now() GROUP BY node")
    return {node: int(n) for node, n in rows}


def wait_for(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


class Producing:
    """An idempotent producer writing `v0`, `v1`, ... to `topic` in the background until
    `finish`; `acked` holds (ack time, value) in acknowledgement order, `by_partition` the
    ack times per partition, `failed` the delivery errors."""

    def __init__(self, bootstrap: str, topic: str, timeout_ms: int = 120000):
        self.bootstrap, self.topic, self.timeout_ms = bootstrap, topic, timeout_ms
        self.acked, self.failed, self.by_partition = [], [], {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _done(self, err, m):
        if err:
            self.failed.append(err)
        else:
            at = time.monotonic()
            self.acked.append((at, m.value().decode()))
            self.by_partition.setdefault(m.partition(), []).append(at)

    def _run(self):
        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                      "linger.ms": 5, "message.timeout.ms": self.timeout_ms})
        i = 0
        while not self._stop.is_set():
            v = f"v{i}"
            p.produce(self.topic, key=v.encode(), value=v.encode(), on_delivery=self._done)
            i += 1
            p.poll(0)
            time.sleep(0.002)
        assert p.flush(self.timeout_ms / 1000 + 30) == 0

    def longest_pause(self, start: float, end: float) -> float:
        """The longest time between `start` and `end` that some partition went without
        an acknowledgement: how long the partitions a fault touched were unavailable."""
        longest = 0.0
        for acked in list(self.by_partition.values()):
            times = [start] + [t for t in acked if start < t < end] + [end]
            longest = max(longest, *(b - a for a, b in zip(times, times[1:])))
        return longest

    def values(self) -> set:
        return {v for _, v in self.acked}

    def finish(self):
        self._stop.set()
        self._thread.join(self.timeout_ms / 1000 + 60)
        assert not self.failed, self.failed[:5]


def assert_each_acked_once(bootstrap: str, topic: str, acked: set, acked_at: dict | None = None):
    """Every acknowledged record of `topic` is there, and no record twice. A record stored
    twice is named with where each copy is and, from `acked_at` (value: monotonic time),
    when it was acknowledged, so the fault it came from can be told."""
    messages = read_to_end(bootstrap, topic)
    values = [m.value().decode() for m in messages]
    if len(values) != len(set(values)):
        where = {}
        for m in messages:
            where.setdefault(m.value().decode(), []).append((m.partition(), m.offset()))
        twice = [(v, at, (acked_at or {}).get(v)) for v, at in where.items() if len(at) > 1]
        raise AssertionError(f"{len(twice)} records stored twice; the first (value, "
                             f"[(partition, offset)], acknowledged at): {twice[:5]}")
    missing = acked - set(values)
    assert not missing, f"{len(missing)} acknowledged records lost"
