"""Function pipelines with real functions: a bucket trigger feeding a function on Google's
functions-framework, its replies feeding a second one; uploads with boto3 and aws-cli;
the hops' topics and the dead-letter topic read with confluent-kafka; the lifecycle
through `eddy pipeline` (apply, deploy, get, list, delete) and its refusals."""

import base64
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

from conftest import eddy_bin, free_port, read_to_end

FUNCTIONS = Path(__file__).parent / "functions"
VENV_BIN = Path(sys.executable).parent


def s3(eddy):
    return boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=eddy.access_key,
                        aws_secret_access_key=eddy.secret_key, region_name="us-east-1",
                        config=Config(retries={"max_attempts": 1}))


def cli(eddy, *args, check=True, stdin=None, user=None):
    """`eddy pipeline ARGS` against the server (as `user`, an (access key, secret) pair,
    or the administrator); the finished process."""
    key, secret = user or (eddy.access_key, eddy.secret_key)
    env = dict(os.environ, EDDY_HTTP_URL=eddy.http_url, EDDY_ACCESS_KEY=key,
               EDDY_SECRET_KEY=secret)
    r = subprocess.run([eddy_bin(), "pipeline", *args], env=env, capture_output=True,
                       text=True, timeout=180, input=stdin)
    if check:
        assert r.returncode == 0, f"eddy pipeline {args}: {r.stdout}{r.stderr}"
    return r


def wait_port(port, proc, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, f"the function exited with {proc.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


class Function:
    """A functions-framework function on a free port, appending what it got to a file."""

    def __init__(self, tmp, target):
        self.port = free_port()
        self.out = tmp / f"{target}-{self.port}.jsonl"
        self.out.touch()
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "functions-framework"), "--target", target, "--source",
             str(FUNCTIONS / "ff_functions.py"), "--port", str(self.port), "--host", "127.0.0.1"],
            env=dict(os.environ, OUT=str(self.out)), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    def seen(self):
        return [json.loads(line) for line in self.out.read_text().splitlines() if line]

    def wait_for(self, pred, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = self.seen()
            if pred(got):
                return got
            time.sleep(0.2)
        raise AssertionError(f"waited {timeout} s; the function saw {self.seen()}")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def functions(tmp_path):
    made = []

    def start(target):
        f = Function(tmp_path, target)
        made.append(f)
        return f

    yield start
    for f in made:
        f.stop()


def headers_of(m):
    return {k: (v.decode() if v is not None else None) for k, v in (m.headers() or [])}


def test_uploads_run_two_functions_and_failures_reach_the_dead_letter_topic(eddy, functions, tmp_path):
    thumb, index = functions("thumbnail"), functions("index")
    bucket = f"images-{uuid.uuid4().hex[:8]}"
    name = f"thumbs-{uuid.uuid4().hex[:6]}"
    s3(eddy).create_bucket(Bucket=bucket)
    definition = tmp_path / "p.yaml"
    definition.write_text(f"""
name: {name}
triggers:
  - name: uploads
    kind: bucket
    bucket: {bucket}
    events: ["s3:ObjectCreated:*"]
    prefix: incoming/
    suffix: .jpg
functions:
  - name: thumbnail
    url: {thumb.url}
    timeout_ms: 5000
  - name: index
    url: {index.url}
links:
  - {{from: uploads, to: thumbnail, retries: 2, backoff_ms: 50, events_order: ordered}}
  - {{from: thumbnail, to: index, retries: 2}}
""")
    out = cli(eddy, "apply", "-f", str(definition)).stdout
    assert f"pipeline {name} created (revision 1, Draft)" in out
    got = json.loads(cli(eddy, "get", name, "-o", "json").stdout)
    assert (got["status"], got["deployed_revision"], got["latest_revision"]) == ("Draft", None, 1)
    assert f"pipeline {name} revision 1 Ready" in cli(eddy, "deploy", name).stdout

    client = s3(eddy)
    client.put_object(Bucket=bucket, Key="incoming/a.jpg", Body=b"a")
    client.put_object(Bucket=bucket, Key="incoming/fail.jpg", Body=b"f")
    client.put_object(Bucket=bucket, Key="other/c.jpg", Body=b"c")  # prefix does not match
    client.put_object(Bucket=bucket, Key="incoming/d.png", Body=b"d")  # suffix does not match
    src = tmp_path / "b.jpg"
    src.write_bytes(b"b")
    env = dict(os.environ, AWS_ACCESS_KEY_ID=eddy.access_key, AWS_SECRET_ACCESS_KEY=eddy.secret_key,
               AWS_DEFAULT_REGION="us-east-1")
    subprocess.run([str(VENV_BIN / "aws"), "--endpoint-url", eddy.s3_url, "s3", "cp", str(src),
                    f"s3://{bucket}/incoming/b.jpg"], env=env, check=True, capture_output=True)

    # The second hop gets a reply for each upload that the first handled.
    seen = index.wait_for(lambda s: len(s) >= 2)
    assert sorted(e["subject"] for e in seen) == ["incoming/a.jpg", "incoming/b.jpg"]
    for e in seen:
        assert e["source"] == "thumbnail"
        assert e["type"] == "eddy:Function"
    first = thumb.seen()
    # Three matching uploads; the failing one tried 1 + 2 retries.
    assert sorted(e["subject"] for e in first) == sorted(
        ["incoming/a.jpg", "incoming/b.jpg"] + ["incoming/fail.jpg"] * 3)
    by_key = {e["subject"]: e for e in first}
    for e in seen:
        # The reply keeps the event's id and its trace.
        assert e["id"] == by_key[e["subject"]]["id"]
        assert e["traceparent"].split("-")[1] == by_key[e["subject"]]["traceparent"].split("-")[1]
    assert by_key["incoming/a.jpg"]["elementpath"] == f"{bucket}/incoming/a.jpg"

    # Each hop's topic holds one event per upload.
    trig = read_to_end(eddy.bootstrap, f"pipeline.{name}.uploads")
    assert sorted(m.key().decode() for m in trig) == sorted(
        f"{bucket}/incoming/{k}" for k in ["a.jpg", "b.jpg", "fail.jpg"])
    replies = read_to_end(eddy.bootstrap, f"pipeline.{name}.thumbnail")
    assert sorted(headers_of(m)["ce_subject"] for m in replies) == ["incoming/a.jpg", "incoming/b.jpg"]

    # The failed event, unchanged, in the dead-letter topic with Knative's error headers.
    dead = [m for m in read_to_end(eddy.bootstrap, "dead-letter")
            if headers_of(m).get("eddy_pipeline") == name]
    assert len(dead) == 1
    h = headers_of(dead[0])
    assert h["ce_subject"] == "incoming/fail.jpg"
    assert h["ce_id"] == by_key["incoming/fail.jpg"]["id"]
    assert h["ce_knativeerrorcode"] == "500"
    assert h["ce_knativeerrordest"] == thumb.url
    assert base64.b64decode(h["ce_knativeerrordata"])  # the function's error page
    assert (h["eddy_link"], h["eddy_function"], h["eddy_attempts"]) == ("uploads-thumbnail", "thumbnail", "3")
    assert json.loads(dead[0].value())["Records"][0]["s3"]["object"]["key"] == "incoming/fail.jpg"

    # Every attempt is a span of the event's trace, kept in the traces topic.
    traces = json.loads(cli(eddy, "traces", name, "--json").stdout)["traces"]
    by_event = {t["event_id"]: t for t in traces}
    failed = by_event[by_key["incoming/fail.jpg"]["id"]]
    assert failed["status"] == "error"
    tree = json.loads(cli(eddy, "traces", name, failed["trace_id"], "--json").stdout)["spans"]
    assert [(s["depth"], s["name"], s["attempt"], s["status"], s["code"]) for s in tree] == [
        (0, "publish uploads", 0, "ok", None),
        (1, "deliver thumbnail", 1, "error", "500"),
        (1, "deliver thumbnail", 2, "error", "500"),
        (1, "deliver thumbnail", 3, "error", "500"),
        (2, "dead-letter", 0, "ok", None),
    ]
    ok = by_event[by_key["incoming/a.jpg"]["id"]]
    assert ok["status"] == "ok"
    tree = json.loads(cli(eddy, "traces", name, ok["trace_id"], "--json").stdout)["spans"]
    assert [(s["depth"], s["name"]) for s in tree] == [
        (0, "publish uploads"), (1, "deliver thumbnail"), (2, "deliver index")]
    # The second function's parent span is its delivery attempt, in the event's trace.
    a_at_index = next(e for e in seen if e["subject"] == "incoming/a.jpg")
    _, trace_id, parent, _ = a_at_index["traceparent"].split("-")
    assert (trace_id, parent) == (ok["trace_id"], tree[2]["span_id"])
    text = cli(eddy, "traces", name, ok["trace_id"]).stdout
    assert "  deliver thumbnail attempt 1: ok" in text

    got = json.loads(cli(eddy, "get", name, "-o", "json").stdout)
    assert got["status"] == "Ready" and got["deployed_revision"] == 1
    # A new revision is stored but does not run until it is deployed; the same text again
    # stores nothing.
    definition.write_text(definition.read_text().replace("retries: 2, backoff_ms: 50", "retries: 1, backoff_ms: 50"))
    assert f"pipeline {name} revision 2 stored" in cli(eddy, "apply", "-f", str(definition)).stdout
    assert f"pipeline {name} unchanged (revision 2)" in cli(eddy, "apply", "-f", str(definition)).stdout
    got = json.loads(cli(eddy, "get", name, "-o", "json").stdout)
    assert (got["status"], got["deployed_revision"], got["latest_revision"]) == ("Ready", 1, 2)
    assert got["deployed_definition"]["links"][0]["retries"] == 2
    assert got["definition"]["links"][0]["retries"] == 1
    assert "revision: 1 deployed, 2 latest" in cli(eddy, "get", name).stdout
    assert "name: " + name in cli(eddy, "get", name, "-o", "yaml").stdout
    assert f"{name} " in cli(eddy, "list").stdout
    assert f"pipeline {name} deleted" in cli(eddy, "delete", name).stdout
    assert cli(eddy, "get", name, check=False).returncode != 0
    # Its bucket trigger went with it.
    client.put_object(Bucket=bucket, Key="incoming/late.jpg", Body=b"l")
    assert len(read_to_end(eddy.bootstrap, f"pipeline.{name}.uploads")) == 3


def test_definitions_are_refused_with_the_reason_and_nothing_changes(eddy, tmp_path):
    def refused(text):
        r = cli(eddy, "apply", "-f", "-", stdin=text, check=False)
        assert r.returncode != 0
        return r.stderr

    base = """
name: refusals
triggers: [{name: t, kind: topic, topic: orders}]
functions: [{name: f, url: 'http://127.0.0.1:9/'}, {name: g, url: 'http://127.0.0.1:9/'}]
links: [{from: t, to: f}, {from: f, to: g}]
"""
    assert "unknown field `colour`" in refused(base + "colour: blue\n")
    assert "no function is named h" in refused(base.replace("to: g", "to: h"))
    assert "links form a cycle: f -> g -> f" in refused(base.replace("{from: f, to: g}]", "{from: f, to: g}, {from: g, to: f}]"))
    r = cli(eddy, "get", "refusals", check=False)
    assert r.returncode != 0 and "no pipeline is named refusals" in r.stderr

    # A draft that cannot run: stored, but deploying it fails and changes nothing.
    cli(eddy, "apply", "-f", "-", stdin="name: refusals\nfunctions: [{name: f, url: 'http://127.0.0.1:9/'}]\n")
    r = cli(eddy, "deploy", "refusals", check=False)
    assert r.returncode != 0 and "it has no trigger" in r.stderr
    cli(eddy, "apply", "-f", "-", stdin=base)
    r = cli(eddy, "deploy", "refusals", check=False)
    assert r.returncode != 0 and "topic orders does not exist" in r.stderr
    got = json.loads(cli(eddy, "get", "refusals", "-o", "json").stdout)
    assert (got["status"], got["deployed_revision"], got["latest_revision"]) == ("Draft", None, 2)
    cli(eddy, "delete", "refusals")


def metric_value(eddy, name, **labels):
    """A labelled sample of /metrics (0 if absent)."""
    import re
    import urllib.request
    with urllib.request.urlopen(eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0


def node_function(tmp_path):
    from conftest import NODE_DIR, npm_ci
    npm_ci("cloudevents")
    port = free_port()
    out = tmp_path / "node.jsonl"
    out.touch()
    proc = subprocess.Popen(["node", str(NODE_DIR / "ce_function.js")], cwd=NODE_DIR,
                            env=dict(os.environ, PORT=str(port), OUT=str(out)))
    wait_port(port, proc)
    return proc, port, out


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def wait_lines(path, n, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = lines(path)
        if len(got) >= n:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{path.name}: {len(lines(path))} lines after {timeout} s, wanted {n}")


def test_topic_records_run_a_function_eddy_runs_in_order_then_a_node_function_in_batches(eddy, tmp_path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"orders-{uuid.uuid4().hex[:6]}"
    topic = f"{name}-in"
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result()
    node, node_port, node_out = node_function(tmp_path)
    sdk_out = tmp_path / "sdk.jsonl"
    try:
        cli(eddy, "apply", "-f", "-", stdin=json.dumps({
            "name": name,
            "triggers": [{"name": "orders", "kind": "topic", "topic": topic}],
            "functions": [
                {"name": "index", "command": [sys.executable, "-m", "eddy_functions",
                                              str(FUNCTIONS / "sdk_index.py")],
                 "env": {"OUT": str(sdk_out)}},
                {"name": "notify", "url": f"http://127.0.0.1:{node_port}/",
                 "batching": {"max_size": 8, "timeout_ms": 300}},
            ],
            "links": [
                {"from": "orders", "to": "index", "events_order": "ordered", "retries": 1,
                 "backoff_ms": 50},
                {"from": "index", "to": "notify", "labels": {"kind": "image"}},
            ],
        }))
        cli(eddy, "deploy", name)
        p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5})
        for i in range(60):
            p.produce(topic, key=f"k{i % 10}", value=f"n-{i}")
            if i == 30:
                p.produce(topic, key="k3", value="boom")
        assert p.flush(30) == 0

        got = wait_lines(node_out, 60)
        assert len({e["id"] for e in got}) == 60
        assert max(e["batch"] for e in got) > 1, "the node function never got a batch"
        seen = lines(sdk_out)
        # Ordered: within a partition, offsets never go back (a retry repeats one).
        last = {}
        for e in seen:
            _, part, off = e["id"].rsplit("/", 2)
            assert int(off) >= last.get(part, -1), f"partition {part} went back: {seen}"
            last[part] = int(off)
        assert sum(1 for e in seen if e["data"] == "boom") == 2  # first attempt and one retry

        dead = [m for m in read_to_end(eddy.bootstrap, "dead-letter")
                if headers_of(m).get("eddy_pipeline") == name]
        assert len(dead) == 1 and dead[0].value() == b"boom" and dead[0].key() == b"k3"
        h = headers_of(dead[0])
        assert h["ce_knativeerrorcode"] == "500"
        assert "ValueError: no index for boom" in base64.b64decode(h["ce_knativeerrordata"]).decode()
        assert h["ce_source"] == f"/topics/{topic}"

        # Each hop's topic: one reply per record handed on.
        replies = read_to_end(eddy.bootstrap, f"pipeline.{name}.index")
        assert len(replies) == 60
        assert all(headers_of(m)["ce_kind"] == "image" for m in replies)
        logs = [json.loads(m.value()) for m in read_to_end(eddy.bootstrap, f"pipeline.{name}.logs")]
        assert any("index function ready" in entry["line"] for entry in logs)
        assert any("ValueError: no index for boom" in entry["line"] for entry in logs)

        assert metric_value(eddy, "eddy_pipeline_delivered_total", pipeline=name, link="orders-index") == 60
        assert metric_value(eddy, "eddy_pipeline_dead_lettered_total", pipeline=name, link="orders-index") == 1
        assert metric_value(eddy, "eddy_pipeline_failed_attempts_total", pipeline=name, link="orders-index") == 2
        assert metric_value(eddy, "eddy_pipeline_instances", pipeline=name, function="index") == 1
    finally:
        node.kill()
        cli(eddy, "delete", name, check=False)


def test_a_function_that_hangs_is_timed_out_and_dead_lettered(eddy, functions, tmp_path):
    thumb = functions("thumbnail")
    bucket = f"hangs-{uuid.uuid4().hex[:8]}"
    name = f"hangs-{uuid.uuid4().hex[:6]}"
    s3(eddy).create_bucket(Bucket=bucket)
    cli(eddy, "apply", "-f", "-", stdin=f"""
name: {name}
triggers: [{{name: up, kind: bucket, bucket: {bucket}}}]
functions: [{{name: thumbnail, url: '{thumb.url}', timeout_ms: 300}}]
links: [{{from: up, to: thumbnail, retries: 1, backoff_ms: 10}}]
""")
    cli(eddy, "deploy", name)
    s3(eddy).put_object(Bucket=bucket, Key="hang.jpg", Body=b"h")
    deadline = time.time() + 60
    dead = []
    while not dead and time.time() < deadline:
        dead = [m for m in read_to_end(eddy.bootstrap, "dead-letter")
                if headers_of(m).get("eddy_pipeline") == name]
    assert len(dead) == 1
    h = headers_of(dead[0])
    assert h["ce_knativeerrorcode"] == "timeout"
    assert h["eddy_attempts"] == "2"
    assert len([e for e in thumb.seen() if e["subject"] == "hang.jpg"]) == 2
    cli(eddy, "delete", name)


def test_a_command_that_fails_at_start_puts_the_pipeline_in_error_with_its_traceback(eddy):
    name = f"broken-{uuid.uuid4().hex[:6]}"
    cli(eddy, "apply", "-f", "-", stdin=json.dumps({
        "name": name,
        "triggers": [{"name": "s", "kind": "schedule", "cron": "0 3 * * *"}],
        "functions": [{"name": "broken", "command": [sys.executable, "-m", "eddy_functions",
                                                     str(FUNCTIONS / "broken.py")]}],
        "links": [{"from": "s", "to": "broken"}],
    }))
    r = cli(eddy, "deploy", name, check=False)
    assert r.returncode != 0
    assert "No module named 'missing_module_for_the_broken_function'" in r.stderr
    got = json.loads(cli(eddy, "get", name, "-o", "json").stdout)
    assert got["status"] == "Error"
    assert "Traceback" in got["reason"] and "broken.py" in got["reason"]
    assert "function broken exited" in got["reason"]
    cli(eddy, "delete", name)


def test_a_busy_command_function_is_scaled_up_to_its_max_and_back_down(eddy):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"slow-{uuid.uuid4().hex[:6]}"
    topic = f"{name}-in"
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result()
    cli(eddy, "apply", "-f", "-", stdin=json.dumps({
        "name": name,
        "triggers": [{"name": "in", "kind": "topic", "topic": topic}],
        "functions": [{"name": "slow", "command": [sys.executable, "-m", "eddy_functions",
                                                   str(FUNCTIONS / "sdk_slow.py"), "--workers", "1"],
                       "instances": {"min": 1, "max": 3, "scale_down_ms": 2000}},
                      {"name": "sink", "url": "http://127.0.0.1:9/"}],
        "links": [{"from": "in", "to": "slow", "max_in_flight": 8},
                  {"from": "slow", "to": "sink", "labels": {"never": "x"}}],
    }))
    cli(eddy, "deploy", name)
    try:
        p = Producer({"bootstrap.servers": eddy.bootstrap})
        for i in range(120):
            p.produce(topic, key=f"k{i}", value=b"x")
        assert p.flush(30) == 0
        deadline = time.time() + 60
        while time.time() < deadline:
            if metric_value(eddy, "eddy_pipeline_instances", pipeline=name, function="slow") == 3:
                break
            time.sleep(0.2)
        assert metric_value(eddy, "eddy_pipeline_instances", pipeline=name, function="slow") == 3
        # The replies came from several instances.
        deadline = time.time() + 90
        pids = set()
        while time.time() < deadline and len(pids) < 2:
            pids = {json.loads(m.value())["pid"] for m in read_to_end(eddy.bootstrap, f"pipeline.{name}.slow")}
            time.sleep(0.5)
        assert len(pids) >= 2, pids
        # Idle again: back down to min.
        deadline = time.time() + 90
        while time.time() < deadline:
            if metric_value(eddy, "eddy_pipeline_instances", pipeline=name, function="slow") == 1:
                break
            time.sleep(0.2)
        assert metric_value(eddy, "eddy_pipeline_instances", pipeline=name, function="slow") == 1
    finally:
        cli(eddy, "delete", name, check=False)


def test_spans_are_exported_over_otlp_when_a_collector_is_configured(tmp_path, functions):
    """OTEL_EXPORTER_OTLP_ENDPOINT names a collector (here a plain HTTP server taking
    OTLP/HTTP JSON): the spans of each event's trace reach it, with the ids the traces
    topic holds."""
    import http.server
    import threading

    from conftest import new_eddy

    got = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["content-length"]))
            if self.path == "/v1/traces":
                got.append(json.loads(body))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *a):
            pass

    port = free_port()
    collector = http.server.ThreadingHTTPServer(("127.0.0.1", port), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    server = new_eddy(tmp_path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                                     "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}).start()
    try:
        thumb = functions("thumbnail")
        s3(server).create_bucket(Bucket="traced")
        cli(server, "apply", "-f", "-", stdin=f"""
name: traced
triggers: [{{name: up, kind: bucket, bucket: traced}}]
functions: [{{name: thumbnail, url: '{thumb.url}'}}]
links: [{{from: up, to: thumbnail, retries: 0}}]
""")
        cli(server, "deploy", "traced")
        s3(server).put_object(Bucket="traced", Key="x.jpg", Body=b"x")
        deadline = time.time() + 60

        def spans():
            return [s for body in got for rs in body.get("resourceSpans", [])
                    for ss in rs.get("scopeSpans", []) for s in ss.get("spans", [])]
        while time.time() < deadline and len(spans()) < 2:
            time.sleep(0.2)
        names = sorted(s["name"] for s in spans())
        assert names == ["deliver thumbnail", "publish up"], names
        by_name = {s["name"]: s for s in spans()}
        assert by_name["deliver thumbnail"]["traceId"] == by_name["publish up"]["traceId"]
        assert by_name["deliver thumbnail"]["parentSpanId"] == by_name["publish up"]["spanId"]
        kept = json.loads(cli(server, "traces", "traced", "--json").stdout)["traces"]
        assert [t["trace_id"] for t in kept] == [by_name["publish up"]["traceId"]]
        attrs = {a["key"]: a["value"] for a in by_name["deliver thumbnail"]["attributes"]}
        assert attrs["eddy.pipeline"] == {"stringValue": "traced"}
    finally:
        server.stop()
        collector.shutdown()


def test_deploying_needs_what_the_pipeline_will_do_on_the_deployers_behalf(eddy):
    """A user allowed every pipeline action still may not deploy a pipeline that reads a
    topic a policy keeps from them, or triggers on a bucket they may not configure
    notifications of: 403, and nothing runs; allowed those, the same deploy works."""
    from confluent_kafka.admin import AdminClient, NewTopic
    import requests

    def admin_api(method, path, **kw):
        tok = requests.post(eddy.http_url + "/iceberg/v1/oauth/tokens", data={
            "grant_type": "client_credentials", "client_id": eddy.access_key,
            "client_secret": eddy.secret_key}, timeout=30).json()["access_token"]
        r = requests.request(method, eddy.http_url + "/admin/v1" + path,
                             headers={"Authorization": f"Bearer {tok}"}, timeout=30, **kw)
        assert r.status_code < 300, r.text
        return r

    tag = uuid.uuid4().hex[:6]
    user, secret = f"dev-{tag}", "secret-" + uuid.uuid4().hex
    admin_api("PUT", f"/users/{user}", json={"secret_key": secret})
    topic, bucket = f"secret-{tag}", f"private-{tag}"
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    s3(eddy).create_bucket(Bucket=bucket)  # the administrator's
    statements = [
        {"Effect": "Allow", "Action": "eddy:*", "Resource": "eddy:pipeline:*"},
        {"Effect": "Deny", "Action": "KafkaRead", "Resource": f"vast:kafka:topic:default:{topic}"},
    ]
    admin_api("PUT", f"/policies/dev-{tag}", json={"attached": [user], "document": {
        "Version": "2012-10-17", "Statement": statements}})
    as_user = (user, secret)
    for name, trigger, why in [
        (f"reads-{tag}", {"kind": "topic", "topic": topic}, f"may not KafkaRead topic {topic}"),
        (f"hooks-{tag}", {"kind": "bucket", "bucket": bucket},
         f"may not s3:PutBucketNotification on bucket {bucket}"),
    ]:
        cli(eddy, "apply", "-f", "-", user=as_user, stdin=json.dumps({
            "name": name, "triggers": [{"name": "t", **trigger}],
            "functions": [{"name": "f", "url": "http://127.0.0.1:9/"}],
            "links": [{"from": "t", "to": "f"}]}))
        r = cli(eddy, "deploy", name, user=as_user, check=False)
        assert r.returncode != 0 and why in r.stderr, r.stderr
        got = json.loads(cli(eddy, "get", name, "-o", "json", user=as_user).stdout)
        assert (got["status"], got["deployed_revision"]) == ("Draft", None)
    # Allowed what the pipelines do, the same deploys work.
    statements = [statements[0], {"Effect": "Allow", "Action": "s3:PutBucketNotification",
                                  "Resource": f"arn:aws:s3:::{bucket}"}]
    admin_api("PUT", f"/policies/dev-{tag}", json={"attached": [user], "document": {
        "Version": "2012-10-17", "Statement": statements}})
    for name in (f"reads-{tag}", f"hooks-{tag}"):
        cli(eddy, "deploy", name, user=as_user)
        cli(eddy, "delete", name, user=as_user)
