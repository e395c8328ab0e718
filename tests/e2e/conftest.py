"""Fixtures for the end-to-end suites: each test module gets a real `eddy serve` process
on free loopback ports with a fresh data dir, stopped with SIGTERM afterwards (and its
clean exit checked)."""

import contextlib
import fcntl
import functools
import os
import random
import re
import signal
import socket
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def eddy_bin() -> str:
    """The binary under test: $EDDY_BIN, else the debug build in the target dir."""
    if os.environ.get("EDDY_BIN"):
        return os.environ["EDDY_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(Path(target) / "debug" / "eddy")


# Every port handed out in this run: a random pick is free when it is picked, but the
# next pick can be the same number before either server binds it (stop 31's CI run gave
# one server the same port for S3 and HTTP).
_HANDED_OUT: set = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A free port never handed out before in this run, below the kernel's ephemeral range
    where it can: a port from bind(0) is also the source port of the next outgoing
    connection, which can take it before the server binds it."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    while True:
        port = random.randrange(10_000, low) if low > 12_000 else 0
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


@dataclass
class Eddy:
    """A running server and how to reach it."""

    data_dir: Path
    s3_port: int
    kafka_ports: list
    http_port: int
    kafka_hosts: list = field(default_factory=lambda: ["127.0.0.1"])
    access_key: str = "eddyadmin"
    secret_key: str = "eddyadmin"
    proc: subprocess.Popen = None
    stdout: list = field(default_factory=list)
    extra_args: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    # HTTPS on the S3 and HTTP ports (the TLS files come in `extra_args`).
    s3_tls: bool = False
    http_tls: bool = False
    # Kafka listeners besides the plaintext ones of `bootstrap`, in Kafka's form
    # (`SSL://127.0.0.1:9093`).
    kafka_listeners: list = field(default_factory=list)
    # Where the server's log (stderr) goes: inherited when None.
    log_path: Path = None

    @property
    def s3_url(self) -> str:
        return f"{'https' if self.s3_tls else 'http'}://127.0.0.1:{self.s3_port}"

    @property
    def http_url(self) -> str:
        return f"{'https' if self.http_tls else 'http'}://127.0.0.1:{self.http_port}"

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in zip(self.kafka_hosts, self.kafka_ports))

    def start(self) -> "Eddy":
        args = [
            eddy_bin(), "serve",
            "--data-dir", str(self.data_dir),
            "--s3-listen", self.s3_url,
            "--http-listen", self.http_url,
            "--kafka-listen", ",".join([self.bootstrap, *self.kafka_listeners]),
            *self.extra_args,
        ]
        env = {**os.environ, "EDDY_LOG": os.environ.get("EDDY_LOG", "warn"), **self.env}
        env.setdefault("EDDY_ACCESS_KEY", self.access_key)
        env.setdefault("EDDY_SECRET_KEY", self.secret_key)
        log = open(self.log_path, "a") if self.log_path else None
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
        if log:
            log.close()
        self.stdout = []
        for line in self.proc.stdout:
            self.stdout.append(line.rstrip("\n"))
            if line.startswith("eddy ready:"):
                return self
        raise RuntimeError(f"eddy did not start (exit {self.proc.wait()}): {self.stdout}")

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
            self.proc.wait()
        else:
            self.proc.send_signal(signal.SIGTERM)
            code = self.proc.wait(timeout=60)
            assert code == 0, f"eddy exited with {code}"
        self.proc = None

    def restart(self) -> "Eddy":
        self.stop()
        return self.start()


def metric(eddy: Eddy, name: str) -> int:
    """The value of an unlabelled counter or gauge on the server's /metrics (0 if absent)."""
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf"^{name}(?:_total)? (\d+)", text, re.M)
    return int(m.group(1)) if m else 0


def first_message(bootstrap: str, topic: str, partition: int, offset: int, timeout=20, **conf):
    """The first message a confluent-kafka consumer assigned to `topic`/`partition` at
    `offset` receives (extra consumer settings in `conf`), or None after `timeout` s."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"first-{random.random()}", **conf})
    c.assign([TopicPartition(topic, partition, offset)])
    m = None
    deadline = time.time() + timeout
    while m is None and time.time() < deadline:
        m = c.poll(0.5)
    c.close()
    return m


def read_to_end(bootstrap: str, topic: str, partitions=None, timeout=60, **conf):
    """confluent-kafka: every record of `topic` (or of its `partitions`) from each log
    start to the high watermark, as Message objects in offset order per partition. Done
    at librdkafka's partition-end events, which come once the fetch offset reaches the
    high watermark however many offsets are gaps (on a compacted topic the position can
    stay below it). Extra consumer settings in `conf` (dots as underscores:
    `isolation_level="read_uncommitted"`)."""
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{random.getrandbits(32):08x}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  **{k.replace("_", "."): v for k, v in conf.items()}})
    try:
        if partitions is None:
            partitions = sorted(c.list_topics(topic, timeout=30).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        out, ended = [], set()
        deadline = time.time() + timeout
        while len(ended) < len(partitions):
            assert time.time() < deadline, f"{topic}: partitions {sorted(ended)} of {partitions} read"
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    ended.add(m.partition())
                    continue
                raise KafkaException(m.error())
            out.append(m)
        return out
    finally:
        c.close()


def log4j2_to_file(conf: Path, log: Path, root: str = "INFO", append: bool = False,
                   only: str = None, **levels: str) -> Path:
    """Writes a log4j2 properties file at `conf` sending a Java program's log to `log`
    (the root at `root`; `levels` by logger name, dots as underscores; `only`: just the
    messages matching that regex) and returns its path, for `-Dlog4j2.configurationFile`."""
    lines = ["status = warn", "appender.file.type = File", "appender.file.name = FILE",
             f"appender.file.fileName = {log}", f"appender.file.append = {str(append).lower()}",
             "appender.file.layout.type = PatternLayout",
             "appender.file.layout.pattern = [%d] %p %m (%c)%n",
             f"rootLogger.level = {root}", "rootLogger.appenderRef.file.ref = FILE"]
    if only:
        lines += ["appender.file.filter.only.type = RegexFilter",
                  f"appender.file.filter.only.regex = {only}",
                  "appender.file.filter.only.onMatch = ACCEPT",
                  "appender.file.filter.only.onMismatch = DENY"]
    for i, (name, level) in enumerate(levels.items()):
        lines += [f"logger.l{i}.name = {name.replace('_', '.')}", f"logger.l{i}.level = {level}"]
    conf.write_text("\n".join(lines) + "\n")
    return conf


@contextlib.contextmanager
def cache_lock(name: str):
    """Holds an exclusive lock on ~/.cache/eddy/locks/`name` for the block: the suite runs
    on two workers (pytest-xdist), and two of them filling one cache entry at once (npm
    ci into one directory, a Go build replacing another's) would break it."""
    locks = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "eddy" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def javac(src: Path, classpath: str) -> Path:
    """The directory of `src` compiled against `classpath`, cached under
    ~/.cache/eddy/javac by the source and classpath (javac takes 5-10 s a file here, and
    several suites run the same program)."""
    import hashlib
    import shutil as _shutil
    key = hashlib.sha256(src.read_bytes() + classpath.encode()).hexdigest()[:16]
    out = Path.home() / ".cache" / "eddy" / "javac" / f"{src.stem}-{key}"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{src.stem}-", dir=out.parent))
        subprocess.run(["javac", "-cp", classpath, "-d", str(tmp), str(src)], check=True, timeout=300)
        try:
            tmp.rename(out)
        except OSError:  # made meanwhile by another run
            _shutil.rmtree(tmp, ignore_errors=True)
    return out


@functools.lru_cache(maxsize=1)
def kafka_classpath() -> str:
    """Apache Kafka 4.4's jars (clients, tools, broker) from Maven Central, cached by
    scripts/kafka (quick once scripts/test has installed them)."""
    out = subprocess.run([str(Path(__file__).parents[2] / "scripts" / "kafka"), "install"],
                         check=True, capture_output=True, text=True, timeout=1200)
    return next(line.split("=", 1)[1] for line in out.stdout.splitlines()
                if line.startswith("KAFKA_CP="))


NODE_DIR = Path(__file__).parent / "node"


def npm_ci(marker: str, where: Path = None) -> None:
    """Installs tests/e2e/node's packages (or those of `where`: tests/e2e/browser's)
    (`npm ci`, from package-lock.json) unless node_modules/`marker` exists. @confluentinc/kafka-javascript's install step asks
    GitHub for its prebuilt librdkafka binding and, where that cannot be reached, builds
    the librdkafka sources inside its npm package (about a minute on two cores, measured
    at 118 s of the kafkajs test in CI);
    CKJS_LINKING=dynamic makes that build use the system's zlib, OpenSSL and zstd instead
    of downloading their sources too. So the packages are installed once per lock file
    into ~/.cache/eddy/node-modules/<hash> (outside the clone, as CI wants its downloads
    and builds) and node_modules is a link to them."""
    where = where or NODE_DIR
    here = where / "node_modules"
    if (here / marker).exists():
        return
    with cache_lock(f"npm-{where.name}"):
        _npm_ci(marker, where, here)


def _npm_ci(marker: str, where: Path, here: Path) -> None:
    """npm_ci's work, under its lock."""
    if (here / marker).exists():
        return
    import hashlib
    import shutil as _shutil
    lock = (where / "package-lock.json").read_bytes()
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "eddy" / \
        "node-modules" / hashlib.sha256(lock).hexdigest()[:16]
    if not (cache / "node_modules" / marker).exists():
        cache.mkdir(parents=True, exist_ok=True)
        for f in ("package.json", "package-lock.json"):
            _shutil.copy(where / f, cache / f)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=cache, check=True,
                       timeout=900, env={**os.environ, "CKJS_LINKING": "dynamic"})
    if here.is_symlink() or here.exists():
        if here.is_symlink() or here.is_file():
            here.unlink()
        else:
            _shutil.rmtree(here)
    here.symlink_to(cache / "node_modules", target_is_directory=True)


def new_eddy(tmp: Path, **kw) -> Eddy:
    port = free_port()
    return Eddy(
        data_dir=tmp / "data",
        s3_port=free_port(),
        kafka_ports=[port],
        http_port=free_port(),
        **kw,
    )


@pytest.fixture(scope="module")
def eddy():
    """One server per test module."""
    with tempfile.TemporaryDirectory(prefix="eddy-e2e-") as tmp:
        server = new_eddy(Path(tmp)).start()
        yield server
        server.stop()


@pytest.fixture
def fresh_eddy(tmp_path):
    """A server of the test's own (for restart and crash tests)."""
    server = new_eddy(tmp_path).start()
    yield server
    server.stop()
