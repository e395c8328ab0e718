"""Rebootstrap (KIP-1102, KIP-1242) with Apache Kafka 4.4's Java client: a client that
connects to a broker it knew names the cluster and node it means (ApiVersions v5), and
eddy answers REBOOTSTRAP_REQUIRED when the address now reaches another node (the
brokers renumbered) or another cluster (another store), so the client bootstraps again
instead of sending requests to the wrong broker. The Java client logs the broker's
request ("Rebootstrap requested by server"); that line is what these tests look for,
with the records or answers the client went on to get.

Clients reach eddy through addresses the test holds open (`Relay`: eddy advertises
them, as it would a load balancer's or a DNS name's), so while eddy restarts their
connections wait instead of being refused, and they reconnect without backoff; an
address no longer served once eddy is back refuses. A client that finds every broker
it knows refused, or backing off, at one moment rebootstraps on its own (KIP-1102),
which would hide whether the broker asked."""

import shutil
import socket
import subprocess
import threading
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import Eddy, free_port, javac, kafka_classpath, log4j2_to_file, read_to_end
from scale_out import wait_for

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="Java is not installed")

JAVA = Path(__file__).parent / "java" / "Rebootstrap.java"
ASKED = "Rebootstrap requested by server due to cluster metadata mismatch"
NO_BACKOFF = ["reconnect.backoff.ms=0", "reconnect.backoff.max.ms=0"]


class Relay:
    """A loopback address that pipes each connection to eddy's listener at `target`,
    retrying the connect while there is none, until `close`."""

    def __init__(self, target: int):
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.closed = threading.Event()
        self.clients = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.clients.append(client)
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client):
        while True:
            try:
                backend = socket.create_connection(("127.0.0.1", self.target), timeout=1)
                break
            except OSError:
                if self.closed.wait(0.05):
                    return
        backend.settimeout(None)
        for a, b in ((client, backend), (backend, client)):
            threading.Thread(target=self._copy, args=(a, b), daemon=True).start()

    @staticmethod
    def _copy(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self):
        """Stops serving the address: it refuses connections, and those it holds end."""
        self.closed.set()
        self.server.close()
        for c in self.clients:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Client:
    """Rebootstrap.java running (`produce` or `topics`), its output lines in `lines`, the
    broker's rebootstrap requests it logged in `log`."""

    def __init__(self, tmp: Path, *args):
        cp = kafka_classpath()
        self.log = tmp / "client.log"
        conf = log4j2_to_file(tmp / "log4j2.properties", self.log, root="WARN", only=".*Rebootstrap.*",
                              org_apache_kafka_clients_NetworkClient="INFO")
        self.lines = []
        self.proc = subprocess.Popen(
            ["java", f"-Dlog4j2.configurationFile={conf}", "-cp", f"{javac(JAVA, cp)}:{cp}",
             "Rebootstrap", *args, *NO_BACKOFF],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.split())

    def count(self, kind: str) -> int:
        return sum(1 for w in list(self.lines) if w[0] == kind)

    def asked_to_rebootstrap(self) -> int:
        return self.log.read_text().count(ASKED) if self.log.exists() else 0

    def finish(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0
        self._reader.join()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self._reader.join()


def node(data: Path, ports: list, relays: list) -> Eddy:
    """eddy with a listener on each of `ports` (node ids in port order), advertising
    the relay of each."""
    advertise = ",".join(f"PLAINTEXT://{r.address}" for r in relays)
    return Eddy(data_dir=data, s3_port=free_port(), kafka_ports=ports,
                kafka_hosts=["127.0.0.1"] * len(ports), http_port=free_port(),
                extra_args=["--kafka-advertise", advertise])


def test_a_producer_whose_brokers_were_renumbered_rebootstraps_and_loses_nothing(tmp_path):
    # Listeners at ports p0 < p1 are nodes 0 and 1; restarted at p1 < p2 they are nodes 0
    # and 1 again, so the address of p1, which the producer knew as node 1, is now node 0.
    p0, p1, p2 = sorted({free_port() for _ in range(8)})[:3]
    relays = [Relay(p) for p in (p0, p1, p2)]
    data = tmp_path / "data"
    server = node(data, [p0, p1], relays[:2]).start()
    client = None
    try:
        topic = "renumbered"
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=4)])[topic].result(30)
        # (Bootstrapping through the one address that reaches eddy before and after.)
        client = Client(tmp_path, "produce", relays[1].address, topic)
        wait_for(lambda: client.count("acked") >= 100, 120, "acks before the renumbering")
        server.stop()
        server = node(data, [p1, p2], relays[1:]).start()
        # p0 is served no more: its address refuses, as one with no listener behind it
        # does. Held open, it took each connection the producer made to its old node 0
        # and answered nothing until the request timed out (30 s); with two known nodes
        # the producer picks one at random, and four picks of node 0 in a row outlasted
        # the 120 s its records may wait (2 runs in 38).
        relays[0].close()
        before = client.count("acked")
        wait_for(lambda: client.count("acked") >= before + 100, 120, "acks after the renumbering")
        client.finish()
        assert client.asked_to_rebootstrap() >= 1, client.log.read_text()[-3000:]
        assert client.count("failed") == 0, [w for w in client.lines if w[0] == "failed"]
        acked = [w[1] for w in client.lines if w[0] == "acked"]
        stored = Counter(m.value().decode() for m in read_to_end(server.bootstrap, topic))
        # Every acknowledged record is there once, and nothing else.
        assert stored == Counter(acked)
    finally:
        if client:
            client.kill()
        server.stop()
        for r in relays:
            r.close()


def test_a_client_reaching_another_store_at_its_address_rebootstraps(tmp_path):
    port = free_port()
    relay = Relay(port)
    first = node(tmp_path / "first", [port], [relay]).start()
    client = None

    def create(server, topic):
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(30)

    def cluster_id(server):
        return AdminClient({"bootstrap.servers": server.bootstrap}).list_topics(timeout=30).cluster_id

    def users(line):
        """The topics of one list, without eddy's own (`__eddy_audit`)."""
        return ",".join(t for t in (line[1] if len(line) > 1 else "").split(",") if not t.startswith("__"))

    def listed():
        return {users(w) for w in list(client.lines)}

    try:
        create(first, "on-first")
        first_id = cluster_id(first)
        client = Client(tmp_path, "topics", relay.address)
        wait_for(lambda: client.count("topics") >= 5, 60, "topic lists")
        assert listed() == {"on-first"}
        # The same store restarted at the same address is the same cluster and node: no
        # rebootstrap.
        first.restart()
        assert cluster_id(first) == first_id
        seen = client.count("topics")
        wait_for(lambda: client.count("topics") >= seen + 5, 60, "lists after the restart")
        assert listed() == {"on-first"}
        assert client.asked_to_rebootstrap() == 0, client.log.read_text()[-3000:]
        # Another store at that address is another cluster.
        first.stop()
        second = node(tmp_path / "second", [port], [relay]).start()
        try:
            create(second, "on-second")
            assert cluster_id(second) != first_id
            wait_for(lambda: users(client.lines[-1]) == "on-second", 60, "the second store's topics")
            client.finish()
            assert client.asked_to_rebootstrap() >= 1, client.log.read_text()[-3000:]
        finally:
            second.stop()
    finally:
        if client:
            client.kill()
        first.stop()
        relay.close()
