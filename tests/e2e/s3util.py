"""Helpers for the S3 suites: real clients (boto3, aws-cli, s3cmd) pointed at a server."""

import os
import subprocess
import time
import uuid
from pathlib import Path

import boto3
from botocore.client import Config
from botocore.exceptions import ClientError

VENV_BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin"


def client(eddy, access_key=None, secret_key=None, verify=None, **config):
    return boto3.client(
        "s3",
        endpoint_url=eddy.s3_url,
        verify=verify,
        aws_access_key_id=access_key or eddy.access_key,
        aws_secret_access_key=secret_key or eddy.secret_key,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **config),
    )


def new_bucket(s3, prefix="b"):
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def error_code(excinfo) -> str:
    return excinfo.value.response["Error"]["Code"]


def status(excinfo) -> int:
    return excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"]


def tool(name: str) -> str:
    """A client installed in the test venv (or on PATH)."""
    p = VENV_BIN / name
    return str(p) if p.exists() else name


def aws(eddy, *args, check=True, access_key=None, secret_key=None, timeout=600):
    env = dict(
        os.environ,
        AWS_ACCESS_KEY_ID=access_key or eddy.access_key,
        AWS_SECRET_ACCESS_KEY=secret_key or eddy.secret_key,
        AWS_DEFAULT_REGION="us-east-1",
        AWS_CONFIG_FILE="/dev/null",
        AWS_SHARED_CREDENTIALS_FILE="/dev/null",
    )
    r = subprocess.run(
        [tool("aws"), "--endpoint-url", eddy.s3_url, *args],
        env=env, capture_output=True, text=True, timeout=timeout,
    )
    if check:
        assert r.returncode == 0, f"aws {args} failed ({r.returncode}): {r.stdout}\n{r.stderr}"
    return r


def blob_files(eddy, drive=0):
    """Shard files on one drive, leaving out the spares Eddy makes ahead of time: files
    listed in `blobs/spares` that still hold only their 64-byte header."""
    root = Path(eddy.data_dir) / f"drive-{drive}" / "blobs"
    try:
        listed = (root / "spares").read_bytes()
    except FileNotFoundError:
        listed = b""
    spares = {int.from_bytes(listed[i:i + 16], "little") for i in range(0, len(listed) - 15, 16)}
    names = set()
    for p in root.glob("??/*"):
        try:
            if p.stat().st_size == 64 and int(p.name, 16) in spares:
                continue
        except FileNotFoundError:  # removed while we looked
            continue
        names.add(p.name)
    return names


def new_blob_files(eddy, before, expect, timeout=20):
    """The shard files on drive 0 that are not in `before`, once there are `expect` of
    them (freed blobs are deleted in the background after the commit that frees them
    is answered), or whatever there is after `timeout` seconds."""
    deadline = time.time() + timeout
    while True:
        now = blob_files(eddy) - before
        if len(now) == expect or time.time() > deadline:
            return now
        time.sleep(0.05)


__all__ = ["ClientError", "client", "new_bucket", "error_code", "status", "aws", "tool", "blob_files",
           "new_blob_files"]
