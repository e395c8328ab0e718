#!/usr/bin/env python3
"""What bucket notifications cost a PUT, end to end through the S3 API.

Starts `eddy serve` on a fresh data dir with two buckets: `plain` (no notification
configuration) and `notified` (every ObjectCreated event goes to a 6-partition topic,
so each PUT also appends one event record in its transaction). Several client
processes, each with several boto3 threads, PUT small objects into one bucket, then
the other, alternating the order on each pass; the table gives PUTs/s for each and the
ratio. At the end the topic must hold exactly one record per PUT into `notified`.

    .venv/bin/python bench/notify.py [--objects 4000] [--size 4096] [--procs 4] [--threads 4] [--passes 3]

The clients run on the same machine as the server, so they share its cores: compare
the two columns of one run (a ratio), not absolute numbers across machines. Needs the
venv of scripts/test and a built binary ($EDDY_BIN, else the debug build).
"""

import argparse
import concurrent.futures
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from conftest import new_eddy  # noqa: E402
from s3util import client  # noqa: E402

TOPIC = "bucket-events"
PARTITIONS = 6


def put_many(args):
    """One client process: `n` PUTs of `size` bytes with `threads` threads."""
    s3_url, access, secret, bucket, prefix, n, size, threads = args
    import boto3
    from botocore.client import Config

    s3 = boto3.client(
        "s3", endpoint_url=s3_url, aws_access_key_id=access, aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      max_pool_connections=threads),
    )
    body = os.urandom(size)
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: s3.put_object(Bucket=bucket, Key=f"{prefix}/{i:08d}", Body=body), range(n)))


def run(server, bucket, pass_no, objects, size, procs, threads, pool):
    per = objects // procs
    jobs = [(server.s3_url, server.access_key, server.secret_key, bucket, f"p{pass_no}-c{c}", per, size, threads)
            for c in range(procs)]
    t = time.perf_counter()
    list(pool.map(put_many, jobs))
    return per * procs / (time.perf_counter() - t)


def records_in_topic(server):
    c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "bench-count"})
    total = sum(c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in range(PARTITIONS))
    c.close()
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=4000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--passes", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="eddy-bench-notify-") as tmp:
        server = new_eddy(Path(tmp)).start()
        try:
            a = AdminClient({"bootstrap.servers": server.bootstrap})
            a.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(timeout=30)
            s3 = client(server)
            for b in ("plain", "notified"):
                s3.create_bucket(Bucket=b)
            s3.put_bucket_notification_configuration(Bucket="notified", NotificationConfiguration={
                "TopicConfigurations": [{"TopicArn": f"arn:aws:sns:us-east-1:eddy:{TOPIC}",
                                         "Events": ["s3:ObjectCreated:*"]}],
            })
            print(f"{args.objects} PUTs of {args.size} B per bucket and pass, "
                  f"{args.procs} processes x {args.threads} threads")
            print(f"{'pass':>4} {'plain PUT/s':>12} {'notified PUT/s':>15} {'ratio':>6}")
            ratios = []
            notified_puts = 0
            with multiprocessing.Pool(args.procs) as pool:
                for p in range(args.passes):
                    order = ["plain", "notified"] if p % 2 == 0 else ["notified", "plain"]
                    rate = {}
                    for b in order:
                        rate[b] = run(server, b, p, args.objects, args.size, args.procs, args.threads, pool)
                    notified_puts += args.objects // args.procs * args.procs
                    ratios.append(rate["notified"] / rate["plain"])
                    print(f"{p:>4} {rate['plain']:>12.0f} {rate['notified']:>15.0f} {ratios[-1]:>6.2f}")
            print(f"median ratio notified/plain: {sorted(ratios)[len(ratios) // 2]:.2f}")
            got = records_in_topic(server)
            assert got == notified_puts, f"{got} records for {notified_puts} PUTs"
            print(f"topic holds {got} records for {notified_puts} PUTs into the notified bucket")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
