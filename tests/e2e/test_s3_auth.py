"""Authentication and ownership: SigV4, presigned URLs, wrong secrets, anonymous
requests, several users with their own buckets."""

import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import new_eddy
from s3util import ClientError, client, error_code, new_bucket, status, tool


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    """A server with two extra users from the config file."""
    tmp = tmp_path_factory.mktemp("users")
    cfg = tmp / "eddy.toml"
    cfg.write_text(
        '[[users]]\naccess_key = "alice"\nsecret_key = "alice-secret"\n\n'
        '[[users]]\naccess_key = "bob"\nsecret_key = "bob-secret"\n'
    )
    server = new_eddy(tmp, extra_args=["--config", str(cfg)]).start()
    yield server
    server.stop()


def http(method, url, data=None):
    # No default form Content-Type on uploads: it is part of what a presigned URL signs.
    headers = {"Content-Type": ""} if data is not None else {}
    req = urllib.request.Request(url, method=method, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_wrong_secret_and_unknown_user(eddy):
    for ak, sk, code in [
        (eddy.access_key, "wrong-secret", "SignatureDoesNotMatch"),
        ("nobody", "whatever", "InvalidAccessKeyId"),
    ]:
        s3 = client(eddy, access_key=ak, secret_key=sk)
        with pytest.raises(ClientError) as e:
            s3.list_buckets()
        assert status(e) == 403 and error_code(e) == code


def test_anonymous_is_refused_with_xml(eddy):
    s3 = client(eddy)
    b = new_bucket(s3)
    s3.put_object(Bucket=b, Key="k", Body=b"secret")
    for method, path in [("GET", "/"), ("GET", f"/{b}/k"), ("PUT", f"/{b}/k2"), ("DELETE", f"/{b}/k")]:
        code, body = http(method, eddy.s3_url + path, data=b"x" if method == "PUT" else None)
        assert code == 403, (method, path)
        assert b"<Code>AccessDenied</Code>" in body
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"secret"


@pytest.mark.parametrize("version", ["s3v4", "s3"])
def test_presigned_urls(eddy, version):
    b = new_bucket(client(eddy))
    s3 = client(eddy, signature_version=version)  # presigned: SigV4 query or SigV2
    s3.put_object(Bucket=b, Key="k", Body=b"shared")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "k"}, ExpiresIn=60)
    assert http("GET", url) == (200, b"shared")
    put = s3.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "up"}, ExpiresIn=60)
    assert http("PUT", put, data=b"uploaded")[0] == 200
    assert s3.get_object(Bucket=b, Key="up")["Body"].read() == b"uploaded"
    # Tampered and expired URLs are refused.
    code, body = http("GET", url.replace("/k?", "/up?"))
    assert code == 403 and b"SignatureDoesNotMatch" in body
    expired = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": "k"}, ExpiresIn=1)
    deadline = time.time() + 10
    while time.time() < deadline:
        code, body = http("GET", expired)
        if code != 200:
            break
        time.sleep(0.25)  # expiry is a wall-clock condition: nothing to await but time
    assert code == 403 and b"AccessDenied" in body, body


def test_buckets_belong_to_their_creator(multi):
    admin = client(multi)
    alice = client(multi, "alice", "alice-secret")
    bob = client(multi, "bob", "bob-secret")
    ab = new_bucket(alice, "alice")
    alice.put_object(Bucket=ab, Key="k", Body=b"mine")
    for op in (
        lambda: bob.get_object(Bucket=ab, Key="k"),
        lambda: bob.put_object(Bucket=ab, Key="k", Body=b"x"),
        lambda: bob.list_objects_v2(Bucket=ab),
        lambda: bob.delete_object(Bucket=ab, Key="k"),
        lambda: bob.delete_bucket(Bucket=ab),
        lambda: bob.copy_object(Bucket=new_bucket(bob, "bobdst"), Key="x", CopySource=f"{ab}/k"),
    ):
        with pytest.raises(ClientError) as e:
            op()
        assert status(e) == 403 and error_code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        bob.create_bucket(Bucket=ab)
    assert error_code(e) == "BucketAlreadyExists"
    assert ab in [b["Name"] for b in alice.list_buckets()["Buckets"]]
    assert ab not in [b["Name"] for b in bob.list_buckets()["Buckets"]]
    # The administrator sees and reads every bucket.
    assert ab in [b["Name"] for b in admin.list_buckets()["Buckets"]]
    assert admin.get_object(Bucket=ab, Key="k")["Body"].read() == b"mine"
    assert alice.get_object(Bucket=ab, Key="k")["Body"].read() == b"mine"


def test_virtual_host_style(tmp_path):
    """With --s3-domain, `bucket.DOMAIN` addresses the bucket (path style still works)."""
    import http.client

    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    server = new_eddy(tmp_path, extra_args=["--s3-domain", "s3.eddy.test"]).start()
    try:
        s3 = client(server)
        s3.create_bucket(Bucket="vhost")
        s3.put_object(Bucket="vhost", Key="dir/k", Body=b"virtual")

        def vhost(method, host, path, body=b""):
            req = AWSRequest(method=method, url=f"http://{host}:{server.s3_port}{path}", data=body)
            S3SigV4Auth(Credentials(server.access_key, server.secret_key), "s3", "us-east-1").add_auth(req)
            conn = http.client.HTTPConnection("127.0.0.1", server.s3_port, timeout=10)
            headers = dict(req.headers, Host=f"{host}:{server.s3_port}")
            conn.request(method, path, body=body or None, headers=headers)
            r = conn.getresponse()
            return r.status, r.read()

        r = vhost("GET", "vhost.s3.eddy.test", "/dir/k")
        assert r == (200, b"virtual"), r
        assert vhost("PUT", "vhost.s3.eddy.test", "/new", b"via vhost")[0] == 200
        assert s3.get_object(Bucket="vhost", Key="new")["Body"].read() == b"via vhost"
        code, body = vhost("GET", "vhost.s3.eddy.test", "/?list-type=2")
        assert code == 200 and b"<Key>dir/k</Key>" in body
        code, body = vhost("GET", "s3.eddy.test", "/vhost/dir/k")  # path style on the domain
        assert (code, body) == (200, b"virtual")
    finally:
        server.stop()


def test_sigv4_presigned_urls_are_valid_for_at_most_seven_days(eddy):
    """X-Amz-Expires up to 604800 s works; beyond, or negative, the URL is refused as AWS
    refuses it (403 AuthorizationQueryParametersError), though its signature is good."""
    s3 = client(eddy, signature_version="s3v4")
    bucket = new_bucket(s3, "presign")
    s3.put_object(Bucket=bucket, Key="k", Body=b"week")
    week = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "k"},
                                     ExpiresIn=604800)
    assert "X-Amz-Expires=604800" in week
    with urllib.request.urlopen(week, timeout=10) as r:
        assert r.read() == b"week"
    longer = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "k"},
                                       ExpiresIn=604801)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(longer, timeout=10)
    body = e.value.read().decode()
    assert e.value.code == 403 and "<Code>AuthorizationQueryParametersError</Code>" in body, body
    assert "less than a week" in body, body
    # boto3's CRT signer will not sign a negative expiry; botocore's own query signer does.
    from botocore.auth import S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method="GET", url=f"{eddy.s3_url}/{bucket}/k")
    S3SigV4QueryAuth(Credentials(eddy.access_key, eddy.secret_key), "s3", "us-east-1",
                     expires=-5).add_auth(req)
    negative = req.prepare().url
    assert "X-Amz-Expires=-5" in negative
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(negative, timeout=10)
    body = e.value.read().decode()
    assert e.value.code == 403 and "<Code>AuthorizationQueryParametersError</Code>" in body, body
    assert "non-negative" in body and "<RequestId>" in body, body


def test_sigv4_signed_with_a_date_header(eddy):
    """SigV4 with the HTTP Date header instead of X-Amz-Date (botocore's own signer,
    asked to sign `date` and not to send X-Amz-Date): accepted, as AWS accepts it."""
    import datetime
    import email.utils
    import requests
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    s3 = client(eddy)
    bucket = new_bucket(s3, "datehdr")
    s3.put_object(Bucket=bucket, Key="k", Body=b"dated")
    url = f"{eddy.s3_url}/{bucket}/k"

    class DateSigner(S3SigV4Auth):
        # SigV4 with `Date`: the string to sign takes its time in ISO 8601 basic form.
        def _modify_request_before_signing(self, request):
            super()._modify_request_before_signing(request)
            del request.headers["X-Amz-Date"]
            t = datetime.datetime.strptime(request.context["timestamp"], "%Y%m%dT%H%M%SZ")
            request.headers["Date"] = email.utils.format_datetime(
                t.replace(tzinfo=datetime.timezone.utc), usegmt=True)
            # botocore signs every header the request has, `date` among them.

    req = AWSRequest(method="GET", url=url)
    DateSigner(Credentials(eddy.access_key, eddy.secret_key), "s3", "us-east-1").add_auth(req)
    assert "X-Amz-Date" not in req.headers and "date" in req.headers["Authorization"]
    r = requests.get(url, headers=dict(req.headers.items()), timeout=10)
    assert r.status_code == 200 and r.content == b"dated", r.text
    # The same request with a wrong secret is still refused.
    bad = AWSRequest(method="GET", url=url)
    DateSigner(Credentials(eddy.access_key, "wrong-secret"), "s3", "us-east-1").add_auth(bad)
    r = requests.get(url, headers=dict(bad.headers.items()), timeout=10)
    assert r.status_code == 403 and "SignatureDoesNotMatch" in r.text, r.text


def test_sigv2_signs_every_resource_form(eddy, tmp_path):
    """Legacy SigV2 (boto3's `s3` signer, s3cmd's `signature_v2`), with AWS's canonical
    resource: bucket-level requests (`/bucket`, which AWS signs as `/bucket/`) as well as
    object and service ones, sub-resources included; a wrong secret is refused on each."""
    v2 = client(eddy, signature_version="s3")
    b = f"v2-{int(time.time() * 1000)}"
    v2.create_bucket(Bucket=b)
    v2.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert v2.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    v2.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    assert v2.get_bucket_tagging(Bucket=b)["TagSet"] == [{"Key": "k", "Value": "v"}]
    v2.put_object(Bucket=b, Key="a b+c", Body=b"v2 body")
    assert v2.get_object(Bucket=b, Key="a b+c")["Body"].read() == b"v2 body"
    assert [o["Key"] for o in v2.list_objects(Bucket=b, Prefix="a")["Contents"]] == ["a b+c"]
    assert v2.list_object_versions(Bucket=b)["Versions"][0]["Key"] == "a b+c"
    assert v2.get_bucket_location(Bucket=b).get("LocationConstraint") in (None, "")
    assert v2.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    assert b in [x["Name"] for x in v2.list_buckets()["Buckets"]]
    # A presigned SigV2 URL for a bucket-level request.
    url = v2.generate_presigned_url("list_objects", Params={"Bucket": b}, ExpiresIn=60)
    code, body = http("GET", url)
    # boto3 asks for url-encoded keys.
    assert code == 200 and b"<Key>a%20b%2Bc</Key>" in body, body
    wrong = client(eddy, secret_key="not-the-secret", signature_version="s3")
    for call in (lambda: wrong.list_objects(Bucket=b),
                 lambda: wrong.get_bucket_versioning(Bucket=b),
                 lambda: wrong.get_object(Bucket=b, Key="a b+c"),
                 lambda: wrong.list_buckets()):
        with pytest.raises(ClientError) as e:
            call()
        assert error_code(e) == "SignatureDoesNotMatch"
    # s3cmd signs with x-amz-date and no Date, as AWS allows.
    cfg = tmp_path / "s3cfg"
    host = eddy.s3_url.split("//")[1]
    cfg.write_text(f"[default]\naccess_key = {eddy.access_key}\nsecret_key = {eddy.secret_key}\n"
                   f"host_base = {host}\nhost_bucket = {host}\nuse_https = False\n"
                   "signature_v2 = True\nbucket_location = us-east-1\n")
    r = subprocess.run([tool("s3cmd"), "-c", str(cfg), "ls", f"s3://{b}"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "a b+c" in r.stdout, r.stderr
