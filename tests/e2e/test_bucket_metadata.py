"""S3 Metadata for a bucket: boto3's CreateBucketMetadataConfiguration makes a journal of
every object change (a Kafka topic whose records commit with the change) and a live
inventory table, `b_<bucket>.inventory`, which PyIceberg and DuckDB read exactly as the
bucket lists at that moment; across kill -9 too. Reading needs s3:ListBucket on the
bucket; the tables are Eddy's to write."""

import json
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from confluent_kafka import Consumer
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError, ForbiddenError, NoSuchTableError

from conftest import metric
from test_iceberg import duckdb_with_extensions
from test_user_tables import cli


def bucket_name():
    return f"meta-{uuid.uuid4().hex[:8]}"


def s3(eddy, key=None, secret=None):
    return boto3.client("s3", endpoint_url=eddy.s3_url,
                        aws_access_key_id=key or eddy.access_key,
                        aws_secret_access_key=secret or eddy.secret_key,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}))


def catalog(eddy, key=None, secret=None):
    return RestCatalog(
        "eddy", uri=f"{eddy.http_url}/iceberg",
        credential=f"{key or eddy.access_key}:{secret or eddy.secret_key}",
        **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"})


def enable(client, bucket, inventory="ENABLED", expiration=None):
    journal = {"RecordExpiration": {"Expiration": "DISABLED"}} if expiration is None else \
        {"RecordExpiration": {"Expiration": "ENABLED", "Days": expiration}}
    client.create_bucket_metadata_configuration(
        Bucket=bucket,
        MetadataConfiguration={"JournalTableConfiguration": journal,
                               "InventoryTableConfiguration": {"ConfigurationState": inventory}})


def listing(client, bucket):
    """What ListObjectsV2 and HeadObject/GetObjectTagging show, by key."""
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            head = client.head_object(Bucket=bucket, Key=o["Key"])
            tags = client.get_object_tagging(Bucket=bucket, Key=o["Key"])["TagSet"]
            out[o["Key"]] = {"size": o["Size"], "e_tag": o["ETag"].strip('"'),
                             "tags": {t["Key"]: t["Value"] for t in tags},
                             "meta": head.get("Metadata", {})}
    return out


def inventory(cat, bucket):
    rows = cat.load_table(f"b_{bucket}.inventory").scan().to_arrow().to_pylist()
    return {r["key"]: {"size": r["size"], "e_tag": r["e_tag"],
                       "tags": dict(r["object_tags"]), "meta": dict(r["user_metadata"])}
            for r in rows}


def test_the_inventory_is_the_listing_at_every_load(eddy):
    client = s3(eddy)
    bucket = bucket_name()
    client.create_bucket(Bucket=bucket)
    client.put_object(Bucket=bucket, Key="before.txt", Body=b"made before the configuration")
    enable(client, bucket, expiration=30)

    got = client.get_bucket_metadata_configuration(Bucket=bucket)["GetBucketMetadataConfigurationResult"]
    result = got["MetadataConfigurationResult"]
    assert result["DestinationResult"]["TableNamespace"] == f"b_{bucket}"
    assert result["JournalTableConfigurationResult"]["TableName"] == "journal"
    assert result["JournalTableConfigurationResult"]["RecordExpiration"] == {
        "Expiration": "ENABLED", "Days": 30}
    assert result["InventoryTableConfigurationResult"]["ConfigurationState"] == "ENABLED"
    with pytest.raises(ClientError) as e:
        enable(client, bucket)
    assert e.value.response["Error"]["Code"] == "MetadataConfigurationAlreadyExists"

    cat = catalog(eddy)
    assert (f"b_{bucket}",) in cat.list_namespaces()
    assert sorted(t[1] for t in cat.list_tables(f"b_{bucket}")) == ["inventory", "journal"]
    assert inventory(cat, bucket) == listing(client, bucket)

    # Every kind of change, each read back at once.
    client.put_object(Bucket=bucket, Key="a/one.txt", Body=b"1" * 10,
                      Metadata={"owner": "ann"}, Tagging="team=red")
    assert inventory(cat, bucket) == listing(client, bucket)
    client.copy_object(Bucket=bucket, Key="a/copy.txt",
                       CopySource={"Bucket": bucket, "Key": "a/one.txt"})
    client.put_object_tagging(Bucket=bucket, Key="a/copy.txt",
                              Tagging={"TagSet": [{"Key": "team", "Value": "blue"}]})
    up = client.create_multipart_upload(Bucket=bucket, Key="big.bin")
    part = client.upload_part(Bucket=bucket, Key="big.bin", UploadId=up["UploadId"],
                              PartNumber=1, Body=b"x" * (5 << 20))
    client.complete_multipart_upload(
        Bucket=bucket, Key="big.bin", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    client.delete_object(Bucket=bucket, Key="before.txt")
    now = inventory(cat, bucket)
    assert now == listing(client, bucket)
    assert sorted(now) == ["a/copy.txt", "a/one.txt", "big.bin"]
    assert now["a/copy.txt"]["tags"] == {"team": "blue"}
    assert now["a/one.txt"]["meta"] == {"owner": "ann"}
    row = [r for r in cat.load_table(f"b_{bucket}.inventory").scan().to_arrow().to_pylist()
           if r["key"] == "big.bin"][0]
    assert row["is_multipart"] and row["storage_class"] == "STANDARD" and row["bucket"] == bucket

    # A load with no change since the last serves the same snapshot.
    before = metric(eddy, "eddy_tables_inventory_rebuilds_total")
    first = cat.load_table(f"b_{bucket}.inventory").metadata_location
    assert cat.load_table(f"b_{bucket}.inventory").metadata_location == first
    assert metric(eddy, "eddy_tables_inventory_rebuilds_total") == before

    # The journal: one event record per change, as Kafka and the journal table show it.
    journal = cat.load_table(f"b_{bucket}.journal").scan().to_arrow().to_pylist()
    names = [json.loads(r["value"])["Records"][0]["eventName"] for r in journal]
    assert names == ["ObjectCreated:Put", "ObjectCreated:Copy", "ObjectTagging:Put",
                     "ObjectCreated:CompleteMultipartUpload", "ObjectRemoved:Delete"], names
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": uuid.uuid4().hex,
                  "auto.offset.reset": "earliest"})
    c.subscribe([f"s3-journal.{bucket}"])
    keys = []
    while len(keys) < 5:
        m = c.poll(10)
        assert m is not None, keys
        keys.append(json.loads(m.value())["Records"][0]["s3"]["object"]["key"])
    c.close()
    assert keys == ["a/one.txt", "a/copy.txt", "a/copy.txt", "big.bin", "before.txt"]

    # Tables Eddy keeps: no writes, no user namespace of that name.
    with pytest.raises(ForbiddenError):
        cat.drop_table(f"b_{bucket}.inventory")
    with pytest.raises(BadRequestError):
        cat.create_namespace(f"b_{bucket_name()}")

    # Turned off: the inventory table goes, the journal topic stays.
    client.delete_bucket_metadata_configuration(Bucket=bucket)
    with pytest.raises(NoSuchTableError):
        cat.load_table(f"b_{bucket}.inventory")
    with pytest.raises(ClientError) as e:
        client.get_bucket_metadata_configuration(Bucket=bucket)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert (f"b_{bucket}",) not in cat.list_namespaces()


def test_duckdb_reads_the_inventory(eddy):
    client = s3(eddy)
    bucket = bucket_name()
    client.create_bucket(Bucket=bucket)
    enable(client, bucket)
    for i in range(25):
        client.put_object(Bucket=bucket, Key=f"k{i:02}", Body=b"y" * i)
    catalog(eddy).load_table(f"b_{bucket}.inventory")  # DuckDB reads the snapshot its
    con = duckdb_with_extensions()                     # transaction began with
    con.execute(f"""CREATE SECRET c (TYPE iceberg, CLIENT_ID '{eddy.access_key}',
        CLIENT_SECRET '{eddy.secret_key}',
        OAUTH2_SERVER_URI '{eddy.http_url}/iceberg/v1/oauth/tokens')""")
    con.execute(f"""CREATE SECRET s (TYPE s3, KEY_ID '{eddy.access_key}',
        SECRET '{eddy.secret_key}', ENDPOINT '127.0.0.1:{eddy.s3_port}', URL_STYLE 'path',
        USE_SSL false, REGION 'us-east-1')""")
    con.execute(f"""ATTACH 'kafka' AS eddy (TYPE iceberg, SECRET c,
        ENDPOINT '{eddy.http_url}/iceberg', ACCESS_DELEGATION_MODE 'none')""")
    got = con.execute(
        f'SELECT count(*), sum(size), min(key), max(key) FROM eddy."b_{bucket}".inventory'
    ).fetchone()
    assert got == (25, sum(range(25)), "k00", "k24")


def test_reading_needs_list_bucket(eddy):
    client = s3(eddy)
    bucket = bucket_name()
    client.create_bucket(Bucket=bucket)
    enable(client, bucket)
    client.put_object(Bucket=bucket, Key="secret-plans.txt", Body=b"x")
    user = f"dave{uuid.uuid4().hex[:6]}"
    cli(eddy, "user", "put", user, "--s3-secret", "dave-secret-1", "--kafka-password", "pw")
    dave = catalog(eddy, user, "dave-secret-1")
    assert (f"b_{bucket}",) not in dave.list_namespaces()
    for attempt in (lambda: dave.load_table(f"b_{bucket}.inventory"),
                    lambda: dave.load_table(f"b_{bucket}.journal"),
                    lambda: dave.list_tables(f"b_{bucket}")):
        with pytest.raises(ForbiddenError):
            attempt()
    their = s3(eddy, user, "dave-secret-1")
    # Reading the broker bucket (where table files are) is not reading this bucket's
    # inventory files: those need s3:ListBucket on the bucket itself.
    catalog(eddy).load_table(f"b_{bucket}.inventory")
    inventory_files = [o["Key"] for o in client.list_objects_v2(
        Bucket="kafka", Prefix=f"b_{bucket}/inventory/data/")["Contents"]]
    assert inventory_files
    client.put_bucket_policy(Bucket="kafka", Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": [user]},
                       "Action": ["s3:GetObject", "s3:ListBucket"],
                       "Resource": ["arn:aws:s3:::kafka", "arn:aws:s3:::kafka/*"]}]}))
    with pytest.raises(ClientError) as e:
        their.get_object(Bucket="kafka", Key=inventory_files[0])
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    for call in (lambda: their.get_bucket_metadata_configuration(Bucket=bucket),
                 lambda: their.delete_bucket_metadata_configuration(Bucket=bucket),
                 lambda: enable(their, bucket)):
        with pytest.raises(ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "AccessDenied"
    # A bucket policy letting him list it lets him read its inventory.
    client.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": [user]},
                       "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{bucket}"}]}))
    assert (f"b_{bucket}",) in dave.list_namespaces()
    table = dave.load_table(f"b_{bucket}.inventory")
    assert table.scan().to_arrow().column("key").to_pylist() == ["secret-plans.txt"]
    client.delete_bucket_policy(Bucket="kafka")

    # Deleting the (emptied) bucket drops its inventory: a bucket made again under its
    # name starts without one.
    client.delete_object(Bucket=bucket, Key="secret-plans.txt")
    client.delete_bucket(Bucket=bucket)
    client.create_bucket(Bucket=bucket)
    with pytest.raises(NoSuchTableError):
        catalog(eddy).load_table(f"b_{bucket}.inventory")
    assert (f"b_{bucket}",) not in catalog(eddy).list_namespaces()


def test_the_inventory_after_kill_9_is_the_listing(fresh_eddy):
    eddy = fresh_eddy
    client = s3(eddy)
    bucket = bucket_name()
    client.create_bucket(Bucket=bucket)
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    enable(client, bucket)
    for i in range(40):
        client.put_object(Bucket=bucket, Key=f"obj{i % 13}", Body=f"v{i}".encode())
    for i in range(0, 13, 3):
        client.delete_object(Bucket=bucket, Key=f"obj{i}")
    assert sorted(inventory(catalog(eddy), bucket)) == sorted(listing(client, bucket))
    client.put_object(Bucket=bucket, Key="after-the-load", Body=b"z")
    eddy.stop(kill=True)
    eddy.start()
    client = s3(eddy)
    versions = client.list_object_versions(Bucket=bucket)
    current = {v["Key"]: v["VersionId"] for v in versions.get("Versions", []) if v["IsLatest"]}
    rows = catalog(eddy).load_table(f"b_{bucket}.inventory").scan().to_arrow().to_pylist()
    assert {r["key"]: r["version_id"] for r in rows} == current
    assert "after-the-load" in current
