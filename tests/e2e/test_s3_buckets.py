"""Buckets through boto3: create/delete/head/list/location, naming rules, ownership
errors, bucket tagging and versioning."""

import uuid

import pytest

from s3util import ClientError, client, error_code, new_bucket, status


def test_create_head_list_delete(eddy):
    s3 = client(eddy)
    name = new_bucket(s3)
    s3.head_bucket(Bucket=name)
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert name in names
    assert s3.get_bucket_location(Bucket=name).get("LocationConstraint") in (None, "")

    # Creating your own bucket again: 200 in us-east-1 (as AWS answers there), and the
    # bucket is not reset; 409 BucketAlreadyOwnedByYou for another region.
    s3.put_object(Bucket=name, Key="k", Body=b"x")
    s3.create_bucket(Bucket=name)
    assert s3.get_object(Bucket=name, Key="k")["Body"].read() == b"x"
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert error_code(e) == "BucketAlreadyOwnedByYou"
    assert status(e) == 409

    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=name)
    assert error_code(e) == "BucketNotEmpty"
    assert status(e) == 409
    s3.delete_object(Bucket=name, Key="k")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=name)
    assert status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.list_objects_v2(Bucket=name)
    assert error_code(e) == "NoSuchBucket"


def test_location_constraint(eddy):
    s3 = client(eddy)
    s3.create_bucket(Bucket="located-bucket", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert s3.get_bucket_location(Bucket="located-bucket")["LocationConstraint"] == "eu-west-1"


@pytest.mark.parametrize("name", ["ab", "UPPER", "bad_underscore", "-leading", "trailing-", "a..b", "192.168.5.4", "x" * 64])
def test_bucket_name_rules(eddy, name):
    s3 = client(eddy, parameter_validation=False)
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name)
    assert status(e) == 400, e.value.response
    assert error_code(e) in ("InvalidBucketName", "InvalidRequest", "InvalidURI")
    # Every refusal has a message: botocore prints "Unknown" for one without.
    message = e.value.response["Error"].get("Message", "")
    assert message and message != "Unknown", e.value.response


def test_bucket_tagging(eddy):
    s3 = client(eddy)
    name = new_bucket(s3)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=name)
    assert error_code(e) == "NoSuchTagSet"
    s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": "team", "Value": "data"}]})
    assert s3.get_bucket_tagging(Bucket=name)["TagSet"] == [{"Key": "team", "Value": "data"}]
    s3.delete_bucket_tagging(Bucket=name)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=name)
    assert error_code(e) == "NoSuchTagSet"


def test_versioning(eddy):
    s3 = client(eddy)
    name = new_bucket(s3)
    assert "Status" not in s3.get_bucket_versioning(Bucket=name)
    s3.put_object(Bucket=name, Key="k", Body=b"before")  # the null version
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=name)["Status"] == "Enabled"

    v1 = s3.put_object(Bucket=name, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=name, Key="k", Body=b"two")["VersionId"]
    assert v1 != v2 and "null" not in (v1, v2)
    assert s3.get_object(Bucket=name, Key="k")["Body"].read() == b"two"
    assert s3.get_object(Bucket=name, Key="k", VersionId=v1)["Body"].read() == b"one"
    assert s3.get_object(Bucket=name, Key="k", VersionId="null")["Body"].read() == b"before"
    head = s3.head_object(Bucket=name, Key="k", VersionId=v1)
    assert head["VersionId"] == v1

    d = s3.delete_object(Bucket=name, Key="k")
    assert d["DeleteMarker"] is True
    marker = d["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=name, Key="k")
    assert error_code(e) == "NoSuchKey"
    headers = e.value.response["ResponseMetadata"]["HTTPHeaders"]
    assert headers.get("x-amz-delete-marker") == "true"
    assert headers.get("x-amz-version-id") == marker
    for read in (s3.get_object, s3.head_object):
        with pytest.raises(ClientError) as e:
            read(Bucket=name, Key="k", VersionId=marker)
        assert status(e) == 405
        headers = e.value.response["ResponseMetadata"]["HTTPHeaders"]
        assert headers.get("x-amz-delete-marker") == "true"
        assert headers.get("x-amz-version-id") == marker
    assert s3.get_object(Bucket=name, Key="k", VersionId=v2)["Body"].read() == b"two"

    lv = s3.list_object_versions(Bucket=name)
    got = [(v["VersionId"], v["IsLatest"]) for v in lv["Versions"]]
    assert got == [(v2, False), (v1, False), ("null", False)]
    assert [(m["VersionId"], m["IsLatest"]) for m in lv["DeleteMarkers"]] == [(marker, True)]

    # Paging through versions one at a time visits each once.
    seen, kw = [], {}
    while True:
        page = s3.list_object_versions(Bucket=name, MaxKeys=1, **kw)
        seen += [v["VersionId"] for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        if not page["IsTruncated"]:
            break
        kw = {"KeyMarker": page["NextKeyMarker"], "VersionIdMarker": page["NextVersionIdMarker"]}
    assert seen == [marker, v2, v1, "null"]

    # Removing the delete marker brings the object back.
    s3.delete_object(Bucket=name, Key="k", VersionId=marker)
    assert s3.get_object(Bucket=name, Key="k")["Body"].read() == b"two"
    # Deleting a version permanently.
    s3.delete_object(Bucket=name, Key="k", VersionId=v2)
    assert s3.get_object(Bucket=name, Key="k")["Body"].read() == b"one"

    # Suspended: writes replace the null version, older versions stay.
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Suspended"})
    assert s3.get_bucket_versioning(Bucket=name)["Status"] == "Suspended"
    # Writes answer without a version id, as AWS's PutObject sample for a suspended
    # bucket shows; reads and listings name the null version.
    r = s3.put_object(Bucket=name, Key="k", Body=b"s1")
    assert r.get("VersionId") is None
    assert s3.copy_object(Bucket=name, Key="c", CopySource={"Bucket": name, "Key": "k"}).get("VersionId") is None
    up = s3.create_multipart_upload(Bucket=name, Key="m")
    part = s3.upload_part(Bucket=name, Key="m", UploadId=up["UploadId"], PartNumber=1, Body=b"p")["ETag"]
    done = s3.complete_multipart_upload(Bucket=name, Key="m", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": [{"ETag": part, "PartNumber": 1}]})
    assert done.get("VersionId") is None
    assert s3.head_object(Bucket=name, Key="c")["VersionId"] == "null"
    s3.put_object(Bucket=name, Key="k", Body=b"s2")
    ids = [v["VersionId"] for v in s3.list_object_versions(Bucket=name)["Versions"] if v["Key"] == "k"]
    assert ids.count("null") == 1 and v1 in ids
    assert s3.get_object(Bucket=name, Key="k", VersionId="null")["Body"].read() == b"s2"
    d = s3.delete_object(Bucket=name, Key="k")
    assert d["DeleteMarker"] is True and d["VersionId"] == "null"
    assert s3.get_object(Bucket=name, Key="k", VersionId=v1)["Body"].read() == b"one"


def test_concurrent_setting_changes_are_all_kept(eddy):
    """Two boto3 clients change different settings of one bucket at the same time, many
    times over: each setting ends as its own client last set it (none is overwritten
    by the other client's stale copy of the bucket)."""
    import threading

    s3 = client(eddy)
    b = new_bucket(s3)
    rounds = 200

    def tags():
        c = client(eddy)
        for i in range(rounds):
            c.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "round", "Value": str(i)}]})

    def versioning():
        c = client(eddy)
        for i in range(rounds):
            status = "Suspended" if i % 2 == 0 else "Enabled"  # the last one: Enabled
            c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": status})

    threads = [threading.Thread(target=f) for f in (tags, versioning)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert s3.get_bucket_tagging(Bucket=b)["TagSet"] == [{"Key": "round", "Value": str(rounds - 1)}]
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"


def test_list_buckets_pages_with_max_buckets_and_a_prefix(eddy):
    """ListBuckets with MaxBuckets gives pages and a ContinuationToken until the last;
    a prefix and a region filter what is listed; an out-of-range MaxBuckets is refused."""
    s3 = client(eddy)
    stem = f"page-{uuid.uuid4().hex[:6]}"
    names = sorted(f"{stem}-{i:02d}" for i in range(7))
    for n in names:
        s3.create_bucket(Bucket=n)
    s3.create_bucket(Bucket=f"{stem}-eu", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    seen, token, pages = [], None, 0
    while True:
        args = {"MaxBuckets": 3, "Prefix": f"{stem}-0"}
        if token:
            args["ContinuationToken"] = token
        r = s3.list_buckets(**args)
        pages += 1
        seen += [b["Name"] for b in r["Buckets"]]
        token = r.get("ContinuationToken")
        if not token:
            break
    assert seen == names and pages == 3
    # boto3's paginator follows the same tokens.
    paged = [b["Name"] for page in s3.get_paginator("list_buckets").paginate(
        Prefix=stem, PaginationConfig={"PageSize": 2}) for b in page["Buckets"]]
    assert paged == sorted(names + [f"{stem}-eu"])
    eu = s3.list_buckets(Prefix=stem, BucketRegion="eu-west-1")["Buckets"]
    assert [b["Name"] for b in eu] == [f"{stem}-eu"]
    # (boto3 refuses 0 itself.)
    with pytest.raises(ClientError) as e:
        s3.list_buckets(MaxBuckets=10_001)
    assert error_code(e) == "InvalidArgument"
