"""A client is never told it got a protection it did not get: SSE-KMS, which Eddy does not
implement, ACLs on a bucket whose ACLs are disabled (BucketOwnerEnforced, the default),
SSE-C keys offered for objects that have none, and object lock on a bucket made without
it, are refused (AWS's own error where it has one, 501 NotImplemented otherwise) and
store nothing, on every write path (PutObject, CopyObject, CreateMultipartUpload,
UploadPart, UploadPartCopy, CreateBucket), through boto3 and aws-cli. What Eddy does
give (the owner-only ACLs `private` and `bucket-owner-full-control`; ACLs under the other
object ownerships, tested in test_s3_acls.py; SSE-S3 and SSE-C, tested in
test_s3_encryption.py; object lock on a bucket that has it, tested in
test_s3_object_lock.py) is accepted."""

import os

import pytest

from s3util import ClientError, aws, client, error_code, new_bucket, status

SSE_C_KEY = os.urandom(32)
SSE_C = {
    "SSECustomerAlgorithm": "AES256",
    "SSECustomerKey": SSE_C_KEY,
}

# Each write option with the (status, code) AWS answers, or Eddy's 501 where AWS has no
# "not on this bucket" error.
REFUSED = [
    ("sse-kms", {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k"}, 501, "NotImplemented"),
    ("lock", {"ObjectLockMode": "GOVERNANCE",
              "ObjectLockRetainUntilDate": "2030-01-01T00:00:00Z"}, 400, "InvalidRequest"),
    ("legal-hold", {"ObjectLockLegalHoldStatus": "ON"}, 400, "InvalidRequest"),
    ("public-read", {"ACL": "public-read"}, 400, "AccessControlListNotSupported"),
    ("grant", {"GrantRead": 'uri="http://acs.amazonaws.com/groups/global/AllUsers"'}, 400,
     "AccessControlListNotSupported"),
]


@pytest.fixture(scope="module")
def s3(eddy):
    return client(eddy)


@pytest.fixture(scope="module")
def bucket(s3):
    return new_bucket(s3, "prot")


def absent(s3, bucket, key):
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key=key)
    return status(e) == 404


@pytest.mark.parametrize("what,extra,code_status,code", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_write_asking_for_an_unbuilt_protection_is_refused_and_stores_nothing(
        s3, bucket, what, extra, code_status, code):
    key = f"refused/{what}"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key=key, Body=b"secret", **extra)
    assert (status(e), error_code(e)) == (code_status, code)
    assert absent(s3, bucket, key)

    s3.put_object(Bucket=bucket, Key="plain", Body=b"plain")
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": "plain"},
                       **extra)
    assert (status(e), error_code(e)) == (code_status, code)
    assert absent(s3, bucket, key)

    with pytest.raises(ClientError) as e:
        s3.create_multipart_upload(Bucket=bucket, Key=key, **extra)
    assert (status(e), error_code(e)) == (code_status, code)
    assert s3.list_multipart_uploads(Bucket=bucket, Prefix=key).get("Uploads", []) == []


def test_sse_c_keys_for_unencrypted_parts_and_reads_are_refused(s3, bucket):
    # The upload has no encryption: a key offered for one of its parts does not apply.
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1,
                       Body=b"x" * 10, **SSE_C)
    assert (status(e), error_code(e)) == (400, "InvalidRequest")
    s3.put_object(Bucket=bucket, Key="src", Body=b"source")
    with pytest.raises(ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1,
                            CopySource={"Bucket": bucket, "Key": "src"},
                            CopySourceSSECustomerAlgorithm="AES256",
                            CopySourceSSECustomerKey=SSE_C_KEY)
    assert (status(e), error_code(e)) == (400, "InvalidRequest")
    assert s3.list_parts(Bucket=bucket, Key="mp", UploadId=up["UploadId"]).get("Parts", []) == []
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"])

    # The object is not encrypted: a key offered on a read does not apply, as AWS says of
    # an unencrypted object.
    for call in (s3.get_object, s3.head_object):
        with pytest.raises(ClientError) as e:
            call(Bucket=bucket, Key="src", **SSE_C)
        assert status(e) == 400
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="src", **SSE_C)
    assert error_code(e) == "InvalidRequest"


def test_owner_only_acls_are_accepted(s3, bucket):
    for acl in ("private", "bucket-owner-full-control"):
        s3.put_object(Bucket=bucket, Key=f"acl/{acl}", Body=acl.encode(), ACL=acl)
        assert s3.get_object(Bucket=bucket, Key=f"acl/{acl}")["Body"].read() == acl.encode()


def test_bucket_creation_refuses_acls_without_an_ownership_that_takes_them(s3):
    cases = [
        ({"ACL": "public-read-write"}, 400, "InvalidBucketAclWithObjectOwnership"),
        ({"ACL": "public-read", "ObjectOwnership": "BucketOwnerEnforced"}, 400,
         "InvalidBucketAclWithObjectOwnership"),
        ({"ObjectOwnership": "Everyone"}, 400, "InvalidArgument"),
    ]
    for extra, code_status, code in cases:
        name = f"prot-{os.urandom(6).hex()}"
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket=name, **extra)
        assert (status(e), error_code(e)) == (code_status, code), extra
        with pytest.raises(ClientError) as e:
            s3.head_bucket(Bucket=name)
        assert status(e) == 404, f"{extra} created the bucket"
    name = f"prot-{os.urandom(6).hex()}"
    s3.create_bucket(Bucket=name, ACL="private", ObjectOwnership="BucketOwnerEnforced")
    s3.head_bucket(Bucket=name)


def test_aws_cli_kms_and_acl_flags_are_refused(eddy, s3, bucket, tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes(b"from the cli")
    for flags, code in ((["--sse", "aws:kms"], "NotImplemented"),
                        (["--acl", "public-read"], "AccessControlListNotSupported")):
        r = aws(eddy, "s3", "cp", str(f), f"s3://{bucket}/cli/{flags[0]}", *flags, check=False)
        assert r.returncode != 0 and code in r.stderr, r.stderr
        assert absent(s3, bucket, f"cli/{flags[0]}")
    aws(eddy, "s3", "cp", str(f), f"s3://{bucket}/cli/private", "--acl", "private")
    got = s3.get_object(Bucket=bucket, Key="cli/private")["Body"].read()
    assert got == b"from the cli"
