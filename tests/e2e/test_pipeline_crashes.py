"""The exactly-once hand-off between hops, under crashes: 1,000 uploads (boto3) through a
two-hop pipeline (a `command:` function Eddy runs, then a functions-framework function)
while Eddy is killed with SIGKILL several times and the first function's instance is
killed too. Afterwards every upload reached the last function at least once, and each
hop's topic holds exactly one event per upload."""

import collections
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from conftest import new_eddy, read_to_end
from test_pipelines import FUNCTIONS, Function, cli, headers_of

UPLOADS = 1000
KILLS = 3


def client(eddy):
    return boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=eddy.access_key,
                        aws_secret_access_key=eddy.secret_key, region_name="us-east-1",
                        config=Config(retries={"max_attempts": 1}, connect_timeout=2,
                                      read_timeout=10))


def upload_all(eddy, bucket, keys, done):
    """Puts each key once (If-None-Match: a retry of a put that committed before a crash
    is refused with 412, so every key is created exactly once), retrying through crashes."""
    for key in keys:
        while True:
            try:
                client(eddy).put_object(Bucket=bucket, Key=key, Body=key.encode(), IfNoneMatch="*")
                break
            except ClientError as e:
                if e.response["Error"]["Code"] in ("PreconditionFailed", "412"):
                    break
                time.sleep(0.2)
            except Exception:  # the server is down: wait for it
                time.sleep(0.2)
        done.append(key)


def instance_pids(pattern):
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_kill_9_during_uploads_loses_nothing_and_duplicates_nothing_between_hops(tmp_path):
    eddy = new_eddy(tmp_path).start()
    index = Function(tmp_path, "index")
    try:
        bucket = f"crash-{uuid.uuid4().hex[:8]}"
        name = f"crash-{uuid.uuid4().hex[:6]}"
        client(eddy).create_bucket(Bucket=bucket)
        relay = str(FUNCTIONS / "sdk_relay.py")
        cli(eddy, "apply", "-f", "-", stdin=f"""
name: {name}
triggers: [{{name: uploads, kind: bucket, bucket: {bucket}}}]
functions:
  - {{name: relay, command: ['{sys.executable}', -m, eddy_functions, '{relay}']}}
  - {{name: index, url: '{index.url}'}}
links:
  - {{from: uploads, to: relay, retries: 20, backoff_ms: 100}}
  - {{from: relay, to: index, retries: 20, backoff_ms: 100}}
""")
        cli(eddy, "deploy", name)
        keys = [f"k{i:04d}" for i in range(UPLOADS)]
        done = []
        t = threading.Thread(target=upload_all, args=(eddy, bucket, keys, done))
        t.start()
        for k in range(KILLS):
            target = (k + 1) * UPLOADS // (KILLS + 1)
            while len(done) < target:
                time.sleep(0.05)
            if k == 1:
                # The function's instance dies; Eddy restarts it.
                for pid in instance_pids(relay):
                    os.kill(pid, signal.SIGKILL)
                time.sleep(0.5)
            running = instance_pids(relay)
            eddy.stop(kill=True)
            # The instances die with the server (nothing serves for a server that is gone).
            deadline = time.time() + 10
            while set(running) & set(instance_pids(relay)) and time.time() < deadline:
                time.sleep(0.05)
            assert not set(running) & set(instance_pids(relay)), "an instance outlived its server"
            eddy.start()
        t.join(timeout=600)
        assert len(done) == UPLOADS

        deadline = time.time() + 300
        while time.time() < deadline:
            reached = {e["data"]["key"] for e in index.seen()}
            if reached >= set(keys):
                break
            time.sleep(0.5)
        missing = set(keys) - {e["data"]["key"] for e in index.seen()}
        assert not missing, f"{len(missing)} uploads never reached the last function: {sorted(missing)[:10]}"

        trig = collections.Counter(m.key().decode().split("/", 1)[1]
                                   for m in read_to_end(eddy.bootstrap, f"pipeline.{name}.uploads"))
        assert trig == collections.Counter(keys), "the trigger topic is not one event per upload"
        hop = collections.Counter(headers_of(m)["ce_subject"]
                                  for m in read_to_end(eddy.bootstrap, f"pipeline.{name}.relay"))
        assert hop == collections.Counter(keys), "the first hop's topic is not one event per upload"
        dead = [m for m in read_to_end(eddy.bootstrap, "dead-letter")
                if headers_of(m).get("eddy_pipeline") == name]
        assert dead == []
    finally:
        index.stop()
        eddy.stop(kill=True)


def test_a_schedule_fires_once_per_tick_across_kill_9(tmp_path):
    """A schedule ticking every second: across a SIGKILL and a restart, the trigger topic
    holds each tick once, with no tick between the first and the last missing (the ones
    missed while the server was down fire when it is back)."""
    eddy = new_eddy(tmp_path).start()
    index = Function(tmp_path, "index")
    try:
        name = f"ticks-{uuid.uuid4().hex[:6]}"
        cli(eddy, "apply", "-f", "-", stdin=f"""
name: {name}
triggers: [{{name: every, kind: schedule, cron: "* * * * * *"}}]
functions: [{{name: index, url: '{index.url}'}}]
links: [{{from: every, to: index}}]
""")
        cli(eddy, "deploy", name)
        index.wait_for(lambda s: len(s) >= 3, timeout=30)
        eddy.stop(kill=True)
        killed_at = int(time.time())
        time.sleep(3)
        eddy.start()
        back_at = int(time.time())
        before = len(index.seen())
        index.wait_for(lambda s: len(s) >= before + 5, timeout=60)
        ticks = [int(m.key() and headers_of(m)["ce_id"].rsplit("/", 1)[1])
                 for m in read_to_end(eddy.bootstrap, f"pipeline.{name}.every")]
        assert len(ticks) == len(set(ticks)), "a tick fired twice"
        assert sorted(ticks) == list(range(min(ticks), max(ticks) + 1)), "a tick is missing"
        # The ticks of the seconds no server ran fired once one was back.
        missed = range(killed_at + 1, back_at)
        assert len(missed) >= 2 and all(t in ticks for t in missed), (sorted(ticks), killed_at, back_at)
        assert {e["type"] for e in index.seen()} == {"eddy:Schedule.Tick"}
    finally:
        index.stop()
        eddy.stop(kill=True)
