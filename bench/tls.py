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
3. **SASL authentications per second** on a SASL_PLAINTEXT listener: AUTHS (default
   1000) PLAIN and as many SCRAM-SHA-256 exchanges from THREADS raw clients, each on a
   new connection, and the server's CPU time per authentication (PLAIN derives the
   password with PBKDF2 on the server; SCRAM's derivation is the client's).
4. **S3 GET MB/s over HTTPS vs HTTP.** Two servers, one with S3 over HTTPS, one plain;
   a 64 MiB object read whole with boto3, ROUNDS pairs of GETS (default 8) reads.

    EDDY_BIN=target/release/eddy .venv/bin/python bench/tls.py

Prints one JSON object. The test CA and certificate are made with openssl in a temporary
directory.
"""

import base64
import hashlib
import hmac
import json
import os
import socket
import struct
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
AUTHS = int(os.environ.get("AUTHS", "1000"))
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


def _frame(api, version, body):
    header = struct.pack(">hhi", api, version, 1) + struct.pack(">h", 5) + b"bench"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _read(sock):
    n = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    return sock.recv(n, socket.MSG_WAITALL)


def _authenticate(sock, token):
    sock.sendall(_frame(36, 0, struct.pack(">i", len(token)) + token))
    r = _read(sock)
    error, n = struct.unpack(">hh", r[4:8])
    assert error == 0, error
    rest = r[8 + max(n, 0):]
    (m,) = struct.unpack(">i", rest[:4])
    return rest[4:4 + m]


def sasl_login(port, mechanism, user, password):
    """One authentication on a new connection, as a client does it."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        mech = mechanism.encode()
        s.sendall(_frame(17, 1, struct.pack(">h", len(mech)) + mech))
        _read(s)
        if mechanism == "PLAIN":
            _authenticate(s, b"\0" + user.encode() + b"\0" + password.encode())
            return
        nonce = base64.b64encode(os.urandom(18)).decode()
        bare = f"n={user},r={nonce}"
        first = _authenticate(s, f"n,,{bare}".encode()).decode()
        attrs = dict(a.split("=", 1) for a in first.split(","))
        salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]),
                                     int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        stored = hashlib.sha256(client_key).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{bare},{first},{without_proof}".encode()
        sig = hmac.new(stored, auth, "sha256").digest()
        proof = bytes(a ^ b for a, b in zip(client_key, sig))
        _authenticate(s, f"{without_proof},p={base64.b64encode(proof).decode()}".encode())


def sasl_auths(server, mechanism):
    per = AUTHS // THREADS

    def work():
        for _ in range(per):
            sasl_login(server.sasl_port, mechanism, "bench", "bench-secret")

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    cpu0 = cpu_seconds(server.proc.pid)
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.perf_counter() - start
    cpu = cpu_seconds(server.proc.pid) - cpu0
    n = per * THREADS
    return {"count": n, "per_s": round(n / secs, 1),
            "server_cpu_ms_each": round(cpu * 1000 / n, 3)}


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
        (tmp / "eddy.toml").write_text(
            '[[users]]\naccess_key = "bench"\nsecret_key = "bench-secret"\n')
        tls_args += ["--config", str(tmp / "eddy.toml")]

        kafka = new_eddy(tmp / "k", extra_args=tls_args, s3_tls=True)
        kafka.ssl_port = free_port()
        kafka.sasl_port = free_port()
        kafka.kafka_listeners = [f"SSL://127.0.0.1:{kafka.ssl_port}",
                                 f"SASL_PLAINTEXT://127.0.0.1:{kafka.sasl_port}"]
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

            out["sasl"] = {m: sasl_auths(kafka, m) for m in ("PLAIN", "SCRAM-SHA-256")}

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
