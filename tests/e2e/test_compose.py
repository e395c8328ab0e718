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
