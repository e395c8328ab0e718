#!/usr/bin/env python3
"""TLS cost, measured against Eddy itself in one run (no peer here serves TLS the same
way; the ratios are the result):

1. **Kafka produce MB/s over TLS vs plaintext.** One server with a `PLAINTEXT://` and an
   `SSL://` listener. ROUNDS (default 3) pairs of DUR seconds (default 8) of 1 KiB values
   from one librdkafka producer (acks=all, lz4 off) to a 3-partition topic, alternating
   listeners within each pair so a drifting disk is charged to both.
2. **TLS handshakes per second** on the Kafka SSL port: THREADS (default 4) Python
   clients doing HANDSHAKES (default 2000) full handshakes (no session resumption), and
   the server's CPU time per handshake (from /proc).
3. **S3 GET MB/s over HTTPS vs HTTP.** Two servers, one with S3 over HTTPS, one plain;
   a 64 MiB object read whole with boto3, ROUNDS pairs of GETS (default 8) reads.

    EDDY_BIN=target/release/eddy .venv/bin/python bench/tls.py

Prints one JSON object. The test CA and certificate are made with openssl in a temporary
directory.
"""

import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from conftest import free_port, new_eddy  # noqa: E402
from s3util import client  # noqa: E402
from test_tls import make_ca, make_cert  # noqa: E402

DUR = float(os.environ.get("DUR", "8"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
THREADS = int(os.environ.get("THREADS", "4"))
HANDSHAKES = int(os.environ.get("HANDSHAKES", "2000"))
GETS = int(os.environ.get("GETS", "8"))
VALUE = b"v" * 1024


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_mb_s(conf, topic):
    p = Producer({**conf, "acks": "all", "linger.ms": 5})
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < DUR:
        try:
            p.produce(topic, VALUE, partition=n % 3)
            n += 1
        except BufferError:
            p.poll(0.01)
    assert p.flush(60) == 0
    return n * len(VALUE) / (time.perf_counter() - start) / 1e6


def handshakes(port, ca):
    # A context per thread, and sessions never reused: every handshake is a full one.
    per = HANDSHAKES // THREADS

    def work():
        c = ssl.create_default_context(cafile=ca)
        for _ in range(per):
            with socket.create_connection(("127.0.0.1", port)) as s:
                with c.wrap_socket(s, server_hostname="127.0.0.1") as t:
                    t.do_handshake()

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return per * THREADS, time.perf_counter() - start


def s3_get_mb_s(s3, bucket, size):
    start = time.perf_counter()
    for _ in range(GETS):
        got = s3.get_object(Bucket=bucket, Key="big")["Body"].read()
        assert len(got) == size
    return GETS * size / (time.perf_counter() - start) / 1e6


def main():
    out = {"dur_s": DUR, "rounds": ROUNDS}
    with tempfile.TemporaryDirectory(prefix="eddy-bench-tls-") as tmp:
        tmp = Path(tmp)
        make_ca(tmp, "ca")
        make_cert(tmp, "ca", "server", "eddy", server=True)
        ca = str(tmp / "ca.pem")
        tls_args = ["--tls-cert", str(tmp / "server.pem"), "--tls-key", str(tmp / "server.key")]

        kafka = new_eddy(tmp / "k", extra_args=tls_args, s3_tls=True)
        kafka.ssl_port = free_port()
        kafka.kafka_listeners = [f"SSL://127.0.0.1:{kafka.ssl_port}"]
        plain_s3 = new_eddy(tmp / "p")
        kafka.start()
        plain_s3.start()
        try:
            plain = {"bootstrap.servers": kafka.bootstrap}
            tls = {"bootstrap.servers": f"127.0.0.1:{kafka.ssl_port}",
                   "security.protocol": "SSL", "ssl.ca.location": ca}
            topic = f"tls-{uuid.uuid4().hex[:8]}"
            a = AdminClient(plain)
            a.create_topics([NewTopic(topic, 3, 1)])[topic].result(timeout=30)
            pairs = []
            for _ in range(ROUNDS):
                p = produce_mb_s(plain, topic)
                t = produce_mb_s(tls, topic)
                pairs.append({"plaintext_mb_s": round(p, 1), "tls_mb_s": round(t, 1),
                              "ratio": round(t / p, 3)})
            out["produce"] = pairs

            cpu0 = cpu_seconds(kafka.proc.pid)
            n, secs = handshakes(kafka.ssl_port, ca)
            cpu = cpu_seconds(kafka.proc.pid) - cpu0
            out["handshakes"] = {"count": n, "threads": THREADS, "per_s": round(n / secs, 1),
                                 "server_cpu_ms_each": round(cpu * 1000 / n, 3)}

            size = 64 << 20
            body = os.urandom(size)
            s3_tls = client(kafka, verify=ca)
            s3_plain = client(plain_s3)
            bucket = f"tls-{uuid.uuid4().hex[:8]}"
            for s3 in (s3_tls, s3_plain):
                s3.create_bucket(Bucket=bucket)
                s3.put_object(Bucket=bucket, Key="big", Body=body)
            gets = []
            for _ in range(ROUNDS):
                p = s3_get_mb_s(s3_plain, bucket, size)
                t = s3_get_mb_s(s3_tls, bucket, size)
                gets.append({"http_mb_s": round(p, 1), "https_mb_s": round(t, 1),
                             "ratio": round(t / p, 3)})
            out["s3_get"] = gets
        finally:
            kafka.stop()
            plain_s3.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
