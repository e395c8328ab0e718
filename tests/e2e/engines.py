"""Trino and Spark pointed at a test server's Iceberg REST catalog, as users set them up:
the engines come from `scripts/engines` (a cache outside the clone), their catalog
settings from the files the compose demo mounts (compose/trino/catalog/eddy.properties,
compose/spark/spark-defaults.conf), filled in with the test server's addresses. Also the
runner of the documentation's engine examples: the SQL blocks of docs/analytics.md and
compose/README.md marked for an engine run as written, next to the docs' own Python and
shell blocks, and their printed output is compared with what the engine prints."""

import json
import os
import re
import subprocess
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT, eddy_bin, free_port

COMPOSE = ROOT / "compose"
TRINO_CATALOG = COMPOSE / "trino" / "catalog" / "eddy.properties"
SPARK_DEFAULTS = COMPOSE / "spark" / "spark-defaults.conf"


def engine_paths() -> dict:
    """What `scripts/engines` prints (TRINO_HOME, TRINO_CLI_JAR, TRINO_JAVA_HOME,
    SPARK_JARS, ...): instant once cached; a first run downloads (CI runs it as a stage of
    its own before the tests)."""
    out = subprocess.run([str(ROOT / "scripts" / "engines")], check=True, timeout=1800,
                         stdout=subprocess.PIPE, text=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


# --- Trino -------------------------------------------------------------------------------

@dataclass
class Trino:
    url: str
    port: int
    cli_jar: str
    java: str
    log: Path

    def connect(self):
        import trino
        return trino.dbapi.connect(host="127.0.0.1", port=self.port, user="eddy-test",
                                   http_scheme="http")

    def query(self, sql: str) -> list:
        """The rows of one statement, through the Python client (trino.dbapi)."""
        cur = self.connect().cursor()
        cur.execute(sql)
        return cur.fetchall()

    def cli(self, sql: str, fmt: str = "ALIGNED") -> subprocess.CompletedProcess:
        """The Trino CLI as a user runs it (`trino --server ... --execute ...`)."""
        return subprocess.run(
            [self.java, "--enable-native-access=ALL-UNNAMED", "-jar", self.cli_jar,
             "--server", self.url, "--execute", sql, "--output-format", fmt],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


def trino_env(eddy) -> dict:
    """The variables compose/trino/catalog/eddy.properties reads (`${ENV:...}`)."""
    return {
        "EDDY_ICEBERG_URI": f"{eddy.http_url}/iceberg",
        "EDDY_S3_ENDPOINT": eddy.s3_url,
        "EDDY_ACCESS_KEY": eddy.access_key,
        "EDDY_SECRET_KEY": eddy.secret_key,
    }


@contextmanager
def trino_server(eddy, timeout: float = 240):
    """A single-node Trino (coordinator and worker in one JVM, 2 GB heap) with catalog
    `eddy` from the compose file, started with the Trino launcher and stopped at the end.
    Ready when /v1/info says it is no longer starting."""
    paths = engine_paths()
    java_home = paths["TRINO_JAVA_HOME"]
    with tempfile.TemporaryDirectory(prefix="eddy-trino-") as tmp:
        tmp = Path(tmp)
        etc, data = tmp / "etc", tmp / "data"
        (etc / "catalog").mkdir(parents=True)
        data.mkdir()
        port = free_port()
        (etc / "node.properties").write_text(
            "node.environment=eddy_test\n"
            f"node.id=eddy-test-{port}\n"
            f"node.data-dir={data}\n")
        # The JVM settings Trino's deployment docs give, with a heap that fits beside the
        # rest of the suite on a 24 GB machine.
        (etc / "jvm.config").write_text("\n".join([
            "-server", "-Xmx2G", "-XX:+UseG1GC", "-XX:+ExplicitGCInvokesConcurrent",
            "-XX:+ExitOnOutOfMemoryError", "-XX:+HeapDumpOnOutOfMemoryError",
            "-XX:-OmitStackTraceInFastThrow", "-XX:ReservedCodeCacheSize=256M",
            "-Djdk.attach.allowAttachSelf=true", "-Dfile.encoding=UTF-8", ""]))
        (etc / "config.properties").write_text(
            "coordinator=true\n"
            "node-scheduler.include-coordinator=true\n"
            f"http-server.http.port={port}\n"
            f"discovery.uri=http://127.0.0.1:{port}\n"
            "query.max-memory=1GB\n"
            "query.max-memory-per-node=1GB\n")
        (etc / "log.properties").write_text("io.trino=WARN\nio.airlift=WARN\n")
        (etc / "catalog" / "eddy.properties").write_text(TRINO_CATALOG.read_text())
        log = tmp / "trino.log"
        env = {**os.environ, "JAVA_HOME": java_home, **trino_env(eddy)}
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [str(Path(paths["TRINO_HOME"]) / "bin" / "launcher"), "run",
                 "--etc-dir", str(etc), "--data-dir", str(data), "--jvm-dir", java_home],
                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"trino exited with {proc.returncode}:\n{log.read_text()[-6000:]}")
                try:
                    with urllib.request.urlopen(f"{url}/v1/info", timeout=5) as r:
                        started = json.loads(r.read()).get("starting") is False
                    # Started is not yet schedulable: until the coordinator's node has
                    # announced itself, queries fail with NO_NODES_AVAILABLE.
                    if started and active_nodes(url) > 0:
                        break
                except OSError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    raise RuntimeError(f"trino not ready in {timeout} s:\n{log.read_text()[-6000:]}")
                time.sleep(0.5)  # poll interval
            yield Trino(url, port, paths["TRINO_CLI_JAR"], str(Path(java_home) / "bin" / "java"), log)
        finally:
            proc.terminate()  # the launcher execs the JVM: this is Trino's own SIGTERM
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def active_nodes(url: str) -> int:
    """How many nodes the coordinator can schedule on (its own `system.runtime.nodes`)."""
    req = urllib.request.Request(f"{url}/v1/statement", data=b"SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'",
                                 headers={"X-Trino-User": "eddy-tests"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        page = json.loads(r.read())
    while True:
        if "error" in page:
            return 0
        if page.get("data"):
            return int(page["data"][0][0])
        if "nextUri" not in page:
            return 0
        with urllib.request.urlopen(page["nextUri"], timeout=10) as r:
            page = json.loads(r.read())


# --- Spark -------------------------------------------------------------------------------

def spark_conf(eddy) -> dict:
    """compose/spark/spark-defaults.conf for the test server: the demo's addresses and
    credentials replaced, and the jars from the cache instead of `spark.jars.packages`
    (which would fetch them with Ivy at every start)."""
    conf = {}
    for line in SPARK_DEFAULTS.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, value = line.split(None, 1)
        value = (value.replace("http://eddy:8181", eddy.http_url)
                      .replace("http://eddy:9000", eddy.s3_url)
                      .replace("eddyadmin:eddyadmin", f"{eddy.access_key}:{eddy.secret_key}"))
        if key.endswith(".s3.access-key-id"):
            value = eddy.access_key
        elif key.endswith(".s3.secret-access-key"):
            value = eddy.secret_key
        conf[key] = value
    conf.pop("spark.jars.packages", None)
    conf.pop("spark.jars.ivy", None)
    return conf


@contextmanager
def spark_session(eddy):
    """A local SparkSession (two threads, 1 GB driver) with catalog `eddy` as in the
    compose file, stopped at the end, its JVM with it."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    paths = engine_paths()
    with tempfile.TemporaryDirectory(prefix="eddy-spark-") as tmp:
        b = (SparkSession.builder.master("local[2]").appName("eddy-e2e")
             .config("spark.jars", paths["SPARK_JARS"])
             .config("spark.driver.memory", "1g")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.local.dir", tmp)
             .config("spark.sql.warehouse.dir", f"{tmp}/warehouse")
             .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={tmp}"))
        for k, v in spark_conf(eddy).items():
            b = b.config(k, v)
        spark = b.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        try:
            yield spark
        finally:
            spark.stop()
            # The py4j gateway JVM outlives stop(); end it so it holds no memory for the
            # rest of the suite.
            if SparkContext._gateway is not None:
                SparkContext._gateway.shutdown()
                SparkContext._gateway = None
                SparkContext._jvm = None


def spark_shown(df) -> str:
    """What `df.show(truncate=False)` prints."""
    return df._jdf.showString(20, 0, False)


# --- the docs' engine examples -----------------------------------------------------------

ENGINE_MARKER = re.compile(
    r"^\s*<!--\s*engine-test:\s*(?P<engine>trino|spark)\s*(?P<fails>\(fails\))?\s*-->\s*$")
QUERY_ID = re.compile(r"\b\d{8}_\d{6}_\d{5}_\w{5}\b")  # a Trino query id, e.g. 20261204_182603_00014_sbhat
VERSION_AS_OF = re.compile(r"(VERSION AS OF )(\d+)")
TABLE_OF_VERSION = re.compile(r"\beddy\.kafka_topics\.([A-Za-z0-9_\-]+)")


@dataclass
class EngineBlock:
    where: str
    sql: str
    expected: str | None  # the output block right after the SQL, if any
    fails: bool  # marked `(fails)`: the engine must refuse it, saying what `expected` says


def doc_steps(path: Path, engine: str) -> list:
    """A doc's steps in order: ("run", test_docs.Block) for the Python and shell blocks
    test_docs.py runs, ("sql", EngineBlock) for the SQL blocks marked
    `<!-- engine-test: <engine> -->` on the line right before their fence. A `text` block
    right after such a block (only blank lines between) is its expected output: exactly
    what the engine prints, or, for a block marked `<!-- engine-test: <engine> (fails) -->`,
    lines its error message holds (Trino query ids aside)."""
    from test_docs import blocks, shown

    lines = path.read_text().split("\n")
    marked = {i + 2: m for i, l in enumerate(lines)
              if (m := ENGINE_MARKER.match(l))}  # 1-based line of the fence after the marker
    found = blocks(path)
    stray = sorted(set(marked) - {b.line for b in found})
    assert not stray, (f"{shown(path)}: engine-test markers not on the line right before a "
                       f"fence (lines {[l - 1 for l in stray]})")
    steps = []
    for n, b in enumerate(found):
        if b.line in marked:
            assert b.lang == "sql", f"{b.where}: engine-test marks an {b.lang!r} block"
            if marked[b.line].group("engine") != engine:
                continue
            expected = None
            closing = b.line + b.code.count("\n") + 1
            nxt = found[n + 1] if n + 1 < len(found) else None
            if nxt is not None and nxt.lang == "text" and all(
                    not lines[i].strip() for i in range(closing, nxt.line - 1)):
                expected = nxt.code
            steps.append(("sql", EngineBlock(f"{shown(path)}:{b.line}", b.code.strip(), expected,
                                             marked[b.line].group("fails") is not None)))
        elif b.runs:
            steps.append(("run", b))
    return steps


def with_first_snapshot(sql: str, first_snapshot) -> str:
    """A doc's `... VERSION AS OF <id>` with the id of that table's first snapshot on the
    test server (the doc shows one from its own run; the query is the same)."""
    m = TABLE_OF_VERSION.search(sql)
    if not VERSION_AS_OF.search(sql) or not m:
        return sql
    return VERSION_AS_OF.sub(lambda v: v.group(1) + str(first_snapshot(m.group(1))), sql)


def run_doc_with_engine(path: Path, eddy, engine: str, run_sql, run_blocks: bool = True) -> int:
    """Follows a doc as a user would against `eddy`: its Python and shell blocks run as
    test_docs.py runs them (default addresses replaced by the server's), its SQL blocks
    for `engine` go to `run_sql(sql) -> (succeeded, printed text or error)`, and where the
    doc shows the output, the engine must print exactly that. `run_blocks=False` runs the
    SQL alone (compose/README.md, whose shell blocks drive Docker). Returns how many SQL
    blocks ran."""
    from test_docs import block_env, run_block
    from test_iceberg import catalog

    def first_snapshot(table):
        snaps = catalog(eddy).load_table(("kafka_topics", table)).snapshots()
        return min(snaps, key=lambda s: (s.timestamp_ms, s.sequence_number)).snapshot_id

    ran = 0
    with tempfile.TemporaryDirectory(prefix="eddy-engine-doc-") as tmp:
        tmp = Path(tmp)
        work, home, bin_dir, scratch = (tmp / d for d in ("work", "home", "bin", "blocks"))
        for d in (work, home, bin_dir, scratch):
            d.mkdir()
        (bin_dir / "eddy").symlink_to(Path(eddy_bin()).resolve())
        env = block_env(home, bin_dir, eddy)
        for kind, step in doc_steps(path, engine):
            if kind == "run":
                if run_blocks:
                    env = run_block(step, eddy, work, scratch, env)
                continue
            sql = with_first_snapshot(step.sql, first_snapshot)
            ok, got = run_sql(sql)
            ran += 1
            print(f"--- {step.where} ({engine}{'' if ok else ', failed'}) ---\n{sql}\n{got}")
            if step.fails:
                assert not ok, f"{step.where}: the doc shows this failing; {engine} ran it:\n{got}"
                if step.expected is not None:
                    for line in step.expected.strip("\n").split("\n"):
                        assert QUERY_ID.sub("<id>", line.strip()) in QUERY_ID.sub("<id>", got), (
                            f"{step.where}: {engine} failed with\n{got}\nthe doc shows\n{step.expected}")
                continue
            assert ok, f"{step.where}: {engine} failed:\n{got}"
            if step.expected is not None:
                want = "\n".join(l.rstrip() for l in step.expected.strip("\n").split("\n"))
                have = "\n".join(l.rstrip() for l in got.strip("\n").split("\n"))
                assert have == want, (f"{step.where}: {engine} printed\n{got}\n"
                                      f"the doc shows\n{step.expected}")
    return ran
