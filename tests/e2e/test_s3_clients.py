"""Real command-line clients (aws-cli, s3cmd, rclone), a 1 GiB multipart upload under a memory
bound, and objects surviving a restart and the loss of two drives."""

import filecmp
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from s3util import aws, blob_files, client, new_bucket, tool

GIB = 1024 * 1024 * 1024


def md5_file(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while chunk := f.read(8 * 1024 * 1024):
            h.update(chunk)
    return h.hexdigest()


def vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_aws_cli_cp_ls_sync_rm(eddy, tmp_path):
    aws(eddy, "s3", "mb", "s3://cli-bucket")
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    for i in range(5):
        (src / f"f{i}.txt").write_bytes(os.urandom(1000 * (i + 1)))
    (src / "sub" / "deep.bin").write_bytes(os.urandom(200_000))

    aws(eddy, "s3", "cp", str(src / "f0.txt"), "s3://cli-bucket/single.txt")
    aws(eddy, "s3", "cp", "s3://cli-bucket/single.txt", str(tmp_path / "back.txt"))
    assert (tmp_path / "back.txt").read_bytes() == (src / "f0.txt").read_bytes()

    out = aws(eddy, "s3", "sync", str(src), "s3://cli-bucket/tree").stdout
    assert out.count("upload:") == 6
    listing = aws(eddy, "s3", "ls", "--recursive", "s3://cli-bucket/tree/").stdout
    assert sorted(line.split()[-1] for line in listing.splitlines()) == sorted(
        ["tree/sub/deep.bin"] + [f"tree/f{i}.txt" for i in range(5)])
    top = aws(eddy, "s3", "ls", "s3://cli-bucket/tree/").stdout
    assert "PRE sub/" in top
    # A second sync uploads only what changed.
    (src / "f1.txt").write_bytes(b"changed and a different size")
    out = aws(eddy, "s3", "sync", str(src), "s3://cli-bucket/tree").stdout
    assert out.count("upload:") == 1 and "f1.txt" in out
    down = tmp_path / "down"
    aws(eddy, "s3", "sync", "s3://cli-bucket/tree", str(down))
    cmp = filecmp.dircmp(src, down)
    assert not cmp.diff_files and not cmp.left_only and not cmp.right_only
    assert filecmp.cmp(src / "sub" / "deep.bin", down / "sub" / "deep.bin", shallow=False)

    head = aws(eddy, "s3api", "head-object", "--bucket", "cli-bucket", "--key", "single.txt").stdout
    assert '"ContentLength": 1000' in head
    aws(eddy, "s3api", "put-object-tagging", "--bucket", "cli-bucket", "--key", "single.txt",
        "--tagging", "TagSet=[{Key=a,Value=b}]")
    assert '"Key": "a"' in aws(eddy, "s3api", "get-object-tagging", "--bucket", "cli-bucket", "--key", "single.txt").stdout

    aws(eddy, "s3", "rm", "--recursive", "s3://cli-bucket/tree")
    aws(eddy, "s3", "rm", "s3://cli-bucket/single.txt")
    assert aws(eddy, "s3", "ls", "--recursive", "s3://cli-bucket").stdout.strip() == ""
    aws(eddy, "s3", "rb", "s3://cli-bucket")
    r = aws(eddy, "s3", "ls", "s3://cli-bucket", check=False)
    assert r.returncode != 0 and "NoSuchBucket" in r.stderr
    # A wrong secret is refused.
    r = aws(eddy, "s3", "ls", check=False, secret_key="wrong")
    assert r.returncode != 0 and "SignatureDoesNotMatch" in r.stderr


def test_one_gib_upload_in_bounded_memory(fresh_eddy, tmp_path):
    big = tmp_path / "big.bin"
    # Sparse, with a random 1 MiB block every 64 MiB so parts differ.
    with open(big, "wb") as f:
        f.truncate(GIB)
        for off in range(0, GIB, 64 * 1024 * 1024):
            f.seek(off)
            f.write(os.urandom(1024 * 1024))
    aws(fresh_eddy, "s3", "mb", "s3://big")
    aws(fresh_eddy, "s3", "cp", str(big), "s3://big/big.bin")
    hwm_mib = vm_hwm_kib(fresh_eddy.proc.pid) / 1024
    print(f"server peak RSS after a 1 GiB aws s3 cp: {hwm_mib:.0f} MiB")
    assert hwm_mib < 200, f"peak RSS {hwm_mib:.0f} MiB"

    s3 = client(fresh_eddy)
    head = s3.head_object(Bucket="big", Key="big.bin")
    assert head["ContentLength"] == GIB
    assert head["ETag"].strip('"').endswith(f"-{GIB // (8 * 1024 * 1024)}")  # aws-cli's 8 MiB parts
    # Read it back streamed, and a range deep inside.
    h = hashlib.md5()
    body = s3.get_object(Bucket="big", Key="big.bin")["Body"]
    for chunk in body.iter_chunks(8 * 1024 * 1024):
        h.update(chunk)
    assert h.hexdigest() == md5_file(big)
    off = 640 * 1024 * 1024 - 10
    got = s3.get_object(Bucket="big", Key="big.bin", Range=f"bytes={off}-{off + 99}")["Body"].read()
    with open(big, "rb") as f:
        f.seek(off)
        assert got == f.read(100)
    assert vm_hwm_kib(fresh_eddy.proc.pid) / 1024 < 200


def test_s3cmd_smoke(eddy, tmp_path):
    cfg = tmp_path / "s3cfg"
    host = eddy.s3_url.removeprefix("http://")
    cfg.write_text(
        "[default]\n"
        f"access_key = {eddy.access_key}\nsecret_key = {eddy.secret_key}\n"
        f"host_base = {host}\nhost_bucket = {host}\n"
        "use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n"
    )

    def s3cmd(*args):
        r = subprocess.run([tool("s3cmd"), "-c", str(cfg), *args], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"s3cmd {args}: {r.stdout}\n{r.stderr}"
        return r.stdout

    src = tmp_path / "hello.txt"
    src.write_bytes(os.urandom(300_000))
    s3cmd("mb", "s3://s3cmd-bucket")
    s3cmd("put", str(src), "s3://s3cmd-bucket/dir/hello.txt")
    assert "s3://s3cmd-bucket/dir/hello.txt" in s3cmd("ls", "--recursive", "s3://s3cmd-bucket")
    s3cmd("get", "s3://s3cmd-bucket/dir/hello.txt", str(tmp_path / "got.txt"))
    assert (tmp_path / "got.txt").read_bytes() == src.read_bytes()
    info = s3cmd("info", "s3://s3cmd-bucket/dir/hello.txt")
    assert hashlib.md5(src.read_bytes()).hexdigest() in info
    s3cmd("del", "s3://s3cmd-bucket/dir/hello.txt")
    s3cmd("rb", "s3://s3cmd-bucket")


def test_rclone_smoke(eddy, tmp_path):
    """rclone with an S3 remote given only by environment variables: copy a tree up (one
    file large enough for rclone's multipart upload), list it, verify it with `rclone
    check`, copy it down, delete it."""
    # rclone's S3 backend refuses an AWS_CA_BUNDLE with its HTTP transport; the endpoint
    # is plain HTTP, so none of the AWS_* settings of the environment apply.
    env = dict(
        {k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        RCLONE_CONFIG=str(tmp_path / "rclone.conf"),
        RCLONE_CONFIG_EDDY_TYPE="s3",
        RCLONE_CONFIG_EDDY_PROVIDER="Other",
        RCLONE_CONFIG_EDDY_ENDPOINT=eddy.s3_url,
        RCLONE_CONFIG_EDDY_ACCESS_KEY_ID=eddy.access_key,
        RCLONE_CONFIG_EDDY_SECRET_ACCESS_KEY=eddy.secret_key,
        RCLONE_CONFIG_EDDY_REGION="us-east-1",
        RCLONE_CONFIG_EDDY_FORCE_PATH_STYLE="true",
        # 12 MiB goes up as three 5 MiB-bounded parts.
        RCLONE_S3_UPLOAD_CUTOFF="5M",
        RCLONE_S3_CHUNK_SIZE="5M",
    )

    def rclone(*args, check=True):
        r = subprocess.run(["rclone", *args], capture_output=True, text=True, timeout=300, env=env)
        if check:
            assert r.returncode == 0, f"rclone {args}: {r.stdout}\n{r.stderr}"
        return r

    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    files = {
        "a.txt": os.urandom(10),
        "empty": b"",
        "sub/b.bin": os.urandom(300_000),
        "sub/deeper/big.bin": os.urandom(12 * 1024 * 1024 + 3),
        "sub/deeper/name with spaces+plus.txt": b"odd name",
    }
    for name, body in files.items():
        (src / name).write_bytes(body)

    rclone("mkdir", "eddy:rclone-bucket")
    rclone("copy", str(src), "eddy:rclone-bucket/tree")
    listed = rclone("lsf", "-R", "--files-only", "eddy:rclone-bucket/tree").stdout.splitlines()
    assert sorted(listed) == sorted(files)
    sizes = dict(line.strip().split(" ", 1)[::-1] for line in rclone("ls", "eddy:rclone-bucket/tree").stdout.splitlines())
    assert {k: int(v) for k, v in sizes.items()} == {k: len(v) for k, v in files.items()}
    # The server's view agrees, multipart object included.
    s3 = client(eddy)
    head = s3.head_object(Bucket="rclone-bucket", Key="tree/sub/deeper/big.bin")
    assert head["ContentLength"] == len(files["sub/deeper/big.bin"])
    assert head["ETag"].strip('"').endswith("-3")
    rclone("check", str(src), "eddy:rclone-bucket/tree")
    # check compares contents: a changed local file (same size) is reported.
    changed = bytearray(files["sub/b.bin"])
    changed[1000] ^= 0xFF
    (src / "sub" / "b.bin").write_bytes(bytes(changed))
    r = rclone("check", str(src), "eddy:rclone-bucket/tree", check=False)
    assert r.returncode != 0 and "b.bin" in r.stderr
    (src / "sub" / "b.bin").write_bytes(files["sub/b.bin"])

    down = tmp_path / "down"
    rclone("copy", "eddy:rclone-bucket/tree", str(down))
    for name, body in files.items():
        assert (down / name).read_bytes() == body, name

    rclone("delete", "eddy:rclone-bucket/tree/sub")
    assert rclone("lsf", "-R", "--files-only", "eddy:rclone-bucket").stdout.splitlines() == ["tree/a.txt", "tree/empty"]
    rclone("purge", "eddy:rclone-bucket")
    assert "rclone-bucket" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def put_fixture_objects(s3):
    b = new_bucket(s3, "durable")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    objects = {"small": os.urandom(100), "large": os.urandom(3 * 1024 * 1024 + 5)}
    v1 = s3.put_object(Bucket=b, Key="small", Body=b"old")["VersionId"]
    for k, body in objects.items():
        s3.put_object(Bucket=b, Key=k, Body=body, Metadata={"k": k}, Tagging=f"name={k}")
    parts = [os.urandom(5 * 1024 * 1024), os.urandom(77)]
    uid = s3.create_multipart_upload(Bucket=b, Key="multi")["UploadId"]
    etags = [s3.upload_part(Bucket=b, Key="multi", UploadId=uid, PartNumber=i + 1, Body=p)["ETag"] for i, p in enumerate(parts)]
    s3.complete_multipart_upload(Bucket=b, Key="multi", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    objects["multi"] = b"".join(parts)
    return b, objects, v1


def check_fixture_objects(s3, b, objects, v1):
    for k, body in objects.items():
        g = s3.get_object(Bucket=b, Key=k)
        assert g["Body"].read() == body, k
        if k != "multi":
            assert g["Metadata"] == {"k": k}
            assert s3.get_object_tagging(Bucket=b, Key=k)["TagSet"] == [{"Key": "name", "Value": k}]
    assert s3.get_object(Bucket=b, Key="small", VersionId=v1)["Body"].read() == b"old"
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]
    assert keys == sorted(objects)


def test_objects_survive_restart(fresh_eddy):
    b, objects, v1 = put_fixture_objects(client(fresh_eddy))
    fresh_eddy.restart()
    check_fixture_objects(client(fresh_eddy), b, objects, v1)
    fresh_eddy.stop(kill=True)
    fresh_eddy.start()
    check_fixture_objects(client(fresh_eddy), b, objects, v1)


def test_kill_during_uploads_leaves_no_orphaned_blobs(fresh_eddy):
    """kill -9 while boto3 threads upload, overwrite and delete blob-backed objects: after
    the restart every acknowledged object reads back, and the shard files on a drive are
    exactly the listed objects' blobs (plus the checkpoint's), so nothing a crash left
    half done keeps its space."""
    import threading
    import time

    s3 = client(fresh_eddy)
    b = new_bucket(s3)
    acked, inflight, lock, stop = {}, {}, threading.Lock(), threading.Event()

    def work(t):
        c = client(fresh_eddy)
        n = 0
        while not stop.is_set():
            key = f"w{t}/{n % 12}"  # overwrites free the previous blob
            body = None if n % 5 == 4 else os.urandom(48 << 10)  # above the inline limit
            inflight[t] = (key, body)
            try:
                if body is None:
                    c.delete_object(Bucket=b, Key=key)
                else:
                    c.put_object(Bucket=b, Key=key, Body=body)
            except Exception:
                return  # the server is gone: this request stays in flight
            with lock:
                if body is None:
                    acked.pop(key, None)
                else:
                    acked[key] = body
            del inflight[t]
            n += 1

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    deadline = time.time() + 60
    while len(acked) < 40 and time.time() < deadline:
        time.sleep(0.05)
    fresh_eddy.stop(kill=True)
    stop.set()
    for t in threads:
        t.join()
    fresh_eddy.start()
    s3 = client(fresh_eddy)
    listed = {o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket=b)
              for o in p.get("Contents", [])}
    # Each key holds what was acknowledged last, or what a request in flight at the kill
    # wrote (or deleted); nothing else.
    pending = {key: body for key, body in inflight.values()}
    for key in set(acked) | set(pending) | listed:
        allowed = {acked.get(key)}
        if key in pending:
            allowed.add(pending[key])
        got = s3.get_object(Bucket=b, Key=key)["Body"].read() if key in listed else None
        assert got in allowed, key
    assert len(listed) >= 1
    checkpoint = (Path(fresh_eddy.data_dir) / "drive-0" / "meta" / "checkpoint").exists()
    expected = len(listed) + (1 if checkpoint else 0)
    # Orphans are removed in the background after the start.
    deadline = time.time() + 30
    while len(blob_files(fresh_eddy)) != expected and time.time() < deadline:
        time.sleep(0.1)
    assert len(blob_files(fresh_eddy)) == expected


def test_objects_readable_after_losing_two_drives(fresh_eddy):
    b, objects, v1 = put_fixture_objects(client(fresh_eddy))
    fresh_eddy.stop()
    for n in (0, 3):
        shutil.rmtree(Path(fresh_eddy.data_dir) / f"drive-{n}")
    fresh_eddy.start()
    check_fixture_objects(client(fresh_eddy), b, objects, v1)
    # Still writable while degraded.
    s3 = client(fresh_eddy)
    s3.put_object(Bucket=b, Key="after", Body=b"degraded write")
    assert s3.get_object(Bucket=b, Key="after")["Body"].read() == b"degraded write"
