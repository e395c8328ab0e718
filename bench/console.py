#!/usr/bin/env python3
"""The web console at scale, and its cost to clients.

1. Page and API times with 1,000 topics and 100,000 objects in one bucket: each console
   API a page calls (the topics list, first and last page; one topic; the overview; a
   bucket's root listing and one prefix's), 30 times each, p50 and p95 in ms; then the
   same pages rendered in headless Chromium (from the hash change to the table drawn).
2. Produce throughput with a console page open against none, alternating three times:
   librdkafka, 1 KiB values, acks=all, while a headless Chromium keeps the overview and a
   group's page open (they poll every 10 s and 2 s). Reported: MB/s of each and the ratio.

    .venv/bin/python bench/console.py BIN

BIN is an `eddy` release build, on a fresh data dir under $SCRATCH (default
/tmp/eddy-bench). TOPICS, OBJECTS and MESSAGES override the sizes. No peer run: none of
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
MESSAGES = int(os.environ.get("MESSAGES", "200000"))
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
    eddy = Eddy(data_dir=SCRATCH / "data", s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port(), env={"EDDY_BIN": binary})
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

    produce_cost(eddy)


def produce_once(eddy, topic):
    p = Producer({"bootstrap.servers": eddy.bootstrap, "acks": "all", "linger.ms": 5,
                  "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(1024)
    started = time.perf_counter()
    for _ in range(MESSAGES):
        while True:
            try:
                p.produce(topic, value=value)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(300)
    return MESSAGES * 1024 / 1e6 / (time.perf_counter() - started)


def produce_cost(eddy):
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    topic, group = "load", "watched"
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(60)
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, p, 0) for p in range(4)], asynchronous=False)
    c.close()
    watcher = subprocess.Popen(["node", str(Path(__file__).with_name("console_pages.mjs"))], cwd=BROWSER_DIR,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "CONSOLE_BENCH": json.dumps({
                                   "base": eddy.http_url, "user": eddy.access_key, "secret": eddy.secret_key,
                                   "group": group, "mode": "watch"})})
    assert watcher.stdout.readline().strip() == "watching"
    rates = {"no page": [], "pages open": []}
    try:
        for _ in range(3):
            for mode in ("no page", "pages open"):
                watcher.stdin.write("open\n" if mode == "pages open" else "close\n")
                watcher.stdin.flush()
                assert watcher.stdout.readline().strip() == "ok"
                rates[mode].append(produce_once(eddy, topic))
                print(f"{mode}: {rates[mode][-1]:.1f} MB/s", flush=True)
    finally:
        watcher.stdin.write("quit\n")
        watcher.stdin.flush()
        watcher.wait(60)
    a, b = statistics.median(rates["no page"]), statistics.median(rates["pages open"])
    print(f"\nproduce 1 KiB acks=all, {MESSAGES} records, median of 3: no page {a:.1f} MB/s, "
          f"overview and a group page open {b:.1f} MB/s: {b / a:.3f}x")


if __name__ == "__main__":
    main()
