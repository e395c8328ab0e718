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


def cli(eddy, *args, check=True, stdin=None):
    """`eddy pipeline ARGS` against the server; the finished process."""
    env = dict(os.environ, EDDY_HTTP_URL=eddy.http_url, EDDY_ACCESS_KEY=eddy.access_key,
               EDDY_SECRET_KEY=eddy.secret_key)
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

    got = json.loads(cli(eddy, "get", name, "-o", "json").stdout)
    assert got["status"] == "Ready" and got["deployed_revision"] == 1
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
