"""Starting `eddy serve` as an operator or an orchestrator does (issue 34): cluster nodes
started at the same moment against an empty PostgreSQL catalog all come up; a bad file
in the configuration stops the start before the data dir is touched; an error's cause
is printed once; `:PORT` listens on every interface."""

import os
import subprocess
import threading
from pathlib import Path

import pytest

import postgres
from conftest import Eddy, eddy_bin, free_port
from scale_out import s3, serving

# Three nodes share one Kafka port, each on an address of its own.
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]


def serve(args: list, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs `eddy serve` with `args` to its exit (a start that fails)."""
    env = dict(os.environ, EDDY_LOG="warn")
    return subprocess.run([eddy_bin(), "serve", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def ports() -> list:
    """Listen flags on free loopback ports."""
    return ["--s3-listen", f"127.0.0.1:{free_port()}",
            "--kafka-listen", f"127.0.0.1:{free_port()}",
            "--http-listen", f"127.0.0.1:{free_port()}"]


@pytest.mark.skipif(not postgres.available(), reason="PostgreSQL is not installed")
def test_three_nodes_started_at_once_on_an_empty_catalog_all_come_up(tmp_path):
    # Compose and Kubernetes start every node of a cluster at the same moment; the first
    # start of all three creates the catalog's tables in an empty database. Ten rounds,
    # each on a database and drives of its own, for the race to show if it is there.
    pg = postgres.Postgres().start()
    try:
        for round_ in range(10):
            db = f"round{round_}"
            pg.psql(f"CREATE DATABASE {db}")
            url = f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/{db}"
            kafka_port = free_port()
            nodes = [Eddy(data_dir=tmp_path / db, s3_port=free_port(),
                          kafka_ports=[kafka_port] * len(HOSTS), kafka_hosts=HOSTS,
                          http_port=free_port(),
                          extra_args=["--catalog", url, "--node-id", f"node-{i}"])
                     for i in range(len(HOSTS))]
            together = threading.Barrier(len(nodes))
            failed = {}

            def start(node, i):
                together.wait()
                try:
                    node.start()
                except RuntimeError as e:
                    failed[i] = str(e)

            threads = [threading.Thread(target=start, args=(n, i)) for i, n in enumerate(nodes)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            try:
                assert not failed, f"round {round_}: {failed}"
                for n in nodes:
                    assert serving("127.0.0.1", n.s3_port), f"round {round_}: S3 not answering"
                    s3(n).list_buckets()
            finally:
                stop_all(nodes)
    finally:
        pg.stop()


def stop_all(nodes: list):
    """Stops every node (SIGTERM, its clean exit checked) and reaps those that exited on
    their own; the failures are raised once every node is stopped, so none outlives the
    test."""
    failures = []
    for n in nodes:
        if n.proc is None:
            continue
        try:
            n.stop(kill=n.proc.poll() is not None)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, failures


def make_certificate(d: Path) -> tuple:
    """A self-signed certificate and its key."""
    cert, key = d / "server.pem", d / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-subj", "/CN=eddy", "-days", "1"], check=True, capture_output=True)
    return cert, key


@pytest.mark.parametrize("missing", ["--tls-key", "--tls-cert"])
def test_a_missing_tls_file_stops_the_start_before_the_data_dir_is_touched(tmp_path, missing):
    cert, key = make_certificate(tmp_path)
    files = {"--tls-cert": cert, "--tls-key": key}
    files[missing] = tmp_path / "nowhere" / "server.file"
    data = tmp_path / "data"
    data.mkdir()
    out = serve(["--data-dir", str(data), "--s3-listen", f"https://127.0.0.1:{free_port()}",
                 "--kafka-listen", f"127.0.0.1:{free_port()}",
                 "--http-listen", f"127.0.0.1:{free_port()}",
                 "--tls-cert", str(files["--tls-cert"]), "--tls-key", str(files["--tls-key"])])
    assert out.returncode != 0
    assert f"{missing} {files[missing]}: No such file or directory" in out.stderr, out.stderr
    # Nothing formatted: no drive, no master key.
    assert list(data.iterdir()) == []


def test_an_unreadable_master_key_stops_the_start_before_the_drives_are_formatted(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    key_dir = tmp_path / "key"
    key_dir.mkdir()
    out = serve(["--data-dir", str(data), "--sse-master-key-file", str(key_dir), *ports()])
    assert out.returncode != 0
    assert "Is a directory (os error 21)" in out.stderr, out.stderr
    # The cause is printed once, not once by the error and again as its source.
    assert out.stderr.count("Is a directory") == 1, out.stderr
    assert list(data.iterdir()) == []


@pytest.mark.parametrize("which", ["--s3-listen", "--http-listen", "--kafka-listen"])
def test_a_port_in_use_stops_the_start_before_the_drives_are_formatted(tmp_path, which):
    import socket
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        data = tmp_path / "data"
        data.mkdir()
        args = {"--s3-listen": f"127.0.0.1:{free_port()}", "--http-listen": f"127.0.0.1:{free_port()}",
                "--kafka-listen": f"127.0.0.1:{free_port()}"}
        args[which] = f"127.0.0.1:{taken.getsockname()[1]}"
        out = serve(["--data-dir", str(data), *[x for kv in args.items() for x in kv]])
        assert out.returncode != 0
        assert "Address already in use" in out.stderr, out.stderr
        assert list(data.iterdir()) == []
    finally:
        taken.close()


def test_a_bad_s3_domain_stops_the_start_before_the_drives_are_formatted(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    out = serve(["--data-dir", str(data), "--s3-domain", "s3.example.com:9000", *ports()])
    assert out.returncode != 0
    assert "--s3-domain" in out.stderr and "s3.example.com:9000" in out.stderr, out.stderr
    assert list(data.iterdir()) == []


@pytest.mark.parametrize("key_elsewhere", [False, True])
def test_an_io_cause_is_printed_once(tmp_path, key_elsewhere):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    # The master key file's default place is in the data dir, checked before the catalog
    # opens; elsewhere, the drives are the first to find the data dir is a file.
    key = ["--sse-master-key-file", str(tmp_path / "sse.key")] if key_elsewhere else []
    out = serve(["--data-dir", str(not_a_dir), *key, *ports()])
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("eddy: ") and "Not a directory (os error 20)" in last, out.stderr
    assert last.count("Not a directory") == 1, last


def test_colon_port_listens_on_every_interface(tmp_path):
    port = free_port()
    node = Eddy(data_dir=tmp_path / "data", s3_port=port, kafka_ports=[free_port()],
                http_port=free_port())
    # As README says: `:9000`, every interface.
    args = [eddy_bin(), "serve", "--data-dir", str(node.data_dir), "--s3-listen", f":{port}",
            "--kafka-listen", node.bootstrap, "--http-listen", f"127.0.0.1:{node.http_port}"]
    env = dict(os.environ, EDDY_LOG="warn", EDDY_ACCESS_KEY=node.access_key,
               EDDY_SECRET_KEY=node.secret_key)
    node.proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, text=True)
    try:
        ready = next((line for line in node.proc.stdout if line.startswith("eddy ready:")), None)
        assert ready is not None, f"eddy did not start (exit {node.proc.wait()})"
        assert f"s3 http://0.0.0.0:{port} " in ready, ready
        s3(node).create_bucket(Bucket="colon-port")
        assert "colon-port" in [b["Name"] for b in s3(node).list_buckets()["Buckets"]]
    finally:
        node.stop()
