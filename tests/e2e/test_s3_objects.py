"""Objects through boto3: put/get/head/delete, ranges, conditional requests, header
overrides, metadata, copy, DeleteObjects, tagging and checksums."""

import base64
import datetime
import hashlib
import os
import uuid
import zlib

import pytest

from s3util import ClientError, client, error_code, new_bucket, status


@pytest.fixture(scope="module")
def s3(eddy):
    return client(eddy)


@pytest.fixture(scope="module")
def bucket(s3):
    return new_bucket(s3, "obj")


def test_put_get_head_delete_small_and_large(s3, bucket):
    for size in (0, 1, 1000, 40_000, 3 * 1024 * 1024 + 7):
        body = os.urandom(size)
        key = f"sized/{size}"
        r = s3.put_object(Bucket=bucket, Key=key, Body=body)
        assert r["ETag"] == f'"{hashlib.md5(body).hexdigest()}"'
        g = s3.get_object(Bucket=bucket, Key=key)
        assert g["Body"].read() == body
        assert g["ContentLength"] == size
        assert g["ETag"] == r["ETag"]
        h = s3.head_object(Bucket=bucket, Key=key)
        assert h["ContentLength"] == size and h["ETag"] == r["ETag"]
        s3.delete_object(Bucket=bucket, Key=key)
        with pytest.raises(ClientError) as e:
            s3.head_object(Bucket=bucket, Key=key)
        assert status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="missing")
    assert error_code(e) == "NoSuchKey"
    # Deleting a missing key succeeds, as in S3.
    assert s3.delete_object(Bucket=bucket, Key="missing")["ResponseMetadata"]["HTTPStatusCode"] == 204


def test_concurrent_large_puts_each_get_their_own_etag(s3, bucket):
    # Uploads arriving together share the server's MD5 lanes: each must still get the
    # MD5 of its own bytes, with parts of different lengths finishing at different times.
    from concurrent.futures import ThreadPoolExecutor

    bodies = {f"lanes/{i}": os.urandom((2 + i % 4) * 1024 * 1024 + i * 4099) for i in range(10)}

    def put(key):
        return key, s3.put_object(Bucket=bucket, Key=key, Body=bodies[key])["ETag"]

    with ThreadPoolExecutor(10) as pool:
        etags = dict(pool.map(put, bodies))
    for key, body in bodies.items():
        assert etags[key] == f'"{hashlib.md5(body).hexdigest()}"', key
        g = s3.get_object(Bucket=bucket, Key=key)
        assert g["ETag"] == etags[key] and g["Body"].read() == body


def test_ranges(s3, bucket):
    body = bytes(range(256)) * 8192  # 2 MiB: spans blob stripes
    s3.put_object(Bucket=bucket, Key="ranged", Body=body)
    cases = {
        "bytes=0-0": body[0:1],
        "bytes=10-19": body[10:20],
        "bytes=1048570-1048590": body[1048570:1048591],
        "bytes=-100": body[-100:],
        "bytes=2097000-": body[2097000:],
        "bytes=5-99999999": body[5:],
    }
    for rng, want in cases.items():
        g = s3.get_object(Bucket=bucket, Key="ranged", Range=rng)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
        assert g["Body"].read() == want, rng
        assert g["ContentLength"] == len(want)
        assert g["ContentRange"].endswith(f"/{len(body)}")
    for rng in ("bytes=2097152-", "bytes=99999999-99999999999"):
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=bucket, Key="ranged", Range=rng)
        assert status(e) == 416 and error_code(e) == "InvalidRange"
    # Small (inline) objects too.
    s3.put_object(Bucket=bucket, Key="tiny", Body=b"0123456789")
    assert s3.get_object(Bucket=bucket, Key="tiny", Range="bytes=-3")["Body"].read() == b"789"
    assert s3.get_object(Bucket=bucket, Key="tiny", Range="bytes=4-")["Body"].read() == b"456789"


def test_conditional_requests(s3, bucket):
    etag = s3.put_object(Bucket=bucket, Key="cond", Body=b"v1")["ETag"]
    lm = s3.head_object(Bucket=bucket, Key="cond")["LastModified"]
    past = lm - datetime.timedelta(hours=1)
    future = lm + datetime.timedelta(hours=1)

    assert s3.get_object(Bucket=bucket, Key="cond", IfMatch=etag)["Body"].read() == b"v1"
    for kw, code in [
        ({"IfMatch": '"0000"'}, 412),
        ({"IfNoneMatch": etag}, 304),
        ({"IfModifiedSince": future}, 304),
        ({"IfUnmodifiedSince": past}, 412),
    ]:
        for op in (s3.get_object, s3.head_object):
            with pytest.raises(ClientError) as e:
                op(Bucket=bucket, Key="cond", **kw)
            assert status(e) == code, (op, kw)
    # A 304 keeps the validators and caching headers, as RFC 9110 and AWS do.
    s3.put_object(Bucket=bucket, Key="cached", Body=b"c", CacheControl="max-age=60",
                  Expires=datetime.datetime(2030, 10, 21, 7, 28, tzinfo=datetime.timezone.utc))
    cached = s3.head_object(Bucket=bucket, Key="cached")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="cached", IfNoneMatch=cached["ETag"])
    headers = e.value.response["ResponseMetadata"]["HTTPHeaders"]
    assert status(e) == 304
    assert headers["etag"] == cached["ETag"]
    assert headers["last-modified"] == cached["ResponseMetadata"]["HTTPHeaders"]["last-modified"]
    assert headers["cache-control"] == "max-age=60"
    assert headers["expires"] == "Mon, 21 Oct 2030 07:28:00 GMT"
    assert "content-type" not in headers
    assert s3.head_object(Bucket=bucket, Key="cond", IfModifiedSince=past)["ETag"] == etag
    assert s3.head_object(Bucket=bucket, Key="cond", IfUnmodifiedSince=future)["ETag"] == etag
    # If-Match wins over a failing If-Unmodified-Since, as in S3.
    assert s3.head_object(Bucket=bucket, Key="cond", IfMatch=etag, IfUnmodifiedSince=past)["ETag"] == etag

    # Conditional writes.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cond", Body=b"v2", IfNoneMatch="*")
    assert status(e) == 412
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cond", Body=b"v2", IfMatch='"0000"')
    assert status(e) == 412
    etag2 = s3.put_object(Bucket=bucket, Key="cond", Body=b"v2", IfMatch=etag)["ETag"]
    assert s3.get_object(Bucket=bucket, Key="cond")["ETag"] == etag2
    s3.put_object(Bucket=bucket, Key="cond-new", Body=b"n", IfNoneMatch="*")


def test_metadata_and_overrides(s3, bucket):
    s3.put_object(
        Bucket=bucket, Key="meta", Body=b"<p>hi</p>",
        ContentType="text/html", ContentEncoding="identity", ContentDisposition="inline",
        ContentLanguage="en", CacheControl="max-age=60",
        Metadata={"color": "blue", "Owner-Name": "Ann"},
    )
    h = s3.head_object(Bucket=bucket, Key="meta")
    assert h["ContentType"] == "text/html"
    assert h["ContentEncoding"] == "identity"
    assert h["ContentDisposition"] == "inline"
    assert h["ContentLanguage"] == "en"
    assert h["CacheControl"] == "max-age=60"
    assert h["Metadata"] == {"color": "blue", "owner-name": "Ann"}
    g = s3.get_object(
        Bucket=bucket, Key="meta",
        ResponseContentType="application/octet-stream",
        ResponseContentDisposition='attachment; filename="x.html"',
        ResponseCacheControl="no-cache",
    )
    assert g["ContentType"] == "application/octet-stream"
    assert g["ContentDisposition"] == 'attachment; filename="x.html"'
    assert g["CacheControl"] == "no-cache"


def test_copy(s3, bucket):
    body = os.urandom(100_000)
    src = s3.put_object(Bucket=bucket, Key="src", Body=body, ContentType="image/png",
                        Metadata={"a": "1"}, Tagging="t=1")
    r = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == src["ETag"]
    g = s3.get_object(Bucket=bucket, Key="dst")
    assert g["Body"].read() == body
    assert g["ContentType"] == "image/png" and g["Metadata"] == {"a": "1"}
    assert s3.get_object_tagging(Bucket=bucket, Key="dst")["TagSet"] == [{"Key": "t", "Value": "1"}]

    s3.copy_object(Bucket=bucket, Key="dst2", CopySource=f"{bucket}/src",
                   MetadataDirective="REPLACE", ContentType="text/plain", Metadata={"b": "2"},
                   TaggingDirective="REPLACE", Tagging="u=2")
    h = s3.head_object(Bucket=bucket, Key="dst2")
    assert h["ContentType"] == "text/plain" and h["Metadata"] == {"b": "2"}
    assert s3.get_object_tagging(Bucket=bucket, Key="dst2")["TagSet"] == [{"Key": "u", "Value": "2"}]

    # Copying onto itself needs a change.
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="src", CopySource=f"{bucket}/src")
    assert error_code(e) == "InvalidRequest"
    s3.copy_object(Bucket=bucket, Key="src", CopySource=f"{bucket}/src",
                   MetadataDirective="REPLACE", Metadata={"c": "3"})
    assert s3.head_object(Bucket=bucket, Key="src")["Metadata"] == {"c": "3"}

    # Copy-source conditions.
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst3", CopySource=f"{bucket}/src", CopySourceIfMatch='"nope"')
    assert status(e) == 412
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst3", CopySource=f"{bucket}/src", CopySourceIfNoneMatch=src["ETag"])
    assert status(e) == 412
    s3.copy_object(Bucket=bucket, Key="dst3", CopySource=f"{bucket}/src", CopySourceIfMatch=src["ETag"])
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="dst4", CopySource=f"{bucket}/missing")
    assert error_code(e) == "NoSuchKey"


def test_delete_objects(s3, bucket):
    keys = [f"del/{i}" for i in range(5)]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[:3]]})
    assert sorted(d["Key"] for d in r["Deleted"]) == keys[:3]
    assert "Errors" not in r
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[3:]], "Quiet": True})
    assert not r.get("Deleted")
    assert s3.list_objects_v2(Bucket=bucket, Prefix="del/")["KeyCount"] == 0


def test_delete_objects_a_thousand_keys_in_request_order(s3):
    """The most one request may name, unversioned and versioned, with keys that do not
    exist, a duplicate and blob-backed objects: every key answered once, in request
    order, and nothing left behind."""
    from concurrent.futures import ThreadPoolExecutor

    plain, versioned = new_bucket(s3), new_bucket(s3)
    s3.put_bucket_versioning(Bucket=versioned, VersioningConfiguration={"Status": "Enabled"})
    keys = [f"k/{i:04d}" for i in range(998)]
    big = os.urandom(40 << 10)  # above the inline limit: a blob

    def put(args):
        b, k = args
        s3.put_object(Bucket=b, Key=k, Body=big if k.endswith("7") else k.encode())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, [(b, k) for b in (plain, versioned) for k in keys[:900]]))
    # 900 that exist, 98 that never did, one duplicate, one key twice over: 1000 entries.
    request = keys + [keys[5], "k/never"]
    for b in (plain, versioned):
        r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in request]})
        assert "Errors" not in r
        assert [d["Key"] for d in r["Deleted"]] == request
        if b == versioned:
            marks = [d["DeleteMarkerVersionId"] for d in r["Deleted"]]
            assert all(d["DeleteMarker"] for d in r["Deleted"])
            assert len(set(marks)) == len(marks)
        assert s3.list_objects_v2(Bucket=b)["KeyCount"] == 0
    # Each existing key keeps its version under a marker; every entry made one marker.
    found, markers = 0, 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=versioned):
        found += len(page.get("Versions", []))
        markers += len(page.get("DeleteMarkers", []))
    assert (found, markers) == (900, 1000)
    with pytest.raises(ClientError) as e:
        s3.delete_objects(Bucket=plain, Delete={"Objects": [{"Key": f"x{i}"} for i in range(1001)]})
    assert error_code(e) == "MalformedXML"


def test_object_tagging(s3, bucket):
    s3.put_object(Bucket=bucket, Key="tagged", Body=b"x", Tagging="a=1&b=two%20words")
    tags = s3.get_object_tagging(Bucket=bucket, Key="tagged")["TagSet"]
    assert sorted((t["Key"], t["Value"]) for t in tags) == [("a", "1"), ("b", "two words")]
    assert s3.get_object(Bucket=bucket, Key="tagged")["TagCount"] == 2
    s3.put_object_tagging(Bucket=bucket, Key="tagged", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    assert s3.get_object_tagging(Bucket=bucket, Key="tagged")["TagSet"] == [{"Key": "k", "Value": "v"}]
    s3.delete_object_tagging(Bucket=bucket, Key="tagged")
    assert s3.get_object_tagging(Bucket=bucket, Key="tagged")["TagSet"] == []

    too_many = {"TagSet": [{"Key": f"k{i}", "Value": "v"} for i in range(11)]}
    long_key = {"TagSet": [{"Key": "k" * 129, "Value": "v"}]}
    long_value = {"TagSet": [{"Key": "k", "Value": "v" * 257}]}
    dup = {"TagSet": [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}]}
    for tagging in (too_many, long_key, long_value, dup):
        with pytest.raises(ClientError) as e:
            s3.put_object_tagging(Bucket=bucket, Key="tagged", Tagging=tagging)
        assert status(e) == 400
        assert error_code(e) in ("InvalidTag", "BadRequest")
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="nope", Tagging={"TagSet": []})
    assert error_code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="t2", Body=b"x", Tagging="&".join(f"k{i}=v" for i in range(11)))
    assert status(e) == 400


def b64(b):
    return base64.b64encode(b).decode()


def test_checksums(s3, bucket):
    body = os.urandom(200_000)
    crc32 = b64(zlib.crc32(body).to_bytes(4, "big"))
    sha256 = b64(hashlib.sha256(body).digest())
    for alg in ("CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"):
        key = f"sum/{alg}"
        r = s3.put_object(Bucket=bucket, Key=key, Body=body, ChecksumAlgorithm=alg)
        assert r[f"Checksum{alg}"]
        h = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        assert h[f"Checksum{alg}"] == r[f"Checksum{alg}"]
        g = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        assert g["Body"].read() == body  # botocore validates the checksum as it reads
        assert g[f"Checksum{alg}"] == r[f"Checksum{alg}"]
    assert s3.head_object(Bucket=bucket, Key="sum/CRC32", ChecksumMode="ENABLED")["ChecksumCRC32"] == crc32
    assert s3.head_object(Bucket=bucket, Key="sum/SHA256", ChecksumMode="ENABLED")["ChecksumSHA256"] == sha256

    # A wrong checksum or Content-MD5 is refused and stores nothing.
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="sum/bad", Body=body, ChecksumCRC32=b64(b"\0\0\0\0"))
    assert status(e) == 400 and error_code(e) in ("BadDigest", "InvalidRequest")
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="sum/bad", Body=body, ChecksumSHA256=b64(b"\0" * 32))
    assert status(e) == 400
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="sum/bad", Body=body, ContentMD5=b64(hashlib.md5(b"other").digest()))
    assert error_code(e) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="sum/bad")
    assert status(e) == 404


def test_objects_written_without_a_checksum_get_s3s_default_crc64nvme(eddy, bucket):
    """S3 gives every object written without a checksum a full-object CRC64NVME: a
    PutObject, a multipart upload that announced none (combined from its parts) and a
    copy of an object that had none. boto3 told to send checksums only where required
    sends none."""
    from awscrt.checksums import crc64nvme
    bare = client(eddy, request_checksum_calculation="when_required")
    crc = lambda data: b64(crc64nvme(data).to_bytes(8, "big"))  # noqa: E731
    body = os.urandom(300_000)
    put = bare.put_object(Bucket=bucket, Key="default/put", Body=body)
    assert put["ChecksumCRC64NVME"] == crc(body) and put["ChecksumType"] == "FULL_OBJECT"
    h = bare.head_object(Bucket=bucket, Key="default/put", ChecksumMode="ENABLED")
    assert (h["ChecksumCRC64NVME"], h["ChecksumType"]) == (crc(body), "FULL_OBJECT")
    p1, p2 = os.urandom(5 << 20), os.urandom(1000)
    up = bare.create_multipart_upload(Bucket=bucket, Key="default/mpu")
    etags = [bare.upload_part(Bucket=bucket, Key="default/mpu", UploadId=up["UploadId"],
                              PartNumber=n, Body=p)["ETag"] for n, p in ((1, p1), (2, p2))]
    done = bare.complete_multipart_upload(
        Bucket=bucket, Key="default/mpu", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in zip((1, 2), etags)]})
    assert done["ChecksumCRC64NVME"] == crc(p1 + p2)
    h = bare.head_object(Bucket=bucket, Key="default/mpu", ChecksumMode="ENABLED")
    assert (h["ChecksumCRC64NVME"], h["ChecksumType"]) == (crc(p1 + p2), "FULL_OBJECT")
    g = bare.get_object(Bucket=bucket, Key="default/mpu", ChecksumMode="ENABLED")
    assert g["Body"].read() == p1 + p2  # botocore checks the full-object CRC as it reads
    bare.copy_object(Bucket=bucket, Key="default/copy",
                     CopySource={"Bucket": bucket, "Key": "default/put"})
    h = bare.head_object(Bucket=bucket, Key="default/copy", ChecksumMode="ENABLED")
    assert h["ChecksumCRC64NVME"] == crc(body)


def test_keys_with_odd_characters(s3, bucket):
    for key in ("a b+c", "ünï/cødé", "q?x=1&y", "percent%2F", "trailing/"):
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == key.encode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x")
    assert status(e) == 400


def chunked_put(eddy, bucket, key, body, trailer_crc32):
    """A PutObject as aws-chunked with an unsigned payload and a checksum trailer, the
    way SDKs stream uploads over TLS."""
    import urllib.error
    import urllib.request

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    payload = (f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n"
               + f"x-amz-checksum-crc32:{trailer_crc32}\r\n\r\n".encode())
    req = AWSRequest(method="PUT", url=f"{eddy.s3_url}/{bucket}/{key}", data=payload, headers={
        "X-Amz-Content-SHA256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        "Content-Encoding": "aws-chunked",
        "X-Amz-Decoded-Content-Length": str(len(body)),
        "X-Amz-Trailer": "x-amz-checksum-crc32",
    })
    SigV4Auth(Credentials(eddy.access_key, eddy.secret_key), "s3", "us-east-1").add_auth(req)
    p = req.prepare()
    r = urllib.request.Request(p.url, data=payload, method="PUT", headers=dict(p.headers))
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_checksum_trailer(eddy, s3, bucket):
    body = os.urandom(70_000)
    good = b64(zlib.crc32(body).to_bytes(4, "big"))
    code, text = chunked_put(eddy, bucket, "trailer/good", body, good)
    assert code == 200, text
    g = s3.get_object(Bucket=bucket, Key="trailer/good", ChecksumMode="ENABLED")
    assert g["Body"].read() == body and g["ChecksumCRC32"] == good
    code, text = chunked_put(eddy, bucket, "trailer/bad", body, b64(b"\1\2\3\4"))
    assert code == 400 and b"BadDigest" in text, text
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="trailer/bad")
    assert status(e) == 404


def test_racing_create_only_puts_one_wins_and_losers_leave_nothing(eddy, s3, bucket):
    import concurrent.futures

    from s3util import blob_files

    before = blob_files(eddy)
    bodies = [os.urandom(1024 * 1024) for _ in range(6)]

    def put(body):
        try:
            return s3.put_object(Bucket=bucket, Key="race", Body=body, IfNoneMatch="*")["ETag"]
        except ClientError as e:
            assert status_of(e) == 412, e.response
            return None

    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        etags = list(pool.map(put, bodies))
    winners = [e for e in etags if e]
    assert len(winners) == 1
    body = s3.get_object(Bucket=bucket, Key="race")["Body"].read()
    assert f'"{hashlib.md5(body).hexdigest()}"' == winners[0] and body in bodies
    # Every loser's blob was deleted before its 412 was sent.
    assert len(blob_files(eddy) - before) == 1


def status_of(e):
    return e.response["ResponseMetadata"]["HTTPStatusCode"]


def test_body_over_5_gib_is_refused_up_front(eddy, bucket):
    import http.client

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    req = AWSRequest(method="PUT", url=f"{eddy.s3_url}/{bucket}/huge",
                     headers={"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD", "Content-Length": str(6 << 30)})
    S3SigV4Auth(Credentials(eddy.access_key, eddy.secret_key), "s3", "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection("127.0.0.1", eddy.s3_port, timeout=30)
    conn.putrequest("PUT", f"/{bucket}/huge", skip_accept_encoding=True)
    for k, v in req.headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    conn.send(b"x" * 1024)  # the server answers without waiting for 6 GiB
    r = conn.getresponse()
    assert r.status == 400 and b"EntityTooLarge" in r.read()


def test_error_documents_carry_the_request_id_of_their_header(eddy, s3, bucket):
    """The `RequestId` of an error body is the `x-amz-request-id` header, for errors of
    the operations (NoSuchKey through a presigned URL) and of authentication (an
    unsigned request)."""
    import re
    import urllib.error
    import urllib.request

    missing = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "no/such"})
    for url, code in ((missing, "NoSuchKey"), (f"{eddy.s3_url}/{bucket}/k", "AccessDenied")):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url, timeout=10)
        body = e.value.read().decode()
        header = e.value.headers["x-amz-request-id"]
        assert f"<Code>{code}</Code>" in body, body
        assert re.findall(r"<RequestId>([^<]*)</RequestId>", body) == [header], (body, header)


def test_conditional_deletes(s3, bucket):
    """DeleteObject with If-Match, x-amz-if-match-last-modified-time and
    x-amz-if-match-size, on the current version and on a version id; DeleteObjects per
    key; PutObject If-Match on a missing key: AWS's 412 and 404."""
    etag = s3.put_object(Bucket=bucket, Key="cd", Body=b"12345")["ETag"]
    lm = s3.head_object(Bucket=bucket, Key="cd")["LastModified"]
    for kw in ({"IfMatch": '"0000"'}, {"IfMatchSize": 4},
               {"IfMatchLastModifiedTime": lm - datetime.timedelta(seconds=5)}):
        with pytest.raises(ClientError) as e:
            s3.delete_object(Bucket=bucket, Key="cd", **kw)
        assert status(e) == 412 and error_code(e) == "PreconditionFailed", kw
    assert s3.get_object(Bucket=bucket, Key="cd")["Body"].read() == b"12345"
    s3.delete_object(Bucket=bucket, Key="cd", IfMatch=etag, IfMatchSize=5, IfMatchLastModifiedTime=lm)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="cd")
    assert status(e) == 404
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="cd", IfMatch=etag)
    assert status(e) == 404 and error_code(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="cd", Body=b"x", IfMatch=etag)
    assert status(e) == 404 and error_code(e) == "NoSuchKey"

    # DeleteObjects: each key's conditions, each key's answer.
    keep = s3.put_object(Bucket=bucket, Key="cd-keep", Body=b"keep")["ETag"]
    gone = s3.put_object(Bucket=bucket, Key="cd-gone", Body=b"gone")["ETag"]
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [
        {"Key": "cd-keep", "ETag": '"0000"'}, {"Key": "cd-gone", "ETag": gone, "Size": 4}]})
    assert [(x["Key"], x["Code"]) for x in r["Errors"]] == [("cd-keep", "PreconditionFailed")]
    assert [x["Key"] for x in r["Deleted"]] == ["cd-gone"]
    assert s3.get_object(Bucket=bucket, Key="cd-keep")["ETag"] == keep


def test_conditional_deletes_of_a_version(s3):
    bucket = f"cdv-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bucket, Key="k", Body=b"one")
    s3.put_object(Bucket=bucket, Key="k", Body=b"three")
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="k", VersionId=v1["VersionId"], IfMatchSize=5)
    assert status(e) == 412
    s3.delete_object(Bucket=bucket, Key="k", VersionId=v1["VersionId"], IfMatch=v1["ETag"], IfMatchSize=3)
    versions = s3.list_object_versions(Bucket=bucket)["Versions"]
    assert [v["VersionId"] for v in versions if v["VersionId"] == v1["VersionId"]] == []

    # A delete marker as the current version is nothing to check: 404 NoSuchKey, as AWS
    # answers a conditional delete of a key whose current version is a marker, and per
    # key in DeleteObjects (where an unconditional delete of a missing key is Deleted).
    etag = s3.head_object(Bucket=bucket, Key="k")["ETag"]
    s3.delete_object(Bucket=bucket, Key="k")
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=bucket, Key="k", IfMatch=etag)
    assert status(e) == 404 and error_code(e) == "NoSuchKey"
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [
        {"Key": "k", "ETag": etag}, {"Key": "never", "ETag": etag}, {"Key": "never-2"}]})
    assert sorted((x["Key"], x["Code"]) for x in r["Errors"]) == [("k", "NoSuchKey"), ("never", "NoSuchKey")]
    assert [x["Key"] for x in r["Deleted"]] == ["never-2"]


def test_get_object_attributes(s3, bucket):
    """GetObjectAttributes with boto3: the ETag, size, storage class and
    checksum of a single-part object; the parts of a multipart one, paged; a bad
    attribute name refused; a missing key 404."""
    body = b"attributes" * 100
    put = s3.put_object(Bucket=bucket, Key="attr", Body=body, ChecksumAlgorithm="CRC32")
    a = s3.get_object_attributes(Bucket=bucket, Key="attr",
                                 ObjectAttributes=["ETag", "Checksum", "ObjectSize", "StorageClass"])
    assert a["ETag"].strip('"') == put["ETag"].strip('"')
    assert a["ObjectSize"] == len(body)
    assert a["StorageClass"] == "STANDARD"
    assert a["Checksum"]["ChecksumCRC32"] == put["ChecksumCRC32"]
    assert "ObjectParts" not in a
    only = s3.get_object_attributes(Bucket=bucket, Key="attr", ObjectAttributes=["ObjectSize"])
    assert only["ObjectSize"] == len(body) and "ETag" not in only

    part = 5 * 1024 * 1024
    up = s3.create_multipart_upload(Bucket=bucket, Key="attr-mp")
    etags = [s3.upload_part(Bucket=bucket, Key="attr-mp", UploadId=up["UploadId"], PartNumber=n,
                            Body=bytes([n]) * (part if n < 3 else 10))["ETag"] for n in (1, 2, 3)]
    s3.complete_multipart_upload(Bucket=bucket, Key="attr-mp", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"ETag": e, "PartNumber": n}
                                                            for n, e in zip((1, 2, 3), etags)]})
    a = s3.get_object_attributes(Bucket=bucket, Key="attr-mp", ObjectAttributes=["ObjectParts", "ETag"],
                                 MaxParts=2)
    parts = a["ObjectParts"]
    assert parts["TotalPartsCount"] == 3 and parts["IsTruncated"] is True
    assert [(p["PartNumber"], p["Size"]) for p in parts["Parts"]] == [(1, part), (2, part)]
    assert a["ETag"].strip('"').endswith("-3")
    rest = s3.get_object_attributes(Bucket=bucket, Key="attr-mp", ObjectAttributes=["ObjectParts"],
                                    PartNumberMarker=parts["NextPartNumberMarker"])["ObjectParts"]
    assert [(p["PartNumber"], p["Size"]) for p in rest["Parts"]] == [(3, 10)]
    assert rest["IsTruncated"] is False

    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="attr", ObjectAttributes=["Colour"])
    assert status(e) == 400 and error_code(e) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="no-such", ObjectAttributes=["ETag"])
    assert status(e) == 404


def signed(eddy, method, path, body=b"", headers=None, chunked=False):
    """A SigV4-signed request sent as given (no client-side fixing of headers):
    (status, body, headers)."""
    import http.client

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url=f"{eddy.s3_url}{path}", data=body, headers=headers or {})
    S3SigV4Auth(Credentials(eddy.access_key, eddy.secret_key), "s3", "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection("127.0.0.1", eddy.s3_port, timeout=10)
    h = dict(req.headers)
    if chunked:
        h.pop("Content-Length", None)
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in h.items():
            conn.putheader(k, v)
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        conn.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    else:
        conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    return r.status, r.read(), {k.lower(): v for k, v in r.getheaders()}


def signed_head(eddy, method, path, body=b"", headers=None, sign=True) -> bytes:
    """The head of a request (SigV4-signed unless `sign` is false) as it goes on the
    wire, without its body."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    headers = {**(headers or {}), "Content-Length": str(len(body))} if body else headers or {}
    req = AWSRequest(method=method, url=f"{eddy.s3_url}{path}", data=body, headers=headers)
    if sign:
        S3SigV4Auth(Credentials(eddy.access_key, eddy.secret_key), "s3", "us-east-1").add_auth(req)
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{eddy.s3_port}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in req.headers.items() if k.lower() != "host")
    return head.encode() + b"\r\n"


def answer(sock, method):
    """The next final response on `sock`: (status, headers, body)."""
    import http.client
    r = http.client.HTTPResponse(sock, method=method)
    r.begin()
    body = r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def interim(sock) -> bytes:
    """The next interim response's head on `sock` (http.client skips them)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        got = sock.recv(1)
        assert got, "the connection closed before an interim response"
        head += got
    return head


def test_a_refused_expect_continue_request_closes_its_connection(eddy, s3, bucket):
    """A PUT sent with `Expect: 100-continue` and refused before its body is sent (412
    for a precondition, 403 unsigned) says `Connection: close` and ends the
    connection, so the client's next request on it cannot be read as the withheld
    body (it was: botocore's next PUT arrived as method `T`, failing its signature).
    An accepted one keeps its connection."""
    import socket
    s3.put_object(Bucket=bucket, Key="expect", Body=b"v1")
    path = f"/{bucket}/expect"
    for asked, sign, code in [({"If-None-Match": "*"}, True, 412), ({}, False, 403)]:
        with socket.create_connection(("127.0.0.1", eddy.s3_port), timeout=10) as sock:
            # The body is withheld, as botocore withholds it after a final answer.
            sock.sendall(signed_head(eddy, "PUT", path, b"v2",
                                     {"Expect": "100-continue", **asked}, sign))
            status, headers, _ = answer(sock, "PUT")
            assert status == code
            assert headers.get("connection") == "close"
            assert sock.recv(16) == b"", "the server kept a connection whose body it never read"
    assert s3.get_object(Bucket=bucket, Key="expect")["Body"].read() == b"v1"

    with socket.create_connection(("127.0.0.1", eddy.s3_port), timeout=10) as sock:
        sock.sendall(signed_head(eddy, "PUT", path, b"v3", {"Expect": "100-continue"}))
        assert interim(sock).startswith(b"HTTP/1.1 100 ")
        sock.sendall(b"v3")
        status, headers, _ = answer(sock, "PUT")
        assert status == 200 and "connection" not in headers
        sock.sendall(signed_head(eddy, "GET", path))
        assert answer(sock, "GET")[::2] == (200, b"v3")


def test_request_validation_as_aws_answers(eddy, s3, bucket):
    """A PUT without Content-Length (plain chunked transfer) is 411
    MissingContentLength; an empty or wrong-length Content-MD5 is InvalidDigest, a
    well-formed one that does not match is BadDigest; `Expect: 100-continue` works;
    RFC 2047 user metadata is kept as sent, as AWS keeps it."""
    import base64
    code, body, _ = signed(eddy, "PUT", f"/{bucket}/v-chunked", b"hello", chunked=True)
    assert code == 411 and b"<Code>MissingContentLength</Code>" in body
    for md5 in ("", base64.b64encode(b"1234").decode()):
        code, body, _ = signed(eddy, "PUT", f"/{bucket}/v-md5", b"hello", {"Content-MD5": md5})
        assert code == 400 and b"<Code>InvalidDigest</Code>" in body, md5
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    code, body, _ = signed(eddy, "PUT", f"/{bucket}/v-md5", b"hello", {"Content-MD5": wrong})
    assert code == 400 and b"<Code>BadDigest</Code>" in body
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="v-md5")
    right = base64.b64encode(hashlib.md5(b"hello").digest()).decode()
    assert signed(eddy, "PUT", f"/{bucket}/v-md5", b"hello", {"Content-MD5": right})[0] == 200
    assert signed(eddy, "PUT", f"/{bucket}/v-expect", b"hello", {"Expect": "100-continue"})[0] == 200
    encoded = "=?UTF-8?B?w6lsw6g=?="
    assert signed(eddy, "PUT", f"/{bucket}/v-meta", b"m", {"x-amz-meta-name": encoded})[0] == 200
    code, _, headers = signed(eddy, "GET", f"/{bucket}/v-meta")
    assert code == 200 and headers["x-amz-meta-name"] == encoded
