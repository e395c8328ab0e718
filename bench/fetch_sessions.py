#!/usr/bin/env python3
"""Fetch sessions (KIP-227) on and off, one Java consumer on 1,000 partitions.

Each round starts a fresh `eddy serve` (data dir under SCRATCH, removed after the round,
free loopback ports), either as it comes (sessions on) or with
`--kafka-fetch-session-cache-slots 0` (no session is ever granted: every fetch is full),
the two alternating, ROUNDS rounds of each. In a round:

1. one topic of PARTITIONS (default 1000) partitions;
2. a trickle: RATE (default 5) records per second, 100-byte values, each to a random
   partition, from a confluent-kafka producer in this process, for the whole round
   (RATE=0: none, so every fetch waits out the consumer's fetch.max.wait.ms, 500 ms);
3. BASELINE (default 10) seconds with only the trickle: the broker's CPU per second
   without the consumer (produce handling, timers), subtracted below;
4. bench/java/ManyPartitionsConsumer: `assign`s every partition, polls WARMUP (default 8)
   seconds, then a WINDOW (default 30) second window. Over the window: the client's
   bytes sent per request (consumer-node-metrics outgoing-byte-total / request-total;
   in the window the consumer sends nothing but fetches: request-total is checked
   against fetch-manager fetch-total) and bytes received per request, and the broker's
   CPU (utime + stime of the eddy process from /proc/PID/stat) per Fetch it served
   (`eddy_kafka_requests_total{api="Fetch"}` on its /metrics), gross and net of the
   baseline.

The background tabler would seal the trickle into Parquet every 30 s, 1,000 partitions at
a time, in whichever window it fell; the server runs with --table-seal-age-secs 3600 so
that no seal lands in a window.

    .venv/bin/python bench/fetch_sessions.py EDDY_BIN CLASSPATH SCRATCH   (bench/fetch_sessions.sh)

Prints one JSON line per round on stdout, progress on stderr.
"""

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = int(os.environ.get("PARTITIONS", "1000"))
RATE = float(os.environ.get("RATE", "5"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
BASELINE = float(os.environ.get("BASELINE", "10"))
WARMUP = float(os.environ.get("WARMUP", "8"))
WINDOW = float(os.environ.get("WINDOW", "30"))
TICK = os.sysconf("SC_CLK_TCK")
CONFIGS = {"sessions": [], "no-sessions": ["--kafka-fetch-session-cache-slots", "0"]}


def log(msg):
    print(f"== {msg}", file=sys.stderr, flush=True)


def free_port():
    """A free loopback port below the ephemeral range (see tests/e2e/conftest.py)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    while True:
        port = random.randrange(10_000, low) if low > 12_000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # fields 14 and 15 of stat(5)


def fetches(http):
    """eddy_kafka_requests_total{api="Fetch"} (0 before the first)."""
    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(r'^eddy_kafka_requests_total\{[^}]*api="Fetch"[^}]*\} (\d+)', text, re.M)
    return int(m.group(1)) if m else 0


def gauge(http, name):
    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as r:
        m = re.search(rf"^{name} (\d+)", r.read().decode(), re.M)
    return int(m.group(1)) if m else 0


def sample(pid, http):
    return {"t": time.monotonic(), "cpu": cpu_seconds(pid), "fetches": fetches(http)}


class Trickle(threading.Thread):
    """RATE records a second to random partitions until stopped."""

    def __init__(self, boot, topic):
        super().__init__(daemon=True)
        self.p = Producer({"bootstrap.servers": boot, "linger.ms": 0})
        self.topic, self.stop, self.sent = topic, threading.Event(), 0

    def run(self):
        if RATE <= 0:  # no trickle: every fetch waits out fetch.max.wait.ms
            self.stop.wait()
        next_at = time.monotonic()
        while not self.stop.is_set():
            self.p.produce(self.topic, os.urandom(50).hex().encode(), partition=random.randrange(PARTITIONS))
            self.sent += 1
            self.p.poll(0)
            next_at += 1 / RATE
            self.stop.wait(max(0.0, next_at - time.monotonic()))
        assert self.p.flush(30) == 0
        self.p = None  # closed now, not at the server's stop


def one_round(eddy_bin, classpath, scratch, config, n):
    data = scratch / f"data-{config}-{n}"
    shutil.rmtree(data, ignore_errors=True)
    kafka, http, s3 = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    server_log = open(scratch / f"server-{config}-{n}.log", "w")
    server = subprocess.Popen(
        [eddy_bin, "serve", "--data-dir", str(data), "--kafka-listen", kafka, "--http-listen", http,
         "--s3-listen", s3, "--table-seal-age-secs", "3600", *CONFIGS[config]],
        stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "EDDY_LOG": os.environ.get("EDDY_LOG", "warn")})
    trickle = java = None
    try:
        deadline = time.time() + 60
        while "eddy ready:" not in (scratch / f"server-{config}-{n}.log").read_text():
            assert server.poll() is None and time.time() < deadline, "eddy did not start"
            time.sleep(0.1)
        topic = f"many-{n}"
        admin = AdminClient({"bootstrap.servers": kafka})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=60)
        del admin
        trickle = Trickle(kafka, topic)
        trickle.start()
        time.sleep(2)  # the producer's metadata and first batches
        b0 = sample(server.pid, http)
        time.sleep(BASELINE)
        b1 = sample(server.pid, http)
        assert b1["fetches"] == b0["fetches"], "fetches with no consumer"

        conf = scratch / "log4j2.properties"
        java = subprocess.Popen(
            ["java", f"-Dlog4j2.configurationFile={conf}", "-cp", f"{scratch / 'classes'}:{classpath}",
             "ManyPartitionsConsumer", kafka, topic, str(PARTITIONS), str(WARMUP), str(WINDOW)],
            stdout=subprocess.PIPE, stderr=open(scratch / f"java-{config}-{n}.log", "w"), text=True)
        w0 = w1 = client = None
        sessions = None
        for line in java.stdout:
            if line == "BENCH start\n":
                w0 = sample(server.pid, http)
            elif line == "BENCH end\n":
                w1 = sample(server.pid, http)
                sessions = gauge(http, "eddy_kafka_fetch_sessions")
            elif line.startswith("BENCH {"):
                client = json.loads(line[6:])
        assert java.wait(timeout=60) == 0 and client and w0 and w1, \
            f"the consumer failed: {(scratch / f'java-{config}-{n}.log').read_text()[-3000:]}"
    finally:
        if java is not None and java.poll() is None:
            java.kill()
        if trickle is not None:
            trickle.stop.set()
            trickle.join(timeout=40)
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        server_log.close()
        shutil.rmtree(data, ignore_errors=True)

    base_rate = (b1["cpu"] - b0["cpu"]) / (b1["t"] - b0["t"])
    secs = w1["t"] - w0["t"]
    cpu = w1["cpu"] - w0["cpu"]
    served = w1["fetches"] - w0["fetches"]
    reqs = client["request_total"]
    return {
        "config": config, "round": n, "window_s": secs, "broker_fetches": served,
        "client_requests": reqs, "client_fetches": client["fetch_total"],
        "req_bytes_per_request": client["outgoing_byte_total"] / reqs if reqs else None,
        "resp_bytes_per_request": client["incoming_byte_total"] / reqs if reqs else None,
        "broker_cpu_s": cpu, "baseline_cpu_per_s": base_rate,
        "cpu_us_per_fetch": cpu / served * 1e6 if served else None,
        "net_cpu_us_per_fetch": (cpu - base_rate * secs) / served * 1e6 if served else None,
        "records_polled": client["polled_records"], "records_sent": trickle.sent,
        "open_sessions_at_end": sessions,
    }


def main():
    eddy_bin, classpath, scratch = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    (scratch / "log4j2.properties").write_text(
        "status = warn\nappender.err.type = Console\nappender.err.name = ERR\n"
        "appender.err.target = SYSTEM_ERR\nappender.err.layout.type = PatternLayout\n"
        "appender.err.layout.pattern = [%d] %p %m (%c)%n\nrootLogger.level = WARN\n"
        "rootLogger.appenderRef.err.ref = ERR\n")
    for n in range(1, ROUNDS + 1):
        for config in CONFIGS:
            log(f"round {n}: {config}")
            r = one_round(eddy_bin, classpath, scratch, config, n)
            log(json.dumps(r))
            print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
