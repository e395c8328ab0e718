"""The web console in a real browser (Debian's headless Chromium driven by playwright-core,
tests/e2e/browser/console.mjs): an administrator signs in, creates a topic, produces and
browses a record, watches a group's lag rise and fall, uploads and downloads an object,
previews a table, follows a pipeline's failed event to its trace, and sees users and the
audit log; a read-only user sees no button that would fail, and the server refuses the
actions anyway. What the browser did is checked with the real clients (confluent-kafka,
boto3). The session's cookie and CSRF rules are checked with plain HTTP. Screenshots of
each page are kept under $EDDY_ARTIFACTS/console (default ~/.cache/eddy/artifacts)."""

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import npm_ci
from test_pipelines import cli as pipeline_cli
from test_pipelines import functions  # noqa: F401
from test_policies import ok, put_policy

BROWSER_DIR = Path(__file__).parent / "browser"
ARTIFACTS = Path(os.environ.get("EDDY_ARTIFACTS", Path.home() / ".cache" / "eddy" / "artifacts")) / "console"
READER, READER_SECRET = "reader", "reader-secret-1"


def s3(eddy, key=None, secret=None):
    return boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=key or eddy.access_key,
                        aws_secret_access_key=secret or eddy.secret_key, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def run_browser(scenario, **settings):
    npm_ci("playwright-core", BROWSER_DIR)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cfg = {"scenario": scenario, "screenshots": str(ARTIFACTS), "prefix": f"{scenario}-", **settings}
    r = subprocess.run(["node", str(BROWSER_DIR / "console.mjs")], cwd=BROWSER_DIR, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "CONSOLE_TEST": json.dumps(cfg)})
    assert r.returncode == 0, f"the browser run failed (screenshots in {ARTIFACTS}):\n{r.stderr}"
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen["page_errors"] == [], seen["page_errors"]
    return seen


def create_topic(eddy, topic, partitions=1):
    # The client is kept until the future resolves: a dropped AdminClient fails its futures.
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def topic_names(eddy):
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    return set(admin.list_topics(timeout=30).topics)


def produce(eddy, topic, values):
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for v in values:
        p.produce(topic, value=v)
    assert p.flush(30) == 0


def commit_at(eddy, group, topic, offset):
    """Commits `offset` of `topic`'s partition 0 for `group`, which then has no member."""
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    c.close()


@pytest.fixture(scope="module")
def reader(eddy, tmp_path_factory):
    """A user who may read and list, and is denied every change."""
    ok(eddy, "user", "put", READER, "--s3-secret", READER_SECRET, "--kafka-password", "reader-pw")
    put_policy(eddy, tmp_path_factory.mktemp("reader"), "read-only", {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "read", "Effect": "Allow", "Action": [
                "s3:GetObject", "s3:ListBucket", "s3:ListAllMyBuckets", "KafkaRead", "KafkaDescribe"],
             "Resource": "*"},
            {"Sid": "nochange", "Effect": "Deny", "Action": [
                "KafkaWrite", "KafkaCreate", "KafkaDelete", "KafkaAlter", "s3:PutObject", "s3:DeleteObject"],
             "Resource": "*"},
        ]}, READER)
    return READER


def test_an_administrator_uses_every_page(eddy, reader, functions, tmp_path):  # noqa: F811
    topic, group_topic, group = (f"console-{uuid.uuid4().hex[:6]}", f"lagged-{uuid.uuid4().hex[:6]}",
                                 f"g-{uuid.uuid4().hex[:6]}")
    bucket = f"console-{uuid.uuid4().hex[:8]}"
    s3(eddy).create_bucket(Bucket=bucket)
    create_topic(eddy, group_topic)
    produce(eddy, group_topic, [b"a", b"b", b"c"])
    commit_at(eddy, group, group_topic, 0)
    upload = tmp_path / "report.bin"
    upload.write_bytes(os.urandom(300_000))
    # A pipeline whose function fails every attempt: its event goes to the dead-letter
    # topic, and its trace says so.
    thumb = functions("thumbnail")
    images, pipeline = f"images-{uuid.uuid4().hex[:8]}", f"p-{uuid.uuid4().hex[:6]}"
    s3(eddy).create_bucket(Bucket=images)
    definition = tmp_path / "p.yaml"
    definition.write_text(f"""
name: {pipeline}
triggers:
  - {{name: uploads, kind: bucket, bucket: {images}, events: ["s3:ObjectCreated:*"]}}
functions:
  - {{name: thumbnail, url: {thumb.url}, timeout_ms: 5000}}
links:
  - {{from: uploads, to: thumbnail, retries: 1, backoff_ms: 50}}
""")
    pipeline_cli(eddy, "apply", "-f", str(definition))
    pipeline_cli(eddy, "deploy", pipeline)
    s3(eddy).put_object(Bucket=images, Key="fail-1.jpg", Body=b"x")
    thumb.wait_for(lambda got: len(got) >= 2)
    record = {"order": 1, "item": "a-book-about-eddies"}

    seen = run_browser("admin", base=eddy.http_url, user=eddy.access_key, secret=eddy.secret_key,
                       topic=topic, record=record, group=group, group_topic=group_topic, lag=3,
                       bucket=bucket, upload=str(upload), namespace="kafka_topics", pipeline=pipeline)

    assert seen["url_after_root"].endswith("/console/")
    assert seen["drives"] == 6 and seen["status"] == "ok"
    assert seen["partitions"] == 2
    assert '"item": "a-book-about-eddies"' in seen["pretty"]
    assert (seen["lag_before"], seen["lag_risen"], seen["lag_fallen"]) == ("3", "5", "0")
    assert seen["download_matches"] and seen["download_name"] == "report.bin"
    assert "a-book-about-eddies" in seen["preview"]
    assert {"uploads", "thumbnail"} <= set(seen["graph_nodes"])
    assert any("dead-letter" in s for s in seen["spans"]), seen["spans"]
    assert READER in seen["users"]
    assert seen["audit_actions"], "the audit log page is empty"
    assert seen["after_logout"] == 401

    # What the browser did, seen by the real clients.
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": f"check-{uuid.uuid4().hex}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    m, deadline = None, time.time() + 30
    while m is None and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error():
            m = None
    c.close()
    assert m is not None and json.loads(m.value()) == record and m.key() == b"k1"
    got = s3(eddy).get_object(Bucket=bucket, Key="report.bin")["Body"].read()
    assert got == upload.read_bytes()
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group, "enable.auto.commit": False})
    committed = c.committed([TopicPartition(group_topic, 0)], timeout=30)
    c.close()
    assert committed[0].offset == 5, "the reset did not move the group to the end"
    # A pipeline's link rates are for those who may get the pipeline.
    for (user, secret), status in (((eddy.access_key, eddy.secret_key), 200), ((READER, READER_SECRET), 403)):
        session = signed_in(eddy, user, secret)
        r = session.get(f"{eddy.http_url}/console/api/pipelines/{pipeline}/rates", timeout=30)
        assert r.status_code == status, r.text


def signed_in(eddy, user, secret):
    s = requests.Session()
    r = s.post(f"{eddy.http_url}/console/api/login", json={"access_key": user, "secret_key": secret}, timeout=30)
    assert r.status_code == 200, r.text
    return s


def test_a_read_only_user_sees_no_change_and_the_server_refuses_it(eddy, reader):
    topic, bucket = f"ro-{uuid.uuid4().hex[:6]}", f"ro-{uuid.uuid4().hex[:8]}"
    create_topic(eddy, topic)
    produce(eddy, topic, [b'{"n": 1}'])
    s3(eddy).create_bucket(Bucket=bucket)
    s3(eddy).put_object(Bucket=bucket, Key="kept.txt", Body=b"kept")
    # The bucket's owner is the administrator: the reader reads it by the policy alone.
    seen = run_browser("read-only", base=eddy.http_url, user=READER, secret=READER_SECRET,
                       topic=topic, bucket=bucket, object="kept.txt")
    assert seen["security_nav_hidden"] and seen["drive_rows"] == 0
    assert (seen["create_form"], seen["produce_form"], seen["alter_form"], seen["delete_button"]) == (0, 0, 0, 0)
    assert seen["records"] == 1
    assert seen["upload_zone"] == 0 and seen["download_links"] == 1
    for action in ("create_topic", "produce", "delete_topic", "users_api"):
        assert seen[action]["status"] == 403, (action, seen[action])
    assert seen["upload"]["status"] == 403 and "AccessDenied" in seen["upload"]["body"]
    assert seen["delete_object"]["status"] == 403
    # Nothing changed.
    topics = topic_names(eddy)
    assert topic in topics and f"{topic}-x" not in topics
    assert s3(eddy).get_object(Bucket=bucket, Key="kept.txt")["Body"].read() == b"kept"
    with pytest.raises(ClientError):
        s3(eddy).head_object(Bucket=bucket, Key="sneaky.txt")


def test_sessions_need_the_cookie_and_changes_the_csrf_token(eddy):
    base = f"{eddy.http_url}/console"
    r = requests.get(f"{eddy.http_url}/", allow_redirects=False, timeout=30)
    assert r.status_code == 302 and r.headers["location"] == "/console/"
    page = requests.get(f"{base}/", timeout=30)
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    assert requests.get(f"{base}/api/topics", timeout=30).status_code == 401
    bad = requests.post(f"{base}/api/login", json={"access_key": eddy.access_key, "secret_key": "wrong"}, timeout=30)
    assert bad.status_code == 401 and "wrong" in bad.json()["error"]["message"]
    # A login is JSON only: a cross-site form cannot send it.
    form = requests.post(f"{base}/api/login", data={"access_key": eddy.access_key,
                                                    "secret_key": eddy.secret_key}, timeout=30)
    assert form.status_code == 400
    s = requests.Session()
    r = s.post(f"{base}/api/login", json={"access_key": eddy.access_key, "secret_key": eddy.secret_key},
               timeout=30)
    assert r.status_code == 200, r.text
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
    csrf = r.json()["csrf"]
    assert s.get(f"{base}/api/topics", timeout=30).status_code == 200
    topic = f"csrf-{uuid.uuid4().hex[:6]}"
    for headers in ({}, {"x-csrf-token": "not-it"}):
        r = s.post(f"{base}/api/topics", json={"name": topic}, headers=headers, timeout=30)
        assert r.status_code == 403 and "CSRF" in r.json()["error"]["message"]
    assert topic not in topic_names(eddy)
    r = s.post(f"{base}/api/topics", json={"name": topic}, headers={"x-csrf-token": csrf}, timeout=30)
    assert r.status_code == 201, r.text
    # Kafka's own errors come back named.
    r = s.post(f"{base}/api/topics", json={"name": topic}, headers={"x-csrf-token": csrf}, timeout=30)
    assert r.status_code == 409 and r.json()["error"]["kafka_error"] == "TopicAlreadyExists"
    # Bad parameters get 400 or an empty answer, never a failure of the server.
    for path, status in ((f"topics/{topic}/records?partition=x", 400),
                         (f"topics/{topic}/records?offset=-5", 400),
                         (f"topics/{topic}/records?time=later", 400),
                         (f"topics/{topic}/records?partition=7", 404),
                         ("audit?before=-9223372036854775808", 200),
                         ("audit?limit=99999999999999999999", 200)):
        r = s.get(f"{base}/api/{path}", timeout=30)
        assert r.status_code == status, (path, r.status_code, r.text)
    assert s.get(f"{base}/api/session", timeout=30).status_code == 200
    # A user given a new secret is signed out at once.
    ok(eddy, "user", "put", "rotating", "--s3-secret", "first-secret-1", "--kafka-password", "pw")
    s2 = requests.Session()
    assert s2.post(f"{base}/api/login", json={"access_key": "rotating", "secret_key": "first-secret-1"},
                   timeout=30).status_code == 200
    assert s2.get(f"{base}/api/session", timeout=30).status_code == 200
    ok(eddy, "user", "put", "rotating", "--s3-secret", "second-secret-2", "--kafka-password", "pw")
    assert s2.get(f"{base}/api/session", timeout=30).status_code == 401
    # A failed login is in the audit trail, with the key it named.
    from test_audit import has, trail
    trail(eddy, has(protocol="console", principal=eddy.access_key, outcome="refused"))
