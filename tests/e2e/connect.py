"""A real Kafka Connect 4.3 distributed worker (the jars of scripts/connect-jars) for the
end-to-end tests: starts `ConnectDistributed` against a running eddy on a free loopback
port, waits until it is ready (by condition, never a fixed sleep), and offers the REST
calls the tests make (connector configs, status polling with a deadline) and stop/kill."""

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


from conftest import ROOT, free_port, log4j2_to_file, read_to_end

JSON = "org.apache.kafka.connect.json.JsonConverter"


def read_topic(bootstrap, topic, timeout=60):
    """Every record of every partition of `topic` up to its current high watermarks, as
    (partition, offset, key, value) in offset order per partition."""
    return [(m.partition(), m.offset(), m.key(), m.value())
            for m in read_to_end(bootstrap, topic, timeout=timeout)]


def client_config(log, kind, client_id):
    """The `<kind> values:` block a Kafka client logged at start for `client_id`."""
    for block in log.split(f"{kind} values:")[1:]:
        block = block.split("\n[", 1)[0]
        if re.search(rf"client\.id = {re.escape(client_id)}\n", block):
            return block
    raise AssertionError(f"no {kind} for {client_id} in the worker log")


@functools.lru_cache(maxsize=1)
def classpath() -> str:
    """The worker's classpath, from the same venv as this interpreter (the script caches
    the one jar it downloads, so this is quick after the first run)."""
    out = subprocess.run(
        [str(ROOT / "scripts" / "connect-jars"), sys.executable],
        check=True, capture_output=True, text=True, timeout=600,
    )
    return out.stdout.strip()


def http(method: str, url: str, body=None, timeout=30):
    """(status, parsed JSON or text) of one REST call; HTTP errors are returned, not raised."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    text = raw.decode(errors="replace")
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def wait_for(cond, timeout: float, what: str, interval: float = 0.25):
    """Polls `cond()` until it returns something truthy (returned) or `timeout` s pass."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class Worker:
    """One Connect worker process. `group` names the Connect cluster (its group id and the
    prefix of its three internal topics); `props` add to or override the worker settings."""

    def __init__(self, tmp: Path, bootstrap: str, group: str, name: str, props=None):
        self.dir = Path(tmp).resolve() / name  # absolute: the JVM runs in it
        self.dir.mkdir(parents=True, exist_ok=True)
        self.bootstrap = bootstrap
        self.group = group
        self.name = name
        self.port = free_port()
        self.props = dict(props or {})
        self.proc = None
        self.log = self.dir / "connect.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def worker_id(self) -> str:
        """How the REST API names this worker in connector and task status."""
        return f"127.0.0.1:{self.port}"

    def settings(self) -> dict:
        # The settings docs/connect.md gives: bootstrap, group, internal topics with
        # replication factor 1, JSON converters without schemas, REST on loopback.
        # plugin.discovery=service_load: the connectors are on the classpath and the
        # default class scan takes 30-35 s.
        s = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "config.storage.topic": f"{self.group}-configs",
            "offset.storage.topic": f"{self.group}-offsets",
            "status.storage.topic": f"{self.group}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "key.converter": JSON,
            "value.converter": JSON,
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
            "plugin.discovery": "service_load",
            # Source offsets are flushed every 60 s by default; tests check them sooner.
            "offset.flush.interval.ms": "1000",
        }
        s.update(self.props)
        return s

    def start(self, timeout: float = 120) -> "Worker":
        conf = self.dir / "worker.properties"
        conf.write_text("".join(f"{k}={v}\n" for k, v in self.settings().items()))
        # The reflections and Jersey chatter says nothing about the broker.
        log4j = log4j2_to_file(self.dir / "log4j2.properties", self.log, append=True,
                               org_reflections="ERROR")
        self.started_at = self.log.stat().st_size if self.log.exists() else 0
        out = open(self.dir / "stdout.log", "ab")
        self.proc = subprocess.Popen(
            ["java", "-Xmx768m", f"-Dlog4j2.configurationFile={log4j}",
             "-cp", classpath(), "org.apache.kafka.connect.cli.ConnectDistributed", str(conf)],
            stdout=out, stderr=subprocess.STDOUT, cwd=self.dir,
            env=dict(os.environ, KAFKA_HEAP_OPTS="-Xmx768m"),
        )
        out.close()
        try:
            wait_for(self._ready, timeout, f"Connect worker {self.name} to be ready", 0.5)
        except BaseException:
            self.kill()
            raise
        return self

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"worker {self.name} exited with {self.proc.returncode}:\n"
                                 + self.tail())
        if "Herder started" not in self.log_text():
            return False
        try:
            return http("GET", self.url + "/", timeout=5)[0] == 200
        except OSError:
            return False

    def log_text(self) -> str:
        """This run's part of the worker log."""
        try:
            with open(self.log, "rb") as f:
                f.seek(self.started_at)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, n: int = 60) -> str:
        stdout = (self.dir / "stdout.log")
        extra = stdout.read_text(errors="replace")[-4000:] if stdout.exists() else ""
        return "\n".join(self.log_text().splitlines()[-n:]) + "\n" + extra

    # REST helpers -------------------------------------------------------------------

    def put_config(self, connector: str, config: dict, timeout: float = 60) -> dict:
        """PUT /connectors/<name>/config. A worker answers 409 while it rebalances, and
        a follower forwards to the leader, which may not be known yet: retried."""
        def attempt():
            status, body = http("PUT", f"{self.url}/connectors/{connector}/config", config)
            if status in (200, 201):
                return body or True
            if status in (409, 500, 503):
                return None
            raise AssertionError(f"PUT config {connector}: {status} {body}")
        return wait_for(attempt, timeout, f"PUT /connectors/{connector}/config")

    def delete(self, connector: str, timeout: float = 60) -> None:
        def attempt():
            status, body = http("DELETE", f"{self.url}/connectors/{connector}")
            if status in (204, 200, 404):
                return True
            if status in (409, 500, 503):
                return None
            raise AssertionError(f"DELETE {connector}: {status} {body}")
        wait_for(attempt, timeout, f"DELETE /connectors/{connector}")

    def status(self, connector: str):
        status, body = http("GET", f"{self.url}/connectors/{connector}/status")
        return body if status == 200 else None

    def wait_status(self, connector: str, cond, timeout: float = 90, what: str = "") -> dict:
        """Polls the connector's status until `cond(status)` holds; fails on a FAILED
        task or connector (with its trace) rather than waiting out the deadline."""
        def check():
            st = self.status(connector)
            if not st:
                return None
            for t in [st.get("connector", {})] + st.get("tasks", []):
                if t.get("state") == "FAILED":
                    raise AssertionError(f"{connector} failed: {t.get('trace', t)}")
            return st if cond(st) else None
        return wait_for(check, timeout, what or f"status of {connector}", 0.5)

    def wait_running(self, connector: str, tasks: int, timeout: float = 90) -> dict:
        def running(st):
            ts = st.get("tasks", [])
            return (st["connector"]["state"] == "RUNNING" and len(ts) == tasks
                    and all(t["state"] == "RUNNING" for t in ts))
        return self.wait_status(connector, running, timeout, f"{connector} with {tasks} running tasks")

    def dump_threads(self) -> None:
        """Appends a thread dump of the JVM to threads.txt (for a failed test's record)."""
        # jcmd comes with a JDK; a JRE alone has none.
        if self.proc is not None and self.proc.poll() is None and shutil.which("jcmd"):
            with open(self.dir / "threads.txt", "a") as f:
                subprocess.run(["jcmd", str(self.proc.pid), "Thread.print"], stdout=f,
                               stderr=subprocess.STDOUT, timeout=60, check=False)

    # Lifecycle ------------------------------------------------------------------------

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM (the worker leaves its group and flushes offsets), then SIGKILL."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: the worker vanishes without leaving its group."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc = None
