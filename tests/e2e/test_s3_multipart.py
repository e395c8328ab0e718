"""Multipart uploads through boto3: parts, part copy, completion rules, abort, listings,
ETags, checksums, and no orphan blobs."""

import hashlib
import os

import pytest

from s3util import ClientError, blob_files, client, error_code, new_blob_files, new_bucket

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def s3(eddy):
    return client(eddy)


def multipart_etag(parts):
    return '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest(), len(parts))


def test_upload_complete_read_back(eddy, s3):
    b = new_bucket(s3, "mpu")
    before = blob_files(eddy)
    parts = [os.urandom(5 * MIB), os.urandom(5 * MIB), os.urandom(1234)]
    up = s3.create_multipart_upload(Bucket=b, Key="big", ContentType="video/mp4", Metadata={"m": "1"})
    uid = up["UploadId"]
    etags = [s3.upload_part(Bucket=b, Key="big", UploadId=uid, PartNumber=i + 1, Body=p)["ETag"] for i, p in enumerate(parts)]
    # Re-uploading a part replaces it.
    s3.upload_part(Bucket=b, Key="big", UploadId=uid, PartNumber=2, Body=os.urandom(100))
    etags[1] = s3.upload_part(Bucket=b, Key="big", UploadId=uid, PartNumber=2, Body=parts[1])["ETag"]
    # An extra part left out of the completion.
    s3.upload_part(Bucket=b, Key="big", UploadId=uid, PartNumber=9, Body=b"unused")

    listed = s3.list_parts(Bucket=b, Key="big", UploadId=uid)
    assert [p["PartNumber"] for p in listed["Parts"]] == [1, 2, 3, 9]
    assert [p["Size"] for p in listed["Parts"]][:3] == [len(p) for p in parts]
    page = s3.list_parts(Bucket=b, Key="big", UploadId=uid, MaxParts=2, PartNumberMarker=1)
    assert [p["PartNumber"] for p in page["Parts"]] == [2, 3] and page["IsTruncated"]
    uploads = s3.list_multipart_uploads(Bucket=b)["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in uploads] == [("big", uid)]

    done = s3.complete_multipart_upload(
        Bucket=b, Key="big", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]},
    )
    assert done["ETag"] == multipart_etag(parts)
    g = s3.get_object(Bucket=b, Key="big")
    assert g["Body"].read() == b"".join(parts)
    assert g["ContentType"] == "video/mp4" and g["Metadata"] == {"m": "1"}
    assert g["ETag"] == done["ETag"]
    # A range across the part boundary and a part number.
    r = s3.get_object(Bucket=b, Key="big", Range=f"bytes={5 * MIB - 3}-{5 * MIB + 2}")["Body"].read()
    assert r == parts[0][-3:] + parts[1][:3]
    p2 = s3.get_object(Bucket=b, Key="big", PartNumber=2)
    assert p2["Body"].read() == parts[1] and p2["PartsCount"] == 3
    assert s3.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=b, Key="big", UploadId=uid)
    assert error_code(e) == "NoSuchUpload"

    # Exactly the three completed parts remain as blobs (the replaced and the unused
    # parts were freed); deleting the object frees them too.
    assert len(new_blob_files(eddy, before, 3)) == 3
    s3.delete_object(Bucket=b, Key="big")
    assert new_blob_files(eddy, before, 0) == set()


def test_completion_rules(s3):
    b = new_bucket(s3, "mpr")
    uid = s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    small = s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=b"a" * 100)["ETag"]
    last = s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=2, Body=b"b" * 100)["ETag"]

    def complete(parts):
        with pytest.raises(ClientError) as e:
            s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid, MultipartUpload={"Parts": parts})
        return error_code(e)

    assert complete([{"PartNumber": 1, "ETag": small}, {"PartNumber": 2, "ETag": last}]) == "EntityTooSmall"
    assert complete([{"PartNumber": 2, "ETag": last}, {"PartNumber": 1, "ETag": small}]) == "InvalidPartOrder"
    assert complete([{"PartNumber": 1, "ETag": '"00000000000000000000000000000000"'}]) == "InvalidPart"
    assert complete([{"PartNumber": 3, "ETag": last}]) == "InvalidPart"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=10001, Body=b"x")
    assert error_code(e) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=b, Key="k", UploadId="nope", PartNumber=1, Body=b"x")
    assert error_code(e) == "NoSuchUpload"
    # A single small part is fine (the last part may be small).
    done = s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": small}]})
    assert done["ETag"] == multipart_etag([b"a" * 100])
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"a" * 100
    # The same completion retried (its answer was lost) gets the same answer, as on AWS;
    # other parts, or once the object was replaced, the upload is gone.
    again = s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid,
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": small}]})
    assert again["ETag"] == done["ETag"]
    assert complete([{"PartNumber": 1, "ETag": last}]) == "NoSuchUpload"
    s3.put_object(Bucket=b, Key="k", Body=b"replaced")
    assert complete([{"PartNumber": 1, "ETag": small}]) == "NoSuchUpload"


def test_abort_frees_parts(eddy, s3):
    b = new_bucket(s3, "mpa")
    before = blob_files(eddy)
    uid = s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    for n in (1, 2):
        s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=n, Body=os.urandom(MIB))
    assert len(blob_files(eddy) - before) == 2
    s3.abort_multipart_upload(Bucket=b, Key="k", UploadId=uid)
    assert new_blob_files(eddy, before, 0) == set()
    with pytest.raises(ClientError) as e:
        s3.abort_multipart_upload(Bucket=b, Key="k", UploadId=uid)
    assert error_code(e) == "NoSuchUpload"


def test_upload_part_copy_with_ranges(s3):
    b = new_bucket(s3, "mpc")
    src = os.urandom(6 * MIB + 10)
    s3.put_object(Bucket=b, Key="src", Body=src)
    uid = s3.create_multipart_upload(Bucket=b, Key="dst")["UploadId"]
    p1 = s3.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=1,
                             CopySource={"Bucket": b, "Key": "src"}, CopySourceRange=f"bytes=0-{5 * MIB - 1}")
    p2 = s3.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=2,
                             CopySource={"Bucket": b, "Key": "src"}, CopySourceRange=f"bytes={5 * MIB}-{len(src) - 1}")
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=b, Key="dst", UploadId=uid, PartNumber=3,
                            CopySource={"Bucket": b, "Key": "src"}, CopySourceRange=f"bytes=0-{len(src)}")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] in (400, 416)
    s3.complete_multipart_upload(Bucket=b, Key="dst", UploadId=uid, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]},
        {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]},
    ]})
    assert s3.get_object(Bucket=b, Key="dst")["Body"].read() == src


def test_multipart_checksums(s3):
    b = new_bucket(s3, "mps")
    parts = [os.urandom(5 * MIB), os.urandom(10)]
    uid = s3.create_multipart_upload(Bucket=b, Key="k", ChecksumAlgorithm="SHA256")["UploadId"]
    done = []
    for i, p in enumerate(parts):
        r = s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=i + 1, Body=p, ChecksumAlgorithm="SHA256")
        assert r["ChecksumSHA256"]
        done.append({"PartNumber": i + 1, "ETag": r["ETag"], "ChecksumSHA256": r["ChecksumSHA256"]})
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=3, Body=b"x", ChecksumSHA256="AAAA" * 11)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    r = s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid, MultipartUpload={"Parts": done})
    assert r["ChecksumSHA256"].endswith("-2")
    h = s3.head_object(Bucket=b, Key="k", ChecksumMode="ENABLED")
    assert h["ChecksumSHA256"] == r["ChecksumSHA256"]
    assert s3.get_object(Bucket=b, Key="k", ChecksumMode="ENABLED")["Body"].read() == b"".join(parts)
    # GetObjectAttributes lists each part with its own checksum.
    import base64
    import hashlib
    attrs = s3.get_object_attributes(Bucket=b, Key="k", ObjectAttributes=["ObjectParts"])
    listed = attrs["ObjectParts"]["Parts"]
    assert [(p["PartNumber"], p["Size"], p["ChecksumSHA256"]) for p in listed] == [
        (n + 1, len(p), base64.b64encode(hashlib.sha256(p).digest()).decode())
        for n, p in enumerate(parts)]
    # A part read reports the part's own checksum, with the object's checksum type.
    for n, p in enumerate(parts):
        want = base64.b64encode(hashlib.sha256(p).digest()).decode()
        h = s3.head_object(Bucket=b, Key="k", PartNumber=n + 1, ChecksumMode="ENABLED")
        assert (h["ChecksumSHA256"], h["ChecksumType"], h["PartsCount"]) == (want, "COMPOSITE", 2)
        g = s3.get_object(Bucket=b, Key="k", PartNumber=n + 1, ChecksumMode="ENABLED")
        assert (g["ChecksumSHA256"], g["ChecksumType"]) == (want, "COMPOSITE")
        assert g["Body"].read() == p
    # Without ChecksumMode, none.
    assert "ChecksumSHA256" not in s3.head_object(Bucket=b, Key="k", PartNumber=1)


def test_uploads_survive_restart(fresh_eddy):
    s3 = client(fresh_eddy)
    b = new_bucket(s3, "mpd")
    uid = s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
    e1 = s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=1, Body=b"p" * (5 * MIB))["ETag"]
    fresh_eddy.restart()
    s3 = client(fresh_eddy)
    assert [p["PartNumber"] for p in s3.list_parts(Bucket=b, Key="k", UploadId=uid)["Parts"]] == [1]
    e2 = s3.upload_part(Bucket=b, Key="k", UploadId=uid, PartNumber=2, Body=b"q")["ETag"]
    s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=uid, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"p" * (5 * MIB) + b"q"


def test_full_object_crc_checksums(s3):
    import base64
    import zlib

    b = new_bucket(s3, "mpf")
    parts = [os.urandom(5 * MIB), os.urandom(5 * MIB), os.urandom(999)]
    whole = b"".join(parts)
    crc = base64.b64encode(zlib.crc32(whole).to_bytes(4, "big")).decode()
    for alg, kind, claim in [("CRC32", "FULL_OBJECT", crc), ("CRC64NVME", None, None), ("CRC32", "FULL_OBJECT", "AAAAAA==")]:
        kw = {"ChecksumType": kind} if kind else {}
        up = s3.create_multipart_upload(Bucket=b, Key=alg, ChecksumAlgorithm=alg, **kw)
        assert up["ChecksumType"] == "FULL_OBJECT"
        done = []
        for n, p in enumerate(parts, 1):
            r = s3.upload_part(Bucket=b, Key=alg, UploadId=up["UploadId"], PartNumber=n, Body=p, ChecksumAlgorithm=alg)
            done.append({"PartNumber": n, "ETag": r["ETag"]})
        extra = {f"Checksum{alg}": claim, "ChecksumType": "FULL_OBJECT"} if claim else {}
        if claim == "AAAAAA==":
            with pytest.raises(ClientError) as e:
                s3.complete_multipart_upload(Bucket=b, Key=alg, UploadId=up["UploadId"],
                                             MultipartUpload={"Parts": done}, **extra)
            assert error_code(e) == "BadDigest"
            continue
        r = s3.complete_multipart_upload(Bucket=b, Key=alg, UploadId=up["UploadId"],
                                         MultipartUpload={"Parts": done}, **extra)
        assert r["ChecksumType"] == "FULL_OBJECT" and not r[f"Checksum{alg}"].endswith("-3")
        if alg == "CRC32":
            assert r["ChecksumCRC32"] == crc
        # botocore checks a full-object checksum against the bytes it reads.
        g = s3.get_object(Bucket=b, Key=alg, ChecksumMode="ENABLED")
        assert g["Body"].read() == whole and g[f"Checksum{alg}"] == r[f"Checksum{alg}"]


def test_conditional_completion(s3):
    """CompleteMultipartUpload with If-None-Match: * and If-Match, checked with the
    completion (AWS, since 2024): 412 when the condition fails and the upload stays open
    to retry; If-Match on a key with no object is 404 NoSuchKey."""
    b = new_bucket(s3, "mpc")

    def upload(key, body):
        uid = s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
        etag = s3.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=1, Body=body)["ETag"]
        return uid, {"Parts": [{"PartNumber": 1, "ETag": etag}]}

    uid, parts = upload("new", b"first")
    s3.complete_multipart_upload(Bucket=b, Key="new", UploadId=uid, MultipartUpload=parts, IfNoneMatch="*")
    current = s3.head_object(Bucket=b, Key="new")["ETag"]
    uid, parts = upload("new", b"second")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=b, Key="new", UploadId=uid, MultipartUpload=parts, IfNoneMatch="*")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert error_code(e) == "PreconditionFailed"
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=b, Key="new", UploadId=uid, MultipartUpload=parts, IfMatch='"0000"')
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert s3.get_object(Bucket=b, Key="new")["Body"].read() == b"first"
    # The same upload completes once the condition holds.
    s3.complete_multipart_upload(Bucket=b, Key="new", UploadId=uid, MultipartUpload=parts, IfMatch=current)
    assert s3.get_object(Bucket=b, Key="new")["Body"].read() == b"second"
    uid, parts = upload("missing", b"x")
    with pytest.raises(ClientError) as e:
        s3.complete_multipart_upload(Bucket=b, Key="missing", UploadId=uid, MultipartUpload=parts, IfMatch=current)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert error_code(e) == "NoSuchKey"
