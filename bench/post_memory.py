#!/usr/bin/env python3
"""What an unsigned browser-form upload (PostObject) makes the server hold: the peak RSS
of `eddy serve` while one client streams a form with a large file and a policy that was
never signed, beside the RSS before it. s3s reads a POST file into memory before it
checks the policy's signature; Eddy caps the file at 64 MiB (s3gw/src/post_object.rs).

    .venv/bin/python bench/post_memory.py BIN [MIB]

BIN is an `eddy` build; MIB the file's size (default 400). The server runs on a fresh
data dir under $SCRATCH (default /tmp/eddy-bench); RSS is sampled from /proc every 50 ms.
"""

import base64
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from conftest import Eddy, free_port  # noqa: E402
from s3util import client  # noqa: E402

SCRATCH = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
    return 0


def main():
    os.environ["EDDY_BIN"] = str(Path(sys.argv[1]).resolve())
    mib = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    data_dir = SCRATCH / "post-memory"
    shutil.rmtree(data_dir, ignore_errors=True)
    eddy = Eddy(data_dir=data_dir, s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port()).start()
    try:
        client(eddy).create_bucket(Bucket="post")
        pid = eddy.proc.pid
        peak = [0]
        done = threading.Event()

        def watch():
            while not done.is_set():
                peak[0] = max(peak[0], rss_kib(pid))
                time.sleep(0.05)

        before = rss_kib(pid)
        threading.Thread(target=watch, daemon=True).start()
        policy = base64.b64encode(json.dumps({
            "expiration": "2099-01-01T00:00:00Z",
            "conditions": [["content-length-range", 0, 5 << 30]]}).encode()).decode()
        b = "benchBOUNDARY"
        head = (f"--{b}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nbig\r\n"
                f"--{b}\r\nContent-Disposition: form-data; name=\"policy\"\r\n\r\n{policy}\r\n"
                f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n"
                "Content-Type: application/octet-stream\r\n\r\n").encode()

        def body():
            yield head
            chunk = b"z" * (1 << 20)
            for _ in range(mib):
                yield chunk
            yield f"\r\n--{b}--\r\n".encode()

        r = urllib3.PoolManager().request(
            "POST", f"{eddy.s3_url}/post", body=body(), chunked=True, timeout=300,
            headers={"Content-Type": f"multipart/form-data; boundary={b}"})
        time.sleep(0.2)
        done.set()
        code = r.data.decode().split("<Code>")[1].split("</Code>")[0] if b"<Code>" in r.data else ""
        print(f"unsigned {mib} MiB POST: {r.status} {code}; RSS before {before / 1024:.0f} MiB, "
              f"peak {peak[0] / 1024:.0f} MiB")
    finally:
        eddy.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
