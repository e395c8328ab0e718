#!/usr/bin/env python3
"""The web console at scale, and its cost to clients.

1. Page and API times with 1,000 topics and 100,000 objects in one bucket: each console
   API a page calls (the topics list, first and last page; one topic; the overview; a
   bucket's root listing and one prefix's), 30 times each, p50 and p95 in ms; then the
   same pages rendered in headless Chromium (from the hash change to the table drawn).
2. Produce throughput with a console page open against none, alternating three times:
   librdkafka, 1 KiB values, acks=all, for 6 s each (a fresh topic each run), (a) with nothing else, (b) while a
   headless Chromium on this machine keeps the overview and a group's page open (they
   poll every 10 s and 2 s), (c) with those pages' requests made at the same rate by a
   thread, no browser (the server's own cost). Reported: MB/s of each, the ratios, and
   the CPU seconds Chromium itself used (on a 2-core machine it competes with the
   server and the producer; an operator's browser runs elsewhere).

    .venv/bin/python bench/console.py BIN

BIN is an `eddy` release build, on a fresh data dir under $SCRATCH (default
/tmp/eddy-bench). TOPICS, OBJECTS, SECONDS and ROUNDS override the sizes; ONLY=produce
runs the second part alone. No peer run: none of
the peers that install here has a console (MinIO's community edition dropped its own).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import requests
from botocore.config import Config
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from conftest import Eddy, free_port, npm_ci  # noqa: E402

SCRATCH = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))
TOPICS = int(os.environ.get("TOPICS", "1000"))
OBJECTS = int(os.environ.get("OBJECTS", "100000"))
SECONDS = int(os.environ.get("SECONDS", "4"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
IDLE = int(os.environ.get("IDLE", "60"))
BROWSER_DIR = Path(__file__).resolve().parents[1] / "tests" / "e2e" / "browser"


def timed(fn, n=30):
    fn()  # warm
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main():
    binary = sys.argv[1]
    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    # No background seals: a seal's Parquet writing in one run and not another would be
    # noise larger than what is measured.
    eddy = Eddy(data_dir=SCRATCH / "data", s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port(), env={"EDDY_BIN": binary},
                extra_args=["--table-seal-age-secs", "86400", "--table-seal-mb", "1048576"])
    os.environ["EDDY_BIN"] = binary
    eddy.start()
    try:
        run(eddy)
    finally:
        eddy.stop()


def fill(eddy, bucket):
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    names = [f"t{i:04d}" for i in range(TOPICS)]
    for i in range(0, len(names), 100):
        for f in admin.create_topics([NewTopic(n, 1, 1) for n in names[i:i + 100]]).values():
            f.result(60)
    s3 = boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=eddy.access_key,
                      aws_secret_access_key=eddy.secret_key, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}, max_pool_connections=32))
    s3.create_bucket(Bucket=bucket)
    started = time.time()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: s3.put_object(Bucket=bucket, Key=f"d{i % 100:02d}/o{i:06d}", Body=b"x"),
                      range(OBJECTS)))
    print(f"filled: {TOPICS} topics, {OBJECTS} objects in {time.time() - started:.0f} s", flush=True)


def run(eddy):
    if os.environ.get("ONLY") != "produce":
        pages(eddy)
    produce_cost(eddy)


def pages(eddy):
    bucket = "scale"
    fill(eddy, bucket)
    base = f"{eddy.http_url}/console"
    s = requests.Session()
    r = s.post(f"{base}/api/login", json={"access_key": eddy.access_key, "secret_key": eddy.secret_key})
    r.raise_for_status()
    calls = {
        "page /console/": lambda: s.get(f"{base}/"),
        "script app.js": lambda: s.get(f"{base}/assets/app.js"),
        "overview": lambda: s.get(f"{base}/api/overview"),
        "topics, first page": lambda: s.get(f"{base}/api/topics?offset=0&limit=50"),
        "topics, last page": lambda: s.get(f"{base}/api/topics?offset={TOPICS - 50}&limit=50"),
        "one topic": lambda: s.get(f"{base}/api/topics/t0500"),
        "bucket root (100 prefixes)": lambda: s.get(
            f"{base}/api/s3/{bucket}?list-type=2&delimiter=%2F&max-keys=100&prefix="),
        "bucket prefix, 100 keys": lambda: s.get(
            f"{base}/api/s3/{bucket}?list-type=2&delimiter=%2F&max-keys=100&prefix=d42%2F"),
    }
    print("| request | p50 ms | p95 ms |\n|---|---|---|")
    for name, fn in calls.items():
        assert fn().status_code == 200, name
        p50, p95 = timed(fn)
        print(f"| {name} | {p50:.1f} | {p95:.1f} |", flush=True)

    npm_ci("playwright-core", BROWSER_DIR)
    pages = subprocess.run(["node", str(Path(__file__).with_name("console_pages.mjs"))], cwd=BROWSER_DIR,
                           capture_output=True, text=True, timeout=600, env={**os.environ, "CONSOLE_BENCH": json.dumps({
                               "base": eddy.http_url, "user": eddy.access_key, "secret": eddy.secret_key,
                               "bucket": bucket, "mode": "pages"})})
    assert pages.returncode == 0, pages.stderr
    print("\n| page rendered in Chromium | p50 ms | p95 ms |\n|---|---|---|")
    for name, (p50, p95) in json.loads(pages.stdout).items():
        print(f"| {name} | {p50:.0f} | {p95:.0f} |", flush=True)


def produce_for(eddy, topic, seconds):
    """MB/s of records delivered while producing for `seconds` (1 KiB values, acks=all)."""
    delivered = [0]

    def done(err, msg):
        if err is None:
            delivered[0] += 1

    p = Producer({"bootstrap.servers": eddy.bootstrap, "acks": "all", "linger.ms": 5,
                  "queue.buffering.max.messages": 200_000})
    value = os.urandom(1024)
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        try:
            p.produce(topic, value=value, on_delivery=done)
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    assert p.flush(300) == 0
    return delivered[0] * 1024 / 1e6 / (time.perf_counter() - started)


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command name."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(fields):
    """User plus system CPU seconds of a process's stat fields."""
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu(pid):
    """CPU seconds `pid` used so far."""
    return cpu_seconds(stat_fields(pid))


def chromium_cpu(root_pid):
    """CPU seconds used so far by `root_pid`'s descendant processes (the browser)."""
    children = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = stat_fields(d.name)
                children.setdefault(int(fields[1]), []).append((int(d.name), fields))
            except (OSError, IndexError):
                pass
    total, todo = 0.0, [root_pid]
    while todo:
        for pid, fields in children.get(todo.pop(), []):
            total += cpu_seconds(fields)
            todo.append(pid)
    return total


class Replay:
    """The two pages' requests without a browser: the overview every 10 s and a group's
    page every 2 s, as their scripts poll."""

    def __init__(self, eddy, group):
        self.s = requests.Session()
        self.s.post(f"{eddy.http_url}/console/api/login",
                    json={"access_key": eddy.access_key, "secret_key": eddy.secret_key}).raise_for_status()
        self.base, self.group, self.stop = f"{eddy.http_url}/console/api", group, None

    def __enter__(self):
        import threading
        self.stop = threading.Event()

        def loop():
            tick = 0
            while not self.stop.is_set():
                if tick % 5 == 0:
                    self.s.get(f"{self.base}/overview")
                self.s.get(f"{self.base}/groups/{self.group}")
                tick += 1
                self.stop.wait(2)
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        self.thread.join()


def fresh_topic(admin, n):
    """A new 4-partition topic for run `n`, the previous run's deleted: at full speed a
    run writes gigabytes, which the disk of this machine does not hold for long."""
    if n > 0:
        admin.delete_topics([f"load-{n - 1}"])[f"load-{n - 1}"].result(60)
    free = shutil.disk_usage(SCRATCH).free
    assert free > 3 << 30, f"{free >> 30} GiB free: too little for another run"
    admin.create_topics([NewTopic(f"load-{n}", 4, 1)])[f"load-{n}"].result(60)
    return f"load-{n}"


def produce_cost(eddy):
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    group = "watched"
    admin.create_topics([NewTopic("watched-topic", 1, 1)])["watched-topic"].result(60)
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("watched-topic", 0, 0)], asynchronous=False)
    c.close()
    runs = iter(range(1_000_000))
    watcher = subprocess.Popen(["node", str(Path(__file__).with_name("console_pages.mjs"))], cwd=BROWSER_DIR,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "CONSOLE_BENCH": json.dumps({
                                   "base": eddy.http_url, "user": eddy.access_key, "secret": eddy.secret_key,
                                   "group": group, "mode": "watch"})})
    assert watcher.stdout.readline().strip() == "watching"

    def browser(line):
        watcher.stdin.write(line + "\n")
        watcher.stdin.flush()
        assert watcher.stdout.readline().strip() == "ok"

    modes = ("no page", "pages open in Chromium", "their requests, no browser")
    rates = {m: [] for m in modes}
    browser_cpu = []
    try:
        for _ in range(ROUNDS):
            for mode in modes:
                if mode == "pages open in Chromium":
                    browser("open")
                    cpu = chromium_cpu(watcher.pid)
                    rates[mode].append(produce_for(eddy, fresh_topic(admin, next(runs)), SECONDS))
                    browser_cpu.append(chromium_cpu(watcher.pid) - cpu)
                    browser("close")
                elif mode == "their requests, no browser":
                    topic = fresh_topic(admin, next(runs))
                    with Replay(eddy, group):
                        rates[mode].append(produce_for(eddy, topic, SECONDS))
                else:
                    rates[mode].append(produce_for(eddy, fresh_topic(admin, next(runs)), SECONDS))
                print(f"{mode}: {rates[mode][-1]:.1f} MB/s", flush=True)
    finally:
        watcher.stdin.write("quit\n")
        watcher.stdin.flush()
        try:
            watcher.wait(60)
        except subprocess.TimeoutExpired:
            watcher.kill()
    # The server's own cost of the pages, without a load to hide in: its CPU over IDLE
    # seconds with nobody, then with the two pages' requests; against its CPU per MB
    # produced at full load, that is the share of produce throughput the pages take.
    pid = eddy.proc.pid
    cpu = process_cpu(pid)
    time.sleep(IDLE)
    idle = process_cpu(pid) - cpu
    with Replay(eddy, group):
        cpu = process_cpu(pid)
        time.sleep(IDLE)
        polled = process_cpu(pid) - cpu
    cpu = process_cpu(pid)
    started = time.perf_counter()
    rate = produce_for(eddy, fresh_topic(admin, next(runs)), SECONDS)
    per_mb = (process_cpu(pid) - cpu) / (rate * (time.perf_counter() - started))
    pages_cpu = max(0.0, polled - idle) / IDLE
    print(f"\nserver CPU: idle {idle / IDLE * 1000:.2f} ms/s, with the two pages' requests "
          f"{polled / IDLE * 1000:.2f} ms/s (the pages: {pages_cpu * 1000:.2f} ms/s); "
          f"produce at full load {per_mb * 1000:.2f} ms per MB ({rate:.0f} MB/s): the pages take "
          f"{pages_cpu / (per_mb * rate) * 100:.3f}% of the server's CPU at full load")
    base = statistics.median(rates["no page"])
    print(f"\nproduce 1 KiB acks=all for {SECONDS} s, median of {ROUNDS}:")
    for mode in modes:
        m = statistics.median(rates[mode])
        print(f"- {mode}: {m:.1f} MB/s ({m / base:.3f}x)")
    print(f"- Chromium's own CPU while its pages were open: {statistics.median(browser_cpu):.1f} s per {SECONDS} s run")


if __name__ == "__main__":
    main()
