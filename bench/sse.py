#!/usr/bin/env python3
"""Encryption at rest, what it costs: PUT and GET MB/s of SSE-S3 and SSE-C objects as a
ratio to plain objects, in one run on one server, the three kinds interleaved round by
round so drift on a shared machine hits them alike.

    .venv/bin/python bench/sse.py BIN

BIN is an `eddy` build. The server runs on a fresh data dir under $SCRATCH (default
/tmp/eddy-bench). Each round PUTs then GETs OBJECTS objects of SIZE_MB MiB of each kind
with boto3 (THREADS requests in flight, payload signing off, as boto3 sends over HTTPS
by default, so the client's SHA-256 of the body is not what is measured); the median
round is reported. The client computes the same checksums for every kind, so the
difference between kinds is the server's encryption, key handling and, for SSE-C, the
key checks.

Env: ROUNDS (default 5), OBJECTS (default 16), SIZE_MB (default 8), THREADS (default 4).
"""

import os
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from botocore.client import Config
import boto3

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from conftest import Eddy, free_port  # noqa: E402

SCRATCH = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))
ROUNDS = int(os.environ.get("ROUNDS", "5"))
OBJECTS = int(os.environ.get("OBJECTS", "16"))
SIZE = int(os.environ.get("SIZE_MB", "8")) << 20
THREADS = int(os.environ.get("THREADS", "4"))

KEY = os.urandom(32)
KINDS = {
    "plain": {},
    "SSE-S3": {"ServerSideEncryption": "AES256"},
    "SSE-C": {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": KEY},
}
READ_ARGS = {"plain": {}, "SSE-S3": {}, "SSE-C": KINDS["SSE-C"]}


def client(eddy):
    return boto3.client(
        "s3", endpoint_url=eddy.s3_url, region_name="us-east-1",
        aws_access_key_id=eddy.access_key, aws_secret_access_key=eddy.secret_key,
        config=Config(s3={"addressing_style": "path", "payload_signing_enabled": False},
                      max_pool_connections=THREADS * 2, retries={"max_attempts": 1}))


def timed(fn, items):
    started = time.monotonic()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(fn, items))
    return time.monotonic() - started


def main():
    binary = sys.argv[1]
    os.environ["EDDY_BIN"] = str(Path(binary).resolve())
    data_dir = SCRATCH / "sse"
    shutil.rmtree(data_dir, ignore_errors=True)
    eddy = Eddy(data_dir=data_dir, s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port()).start()
    try:
        s3 = client(eddy)
        s3.create_bucket(Bucket="bench")
        body = os.urandom(SIZE)
        mb = OBJECTS * SIZE / (1 << 20)
        put = {k: [] for k in KINDS}
        get = {k: [] for k in KINDS}
        for r in range(ROUNDS):
            for kind, extra in KINDS.items():
                keys = [f"{kind}/{r}/{i}" for i in range(OBJECTS)]
                put[kind].append(mb / timed(
                    lambda k, extra=extra: s3.put_object(Bucket="bench", Key=k, Body=body, **extra),
                    keys))

                def read(k, kind=kind):
                    got = s3.get_object(Bucket="bench", Key=k, **READ_ARGS[kind])["Body"].read()
                    assert len(got) == SIZE
                get[kind].append(mb / timed(read, keys))
            print(f"round {r + 1}/{ROUNDS}: " + ", ".join(
                f"{k} PUT {put[k][-1]:.0f} GET {get[k][-1]:.0f} MB/s" for k in KINDS), flush=True)
        base_put = statistics.median(put["plain"])
        base_get = statistics.median(get["plain"])
        print(f"\n{OBJECTS} x {SIZE >> 20} MiB per kind per round, {THREADS} in flight, "
              f"median of {ROUNDS} rounds:")
        print("| kind | PUT MB/s | PUT ratio | GET MB/s | GET ratio |")
        print("|---|---|---|---|---|")
        for k in KINDS:
            p, g = statistics.median(put[k]), statistics.median(get[k])
            print(f"| {k} | {p:.0f} | {p / base_put:.2f} | {g:.0f} | {g / base_get:.2f} |")
    finally:
        eddy.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
