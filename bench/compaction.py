#!/usr/bin/env python3
"""Log compaction throughput and memory: one partition of SIZE_MB (default 1024) of
1 KiB records over KEYS distinct keys (default a tenth of the records, so 10 % of the
records are live), produced by librdkafka (confluent-kafka, lz4, idempotent), then made
compacted with IncrementalAlterConfigs; the clock runs from that change until the
partition holds one record per key.

    .venv/bin/python bench/compaction.py BIN

BIN is an `eddy` release build, run on a fresh data dir under $SCRATCH (default
/tmp/eddy-bench). Reported: the partition's stored bytes before and after
(`eddy_catalog_*` is not needed: the records removed and passes come from
`eddy_kafka_compaction_*`), compaction MB/s (bytes before / wall time), Eddy's CPU
seconds during compaction, and its resident memory: peak over the compaction (VmRSS
sampled every 50 ms) against the level just before it. Kafka itself cannot be had here,
so there is no peer run.

Env: SIZE_MB, KEYS, TABLER (see below), MAP_MB (--kafka-compaction-map-mb, default 64),
PASS_MB (--kafka-compaction-pass-mb, default 16), ORDER: `random`
(default: each record's key drawn at random, so live records are spread over the whole
partition and most batches are rewritten) or `cyclic` (keys in turn: the last tenth holds
every live record, the rest goes whole).
"""

import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, NewTopic)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from conftest import Eddy, free_port  # noqa: E402

SCRATCH = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))
SIZE_MB = int(os.environ.get("SIZE_MB", "1024"))
RECORD = 1000
RECORDS = SIZE_MB * (1 << 20) // RECORD
KEYS = int(os.environ.get("KEYS", str(RECORDS // 10)))
MAP_MB = os.environ.get("MAP_MB", "64")
PASS_MB = os.environ.get("PASS_MB", "16")
ORDER = os.environ.get("ORDER", "random")
# TABLER=off keeps the background tabler away (a day's seal age, a TiB of seal size), so
# the memory measured is compaction's alone; by default the topic's table is kept up
# and rewritten after the passes, as in production.
TABLER = os.environ.get("TABLER", "on")


def metrics(eddy):
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        return r.read().decode()


def counter(text, name):
    m = re.search(rf"^{name}(?:_total)? (\S+)", text, re.M)
    return float(m.group(1)) if m else 0.0


def proc_status(pid, field):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def dir_bytes(root):
    return sum(f.stat().st_size for f in Path(root).rglob("*") if f.is_file())


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    binary = sys.argv[1]
    SCRATCH.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=SCRATCH))
    eddy = Eddy(data_dir=tmp / "data", s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port(),
                extra_args=["--kafka-compaction-check-interval-ms", "100",
                            "--kafka-compaction-map-mb", MAP_MB,
                            "--kafka-compaction-pass-mb", PASS_MB] + (
                    ["--table-seal-age-secs", "86400", "--table-seal-mb", "1048576"]
                    if TABLER == "off" else []),
                env={"EDDY_BIN": binary})
    os.environ["EDDY_BIN"] = binary
    eddy.start()
    try:
        topic = "compaction-bench"
        a = AdminClient({"bootstrap.servers": eddy.bootstrap})
        a.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
        p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 20,
                      "batch.size": 1 << 20, "compression.type": "lz4",
                      "enable.idempotence": True})
        # Incompressible and different for every record, so the partition stores about
        # SIZE_MB (one value repeated would shrink to almost nothing under lz4).
        pool = os.urandom(1 << 24)
        rng = random.Random(1)
        # An hour old, so the head (segment.ms) never holds anything back.
        ts = int(time.time() * 1000) - 3_600_000
        t0 = time.time()
        keys = set()
        for i in range(RECORDS):
            at = (i * 7919) % ((1 << 24) - RECORD)
            value = os.urandom(16) + pool[at : at + RECORD - 32]
            key = i % KEYS if ORDER == "cyclic" else rng.randrange(KEYS)
            keys.add(key)
            while True:
                try:
                    p.produce(topic, key=b"key-%09d" % key, value=value, timestamp=ts)
                    break
                except BufferError:
                    p.poll(0.05)
        assert p.flush(300) == 0
        produce_s = time.time() - t0
        c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": "bench"})
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        stored_bytes = dir_bytes(eddy.data_dir)
        print(f"data dir {stored_bytes / 1e6:.0f} MB; produced {high} records ({SIZE_MB} MiB of 1 KiB records, {KEYS} keys) "
              f"in {produce_s:.1f} s", flush=True)
        pid = eddy.proc.pid
        disk_before = dir_bytes(eddy.data_dir)
        rss_before = proc_status(pid, "VmRSS")
        cpu_before = cpu_seconds(pid)
        peak = [rss_before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], proc_status(pid, "VmRSS"))
                time.sleep(0.05)

        sampler = threading.Thread(target=sample)
        sampler.start()
        t0 = time.time()
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in {
                "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
                "segment.ms": "100"}.items()])
        for f in a.incremental_alter_configs([res]).values():
            f.result(timeout=30)
        live = len(keys)
        want = high - live
        while counter(metrics(eddy), "eddy_kafka_compaction_removed_records") < want:
            time.sleep(0.05)
            assert time.time() - t0 < 3600
        wall = time.time() - t0
        cpu = cpu_seconds(pid) - cpu_before
        peak_compaction = peak[0]
        text = metrics(eddy)
        freed = counter(text, "eddy_kafka_compaction_removed_bytes")
        passes = counter(text, "eddy_kafka_compaction_passes")
        stored = SIZE_MB * (1 << 20)
        # Freed log segments go once a checkpoint no longer needs them: give it a while.
        deadline = time.time() + 120
        while dir_bytes(eddy.data_dir) > disk_before / 2 and time.time() < deadline:
            time.sleep(1)
        disk_after = dir_bytes(eddy.data_dir)
        if TABLER == "on":
            # The table's rewrite follows the passes: sample through it too (the loading
            # reader below waits for it).
            RestCatalog = __import__("pyiceberg.catalog.rest", fromlist=["RestCatalog"]).RestCatalog
            cat = RestCatalog(
                "eddy", uri=f"{eddy.http_url}/iceberg",
                credential=f"{eddy.access_key}:{eddy.secret_key}", warehouse="kafka",
                **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"})
            rows = cat.load_table(("kafka_topics", topic)).scan(
                selected_fields=("offset",)).to_arrow().num_rows
            assert rows == live, f"the table holds {rows} rows, not {live}"
        done.set()
        sampler.join()
        print(f"tabler {TABLER}, pass {PASS_MB} MiB: compacted ({ORDER} keys) to {live} records in {wall:.1f} s: {stored / wall / 1e6:.1f} MB/s "
              f"of partition ({passes:.0f} passes, {freed / 1e6:.0f} MB freed), "
              f"Eddy CPU {cpu:.1f} s, RSS {rss_before / 2**20:.0f} MiB before, "
              f"peak {peak_compaction / 2**20:.0f} MiB "
              f"(+{(peak_compaction - rss_before) / 2**20:.0f} MiB), "
              f"through the table's rewrite {peak[0] / 2**20:.0f} MiB "
              f"(+{(peak[0] - rss_before) / 2**20:.0f} MiB); "
              f"data dir {disk_before / 1e6:.0f} MB before, {disk_after / 1e6:.0f} MB after",
              flush=True)
        c.close()
    finally:
        eddy.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
