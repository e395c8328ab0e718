"""S3 object lock with boto3 and aws-cli, each answer as AWS documents it: buckets made with
object lock (versioning forced on, never suspended), the bucket configuration and its
default retention, retention and legal hold per version from the write's headers or
Put/GetObjectRetention and Put/GetObjectLegalHold, their headers on GET and HEAD; a
locked version survives every removal path (DeleteObject and DeleteObjects with a version
id, aws-cli, the lifecycle worker, a restart) until its retention ends or its hold is
lifted; governance mode yields to `x-amz-bypass-governance-retention` only for a user
holding `s3:BypassGovernanceRetention`; compliance mode yields to no one. Also the
per-object owner recorded at write time, as listings report it.

The server runs with lifecycle days of one second and a pass every 200 ms, so lifecycle
rules act within the test; every wait is for a condition, with a deadline."""

import base64
import hashlib
import json
import subprocess
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from botocore.exceptions import ClientError

from conftest import eddy_bin, new_eddy
from connect import wait_for
from s3util import aws, client, error_code, status

ARGS = ["--s3-lifecycle-day-secs", "1", "--s3-lifecycle-interval-ms", "200"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    eddy = new_eddy(tmp_path_factory.mktemp("lock"), extra_args=ARGS).start()
    yield eddy
    eddy.stop()


@pytest.fixture
def s3(server):
    return client(server)


def locked_bucket(s3, prefix="lock"):
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
    return name


def later(seconds):
    return datetime.now(timezone.utc) + timedelta(seconds=seconds)


def refused(call, code="AccessDenied", http=403):
    with pytest.raises(ClientError) as e:
        call()
    assert (error_code(e), status(e)) == (code, http), e.value.response["Error"]
    return e


def version_ids(s3, bucket, key):
    r = s3.list_object_versions(Bucket=bucket, Prefix=key)
    return [v["VersionId"] for v in r.get("Versions", []) if v["Key"] == key]


def cli(server, *args):
    env = {"EDDY_ACCESS_KEY": server.access_key, "EDDY_SECRET_KEY": server.secret_key,
           "PATH": "/usr/bin:/bin"}
    return subprocess.run([eddy_bin(), args[0], "--url", server.http_url, *args[1:]],
                          check=True, capture_output=True, timeout=60, env=env)


def user_with_policy(server, tmp_path, name, statements):
    secret = f"{name}-secret-key"
    cli(server, "user", "put", name, "--s3-secret", secret)
    f = tmp_path / f"{name}.json"
    f.write_text(json.dumps({"Version": "2012-10-17", "Statement": statements}))
    cli(server, "policy", "put", f"{name}-policy", "--file", str(f), "--attach", name)
    return client(server, access_key=name, secret_key=secret)


def test_bucket_configuration_and_versioning(s3):
    plain = f"plain-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=plain)
    refused(lambda: s3.get_object_lock_configuration(Bucket=plain),
            "ObjectLockConfigurationNotFoundError", 404)
    # Lock needs versioning on first.
    conf = {"ObjectLockEnabled": "Enabled"}
    refused(lambda: s3.put_object_lock_configuration(Bucket=plain, ObjectLockConfiguration=conf),
            "InvalidBucketState", 409)
    # Headers asking for a lock on a bucket without it are refused, nothing stored.
    refused(lambda: s3.put_object(Bucket=plain, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE",
                                  ObjectLockRetainUntilDate=later(60)),
            "InvalidRequest", 400)
    s3.put_bucket_versioning(Bucket=plain, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object_lock_configuration(Bucket=plain, ObjectLockConfiguration=conf)
    got = s3.get_object_lock_configuration(Bucket=plain)["ObjectLockConfiguration"]
    assert got == {"ObjectLockEnabled": "Enabled"}

    b = locked_bucket(s3)
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    refused(lambda: s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"}),
            "InvalidBucketState", 409)
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    rule = {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 1}}
    s3.put_object_lock_configuration(
        Bucket=b, ObjectLockConfiguration={"ObjectLockEnabled": "Enabled", "Rule": rule})
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == {
        "ObjectLockEnabled": "Enabled", "Rule": rule}
    bad = [({"Mode": "GOVERNANCE", "Days": 0}, "InvalidArgument"),
           ({"Mode": "GOVERNANCE", "Days": 1, "Years": 1}, "MalformedXML"),
           ({"Days": 1}, "MalformedXML")]
    for retention, code in bad:
        refused(lambda: s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": retention}}), code, 400)
    # The configuration refused is not stored.
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]["Rule"] == rule


def test_write_headers_are_validated(s3):
    b = locked_bucket(s3)
    cases = [
        ({"ObjectLockMode": "GOVERNANCE"}, "InvalidArgument"),
        ({"ObjectLockRetainUntilDate": later(60)}, "InvalidArgument"),
        ({"ObjectLockMode": "GOVERNANCE", "ObjectLockRetainUntilDate": later(-60)}, "InvalidArgument"),
        ({"ObjectLockMode": "FOREVER", "ObjectLockRetainUntilDate": later(60)}, "InvalidArgument"),
    ]
    for extra, code in cases:
        refused(lambda: s3.put_object(Bucket=b, Key="k", Body=b"x", **extra), code, 400)
    assert version_ids(s3, b, "k") == []


def test_compliance_survives_every_removal_path_and_a_restart(tmp_path):
    eddy = new_eddy(tmp_path, extra_args=ARGS).start()
    try:
        s3 = client(eddy)
        b = locked_bucket(s3)
        until = later(3600).replace(microsecond=0)
        put = s3.put_object(Bucket=b, Key="ledger", Body=b"entry", ObjectLockMode="COMPLIANCE",
                            ObjectLockRetainUntilDate=until)
        vid = put["VersionId"]
        head = s3.head_object(Bucket=b, Key="ledger")
        assert head["ObjectLockMode"] == "COMPLIANCE"
        assert head["ObjectLockRetainUntilDate"] == until
        assert "ObjectLockLegalHoldStatus" not in head
        got = s3.get_object_retention(Bucket=b, Key="ledger", VersionId=vid)["Retention"]
        assert got == {"Mode": "COMPLIANCE", "RetainUntilDate": until}

        refused(lambda: s3.delete_object(Bucket=b, Key="ledger", VersionId=vid))
        refused(lambda: s3.delete_object(Bucket=b, Key="ledger", VersionId=vid,
                                         BypassGovernanceRetention=True))
        r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "ledger", "VersionId": vid}]},
                              BypassGovernanceRetention=True)
        assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("ledger", "AccessDenied")]
        assert "Deleted" not in r or r["Deleted"] == []
        cli_delete = aws(eddy, "s3api", "delete-object", "--bucket", b, "--key", "ledger",
                         "--version-id", vid, check=False)
        assert cli_delete.returncode != 0 and "AccessDenied" in cli_delete.stderr
        # Shortening, removing or downgrading the retention is refused; extending is not.
        for mode, when in (("COMPLIANCE", later(60)), ("GOVERNANCE", later(7200))):
            refused(lambda: s3.put_object_retention(
                Bucket=b, Key="ledger", VersionId=vid, BypassGovernanceRetention=True,
                Retention={"Mode": mode, "RetainUntilDate": when}))
        refused(lambda: s3.put_object_retention(Bucket=b, Key="ledger", VersionId=vid,
                                                BypassGovernanceRetention=True, Retention={}))
        until = later(7200).replace(microsecond=0)
        s3.put_object_retention(Bucket=b, Key="ledger", VersionId=vid,
                                Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until})
        # A delete without a version id only hides it under a marker, as on AWS.
        marker = s3.delete_object(Bucket=b, Key="ledger")
        assert marker["DeleteMarker"] is True
        # The lifecycle worker passes over it too (noncurrent for a day of one second).
        s3.put_object(Bucket=b, Key="ledger", Body=b"newer")
        s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [{
            "ID": "old", "Status": "Enabled", "Filter": {"Prefix": ""},
            "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]})
        s3.put_object(Bucket=b, Key="scratch", Body=b"1")
        s3.put_object(Bucket=b, Key="scratch", Body=b"2")
        # The unlocked noncurrent version going shows the worker has passed over both.
        wait_for(lambda: len(version_ids(s3, b, "scratch")) == 1, 30,
                 "the unlocked noncurrent version to expire")
        eddy.restart()
        s3 = client(eddy)
        assert s3.get_object(Bucket=b, Key="ledger", VersionId=vid)["Body"].read() == b"entry"
        refused(lambda: s3.delete_object(Bucket=b, Key="ledger", VersionId=vid,
                                         BypassGovernanceRetention=True))
        assert s3.get_object_retention(Bucket=b, Key="ledger", VersionId=vid)["Retention"] == {
            "Mode": "COMPLIANCE", "RetainUntilDate": until}
        # The bucket cannot go while it holds the version.
        refused(lambda: s3.delete_bucket(Bucket=b), "BucketNotEmpty", 409)
    finally:
        eddy.stop()


def test_a_retention_that_ended_no_longer_protects(s3):
    b = locked_bucket(s3)
    vid = s3.put_object(Bucket=b, Key="short", Body=b"x", ObjectLockMode="COMPLIANCE",
                        ObjectLockRetainUntilDate=later(2))["VersionId"]
    refused(lambda: s3.delete_object(Bucket=b, Key="short", VersionId=vid))

    def deleted():
        try:
            s3.delete_object(Bucket=b, Key="short", VersionId=vid)
            return True
        except ClientError as e:
            assert error_code_of(e) == "AccessDenied"
            return False
    wait_for(deleted, 20, "the retention to end")
    assert version_ids(s3, b, "short") == []


def error_code_of(e):
    return e.response["Error"]["Code"]


def test_governance_yields_only_to_the_bypass_permission(server, s3, tmp_path):
    b = locked_bucket(s3)
    vid = s3.put_object(Bucket=b, Key="gov", Body=b"x", ObjectLockMode="GOVERNANCE",
                        ObjectLockRetainUntilDate=later(3600))["VersionId"]
    everything = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
    no_bypass = {"Effect": "Deny", "Action": "s3:BypassGovernanceRetention", "Resource": "*"}
    dora = user_with_policy(server, tmp_path, "dora", [everything, no_bypass])
    refused(lambda: dora.delete_object(Bucket=b, Key="gov", VersionId=vid))
    refused(lambda: dora.delete_object(Bucket=b, Key="gov", VersionId=vid,
                                       BypassGovernanceRetention=True))
    r = dora.delete_objects(Bucket=b, BypassGovernanceRetention=True,
                            Delete={"Objects": [{"Key": "gov", "VersionId": vid}]})
    assert [e["Code"] for e in r["Errors"]] == ["AccessDenied"]
    refused(lambda: dora.put_object_retention(Bucket=b, Key="gov", VersionId=vid,
                                              BypassGovernanceRetention=True, Retention={}))
    assert version_ids(s3, b, "gov") == [vid]
    # Without the bypass even the owner is refused; with it, shortened, then deleted.
    refused(lambda: s3.delete_object(Bucket=b, Key="gov", VersionId=vid))
    refused(lambda: s3.put_object_retention(Bucket=b, Key="gov", VersionId=vid, Retention={
        "Mode": "GOVERNANCE", "RetainUntilDate": later(60)}))
    s3.put_object_retention(Bucket=b, Key="gov", VersionId=vid, BypassGovernanceRetention=True,
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": later(60)})
    s3.delete_object(Bucket=b, Key="gov", VersionId=vid, BypassGovernanceRetention=True)
    assert version_ids(s3, b, "gov") == []


def test_legal_hold_outlasts_bypass_until_lifted(s3, server):
    b = locked_bucket(s3)
    vid = s3.put_object(Bucket=b, Key="held", Body=b"x",
                        ObjectLockLegalHoldStatus="ON")["VersionId"]
    assert s3.head_object(Bucket=b, Key="held")["ObjectLockLegalHoldStatus"] == "ON"
    assert s3.get_object_legal_hold(Bucket=b, Key="held")["LegalHold"] == {"Status": "ON"}
    refused(lambda: s3.delete_object(Bucket=b, Key="held", VersionId=vid,
                                     BypassGovernanceRetention=True))
    r = aws(server, "s3api", "put-object-legal-hold", "--bucket", b, "--key", "held",
            "--version-id", vid, "--legal-hold", "Status=OFF")
    assert r.returncode == 0
    assert s3.get_object_legal_hold(Bucket=b, Key="held", VersionId=vid)["LegalHold"] == {
        "Status": "OFF"}
    assert "ObjectLockLegalHoldStatus" not in s3.head_object(Bucket=b, Key="held")
    s3.delete_object(Bucket=b, Key="held", VersionId=vid)
    assert version_ids(s3, b, "held") == []
    # On a version that is not there, or a bucket without lock, AWS's errors.
    refused(lambda: s3.get_object_legal_hold(Bucket=b, Key="held"), "NoSuchKey", 404)
    refused(lambda: s3.get_object_retention(Bucket=b, Key="held", VersionId="nope"),
            "NoSuchVersion", 404)
    s3.put_object(Bucket=b, Key="free", Body=b"x")
    refused(lambda: s3.get_object_retention(Bucket=b, Key="free"),
            "NoSuchObjectLockConfiguration", 404)


def test_default_retention_reaches_every_write_path(s3):
    b = locked_bucket(s3)
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
    before = datetime.now(timezone.utc)
    s3.put_object(Bucket=b, Key="put", Body=b"x")
    s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "put"})
    up = s3.create_multipart_upload(Bucket=b, Key="mpu")
    part = s3.upload_part(Bucket=b, Key="mpu", UploadId=up["UploadId"], PartNumber=1, Body=b"p")
    s3.complete_multipart_upload(Bucket=b, Key="mpu", UploadId=up["UploadId"], MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    after = datetime.now(timezone.utc)
    for key in ("put", "copy", "mpu"):
        h = s3.head_object(Bucket=b, Key=key)
        assert h["ObjectLockMode"] == "GOVERNANCE", key
        until = h["ObjectLockRetainUntilDate"]
        assert before + timedelta(days=1) - timedelta(seconds=1) <= until <= after + timedelta(days=1), key
        refused(lambda: s3.delete_object(Bucket=b, Key=key, VersionId=h["VersionId"]))
    # A write's own headers win over the default, on a copy and a multipart upload too.
    explicit = later(7200).replace(microsecond=0)
    s3.copy_object(Bucket=b, Key="copy2", CopySource={"Bucket": b, "Key": "put"},
                   ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=explicit)
    up = s3.create_multipart_upload(Bucket=b, Key="mpu2", ObjectLockMode="COMPLIANCE",
                                    ObjectLockRetainUntilDate=explicit,
                                    ObjectLockLegalHoldStatus="ON")
    part = s3.upload_part(Bucket=b, Key="mpu2", UploadId=up["UploadId"], PartNumber=1, Body=b"p")
    s3.complete_multipart_upload(Bucket=b, Key="mpu2", UploadId=up["UploadId"], MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    for key, hold in (("copy2", None), ("mpu2", "ON")):
        h = s3.head_object(Bucket=b, Key=key)
        assert (h["ObjectLockMode"], h["ObjectLockRetainUntilDate"]) == ("COMPLIANCE", explicit)
        assert h.get("ObjectLockLegalHoldStatus") == hold


def test_a_locked_put_needs_an_integrity_header(server):
    # Asked to send checksums only where an operation requires them, boto3 sends none
    # on PutObject; AWS then refuses a locked write.
    bare = client(server, request_checksum_calculation="when_required")
    s3 = client(server)
    b = locked_bucket(s3)
    refused(lambda: bare.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE",
                                    ObjectLockRetainUntilDate=later(60)), "InvalidRequest", 400)
    bare.put_object(Bucket=b, Key="k", Body=b"x", ContentMD5=base64.b64encode(hashlib.md5(b"x").digest()).decode(),
                    ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=later(60))
    assert s3.head_object(Bucket=b, Key="k")["ObjectLockMode"] == "GOVERNANCE"


def test_objects_record_who_wrote_them(server, s3, tmp_path):
    b = f"own-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="by-admin", Body=b"a")
    erin = user_with_policy(server, tmp_path, "erin",
                            [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}])
    erin.put_object(Bucket=b, Key="by-erin", Body=b"e")
    listed = s3.list_objects_v2(Bucket=b, FetchOwner=True)["Contents"]
    assert {o["Key"]: o["Owner"]["ID"] for o in listed} == {
        "by-admin": server.access_key, "by-erin": "erin"}
    assert all("Owner" not in o for o in s3.list_objects_v2(Bucket=b)["Contents"])
    v1 = s3.list_objects(Bucket=b)["Contents"]
    assert {o["Key"]: o["Owner"]["ID"] for o in v1} == {
        "by-admin": server.access_key, "by-erin": "erin"}
    versions = s3.list_object_versions(Bucket=b)["Versions"]
    assert {v["Key"]: v["Owner"]["ID"] for v in versions} == {
        "by-admin": server.access_key, "by-erin": "erin"}


def test_lock_headers_go_only_to_readers_allowed_to_see_them(server, s3, tmp_path):
    b = locked_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"x", ObjectLockMode="GOVERNANCE",
                  ObjectLockRetainUntilDate=later(3600), ObjectLockLegalHoldStatus="ON")
    reader = user_with_policy(server, tmp_path, "fern", [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}])
    h = reader.head_object(Bucket=b, Key="k")
    assert not {"ObjectLockMode", "ObjectLockRetainUntilDate", "ObjectLockLegalHoldStatus"} & set(h)
    auditor = user_with_policy(server, tmp_path, "gail", [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectRetention"], "Resource": "*"}])
    h = auditor.get_object(Bucket=b, Key="k")
    assert h["ObjectLockMode"] == "GOVERNANCE" and "ObjectLockLegalHoldStatus" not in h
    owner = s3.head_object(Bucket=b, Key="k")
    assert owner["ObjectLockMode"] == "GOVERNANCE" and owner["ObjectLockLegalHoldStatus"] == "ON"
