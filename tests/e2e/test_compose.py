"""The compose demos are checked, not run (no Docker engine on these machines; the native
runs of test_trino.py, test_spark.py, test_connect.py and test_debezium.py are the proof
of their settings): the files validate against the Compose Specification's JSON schema
(check-jsonschema's vendored copy, offline), avoid what Compose v1 refuses, mount the
very catalog files CI's engines use, and the build context leaves out build outputs."""

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose"
FILES = sorted(COMPOSE.glob("docker-compose*.yml"))


def test_the_files_validate_against_the_compose_specification():
    assert FILES, "no compose files"
    p = subprocess.run([str(Path(sys.executable).parent / "check-jsonschema"),
                        "--builtin-schema", "vendor.compose-spec", *map(str, FILES)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_misspelt_key_is_caught(tmp_path):
    """The check is not vacuous: a typo in a service fails it."""
    doc = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())
    doc["services"]["eddy"]["depends_onn"] = ["trino"]
    bad = tmp_path / "docker-compose.yml"
    bad.write_text(yaml.safe_dump(doc))
    p = subprocess.run([str(Path(sys.executable).parent / "check-jsonschema"),
                        "--builtin-schema", "vendor.compose-spec", str(bad)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "depends_onn" in p.stdout + p.stderr


def test_no_top_level_fields_compose_v1_refuses():
    for f in FILES:
        doc = yaml.safe_load(f.read_text())
        assert set(doc) <= {"services", "volumes", "networks", "configs", "secrets"}, (f, set(doc))


def test_the_engines_read_the_catalog_files_ci_uses():
    doc = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())
    mounts = [v.split(":")[0] for s in doc["services"].values() for v in s.get("volumes", [])]
    for f in ("./trino/catalog/eddy.properties", "./spark/spark-defaults.conf"):
        assert f in mounts, mounts
        assert (COMPOSE / f).is_file()
    engines = (ROOT / "tests" / "e2e" / "engines.py").read_text()
    assert '"trino" / "catalog" / "eddy.properties"' in engines
    assert '"spark" / "spark-defaults.conf"' in engines


def test_the_build_context_leaves_out_build_outputs():
    ignored = (ROOT / ".dockerignore").read_text().split()
    for d in ("target/", ".venv/", ".git/"):
        assert d in ignored, ignored


def test_eddy_starts_with_the_demos_kafka_listeners(tmp_path):
    """The eddy service's command, its ports moved to free ones and its compose-network
    name `eddy` to 127.0.0.2: each Kafka listener tells its clients the address the
    demo promises (the network name for containers, localhost for the host)."""
    from confluent_kafka.admin import AdminClient

    from conftest import eddy_bin, free_port

    doc = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())
    ports = {p: free_port() for p in ("9000", "9092", "29092", "8181")}

    def moved(arg: str) -> str:
        for old, new in ports.items():
            arg = arg.replace(f":{old}", f":{new}")
        return arg.replace("//eddy:", "//127.0.0.2:")

    args = [moved(a) for a in doc["services"]["eddy"]["command"]]
    args[args.index("--data-dir") + 1] = str(tmp_path / "data")
    env = dict(__import__("os").environ, **doc["services"]["eddy"]["environment"])
    proc = subprocess.Popen([eddy_bin(), *args], stdout=subprocess.PIPE, text=True, env=env)
    try:
        for line in proc.stdout:
            if line.startswith("eddy ready:"):
                break
        else:
            raise AssertionError(f"eddy exited with {proc.wait()}")
        for reached, told in ((ports["29092"], ("127.0.0.2", ports["29092"])),
                              (ports["9092"], ("localhost", ports["9092"]))):
            md = AdminClient({"bootstrap.servers": f"127.0.0.1:{reached}"}).list_topics(timeout=10)
            assert [(b.host, b.port) for b in md.brokers.values()] == [told]
    finally:
        proc.terminate()
        proc.wait(30)
