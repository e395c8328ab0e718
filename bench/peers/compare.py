#!/usr/bin/env python3
"""Eddy side by side with Apache Kafka 4.x and MinIO: the same workloads against each, one
system at a time on this machine, in one run, and a table of ratios.

    bench/peers/run [--only kafka,s3,notify] [--passes N] ...   (run sets up the tools)

Kafka (Eddy; Apache Kafka with `flush.messages=1`, the durability Eddy gives; Apache
Kafka at its defaults, which acknowledge before the page cache reaches the disk):
  - produce, acks=all, 1 KiB and 16 KiB values, 1 and 16 partitions, with the Java client's
    ProducerPerformance (its defaults otherwise: linger.ms=5, batch.size=16384) and with
    librdkafka's rdkafka_performance (linger.ms=5, batch.size 1 MB): MB/s at full load
    (--produce-mb MB per run), then p50/p99/p99.9 latency at half that rate and at one
    rate for every system (--fixed-mb MiB/s), --half-s s each after 2 s of warm-up;
  - consume MB/s (ConsumerPerformance over the 1 KiB 16-partition topic just written) and
    end-to-end latency (EndToEndLatency: one record at a time, produce to receipt).
Idle consumers (Eddy; Apache Kafka at its defaults): a group of 100 confluent-kafka
  consumers over a 1,000-partition topic nobody writes to: seconds until every partition is
  assigned, the server's CPU while they wait in long polls, and produce p99 into another
  topic meanwhile.
S3 (Eddy vs MinIO, both 4+2 erasure coding over six directories on the same disk): warp
  put, get and mixed at 4 KiB, 1 MiB and 64 MiB, and list over --list-objects objects:
  ops/s, MiB/s, p50/p99 request time, and the server's CPU seconds per GiB moved (from
  /proc, over warp's measured interval).
Notifications: warp put of 4 KiB objects into a bucket whose every ObjectCreated event
  goes to a Kafka topic: Eddy (the event row commits in the object's transaction) vs MinIO
  publishing to Apache Kafka; PUT/s, and the topic must then hold one record per PUT.

With EDDY_BASE_BIN set, that build runs too, as "eddy-base", one more peer of every part:
a before/after of a change in the same run as the peers.

Systems alternate within a pass (the order reverses on odd passes); each starts on a fresh
data directory under the scratch directory and is stopped before the next. Raw outputs
and the table (results.md) stay in SCRATCH/results-<time>/. Clients share the two cores
with the server: compare the ratios of one run, not absolute numbers across machines.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from conftest import free_port, new_eddy  # noqa: E402

KIB = 1024
MIB = 1024 * 1024
TICK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"== {msg}", file=sys.stderr, flush=True)


def wait_until(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if cond():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def port_open(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def cpu_seconds(pid):
    """User + system CPU seconds of a process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class CpuSampler:
    """Samples a server's CPU seconds every 0.25 s, so that the CPU of a window that a tool
    reports afterwards (warp's measured interval) can be read back."""

    def __init__(self, pid):
        self.pid, self.samples, self.stop_flag = pid, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.is_set():
            try:
                self.samples.append((time.time(), cpu_seconds(self.pid)))
            except OSError:
                return
            self.stop_flag.wait(0.25)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()

    def between(self, t0, t1):
        inside = [c for t, c in self.samples if t0 <= t <= t1]
        before = [c for t, c in self.samples if t <= t0]
        after = [c for t, c in self.samples if t >= t1]
        a = before[-1] if before else (inside[0] if inside else None)
        b = after[0] if after else (inside[-1] if inside else None)
        return None if a is None or b is None else b - a


# ------------------------------------------------------------------------------ servers

class Server:
    """One system under test: a process, its endpoints, and how to stop it."""

    def __init__(self, name, proc, pid, bootstrap=None, s3=None, eddy=None):
        self.name, self.proc, self.pid = name, proc, pid
        self.bootstrap, self.s3, self.eddy = bootstrap, s3, eddy

    def cpu(self):
        return cpu_seconds(self.pid)

    def stop(self):
        if self.eddy is not None:
            self.eddy.stop()
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# The background tabler held back past a run: no seal starts on its own.
SEALS_HELD_BACK = {"EDDY_TABLE_SEAL_MB": "100000", "EDDY_TABLE_SEAL_AGE_SECS": "100000"}


def eddy_under_test(args):
    """$EDDY_BIN (exits without it); sets args.rdkafka_perf ($RDKAFKA_PERF, or where
    bench/peers/run builds it under --scratch) and makes the scratch directory."""
    binary = os.environ.get("EDDY_BIN")
    if not binary:
        sys.exit("set EDDY_BIN to the eddy build to measure")
    args.rdkafka_perf = os.environ.get("RDKAFKA_PERF",
                                       f"{args.scratch}/librdkafka/examples/rdkafka_performance")
    Path(args.scratch).mkdir(parents=True, exist_ok=True)
    return binary


def start_eddy(data, out, env=None, name="eddy"):
    """Eddy from $EDDY_BIN, or as "eddy-base" from $EDDY_BASE_BIN (an earlier build run
    beside it as one more peer, for a before/after in the same run)."""
    binary = os.environ["EDDY_BASE_BIN"] if name == "eddy-base" else os.environ.get("EDDY_BIN")
    saved = os.environ.get("EDDY_BIN")
    if binary:
        os.environ["EDDY_BIN"] = binary
    try:
        server = new_eddy(data, env=env or {}).start()
    finally:
        if saved is None:
            os.environ.pop("EDDY_BIN", None)
        else:
            os.environ["EDDY_BIN"] = saved
    return Server(name, server.proc, server.proc.pid, bootstrap=server.bootstrap,
                  s3=server.s3_url, eddy=server)


def start_kafka(name, data, out, extra=()):
    port = free_port()
    while port_open(port + 1):
        port = free_port()
    log_file = open(out / f"{name}.server.log", "w")
    proc = subprocess.Popen([str(ROOT / "scripts" / "kafka"), "start", str(data), str(port), *extra],
                            stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    wait_until(lambda: port_open(port), 120, f"{name} on {port}")
    return Server(name, proc, proc.pid, bootstrap=f"127.0.0.1:{port}")


def start_minio(data, out, env=None):
    port = free_port()
    while port_open(port + 1):
        port = free_port()
    log_file = open(out / "minio.server.log", "w")
    proc = subprocess.Popen([str(HERE / "minio"), "start", str(data), str(port)],
                            stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                            env=dict(os.environ, **(env or {})))

    def ready():
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/minio/health/cluster", timeout=2) as r:
            return r.status == 200
    try:
        wait_until(ready, 120, f"minio on {port}")
    except RuntimeError:
        proc.kill()
        raise
    return Server("minio", proc, proc.pid, s3=f"http://127.0.0.1:{port}")


# ------------------------------------------------------------------------------ Kafka

def create_topic(bootstrap, name, partitions, config=None):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(timeout=60)
    # Both brokers answer CreateTopics before every partition has a leader in metadata.
    def leaders():
        md = a.list_topics(name, timeout=10).topics[name]
        return md.error is None and len(md.partitions) == partitions and \
            all(pm.leader >= 0 for pm in md.partitions.values())
    wait_until(leaders, 60, f"leaders of {name}")


def delete_topic(bootstrap, name):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the result is in
    try:
        admin.delete_topics([name])[name].result(timeout=60)
    except Exception as e:  # a failed delete only costs disk space
        log(f"delete {name}: {e}")


def kafka_tool(cls, *args, out_file, timeout=900):
    with open(out_file, "w") as f:
        subprocess.run([str(ROOT / "scripts" / "kafka"), "tool", cls, *map(str, args)], stdout=f,
                       stderr=subprocess.STDOUT, timeout=timeout, check=False)
    return Path(out_file).read_text()


PP_LINE = re.compile(
    r"\d+(?P<steady> steady state)? records sent, (?P<msgs>[\d.]+) records/sec \((?P<MBps>[\d.]+) MB/sec\), "
    r"[\d.]+ ms avg latency, [\d.]+ ms max latency, (?P<p50>\d+) ms 50th, \d+ ms 95th, "
    r"(?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th")


def java_produce(server, topic, size, records, throughput, out_file, warmup=0):
    """ProducerPerformance: {'MBps', 'msgs', 'p50', 'p99', 'p999'} (MB = 2^20 bytes, as it
    prints them; after `warmup` records, its steady-state line), or None when it did not
    finish."""
    warm = ["--warmup-records", warmup] if warmup else []
    text = kafka_tool("ProducerPerformance", "--topic", topic, "--num-records", records,
                      "--record-size", size, "--throughput", throughput, *warm, "--producer-props",
                      f"bootstrap.servers={server.bootstrap}", "acks=all", out_file=out_file)
    lines = [m for m in PP_LINE.finditer(text) if bool(m.group("steady")) == bool(warmup)]
    if not lines:
        return None
    return {k: float(lines[-1].group(k)) for k in ("msgs", "MBps", "p50", "p99", "p999")}


def rdkafka_last_row(text):
    rows = [r for r in text.splitlines() if re.match(r"^\|\s+\d", r)]
    return rows[-1].replace("|", " ").split() if rows else None


def percentiles_us(path, skip_first):
    """p50/p99/p99.9 in ms of the latencies (µs, one per line) after the first `skip_first`."""
    try:
        vals = sorted(int(x) for x in Path(path).read_text().split()[skip_first:])
    except FileNotFoundError:
        return None
    if not vals:
        return None

    def q(p):
        return vals[min(len(vals) - 1, int(len(vals) * p))] / 1000
    return {"p50": q(0.50), "p99": q(0.99), "p999": q(0.999)}


def rdkafka_produce(args, server, topic, size, records, rate, partitions, out_file):
    """rdkafka_performance: {'MBps', 'msgs'} at full load (rate None); with a rate, the
    latencies of each delivery report too. MB = 10^6 bytes here, as it prints them; the
    table converts to 2^20."""
    cmd = [args.rdkafka_perf, "-P", "-t", topic, "-b", server.bootstrap, "-s", str(size),
           "-a", "-1", "-c", str(records), "-u", "-X", "linger.ms=5"]
    if partitions > 1:
        cmd += ["-X", "sticky.partitioning.linger.ms=0"]
    lat_file = str(out_file) + ".us"
    if rate:
        cmd += ["-r", str(rate), "-l", "-A", lat_file]
    with open(out_file, "w") as f:
        subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=900, check=False)
    row = rdkafka_last_row(Path(out_file).read_text())
    if row is None:
        return None
    res = {"msgs": float(row[5]), "MBps": float(row[6]) * 1e6 / MIB}
    if rate:
        lat = percentiles_us(lat_file, skip_first=2 * rate)  # the first 2 s: connection set-up
        if lat:
            res.update(lat)
    return res


class Rows(list):
    """Result rows (part, measure, system, value); `part` is set by the caller per group."""
    part = None

    def append(self, row):
        super().append((self.part, *row))


def latency_run(args, server, client, topic, size, parts, rate, topic_config, out):
    """Produce latency at `rate` msgs/s for --half-s seconds after 2 s of warm-up, into a
    fresh topic (of its own name: a deleted name may not be free again at once) that is
    deleted afterwards."""
    topic = f"{topic}-{rate}"
    create_topic(server.bootstrap, topic, parts, topic_config)
    records = rate * (args.half_s + 2)
    out_file = out / f"{server.name}.{topic}.txt"
    try:
        if client == "java":
            return java_produce(server, topic, size, records, rate, out_file, warmup=2 * rate)
        return rdkafka_produce(args, server, topic, size, records, rate, parts, out_file)
    finally:
        delete_topic(server.bootstrap, topic)


def kafka_workloads(args, server, out, rows):
    """Every Kafka comparison against one running broker; appends result rows."""
    topic_config = {"flush.messages": "1"} if server.name == "kafka-flush" else {}
    n = 0
    consumed_topic = None
    for client in args.clients:
        if client == "rdkafka" and not args.rdkafka_perf:
            continue
        for size in (1 * KIB, 16 * KIB):
            for parts in (1, 16):
                n += 1
                case = f"{client} {size // KIB} KiB x{parts}"
                if args.kafka_cases and f"{client}-{size // KIB}KiB-x{parts}" not in args.kafka_cases:
                    continue
                records = max(1000, args.produce_mb * MIB // size)
                topic = f"t{n}-{client}-{size}-{parts}"
                create_topic(server.bootstrap, topic, parts, topic_config)
                c0 = server.cpu()
                if client == "java":
                    full = java_produce(server, topic, size, records, -1, out / f"{server.name}.{topic}.full.txt")
                else:
                    full = rdkafka_produce(args, server, topic, size, records, None, parts,
                                           out / f"{server.name}.{topic}.full.txt")
                cpu = server.cpu() - c0
                if full is None:
                    log(f"  {case}: no result (see {server.name}.{topic}.full.txt)")
                    continue
                mb = records * size / MIB
                rows.append((f"produce MB/s, {case}", server.name, full["MBps"]))
                rows.append((f"produce server CPU s/GiB, {case}", server.name, cpu / (mb / 1024)))
                log(f"  {case}: {full['MBps']:.1f} MB/s, server CPU {cpu / (mb / 1024):.1f} s/GiB")
                keep = client == "java" and size == KIB and parts == 16
                if keep:  # read back by ConsumerPerformance below
                    consumed_topic = (topic, records)
                # Latency at half of this system's own maximum, and at one rate for all
                # systems (--fixed-mb MiB/s), since half of a faster system's maximum is
                # a heavier load.
                loads = [("half load", max(100, int(full["msgs"] / 2)))]
                if args.fixed_mb:
                    loads.append((f"{args.fixed_mb} MiB/s", max(10, args.fixed_mb * MIB // size)))
                for label, rate in loads:
                    lat = latency_run(args, server, client, topic + "-lat", size, parts, rate, topic_config, out)
                    if lat and "p99" in lat:
                        for q in ("p50", "p99", "p999"):
                            rows.append((f"produce {q.replace('p999', 'p99.9')} ms at {label}, {case}",
                                         server.name, lat[q]))
                        log(f"  {case} at {rate} msgs/s: p50 {lat['p50']} p99 {lat['p99']} p99.9 {lat['p999']} ms")
                if not keep:
                    delete_topic(server.bootstrap, topic)
    if consumed_topic:
        topic, records = consumed_topic
        text = kafka_tool("ConsumerPerformance", "--bootstrap-server", server.bootstrap, "--topic", topic,
                          "--messages", records, "--timeout", 60000,
                          out_file=out / f"{server.name}.consume.txt")
        data = [ln for ln in text.splitlines() if re.match(r"^\d{4}-\d\d-\d\d", ln)]
        if data:
            cols = [c.strip() for c in data[-1].split(",")]
            rows.append(("consume MB/s, 1 KiB x16 (ConsumerPerformance, fetch time)", server.name, float(cols[8])))
            log(f"  consume: {cols[8]} MB/s (fetch), {cols[3]} MB/s (with the group join)")
        delete_topic(server.bootstrap, topic)
    e2e = "e2e-latency"
    create_topic(server.bootstrap, e2e, 1, topic_config)
    text = kafka_tool("EndToEndLatency", "--bootstrap-server", server.bootstrap, "--topic", e2e,
                      "--num-records", args.e2e_records, "--producer-acks", "all", "--record-size", 1024,
                      out_file=out / f"{server.name}.e2e.txt")
    m = re.search(r"Percentiles: 50th = ([\d.]+), 99th = ([\d.]+), 99.9th = ([\d.]+)", text)
    if m:
        rows.append(("end-to-end latency p50 ms, 1 KiB, one at a time", server.name, float(m.group(1))))
        rows.append(("end-to-end latency p99 ms, 1 KiB, one at a time", server.name, float(m.group(2))))
        log(f"  end to end: p50 {m.group(1)} p99 {m.group(2)} ms")


def idle_workload(args, server, out, rows):
    """A group of --idle-consumers confluent-kafka consumers subscribed to a topic of
    --idle-partitions partitions that nobody writes to: how long until every partition is
    assigned, the server's CPU while they sit parked in long polls, and produce latency
    into another topic meanwhile."""
    from confluent_kafka import Consumer
    topic, n = "idle", args.idle_consumers
    create_topic(server.bootstrap, topic, args.idle_partitions)
    assigned = [0] * n
    stop = threading.Event()

    def member(i):
        c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "idle-group",
                      "enable.auto.commit": False, "client.id": f"idle-{i}"})

        def on_assign(_, ps):
            assigned[i] = len(ps)

        def on_revoke(_, ps):
            assigned[i] = 0
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        while not stop.is_set():
            c.poll(0.5)
        c.close()

    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(n)]
    t0 = time.time()
    for t in threads:
        t.start()
    try:
        # Every partition assigned, and still so 3 s later (no rebalance in progress).
        deadline, full_since = time.time() + 300, None
        while time.time() < deadline:
            if sum(assigned) == args.idle_partitions:
                full_since = full_since or time.time()
                if time.time() - full_since >= 3:
                    break
            else:
                full_since = None
            time.sleep(0.1)
        if full_since is None:
            log(f"  idle: {sum(assigned)} of {args.idle_partitions} partitions assigned after 300 s")
            return
        case = f"{n} idle consumers over {args.idle_partitions} partitions"
        rows.append((f"{case}: seconds until all are assigned", server.name, full_since - t0))
        c0, w0 = server.cpu(), time.time()
        time.sleep(20)
        cpu_share = (server.cpu() - c0) / (time.time() - w0)
        rows.append((f"{case}: server CPU % while they wait", server.name, cpu_share * 100))
        log(f"  idle: assigned in {full_since - t0:.1f} s; server CPU {cpu_share * 100:.1f} % while parked")
        if args.rdkafka_perf:
            rate = max(10, (args.fixed_mb or 5) * MIB // KIB)
            lat = latency_run(args, server, "rdkafka", "busy", KIB, 1, rate, {}, out)
            if lat and "p99" in lat:
                rows.append((f"{case}: produce p99 ms at {args.fixed_mb or 5} MiB/s to another topic",
                             server.name, lat["p99"]))
                log(f"  idle: produce p99 {lat['p99']} ms beside them")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)


# ------------------------------------------------------------------------------ S3

def s3_client(server):
    import boto3
    from botocore.client import Config
    return boto3.client("s3", endpoint_url=server.s3, aws_access_key_id="eddyadmin",
                        aws_secret_access_key="eddyadmin", region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


def warp(args, server, sampler, op, out_file, *extra):
    """One warp benchmark; the totals of its measured interval and the server's CPU in it."""
    host = server.s3.split("//", 1)[1]
    cmd = [args.warp, op, "--host", host, "--access-key", "eddyadmin", "--secret-key", "eddyadmin",
           "--json", "--no-color", "--benchdata", str(out_file) + ".data", *map(str, extra)]
    with open(out_file, "w") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=3600, check=False)
    text = Path(out_file).read_text()
    start = text.find("{")
    if p.returncode != 0 or start < 0:
        log(f"  warp {op} failed (exit {p.returncode}), see {out_file}")
        return None
    doc, _ = json.JSONDecoder().raw_decode(text[start:])
    return summarize_warp(doc, sampler)


def parse_time(s):
    # RFC 3339 with nanoseconds: Python's parser takes at most microseconds.
    s = re.sub(r"(\.\d{6})\d+", r"\1", s).replace("Z", "+00:00")
    return datetime.fromisoformat(s).timestamp()


def summarize_warp(doc, sampler):
    """ops/s, MiB/s, request p50/p99 (ms) per operation type of warp's JSON aggregate (warp
    1.0's layout: one entry per operation type, measured over the same interval in a mixed
    run), their sums, and the server's CPU seconds per GiB over the measured interval."""
    res = {}
    total_ops = total_bps = total_bytes = 0.0
    t_start = t_end = None
    for o in doc.get("operations") or []:
        tp = o.get("throughput") or {}
        single = o.get("single_sized_requests") or {}
        res[o["type"]] = {
            "ops_s": tp.get("average_ops"),
            "mib_s": (tp.get("average_bps") or 0) / MIB,
            "p50": single.get("dur_median_millis"),
            "p99": single.get("dur_99_millis"),
        }
        total_ops += tp.get("average_ops") or 0
        total_bps += tp.get("average_bps") or 0
        total_bytes += (tp.get("average_bps") or 0) * (tp.get("measure_duration_millis") or 0) / 1000
        if tp.get("start_time") and tp.get("end_time"):
            t0, t1 = parse_time(tp["start_time"]), parse_time(tp["end_time"])
            t_start = t0 if t_start is None else min(t_start, t0)
            t_end = t1 if t_end is None else max(t_end, t1)
    res["total"] = {"ops_s": total_ops, "mib_s": total_bps / MIB}
    if t_start and t_end and total_bytes:
        cpu = sampler.between(t_start, t_end)
        if cpu is not None:
            res["total"]["cpu_s_per_gib"] = cpu / (total_bytes / (1024 * MIB))
    return res


def list_rate(benchdata):
    """(objects listed per second, median seconds of one LIST operation) from warp's raw
    operations: its aggregate skips LIST when few listings (each of many pages) end inside
    the measured interval, as MinIO's did."""
    try:
        text = subprocess.run(["zstd", "-dc", str(benchdata)], capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    lines = text.splitlines()
    if not lines:
        return None
    col = {name: i for i, name in enumerate(lines[0].split("\t"))}
    ops = [f for f in (ln.split("\t") for ln in lines[1:])
           if len(f) == len(col) and f[col["op"]] == "LIST" and not f[col["error"]]]
    if not ops:
        return None
    start = min(parse_time(f[col["start"]]) for f in ops)
    end = max(parse_time(f[col["end"]]) for f in ops)
    objects = sum(int(f[col["n_objects"]]) for f in ops)
    durations = sorted(int(f[col["duration_ns"]]) / 1e9 for f in ops)
    return objects / (end - start), durations[len(durations) // 2]


S3_CASES = [  # (op, size, concurrency, objects prepared for get and mixed)
    ("put", "4KiB", 16, None), ("get", "4KiB", 16, 2500), ("mixed", "4KiB", 16, 2500),
    ("put", "1MiB", 8, None), ("get", "1MiB", 8, 200), ("mixed", "1MiB", 8, 200),
    ("put", "64MiB", 4, None), ("get", "64MiB", 4, 12), ("mixed", "64MiB", 4, 12),
]


def s3_workloads(args, server, out, rows):
    sampler = CpuSampler(server.pid)
    try:
        for op, size, conc, objects in S3_CASES:
            if args.s3_cases and f"{op}-{size}" not in args.s3_cases:
                continue
            extra = ["--obj.size", size, "--concurrent", conc, "--duration", f"{args.warp_s}s"]
            if objects:
                extra += ["--objects", objects]
            r = warp(args, server, sampler, op, out / f"{server.name}.warp-{op}-{size}.txt", *extra)
            if not r:
                continue
            case = f"{op} {size}, {conc} clients"
            t = r["total"]
            rows.append((f"warp {case}: ops/s", server.name, t["ops_s"]))
            rows.append((f"warp {case}: MiB/s", server.name, t["mib_s"]))
            kinds = ("PUT", "GET") if op == "mixed" else (op.upper(),)
            for kind in kinds:  # a get run's preparation PUTs are not its measure
                if kind in r and r[kind]["p50"] is not None:
                    rows.append((f"warp {case}: {kind} p50 ms", server.name, r[kind]["p50"]))
                    rows.append((f"warp {case}: {kind} p99 ms", server.name, r[kind]["p99"]))
            if "cpu_s_per_gib" in t:
                rows.append((f"warp {case}: server CPU s/GiB", server.name, t["cpu_s_per_gib"]))
            log(f"  warp {case}: {t['ops_s']:.0f} ops/s, {t['mib_s']:.1f} MiB/s, "
                f"CPU {t.get('cpu_s_per_gib', float('nan')):.1f} s/GiB")
        if not args.list_objects:
            return
        data = out / f"{server.name}.warp-list.txt"
        r = warp(args, server, sampler, "list", data,
                 "--objects", args.list_objects, "--obj.size", "1KiB", "--concurrent", 8,
                 "--duration", f"{args.warp_s}s")
        listed = r and list_rate(Path(str(data) + ".data.csv.zst"))
        if listed:
            rate, median_s = listed
            rows.append((f"warp list of {args.list_objects:,} objects, 8 clients: objects listed/s",
                         server.name, rate))
            rows.append((f"warp list of {args.list_objects:,} objects, 8 clients: "
                         f"one client's listing of {args.list_objects // 8:,}, median ms",
                         server.name, median_s * 1000))
            log(f"  warp list: {rate:.0f} objects/s")
    finally:
        sampler.stop()


def notify_workload(args, server, bootstrap, out, rows):
    """warp put into a bucket with every ObjectCreated event sent to `bootstrap`'s topic."""
    s3 = s3_client(server)
    topic = "bucket-events"
    s3.create_bucket(Bucket="notified")
    if server.name.startswith("eddy"):
        s3.put_bucket_notification_configuration(Bucket="notified", NotificationConfiguration={
            "TopicConfigurations": [{"TopicArn": f"arn:aws:sns:us-east-1:eddy:{topic}",
                                     "Events": ["s3:ObjectCreated:*"]}]})
    else:
        s3.put_bucket_notification_configuration(Bucket="notified", NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": "arn:minio:sqs::PEER:kafka",
                                     "Events": ["s3:ObjectCreated:*"]}]})
    sampler = CpuSampler(server.pid)
    try:
        r = warp(args, server, sampler, "put", out / f"{server.name}.notify.txt", "--bucket", "notified",
                 "--noclear", "--obj.size", "4KiB", "--concurrent", 16, "--duration", f"{args.warp_s}s")
    finally:
        sampler.stop()
    if not r:
        return
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-count"})

    def events():
        md = c.list_topics(topic, timeout=30).topics[topic]
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in md.partitions)
    objects = sum(1 for page in s3.get_paginator("list_objects_v2").paginate(Bucket="notified")
                  for _ in page.get("Contents", []))
    at_end = events()
    # A peer that publishes after answering the PUT may still be sending: wait until the
    # count stops moving (3 s without change) or matches, at most 120 s.
    settled, last, still = at_end, None, 0
    deadline = time.time() + 120
    while settled != objects and still < 3 and time.time() < deadline:
        time.sleep(1)
        last, settled = settled, events()
        still = still + 1 if settled == last else 0
    c.close()
    rows.append(("PUT/s 4 KiB with a notification to a Kafka topic", server.name, r["total"]["ops_s"]))
    log(f"  notified PUT: {r['total']['ops_s']:.0f}/s; {objects} objects, {at_end} event records "
        f"when warp ended, {settled} after settling")
    (out / f"{server.name}.notify-count.txt").write_text(
        f"objects {objects}\nevents at the end {at_end}\nevents settled {settled}\n")
    rows.append(("event records missing when the last PUT was answered", server.name, objects - at_end))
    rows.append(("event records missing after settling (must be 0)", server.name, objects - settled))


# ------------------------------------------------------------------------------ table

PEERS = {"kafka": ("kafka-flush", "kafka-default"), "idle": ("kafka-default",),
         "s3": ("minio",), "notify": ("minio",)}
LOWER_IS_BETTER = ("ms", "CPU", "missing", "seconds until")


def table(rows, systems):
    """Markdown: one line per measure, the median over passes per system, and Eddy's ratio
    to each peer (for latencies and CPU, peer / Eddy, so that > 1 always favours Eddy)."""
    measures = list(dict.fromkeys(r[0] for r in rows))
    peers = [s for s in systems if s != "eddy"]
    head = "| measure | " + " | ".join(systems) + " | " + " | ".join(f"Eddy vs {p}" for p in peers) + " |"
    lines = [head, "|" + "---|" * (1 + len(systems) + len(peers))]
    for m in measures:
        med = {}
        for s in systems:
            vals = [v for (mm, ss, v) in rows if mm == m and ss == s and v is not None]
            med[s] = statistics.median(vals) if vals else None
        cells = [f"{med[s]:,.2f}" if med[s] is not None else "" for s in systems]
        ratios = []
        for p in peers:
            e, v = med.get("eddy"), med.get(p)
            if not e or not v:
                ratios.append("")
            elif any(w in m for w in LOWER_IS_BETTER):
                ratios.append(f"{v / e:.2f}x")
            else:
                ratios.append(f"{e / v:.2f}x")
        lines.append(f"| {m} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scratch", type=Path, default=Path("/work/scratch-peers"))
    ap.add_argument("--only", default="kafka,idle,s3,notify")
    ap.add_argument("--idle-partitions", type=int, default=1000)
    ap.add_argument("--idle-consumers", type=int, default=100)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--clients", default="java,rdkafka")
    ap.add_argument("--produce-mb", type=int, default=256, help="MiB per full-load produce run")
    ap.add_argument("--half-s", type=int, default=10, help="seconds of each latency run")
    ap.add_argument("--fixed-mb", type=int, default=5, help="the rate of the common latency run, MiB/s (0: none)")
    ap.add_argument("--e2e-records", type=int, default=2000)
    ap.add_argument("--warp-s", type=int, default=15)
    ap.add_argument("--list-objects", type=int, default=100_000, help="0: no list run")
    ap.add_argument("--s3-cases", default="",
                    help="warp cases to run, as op-size (put-64MiB,mixed-4KiB); default all")
    ap.add_argument("--kafka-cases", default="",
                    help="produce cases to run, as client-sizeKiB-xpartitions (java-16KiB-x1,rdkafka-1KiB-x16); default all")
    ap.add_argument("--warp", default=os.environ.get("WARP"))
    ap.add_argument("--rdkafka-perf", default=os.environ.get("RDKAFKA_PERF"))
    args = ap.parse_args()
    args.clients = args.clients.split(",")
    args.s3_cases = [c for c in args.s3_cases.split(",") if c]
    args.kafka_cases = [c for c in args.kafka_cases.split(",") if c]
    base = ["eddy-base"] if os.environ.get("EDDY_BASE_BIN") else []
    only = args.only.split(",")
    if ("s3" in only or "notify" in only) and not (args.warp and os.access(args.warp, os.X_OK)):
        sys.exit("no warp binary (--warp or WARP): the S3 comparisons need MinIO's warp")
    out = args.scratch / ("results-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S"))
    out.mkdir(parents=True)
    rows = Rows()
    groups = []
    for part in ("kafka", "idle", "s3", "notify"):
        if part in only:
            groups.append(part)
    header = (f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2**30} GiB, "
              f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; eddy: {os.environ.get('EDDY_BIN', 'debug build')}")
    log(header)
    for pass_no in range(args.passes):
        for part in groups:
            rows.part = part
            systems = ["eddy", *base, *PEERS[part]]
            if pass_no % 2:
                systems.reverse()
            for name in systems:
                data = args.scratch / "data" / name
                shutil.rmtree(args.scratch / "data", ignore_errors=True)
                data.mkdir(parents=True)
                log(f"pass {pass_no + 1}, {part}: {name} (load {os.getloadavg()[0]:.1f})")
                kafka_for_events = None
                if part in ("kafka", "idle"):
                    server = (start_eddy(data, out, name=name) if name.startswith("eddy")
                              else start_kafka(name, data, out))
                    try:
                        if part == "kafka":
                            kafka_workloads(args, server, out, rows)
                        else:
                            idle_workload(args, server, out, rows)
                    finally:
                        server.stop()
                elif part == "s3":
                    server = (start_eddy(data, out, name=name) if name.startswith("eddy")
                              else start_minio(data, out))
                    try:
                        s3_workloads(args, server, out, rows)
                    finally:
                        server.stop()
                else:
                    if name.startswith("eddy"):
                        server = start_eddy(data, out, name=name)
                        create_topic(server.bootstrap, "bucket-events", 1)
                        bootstrap = server.bootstrap
                    else:
                        kafka_for_events = start_kafka("kafka-events", data / "kafka", out)
                        create_topic(kafka_for_events.bootstrap, "bucket-events", 1)
                        bootstrap = kafka_for_events.bootstrap
                        server = start_minio(data / "minio", out, env={
                            "MINIO_NOTIFY_KAFKA_ENABLE_PEER": "on",
                            "MINIO_NOTIFY_KAFKA_BROKERS_PEER": bootstrap,
                            "MINIO_NOTIFY_KAFKA_TOPIC_PEER": "bucket-events"})
                    try:
                        notify_workload(args, server, bootstrap, out, rows)
                    finally:
                        server.stop()
                        if kafka_for_events:
                            kafka_for_events.stop()
                (out / "rows.json").write_text(json.dumps(rows, indent=1))
    shutil.rmtree(args.scratch / "data", ignore_errors=True)
    md = [f"Machine: {header}", ""]
    for part in groups:
        part_rows = [r[1:] for r in rows if r[0] == part]
        md += [f"### {part}", "", table(part_rows, ["eddy", *base, *PEERS[part]]), ""]
    (out / "results.md").write_text("\n".join(md))
    print("\n".join(md))
    log(f"raw outputs in {out}")


if __name__ == "__main__":
    main()
