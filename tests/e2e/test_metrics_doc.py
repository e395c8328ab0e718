"""docs/metrics.md lists every metric the server exports, as its registry describes them:
the page is generated from the `/metrics` of a server that served S3, Kafka (a produce,
a group's consume and commit) and table requests, and this test fails when a family the
server shows is missing from the page or described differently there (a family with
labels shows once it has a value, so rows of families this traffic does not reach are
kept as they are). To rewrite the page:

    EDDY_WRITE_METRICS_DOC=1 .venv/bin/python -m pytest -q tests/e2e/test_metrics_doc.py
"""

import os
import re
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "metrics.md"

HEADER = """# Metrics

Eddy serves Prometheus metrics at `/metrics` on the HTTP port (`:8181` by default), in the
text exposition format. This page lists every metric family the server registers, with
its type and description as the server states them; `tests/e2e/test_metrics_doc.py`
generates it from a server that served S3, Kafka and table requests, and fails when a
family the server shows is missing here or described differently.

Counters end in `_total` in the exposition. The drive metrics carry the labels `drive`
(its index) and `path`; `eddy_http_requests_total` carries `listener` and `status`;
`eddy_s3_requests_total` carries `operation` (s3s's name of it, as `PutObject`;
`Unknown` for a request refused before it was resolved, such as a bad signature;
`Preflight` for a CORS preflight) and `status`; `eddy_bucket_bytes` and
`eddy_bucket_objects` carry `bucket`. Other families' labels show in the exposition once
they have a value.

| metric | type | description |
|---|---|---|
"""


def families(text):
    """(name, type, help) of every family in a text exposition, in order."""
    helps, types, order = {}, {}, []
    for line in text.splitlines():
        m = re.match(r"# (HELP|TYPE) (\S+) ?(.*)", line)
        if not m:
            continue
        kind, name, rest = m.groups()
        if name not in helps and name not in types:
            order.append(name)
        (helps if kind == "HELP" else types)[name] = rest
    return [(n, types.get(n, ""), helps.get(n, "")) for n in order]


def row(name, type_, help_):
    shown = f"{name}_total" if type_ == "counter" else name
    return f"| `{shown}` | {type_} | {help_.replace('|', '/')} |"


def page_rows():
    """The page's rows by the family name they show."""
    rows = {}
    if PAGE.exists():
        for line in PAGE.read_text().splitlines():
            m = re.match(r"\| `(\S+?)` \|", line)
            if m:
                rows[m.group(1)] = line
    return rows


def traffic(eddy):
    """S3, Kafka and table requests, so that families with labels have values."""
    import boto3
    from botocore.exceptions import ClientError
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyiceberg.catalog.rest import RestCatalog
    s3 = boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=eddy.access_key,
                      aws_secret_access_key=eddy.secret_key, region_name="us-east-1")
    s3.create_bucket(Bucket="metrics-ops")
    s3.put_object(Bucket="metrics-ops", Key="k", Body=b"v")
    try:
        s3.get_object(Bucket="metrics-ops", Key="missing")
    except ClientError:
        pass
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic("metrics-topic", 1, 1)])["metrics-topic"].result(timeout=30)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(10):
        p.produce("metrics-topic", value=f"v{i}".encode())
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": "metrics-group",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe(["metrics-topic"])
    got = 0
    while got < 10:
        m = c.poll(30)
        assert m is not None and m.error() is None, m and m.error()
        got += 1
    c.commit(asynchronous=False)
    c.close()
    RestCatalog("eddy", uri=f"{eddy.http_url}/iceberg",
                credential=f"{eddy.access_key}:{eddy.secret_key}", warehouse="kafka",
                **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"}
                ).load_table("kafka_topics.metrics-topic")


def test_the_metrics_page_lists_every_metric(served):
    _, text = served
    fams = families(text)
    assert len(fams) > 40, fams
    names = {n for n, _, _ in fams}
    assert {"eddy_s3_requests", "eddy_drive_free_bytes", "eddy_drive_capacity_bytes"} <= names
    rows = page_rows()
    seen = {(f"{n}_total" if t == "counter" else n): row(n, t, h) for n, t, h in fams}
    if os.environ.get("EDDY_WRITE_METRICS_DOC"):
        rows.update(seen)
        PAGE.write_text(HEADER + "\n".join(rows[k] for k in sorted(rows)) + "\n")
        rows = page_rows()
    wrong = sorted(k for k, r in seen.items() if rows.get(k) != r)
    assert not wrong, (f"docs/metrics.md lacks or misdescribes {wrong}; rewrite it with "
                       "EDDY_WRITE_METRICS_DOC=1 .venv/bin/python -m pytest -q "
                       "tests/e2e/test_metrics_doc.py")


@pytest.fixture(scope="module")
def served(eddy):
    """The server after the traffic, and its /metrics text."""
    traffic(eddy)
    with urllib.request.urlopen(f"{eddy.http_url}/metrics", timeout=30) as r:
        return eddy, r.read().decode()


def test_s3_requests_are_counted_by_operation(served):
    _, text = served

    def count(op, status):
        m = re.search(rf'^eddy_s3_requests_total\{{operation="{op}",status="{status}"\}} (\d+)',
                      text, re.M)
        return int(m.group(1)) if m else 0

    assert count("CreateBucket", 200) >= 1
    assert count("PutObject", 200) >= 1
    assert count("GetObject", 404) >= 1
    free = re.findall(r'^eddy_drive_free_bytes\{.*\} (\d+)', text, re.M)
    assert free and all(int(f) > 0 for f in free), free
