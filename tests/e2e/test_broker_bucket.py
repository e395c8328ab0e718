"""The broker's bucket is the broker's: its table files can be read over S3 (as Trino and
Spark read them) but no S3 request changes them or the bucket, the administrator's
included, with an AccessDenied that says why; and a table whose files were deleted before
that rule (a data dir from such a build, tests/fixtures/damaged-table-*) is found by
`eddy tables check` and rebuilt from the log by `eddy tables repair`, its expansion's rows
left exactly as they were."""

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.catalog.rest import RestCatalog

from conftest import eddy_bin, new_eddy

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "tests" / "fixtures").glob("damaged-table-*/manifest.json"))
MANAGED = "managed by the broker"


def s3(eddy):
    return boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=eddy.access_key,
                        aws_secret_access_key=eddy.secret_key, region_name="us-east-1")


def catalog(eddy):
    return RestCatalog("eddy", uri=f"{eddy.http_url}/iceberg",
                       credential=f"{eddy.access_key}:{eddy.secret_key}", warehouse="kafka",
                       **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"})


def produce(eddy, topic, n, start=0, partitions=1):
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 2})
    for i in range(start, start + n):
        p.produce(topic, value=json.dumps({"id": i, "amount": i / 2}).encode(),
                  key=str(i).encode(), partition=i % partitions)
    assert p.flush(30) == 0


def refused(call):
    with pytest.raises(ClientError) as e:
        call()
    err = e.value.response["Error"]
    assert err["Code"] == "AccessDenied", err
    assert MANAGED in err["Message"], err
    return err


def aws(eddy, *args):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=eddy.access_key,
               AWS_SECRET_ACCESS_KEY=eddy.secret_key, AWS_DEFAULT_REGION="us-east-1")
    return subprocess.run([str(ROOT / ".venv" / "bin" / "aws"), "--endpoint-url", eddy.s3_url,
                           "s3", *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_broker_bucket_is_read_only_over_s3(eddy, tmp_path):
    topic = "guarded"
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1, config={"retention.ms": "-1"})])[topic].result(timeout=30)
    produce(eddy, topic, 20)
    table = catalog(eddy).load_table(f"kafka_topics.{topic}")
    assert len(table.scan().to_arrow()) == 20
    c = s3(eddy)
    keys = [o["Key"] for o in c.list_objects_v2(Bucket="kafka", Prefix=f"kafka_topics/{topic}/")["Contents"]]
    parquet = next(k for k in keys if k.endswith(".parquet"))
    # Reads work: the engines read the data files over S3.
    body = c.get_object(Bucket="kafka", Key=parquet)["Body"].read()
    assert body[:4] == b"PAR1"
    c.head_object(Bucket="kafka", Key=parquet)
    # Every change is refused, the administrator's too, with the reason.
    refused(lambda: c.delete_object(Bucket="kafka", Key=parquet))
    refused(lambda: c.put_object(Bucket="kafka", Key=parquet, Body=b"x"))
    refused(lambda: c.put_object(Bucket="kafka", Key="new-object", Body=b"x"))
    refused(lambda: c.copy_object(Bucket="kafka", Key="copy", CopySource={"Bucket": "kafka", "Key": parquet}))
    refused(lambda: c.create_multipart_upload(Bucket="kafka", Key="mpu"))
    refused(lambda: c.put_object_tagging(Bucket="kafka", Key=parquet, Tagging={"TagSet": []}))
    refused(lambda: c.delete_bucket(Bucket="kafka"))
    refused(lambda: c.put_bucket_versioning(Bucket="kafka", VersioningConfiguration={"Status": "Enabled"}))
    refused(lambda: c.put_bucket_lifecycle_configuration(Bucket="kafka", LifecycleConfiguration={
        "Rules": [{"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}}]}))
    out = c.delete_objects(Bucket="kafka", Delete={"Objects": [{"Key": k} for k in keys]})
    assert not out.get("Deleted"), out
    assert {e["Key"] for e in out["Errors"]} == set(keys)
    assert all(e["Code"] == "AccessDenied" and MANAGED in e["Message"] for e in out["Errors"]), out
    # It says it is the broker's where S3 lets a bucket say so: its tags.
    assert {"Key": "eddy:managed-by", "Value": "broker"} in c.get_bucket_tagging(Bucket="kafka")["TagSet"]
    # A copy out of the bucket is a read: allowed.
    c.create_bucket(Bucket="mine")
    c.copy_object(Bucket="mine", Key="copy.parquet", CopySource={"Bucket": "kafka", "Key": parquet})
    # aws-cli, as the newcomer typed it.
    r = aws(eddy, "rm", f"s3://kafka/{parquet}")
    assert r.returncode != 0 and MANAGED in r.stderr, r
    r = aws(eddy, "rb", "s3://kafka", "--force")
    assert r.returncode != 0 and MANAGED in r.stderr, r
    # Nothing was lost: the table still loads with every record.
    assert len(catalog(eddy).load_table(f"kafka_topics.{topic}").scan().to_arrow()) == 20
    assert {o["Key"] for o in c.list_objects_v2(Bucket="kafka", Prefix=f"kafka_topics/{topic}/")["Contents"]} >= set(keys)


def eddy_cli(server, *args):
    env = dict(os.environ, EDDY_HTTP_URL=server.http_url, EDDY_ACCESS_KEY=server.access_key,
               EDDY_SECRET_KEY=server.secret_key)
    return subprocess.run([eddy_bin(), *args], capture_output=True, text=True, env=env, timeout=300)


def test_table_files_carry_the_md5_of_their_bytes_as_etag(eddy):
    """Clients check a download against its ETag (s3cmd, rclone): a seal's data files, one
    per partition and large enough to be hashed side by side, each carry their own MD5."""
    topic, parts = "etags", 3
    a = AdminClient({"bootstrap.servers": eddy.bootstrap})
    a.create_topics([NewTopic(topic, parts, 1, config={"retention.ms": "-1"})])[topic].result(timeout=30)
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5})
    for i in range(parts * 300):
        p.produce(topic, value=os.urandom(1024), partition=i % parts)
    assert p.flush(30) == 0
    assert len(catalog(eddy).load_table(f"kafka_topics.{topic}").scan().to_arrow()) == parts * 300
    c = s3(eddy)
    keys = [o["Key"] for o in c.list_objects_v2(Bucket="kafka", Prefix=f"kafka_topics/{topic}/")["Contents"]]
    data = [k for k in keys if k.endswith(".parquet")]
    assert len(data) == parts, keys
    for key in keys:
        got = c.get_object(Bucket="kafka", Key=key)
        body = got["Body"].read()
        assert got["ETag"].strip('"') == hashlib.md5(body).hexdigest(), key
    # Random values do not compress: each data file is well past the size hashed inline.
    assert all(len(c.get_object(Bucket="kafka", Key=k)["Body"].read()) > 256 * 1024 for k in data)


@pytest.mark.parametrize("manifest", FIXTURES, ids=lambda p: p.parent.name)
def test_repair_rebuilds_a_table_whose_files_were_deleted(manifest, tmp_path):
    m = json.loads(manifest.read_text())
    data = tmp_path / "data"
    shutil.copytree(manifest.parent / "data", data)
    server = new_eddy(tmp_path)
    server.data_dir = data
    server.start()
    try:
        topic, target = m["topic"], m["target"]
        # The damage as a user meets it: the table does not load.
        with pytest.raises(Exception):
            catalog(server).load_table(f"kafka_topics.{topic}").scan().to_arrow()
        r = eddy_cli(server, "tables", "check", topic)
        assert r.returncode == 1, r
        # Its metadata.json is gone, so that is what the check can name.
        metadata = next(k for k in m["deleted"] if k.endswith(".metadata.json"))
        assert f"s3://kafka/{metadata}" in r.stdout, r.stdout
        assert "eddy tables repair" in r.stderr, r.stderr

        r = eddy_cli(server, "tables", "repair", topic)
        assert r.returncode == 0, r
        assert "rebuilt from the log" in r.stdout, r.stdout
        assert eddy_cli(server, "tables", "check", topic).returncode == 0

        def topic_rows():
            t = catalog(server).load_table(f"kafka_topics.{topic}").scan().to_arrow()
            return sorted((r["partition"], r["offset"], r["value"].decode()) for r in t.to_pylist())

        def target_rows():
            t = catalog(server).load_table(target).scan().to_arrow()
            return sorted((r["_kafka_partition"], r["_offset"], r["id"]) for r in t.to_pylist())

        expected = sorted((r["partition"], r["offset"], r["value"]) for r in m["records"])
        assert topic_rows() == expected
        # The expansion's rows are as they were: one per record, none twice.
        assert target_rows() == sorted((r["partition"], r["offset"], r["id"]) for r in m["records"])

        # And it goes on: new records reach both tables, once.
        produce(server, topic, 10, start=1000, partitions=2)
        assert len(topic_rows()) == len(expected) + 10
        rows = target_rows()
        assert len(rows) == len(set(rows)) == len(expected) + 10
        assert {r[2] for r in rows} >= set(range(1000, 1010))

        # A table that lost a data file only: the check names the file.
        lost = m["data_file_only"]
        r = eddy_cli(server, "tables", "check", lost["topic"])
        assert r.returncode == 1 and f"s3://kafka/{lost['deleted']}" in r.stdout, r
        r = eddy_cli(server, "tables", "repair", lost["topic"], "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["rebuilt"] is True, r
        t = catalog(server).load_table(f"kafka_topics.{lost['topic']}").scan().to_arrow()
        assert sorted(v.decode() for v in t.column("value").to_pylist()) == sorted(lost["values"])

        # A restart keeps the repaired table.
        server.restart()
        assert len(topic_rows()) == len(expected) + 10
        r = eddy_cli(server, "tables", "check", topic)
        assert r.returncode == 0 and "intact" in r.stdout, r
    finally:
        server.stop()


def test_the_fixtures_are_there():
    assert FIXTURES, "no tests/fixtures/damaged-table-* fixture"
