"""Encryption at rest with boto3 and aws-cli, each answer as AWS documents it: SSE-S3
(`x-amz-server-side-encryption: AES256`, data keys wrapped by the server's master key
file) and SSE-C (the client's key on every request, never stored, its MD5 checked) on
PutObject, GetObject (ranges included), HeadObject, CopyObject, multipart uploads and
UploadPartCopy; bucket default encryption; and what a stolen drive would show: no shard
file, log segment or catalog file holds any of an encrypted object's plaintext, while a
plain object's bytes are there to be found (so the search itself works)."""

import base64
import hashlib
import os
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import new_eddy
from s3util import aws, client, error_code, status

KEY = os.urandom(32)
SSE_C = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": KEY}
OTHER_C = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": os.urandom(32)}
MIB = 1 << 20


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    eddy = new_eddy(tmp_path_factory.mktemp("sse")).start()
    yield eddy
    eddy.stop()


@pytest.fixture
def s3(server):
    return client(server)


def bucket(s3, prefix="sse"):
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def refused(call, code, http):
    with pytest.raises(ClientError) as e:
        call()
    assert (error_code(e), status(e)) == (code, http), e.value.response["Error"]


def body(n, seed):
    """`n` bytes no one could find by chance: a counter under a seed, hashed."""
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{i}".encode()).digest()
        i += 1
    return bytes(out[:n])


def on_disk(eddy, needles):
    """Which of `needles` some file of the data dir holds (shards, log segments, the
    catalog store, checkpoints: everything a stolen drive would give)."""
    found = set()
    for p in Path(eddy.data_dir).rglob("*"):
        if not p.is_file():
            continue
        try:
            data = p.read_bytes()
        except FileNotFoundError:  # removed while we looked
            continue
        for n in needles:
            if n in data:
                found.add(n)
    return found


def samples(data, count=8, width=32):
    """`count` slices of `width` bytes spread over `data`, each inside one 64 KiB-aligned
    window: a stripe's data is cut into `k` shards at multiples of its shard length (256
    KiB for a full stripe), so a slice that crossed one would not be whole in any shard
    file even for a plain object."""
    windows = len(data) // 65536
    step = max(1, windows // count)
    return [data[w * 65536 + 30000:w * 65536 + 30000 + width]
            for w in range(0, windows, step)][:count]


def test_sse_s3_round_trip_and_headers(s3):
    b = bucket(s3)
    data = body(3 * MIB + 17, "s3-roundtrip")
    put = s3.put_object(Bucket=b, Key="k", Body=data, ServerSideEncryption="AES256")
    assert put["ServerSideEncryption"] == "AES256"
    # An SSE-S3 ETag is the MD5, as on AWS.
    assert put["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'
    got = s3.get_object(Bucket=b, Key="k")
    assert got["ServerSideEncryption"] == "AES256"
    assert got["Body"].read() == data
    part = s3.get_object(Bucket=b, Key="k", Range="bytes=1048570-2097160")["Body"].read()
    assert part == data[1048570:2097161]
    assert s3.head_object(Bucket=b, Key="k")["ServerSideEncryption"] == "AES256"
    # A key offered for an SSE-S3 object does not apply.
    refused(lambda: s3.get_object(Bucket=b, Key="k", **SSE_C), "InvalidRequest", 400)
    # Small objects, which plain writes keep in the catalog record, are encrypted too.
    s3.put_object(Bucket=b, Key="small", Body=b"tiny secret", ServerSideEncryption="AES256")
    assert s3.get_object(Bucket=b, Key="small")["Body"].read() == b"tiny secret"
    refused(lambda: s3.put_object(Bucket=b, Key="x", Body=b"x", ServerSideEncryption="AES128"),
            "InvalidArgument", 400)


def test_sse_c_needs_the_key_on_every_read(s3):
    b = bucket(s3)
    data = body(2 * MIB + 5, "sse-c")
    put = s3.put_object(Bucket=b, Key="k", Body=data, **SSE_C)
    assert put["SSECustomerAlgorithm"] == "AES256"
    assert put["SSECustomerKeyMD5"] == base64.b64encode(hashlib.md5(KEY).digest()).decode()
    # The ETag does not give away the MD5 of the plaintext.
    assert put["ETag"] != f'"{hashlib.md5(data).hexdigest()}"'
    assert s3.get_object(Bucket=b, Key="k", **SSE_C)["Body"].read() == data
    ranged = s3.get_object(Bucket=b, Key="k", Range="bytes=-1000", **SSE_C)["Body"].read()
    assert ranged == data[-1000:]
    head = s3.head_object(Bucket=b, Key="k", **SSE_C)
    assert head["SSECustomerKeyMD5"] == put["SSECustomerKeyMD5"]
    assert head["ContentLength"] == len(data)
    refused(lambda: s3.get_object(Bucket=b, Key="k"), "InvalidRequest", 400)
    refused(lambda: s3.get_object(Bucket=b, Key="k", **OTHER_C), "AccessDenied", 403)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="k")
    assert status(e) == 400
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="k", **OTHER_C)
    assert status(e) == 403
    refused(lambda: s3.get_object_attributes(Bucket=b, Key="k", ObjectAttributes=["ObjectSize"]),
            "InvalidRequest", 400)
    # boto3 encodes SSE-C keys for most operations but not this one: sent as S3 wants.
    encoded = {"SSECustomerAlgorithm": "AES256",
               "SSECustomerKey": base64.b64encode(KEY).decode(),
               "SSECustomerKeyMD5": put["SSECustomerKeyMD5"]}
    attrs = s3.get_object_attributes(Bucket=b, Key="k", ObjectAttributes=["ObjectSize"], **encoded)
    assert attrs["ObjectSize"] == len(data)
    # Malformed keys get AWS's errors and store nothing.
    refused(lambda: s3.put_object(Bucket=b, Key="bad", Body=b"x", SSECustomerAlgorithm="AES256",
                                  SSECustomerKey=os.urandom(16)), "InvalidArgument", 400)
    refused(lambda: s3.put_object(Bucket=b, Key="bad", Body=b"x", SSECustomerAlgorithm="AES256",
                                  SSECustomerKey=base64.b64encode(KEY).decode(),
                                  SSECustomerKeyMD5="AAAAAAAAAAAAAAAAAAAAAA=="),
            "InvalidArgument", 400)
    refused(lambda: s3.head_object(Bucket=b, Key="bad"), "404", 404)


def test_copies_decrypt_with_the_source_key_and_encrypt_as_asked(s3):
    b = bucket(s3)
    data = body(MIB + 3, "copy")
    s3.put_object(Bucket=b, Key="c", Body=data, **SSE_C)
    src = {"Bucket": b, "Key": "c"}
    refused(lambda: s3.copy_object(Bucket=b, Key="d", CopySource=src), "InvalidRequest", 400)
    refused(lambda: s3.copy_object(Bucket=b, Key="d", CopySource=src,
                                   CopySourceSSECustomerAlgorithm="AES256",
                                   CopySourceSSECustomerKey=OTHER_C["SSECustomerKey"]),
            "AccessDenied", 403)
    out = s3.copy_object(Bucket=b, Key="d", CopySource=src, ServerSideEncryption="AES256",
                         CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=KEY)
    assert out["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=b, Key="d")["Body"].read() == data
    # SSE-S3 to SSE-C under another key, and to plaintext.
    s3.copy_object(Bucket=b, Key="e", CopySource={"Bucket": b, "Key": "d"}, **OTHER_C)
    assert s3.get_object(Bucket=b, Key="e", **OTHER_C)["Body"].read() == data
    s3.copy_object(Bucket=b, Key="f", CopySource={"Bucket": b, "Key": "d"})
    plain = s3.get_object(Bucket=b, Key="f")
    assert "ServerSideEncryption" not in plain and plain["Body"].read() == data
    # An object copied onto itself to change its encryption is allowed, as on AWS.
    s3.copy_object(Bucket=b, Key="f", CopySource={"Bucket": b, "Key": "f"},
                   ServerSideEncryption="AES256")
    assert s3.head_object(Bucket=b, Key="f")["ServerSideEncryption"] == "AES256"


def test_multipart_uploads_encrypt_every_part(s3):
    b = bucket(s3)
    p1, p2 = body(5 * MIB, "mp1"), body(MIB + 11, "mp2")
    up = s3.create_multipart_upload(Bucket=b, Key="m", **SSE_C)
    assert up["SSECustomerAlgorithm"] == "AES256"
    uid = up["UploadId"]
    refused(lambda: s3.upload_part(Bucket=b, Key="m", UploadId=uid, PartNumber=1, Body=p1),
            "InvalidRequest", 400)
    refused(lambda: s3.upload_part(Bucket=b, Key="m", UploadId=uid, PartNumber=1, Body=p1,
                                   **OTHER_C), "AccessDenied", 403)
    e1 = s3.upload_part(Bucket=b, Key="m", UploadId=uid, PartNumber=1, Body=p1, **SSE_C)["ETag"]
    s3.put_object(Bucket=b, Key="src", Body=p2, ServerSideEncryption="AES256")
    e2 = s3.upload_part_copy(Bucket=b, Key="m", UploadId=uid, PartNumber=2,
                             CopySource={"Bucket": b, "Key": "src"},
                             **SSE_C)["CopyPartResult"]["ETag"]
    s3.complete_multipart_upload(Bucket=b, Key="m", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    whole = p1 + p2
    assert s3.get_object(Bucket=b, Key="m", **SSE_C)["Body"].read() == whole
    across = s3.get_object(Bucket=b, Key="m", Range=f"bytes={5 * MIB - 10}-{5 * MIB + 9}",
                           **SSE_C)["Body"].read()
    assert across == whole[5 * MIB - 10:5 * MIB + 10]
    refused(lambda: s3.get_object(Bucket=b, Key="m"), "InvalidRequest", 400)
    # SSE-S3 multipart.
    up = s3.create_multipart_upload(Bucket=b, Key="n", ServerSideEncryption="AES256")
    assert up["ServerSideEncryption"] == "AES256"
    part = s3.upload_part(Bucket=b, Key="n", UploadId=up["UploadId"], PartNumber=1, Body=p2)
    assert part["ServerSideEncryption"] == "AES256"
    done = s3.complete_multipart_upload(Bucket=b, Key="n", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": [
                                            {"PartNumber": 1, "ETag": part["ETag"]}]})
    assert done["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=b, Key="n")["Body"].read() == p2


def test_bucket_default_encryption(s3, server):
    b = bucket(s3)
    refused(lambda: s3.get_bucket_encryption(Bucket=b),
            "ServerSideEncryptionConfigurationNotFoundError", 404)
    kms = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}}]}
    refused(lambda: s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=kms),
            "NotImplemented", 501)
    conf = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"},
                       "BucketKeyEnabled": False}]}
    s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=conf)
    got = s3.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]
    assert got["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    put = s3.put_object(Bucket=b, Key="by-default", Body=b"defaulted")
    assert put["ServerSideEncryption"] == "AES256"
    # SSE-C asked explicitly still wins.
    s3.put_object(Bucket=b, Key="own-key", Body=b"mine", **SSE_C)
    assert "ServerSideEncryption" not in s3.head_object(Bucket=b, Key="own-key", **SSE_C)
    f = Path(server.data_dir).parent / "cli-upload.txt"
    f.write_bytes(b"from the cli")
    aws(server, "s3", "cp", str(f), f"s3://{b}/cli")
    assert s3.head_object(Bucket=b, Key="cli")["ServerSideEncryption"] == "AES256"
    s3.delete_bucket_encryption(Bucket=b)
    refused(lambda: s3.get_bucket_encryption(Bucket=b),
            "ServerSideEncryptionConfigurationNotFoundError", 404)
    assert "ServerSideEncryption" not in s3.put_object(Bucket=b, Key="after", Body=b"x")


def test_aws_cli_sse_and_sse_c(server, s3, tmp_path):
    b = bucket(s3)
    src = tmp_path / "f.bin"
    data = body(300_000, "cli")
    src.write_bytes(data)
    aws(server, "s3", "cp", str(src), f"s3://{b}/s3", "--sse", "AES256")
    assert s3.head_object(Bucket=b, Key="s3")["ServerSideEncryption"] == "AES256"
    key_file = tmp_path / "key"
    key_file.write_bytes(KEY)
    aws(server, "s3", "cp", str(src), f"s3://{b}/c", "--sse-c", "AES256",
        "--sse-c-key", f"fileb://{key_file}")
    out = tmp_path / "back.bin"
    r = aws(server, "s3", "cp", f"s3://{b}/c", str(out), check=False)
    assert r.returncode != 0
    aws(server, "s3", "cp", f"s3://{b}/c", str(out), "--sse-c", "AES256",
        "--sse-c-key", f"fileb://{key_file}")
    assert out.read_bytes() == data


def test_a_stolen_drive_shows_no_plaintext_and_the_master_key_is_needed(tmp_path):
    eddy = new_eddy(tmp_path).start()
    try:
        s3 = client(eddy)
        b = bucket(s3)
        secret_s3 = body(2 * MIB + 123, "stolen-s3")
        secret_c = body(700_000, "stolen-c")
        secret_mp = body(5 * MIB, "stolen-mp")
        small = b"a small secret that plain writes would inline " * 20
        visible = body(MIB, "visible")
        s3.put_object(Bucket=b, Key="s3", Body=secret_s3, ServerSideEncryption="AES256")
        s3.put_object(Bucket=b, Key="c", Body=secret_c, **SSE_C)
        s3.put_object(Bucket=b, Key="small", Body=small, ServerSideEncryption="AES256")
        up = s3.create_multipart_upload(Bucket=b, Key="mp", ServerSideEncryption="AES256")
        e = s3.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=1,
                           Body=secret_mp)["ETag"]
        s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up["UploadId"],
                                     MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "c"},
                       CopySourceSSECustomerAlgorithm="AES256", CopySourceSSECustomerKey=KEY,
                       ServerSideEncryption="AES256")
        s3.put_object(Bucket=b, Key="visible", Body=visible)
        eddy.stop()
        hidden = [n for d in (secret_s3, secret_c, secret_mp) for n in samples(d)]
        hidden.append(small[:64])
        shown = samples(visible)
        found = on_disk(eddy, hidden + shown)
        assert found.isdisjoint(hidden), "plaintext of an encrypted object is on a drive"
        assert set(shown) <= found, "the search misses a plain object's bytes"
        # No drive holds the master key: it is a file of the data dir only.
        key_file = Path(eddy.data_dir) / "sse-master.key"
        master = key_file.read_text().strip()
        assert len(master) == 64
        for d in Path(eddy.data_dir).glob("drive-*"):
            for p in d.rglob("*"):
                if p.is_file():
                    data = p.read_bytes()
                    assert master.encode() not in data and bytes.fromhex(master) not in data, p

        eddy.start()
        s3 = client(eddy)
        assert s3.get_object(Bucket=b, Key="s3")["Body"].read() == secret_s3
        assert s3.get_object(Bucket=b, Key="copy")["Body"].read() == secret_c
        assert s3.get_object(Bucket=b, Key="mp")["Body"].read() == secret_mp
        assert s3.get_object(Bucket=b, Key="small")["Body"].read() == small
        eddy.stop()
        # With another master key, SSE-S3 objects cannot be read (an error, never
        # ciphertext or a wrong body); the rest still can.
        key_file.rename(key_file.with_suffix(".kept"))
        eddy.start()
        s3 = client(eddy)
        refused(lambda: s3.get_object(Bucket=b, Key="s3"), "InternalError", 500)
        assert s3.get_object(Bucket=b, Key="c", **SSE_C)["Body"].read() == secret_c
        assert s3.get_object(Bucket=b, Key="visible")["Body"].read() == visible
        eddy.stop()
        key_file.unlink()
        key_file.with_suffix(".kept").rename(key_file)
        eddy.start()
        assert client(eddy).get_object(Bucket=b, Key="s3")["Body"].read() == secret_s3
    finally:
        eddy.stop()
