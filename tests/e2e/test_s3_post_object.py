"""Browser-form uploads (PostObject) with policies signed by boto3's
`generate_presigned_post`, posted as a browser would (multipart/form-data): every policy
condition kind (exact matches, `starts-with`, `content-length-range`, `x-amz-meta-*`
fields) holding and failing with AWS's answers (403 AccessDenied "Invalid according to
Policy" for a failed condition or a field no condition covers, 400 EntityTooSmall /
EntityTooLarge for the length range, 403 for an expired or altered policy), nothing stored
on a refusal; `success_action_status`; `${filename}` in the key; and Eddy's own bound on
a POST file's size."""

import uuid

import pytest
import urllib3

from s3util import client


@pytest.fixture(scope="module")
def s3(eddy):
    return client(eddy)


@pytest.fixture(scope="module")
def bucket(s3):
    name = f"post-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


HTTP = urllib3.PoolManager()


def post(form, data, filename="photo.jpg", content_type="image/jpeg"):
    fields = dict(form["fields"])
    fields["file"] = (filename, data, content_type)
    return HTTP.request("POST", form["url"], fields=fields, timeout=120)


def code(r):
    text = r.data.decode()
    return text.split("<Code>")[1].split("</Code>")[0] if "<Code>" in text else None


def exists(s3, bucket, key):
    return bool(s3.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount"))


def policy(s3, bucket, key, fields=None, conditions=None, expires=300):
    return s3.generate_presigned_post(bucket, key, Fields=fields or {},
                                      Conditions=conditions or [], ExpiresIn=expires)


def test_an_upload_meeting_every_condition_is_stored(s3, bucket):
    fields = {"Content-Type": "image/jpeg", "x-amz-meta-album": "summer",
              "success_action_status": "201"}
    conditions = [["starts-with", "$key", "uploads/"], {"Content-Type": "image/jpeg"},
                  {"x-amz-meta-album": "summer"}, ["content-length-range", 1, 4096],
                  {"success_action_status": "201"}]
    form = policy(s3, bucket, "uploads/a.jpg", fields, conditions)
    r = post(form, b"\xff\xd8 a jpeg")
    assert r.status == 201, r.data
    assert b"<Key>uploads/a.jpg</Key>" in r.data
    got = s3.get_object(Bucket=bucket, Key="uploads/a.jpg")
    assert got["Body"].read() == b"\xff\xd8 a jpeg"
    assert got["ContentType"] == "image/jpeg"
    assert got["Metadata"] == {"album": "summer"}


@pytest.mark.parametrize("case", ["starts-with", "eq-content-type", "eq-meta", "extra-field"])
def test_a_failed_condition_is_access_denied_and_stores_nothing(s3, bucket, case):
    key = f"elsewhere/{case}.jpg" if case == "starts-with" else f"uploads/{case}.jpg"
    fields = {"Content-Type": "image/jpeg", "x-amz-meta-album": "summer"}
    conditions = [["starts-with", "$key", "uploads/"], {"Content-Type": "image/jpeg"},
                  {"x-amz-meta-album": "summer"}]
    form = policy(s3, bucket, key, fields, conditions)
    if case == "starts-with":
        # The policy was signed for uploads/ keys; the form names another key.
        form = policy(s3, bucket, "uploads/x.jpg", fields, conditions)
        form["fields"]["key"] = key
    elif case == "eq-content-type":
        form["fields"]["Content-Type"] = "text/html"
    elif case == "eq-meta":
        form["fields"]["x-amz-meta-album"] = "winter"
    else:
        form["fields"]["x-amz-meta-sneaked"] = "in"
    r = post(form, b"data")
    assert (r.status, code(r)) == (403, "AccessDenied"), r.data
    assert not exists(s3, bucket, key)


def test_content_length_range(s3, bucket):
    form = policy(s3, bucket, "uploads/sized", conditions=[["content-length-range", 10, 20]])
    r = post(form, b"123456789")
    assert (r.status, code(r)) == (400, "EntityTooSmall"), r.data
    r = post(form, b"x" * 21)
    assert (r.status, code(r)) == (400, "EntityTooLarge"), r.data
    assert not exists(s3, bucket, "uploads/sized")
    r = post(form, b"x" * 15)
    assert r.status == 204, r.data
    assert s3.head_object(Bucket=bucket, Key="uploads/sized")["ContentLength"] == 15


def test_expired_or_altered_policies_are_refused(s3, bucket):
    expired = policy(s3, bucket, "uploads/late", expires=-10)
    r = post(expired, b"late")
    assert (r.status, code(r)) == (403, "AccessDenied"), r.data
    form = policy(s3, bucket, "uploads/altered", conditions=[["content-length-range", 1, 5]])
    # Widening the signed policy's range breaks its signature.
    import base64
    import json
    doc = json.loads(base64.b64decode(form["fields"]["policy"]))
    doc["conditions"] = [c if not (isinstance(c, list) and c[0] == "content-length-range")
                         else ["content-length-range", 1, 10 ** 9] for c in doc["conditions"]]
    form["fields"]["policy"] = base64.b64encode(json.dumps(doc).encode()).decode()
    r = post(form, b"x" * 100)
    assert (r.status, code(r)) == (403, "SignatureDoesNotMatch"), r.data
    assert not exists(s3, bucket, "uploads/late")
    assert not exists(s3, bucket, "uploads/altered")


def test_a_post_file_is_bounded(s3, bucket):
    # s3s holds a POST file in memory while it checks the policy: Eddy caps it at 64 MiB.
    form = policy(s3, bucket, "uploads/huge")
    r = post(form, b"\0" * ((64 << 20) + 1))
    assert (r.status, code(r)) == (400, "EntityTooLarge"), r.data[:300]
    assert not exists(s3, bucket, "uploads/huge")


def test_the_key_takes_the_uploaded_file_name(s3, bucket):
    form = policy(s3, bucket, "uploads/${filename}",
                  conditions=[["starts-with", "$key", "uploads/"]])
    r = post(form, b"named by the browser", filename="holiday photo.png")
    assert r.status == 204, r.data
    assert s3.get_object(Bucket=bucket, Key="uploads/holiday photo.png")["Body"].read() == \
        b"named by the browser"
    assert not exists(s3, bucket, "uploads/${filename}")
    # The rewritten key is still held to the policy.
    form = policy(s3, bucket, "${filename}", conditions=[["starts-with", "$key", "uploads/"]])
    r = post(form, b"x", filename="outside.png")
    assert (r.status, code(r)) == (403, "AccessDenied"), r.data
    assert not exists(s3, bucket, "outside.png")
