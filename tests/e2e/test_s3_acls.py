"""S3 ACLs as AWS has them since Object Ownership, with boto3, aws-cli and plain HTTP.

A bucket is `BucketOwnerEnforced` unless made or set otherwise: ACLs are refused with
AWS's errors and reads of ACLs answer the owner's full control. Under `ObjectWriter`
and `BucketOwnerPreferred`, canned ACLs and grant headers are stored with the version
(or the bucket) and enforced on every read path: GET, HEAD, ranged GET, a presigned
URL, a copy's source. A bucket policy's Deny and Block Public Access still win, and
everything survives a restart. `bob` is a user who owns none of these buckets and has
no policy; anonymous requests are plain HTTP without a signature."""

import json
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest

import s3util
from conftest import eddy_bin
from s3util import ClientError, aws, error_code, status

ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
BOB = ("bob", "bob-s3-secret")


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def anonymous(eddy, method, path, headers=None, data=None):
    """A request without credentials: (status, body)."""
    req = urllib.request.Request(f"{eddy.s3_url}/{path}", method=method, headers=headers or {},
                                 data=data)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def url_get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.fixture(scope="module")
def s3(eddy):
    return s3util.client(eddy)


@pytest.fixture(scope="module")
def bob(eddy):
    env = {"EDDY_ACCESS_KEY": eddy.access_key, "EDDY_SECRET_KEY": eddy.secret_key,
           "PATH": "/usr/bin:/bin"}
    p = subprocess.run([eddy_bin(), "user", "--url", eddy.http_url, "put", BOB[0],
                        "--s3-secret", BOB[1]], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    return s3util.client(eddy, access_key=BOB[0], secret_key=BOB[1])


def writer_bucket(s3, ownership="ObjectWriter", **extra):
    b = name("acl")
    s3.create_bucket(Bucket=b, ObjectOwnership=ownership, **extra)
    return b


def grants(acl):
    """An ACL response's grants as (grantee, permission) pairs."""
    out = set()
    for g in acl["Grants"]:
        who = g["Grantee"].get("ID") or g["Grantee"].get("URI")
        out.add((who, g["Permission"]))
    return out


def test_acls_are_refused_as_aws_refuses_them_under_bucket_owner_enforced(eddy, s3):
    b = s3util.new_bucket(s3, "enforced")
    rules = s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=b, Key="k", Body=b"x", ACL="public-read")
    assert (status(e), error_code(e)) == (400, "AccessControlListNotSupported")
    assert e.value.response["Error"]["Message"] == "The bucket does not allow ACLs"
    s3.put_object(Bucket=b, Key="k", Body=b"x", ACL="bucket-owner-full-control")
    for call in (lambda: s3.put_object_acl(Bucket=b, Key="k", ACL="public-read"),
                 lambda: s3.put_bucket_acl(Bucket=b, ACL="public-read"),
                 lambda: s3.put_object_acl(Bucket=b, Key="k", GrantRead=f'uri="{ALL_USERS}"')):
        with pytest.raises(ClientError) as e:
            call()
        assert (status(e), error_code(e)) == (400, "AccessControlListNotSupported")
    # Reads of ACLs still answer: the bucket owner's full control.
    assert grants(s3.get_object_acl(Bucket=b, Key="k")) == {(eddy.access_key, "FULL_CONTROL")}
    assert grants(s3.get_bucket_acl(Bucket=b)) == {(eddy.access_key, "FULL_CONTROL")}
    assert anonymous(eddy, "GET", f"{b}/k")[0] == 403
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name("enforced"), ACL="public-read")
    assert (status(e), error_code(e)) == (400, "InvalidBucketAclWithObjectOwnership")


def test_a_public_read_upload_into_an_object_writer_bucket_is_read_anonymously(eddy, s3, bob):
    b = writer_bucket(s3)
    s3.put_object(Bucket=b, Key="public.txt", Body=b"hello, world", ACL="public-read")
    s3.put_object(Bucket=b, Key="private.txt", Body=b"secret")
    assert anonymous(eddy, "GET", f"{b}/public.txt") == (200, b"hello, world")
    assert anonymous(eddy, "HEAD", f"{b}/public.txt")[0] == 200
    assert anonymous(eddy, "GET", f"{b}/public.txt", {"Range": "bytes=7-11"}) == (206, b"world")
    assert anonymous(eddy, "GET", f"{b}/private.txt")[0] == 403
    assert anonymous(eddy, "HEAD", f"{b}/private.txt")[0] == 403
    # The object's ACL opens the object, not the bucket: listing stays the owner's.
    assert anonymous(eddy, "GET", f"{b}?list-type=2")[0] == 403
    assert grants(s3.get_object_acl(Bucket=b, Key="public.txt")) == {
        (eddy.access_key, "FULL_CONTROL"), (ALL_USERS, "READ")}

    # bob, signed, is one of AllUsers: his presigned URL and his copy read the public
    # object, and neither reads the private one.
    assert url_get(bob.generate_presigned_url(
        "get_object", Params={"Bucket": b, "Key": "public.txt"}))[1] == b"hello, world"
    assert url_get(bob.generate_presigned_url(
        "get_object", Params={"Bucket": b, "Key": "private.txt"}))[0] == 403
    mine = s3util.new_bucket(bob, "bobs")
    bob.copy_object(Bucket=mine, Key="copy", CopySource={"Bucket": b, "Key": "public.txt"})
    assert bob.get_object(Bucket=mine, Key="copy")["Body"].read() == b"hello, world"
    with pytest.raises(ClientError) as e:
        bob.copy_object(Bucket=mine, Key="stolen", CopySource={"Bucket": b, "Key": "private.txt"})
    assert error_code(e) == "AccessDenied"
    # The copy has the ACL its request asked for, not its source's.
    assert anonymous(eddy, "GET", f"{mine}/copy")[0] == 403

    # A multipart upload takes its ACL from CreateMultipartUpload.
    up = s3.create_multipart_upload(Bucket=b, Key="big", ACL="public-read")
    part = s3.upload_part(Bucket=b, Key="big", UploadId=up["UploadId"], PartNumber=1, Body=b"m" * 100)
    s3.complete_multipart_upload(Bucket=b, Key="big", UploadId=up["UploadId"], MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    assert anonymous(eddy, "GET", f"{b}/big") == (200, b"m" * 100)

    # PutObjectAcl takes it back.
    s3.put_object_acl(Bucket=b, Key="public.txt", ACL="private")
    assert anonymous(eddy, "GET", f"{b}/public.txt")[0] == 403
    assert grants(s3.get_object_acl(Bucket=b, Key="public.txt")) == {(eddy.access_key, "FULL_CONTROL")}


def test_aws_cli_uploads_with_acls_and_grants_by_id(eddy, s3, bob, tmp_path):
    b = writer_bucket(s3)
    f = tmp_path / "f.txt"
    f.write_bytes(b"from the cli")
    aws(eddy, "s3", "cp", str(f), f"s3://{b}/cli.txt", "--acl", "public-read")
    assert anonymous(eddy, "GET", f"{b}/cli.txt") == (200, b"from the cli")
    aws(eddy, "s3api", "put-object", "--bucket", b, "--key", "for-bob", "--body", str(f))
    with pytest.raises(ClientError):
        bob.get_object(Bucket=b, Key="for-bob")
    aws(eddy, "s3api", "put-object-acl", "--bucket", b, "--key", "for-bob",
        "--grant-read", f'id="{BOB[0]}"', "--grant-full-control", f'id="{eddy.access_key}"')
    assert bob.get_object(Bucket=b, Key="for-bob")["Body"].read() == b"from the cli"
    acl = json.loads(aws(eddy, "s3api", "get-object-acl", "--bucket", b, "--key", "for-bob").stdout)
    assert grants(acl) == {(BOB[0], "READ"), (eddy.access_key, "FULL_CONTROL")}
    # READ is not READ_ACP: bob may read the object, not its ACL.
    with pytest.raises(ClientError) as e:
        bob.get_object_acl(Bucket=b, Key="for-bob")
    assert error_code(e) == "AccessDenied"
    assert anonymous(eddy, "GET", f"{b}/for-bob")[0] == 403


def test_a_bucket_acl_opens_listing_and_writing(eddy, s3, bob):
    b = writer_bucket(s3, ACL="public-read")
    s3.put_object(Bucket=b, Key="listed.txt", Body=b"x")
    code, body = anonymous(eddy, "GET", f"{b}?list-type=2")
    assert code == 200 and b"<Key>listed.txt</Key>" in body
    # Listing is the bucket's READ; the object's own ACL is still private.
    assert anonymous(eddy, "GET", f"{b}/listed.txt")[0] == 403
    assert (ALL_USERS, "READ") in grants(s3.get_bucket_acl(Bucket=b))
    with pytest.raises(ClientError) as e:
        bob.put_object(Bucket=b, Key="from-bob", Body=b"bob")
    assert error_code(e) == "AccessDenied"
    s3.put_bucket_acl(Bucket=b, GrantWrite=f'id="{BOB[0]}"',
                      GrantFullControl=f'id="{eddy.access_key}"')
    assert anonymous(eddy, "GET", f"{b}?list-type=2")[0] == 403
    # Bucket WRITE lets bob write; under ObjectWriter he owns what he writes.
    bob.put_object(Bucket=b, Key="from-bob", Body=b"bob")
    assert bob.get_object(Bucket=b, Key="from-bob")["Body"].read() == b"bob"
    assert s3.get_object_acl(Bucket=b, Key="from-bob")["Owner"]["ID"] == BOB[0]
    s3.put_bucket_acl(Bucket=b, ACL="private")
    with pytest.raises(ClientError) as e:
        bob.put_object(Bucket=b, Key="again", Body=b"bob")
    assert error_code(e) == "AccessDenied"


def test_bucket_owner_preferred_takes_ownership_of_bucket_owner_full_control_writes(eddy, s3, bob):
    b = writer_bucket(s3, "BucketOwnerPreferred")
    s3.put_bucket_acl(Bucket=b, GrantWrite=f'id="{BOB[0]}"',
                      GrantFullControl=f'id="{eddy.access_key}"')
    bob.put_object(Bucket=b, Key="given", Body=b"1", ACL="bucket-owner-full-control")
    bob.put_object(Bucket=b, Key="kept", Body=b"2")
    assert s3.get_object_acl(Bucket=b, Key="given")["Owner"]["ID"] == eddy.access_key
    assert s3.get_object_acl(Bucket=b, Key="kept")["Owner"]["ID"] == BOB[0]
    assert bob.get_object(Bucket=b, Key="kept")["Body"].read() == b"2"


def test_ownership_controls_switch_acls_off_and_on(eddy, s3):
    b = writer_bucket(s3)
    s3.put_object(Bucket=b, Key="p", Body=b"public", ACL="public-read")
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 200
    s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    # ACLs stop counting at once, and reads of them answer the owner alone.
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 403
    assert grants(s3.get_object_acl(Bucket=b, Key="p")) == {(eddy.access_key, "FULL_CONTROL")}
    s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={
        "Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    # The object's list was kept, as on AWS.
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 200
    s3.delete_bucket_ownership_controls(Bucket=b)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_ownership_controls(Bucket=b)
    assert (status(e), error_code(e)) == (404, "OwnershipControlsNotFoundError")
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 403
    with pytest.raises(ClientError) as e:
        s3.put_bucket_ownership_controls(Bucket=b, OwnershipControls={
            "Rules": [{"ObjectOwnership": "Everyone"}]})
    assert status(e) == 400


def test_block_public_access_and_bucket_policies_win_over_acls(eddy, s3, bob):
    b = writer_bucket(s3)
    s3.put_object(Bucket=b, Key="p", Body=b"public", ACL="public-read")
    s3.put_object(Bucket=b, Key="named", Body=b"bob's", GrantRead=f'id="{BOB[0]}"')
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=b)
    assert (status(e), error_code(e)) == (404, "NoSuchPublicAccessBlockConfiguration")

    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={"BlockPublicAcls": True})
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=b, Key="q", Body=b"x", ACL="public-read")
    assert (status(e), error_code(e)) == (403, "AccessDenied")
    with pytest.raises(ClientError) as e:
        s3.put_object_acl(Bucket=b, Key="named", ACL="authenticated-read")
    assert (status(e), error_code(e)) == (403, "AccessDenied")
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="q")
    assert status(e) == 404
    # BlockPublicAcls refuses new public lists; one already there still counts.
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 200

    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={"IgnorePublicAcls": True})
    got = s3.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"]
    assert got == {"BlockPublicAcls": False, "IgnorePublicAcls": True,
                   "BlockPublicPolicy": False, "RestrictPublicBuckets": False}
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 403
    # A grant to a named user is not public: it still counts.
    assert bob.get_object(Bucket=b, Key="named")["Body"].read() == b"bob's"
    s3.delete_public_access_block(Bucket=b)
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 200

    # A bucket policy's Deny beats an ACL's grant.
    deny = {"Version": "2012-10-17", "Statement": [{
        "Sid": "NoP", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{b}/p"}]}
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps(deny))
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 403
    s3.delete_bucket_policy(Bucket=b)
    assert anonymous(eddy, "GET", f"{b}/p")[0] == 200

    # BlockPublicPolicy refuses a public policy; RestrictPublicBuckets takes from one in
    # force what it allows the anonymous.
    public = {"Version": "2012-10-17", "Statement": [{
        "Sid": "All", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{b}/*"}]}
    s3.put_object(Bucket=b, Key="by-policy", Body=b"policy")
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps(public))
    assert s3.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is True
    assert anonymous(eddy, "GET", f"{b}/by-policy")[0] == 200
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={
        "BlockPublicPolicy": True, "RestrictPublicBuckets": True})
    assert anonymous(eddy, "GET", f"{b}/by-policy")[0] == 403
    assert s3.get_object(Bucket=b, Key="by-policy")["Body"].read() == b"policy"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps(public))
    assert (status(e), error_code(e)) == (403, "AccessDenied")


def test_acls_survive_a_restart(fresh_eddy):
    s3 = s3util.client(fresh_eddy)
    b = writer_bucket(s3, ACL="public-read")
    s3.put_object(Bucket=b, Key="a", Body=b"a")
    s3.put_object(Bucket=b, Key="b", Body=b"b")
    s3.put_object_acl(Bucket=b, Key="a", ACL="public-read")
    s3.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration={"BlockPublicAcls": True})
    fresh_eddy.restart()
    s3 = s3util.client(fresh_eddy)
    assert anonymous(fresh_eddy, "GET", f"{b}/a") == (200, b"a")
    assert anonymous(fresh_eddy, "GET", f"{b}/b")[0] == 403
    assert anonymous(fresh_eddy, "GET", f"{b}?list-type=2")[0] == 200
    assert s3.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"] == [
        {"ObjectOwnership": "ObjectWriter"}]
    with pytest.raises(ClientError) as e:
        s3.put_object_acl(Bucket=b, Key="b", ACL="public-read")
    assert error_code(e) == "AccessDenied"
