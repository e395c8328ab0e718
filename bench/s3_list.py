#!/usr/bin/env python3
"""Listing cost against bucket size, end to end through the S3 API.

Starts `eddy serve` on a fresh data dir, fills a bucket with N keys (`dir-XXXX/key-...`,
so delimiter listings have many common prefixes) with concurrent PUTs, then times
ListObjectsV2 pages (1000 keys) at the start, in the middle (start-after) and at the
end of the key space, with and without a delimiter, at several bucket sizes. A page
should cost the same at 10k keys as at 1M: the catalog serves each page from one range
scan and skips a common prefix by continuing after its end.

    .venv/bin/python bench/s3_list.py [--keys 1000000] [--checkpoints 10000,100000,1000000]

Needs the venv of scripts/test (boto3) and a built binary ($EDDY_BIN or the debug build
in $CARGO_TARGET_DIR / target).
"""

import argparse
import concurrent.futures
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from conftest import new_eddy  # noqa: E402
from s3util import client  # noqa: E402


def key(i: int) -> str:
    return f"dir-{i % 1000:04d}/key-{i:09d}"


def timed(f, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best * 1000


def measure(s3, bucket, n):
    mid = key(n // 2)
    rows = {
        "first page": lambda: s3.list_objects_v2(Bucket=bucket, MaxKeys=1000),
        "middle page": lambda: s3.list_objects_v2(Bucket=bucket, MaxKeys=1000, StartAfter=mid),
        "delimiter page": lambda: s3.list_objects_v2(Bucket=bucket, MaxKeys=1000, Delimiter="/"),
        "prefix+delimiter": lambda: s3.list_objects_v2(Bucket=bucket, Prefix="dir-0500/", Delimiter="/", MaxKeys=1000),
    }
    return {name: timed(f) for name, f in rows.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--checkpoints", default="")
    ap.add_argument("--threads", type=int, default=64)
    args = ap.parse_args()
    checkpoints = sorted({int(c) for c in args.checkpoints.split(",") if c} | {args.keys})
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as tmp:
        server = new_eddy(Path(tmp)).start()
        try:
            s3 = client(server, max_pool_connections=args.threads)
            s3.create_bucket(Bucket="bench")
            done = 0
            pool = concurrent.futures.ThreadPoolExecutor(args.threads)
            print(f"{'keys':>9} {'put/s':>8}  " + "  ".join(f"{n:>18}" for n in
                  ["first page ms", "middle page ms", "delimiter page ms", "prefix+delim ms"]))
            for target in checkpoints:
                t = time.perf_counter()
                list(pool.map(lambda i: s3.put_object(Bucket="bench", Key=key(i), Body=b"x"), range(done, target)))
                rate = (target - done) / max(time.perf_counter() - t, 1e-9)
                done = target
                m = measure(s3, "bench", done)
                print(f"{done:>9} {rate:>8.0f}  " + "  ".join(f"{v:>18.1f}" for v in m.values()), flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
