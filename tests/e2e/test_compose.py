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


def test_the_pipelines_demo_deploys_and_runs(tmp_path):
    """The pipelines overlay as CI can run it: the thumbnail function from its own
    directory on Eddy's runtime, and the deploy service's own shell command (curl makes
    the bucket, the eddy CLI applies and deploys pipelines/pipeline.yaml), with the
    compose network's names replaced by where the test runs them. An upload is handed to
    the function; an image it cannot handle reaches the dead-letter topic."""
    import os
    import time
    import urllib.request

    import boto3
    from botocore.config import Config
    from confluent_kafka import Consumer, TopicPartition

    from conftest import eddy_bin, free_port, new_eddy

    overlay = yaml.safe_load((COMPOSE / "docker-compose.pipelines.yml").read_text())
    eddy = new_eddy(tmp_path).start()
    fn_port = free_port()
    fn = subprocess.Popen([sys.executable, "-m", "eddy_functions",
                           str(COMPOSE / "pipelines" / "thumbnail.py")],
                          env=dict(os.environ, PORT=str(fn_port)))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{fn_port}/health", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline and fn.poll() is None, "function not up"
                time.sleep(0.2)  # poll interval
        pipeline = (COMPOSE / "pipelines" / "pipeline.yaml").read_text()
        assert "http://thumbnail:8901/" in pipeline
        (tmp_path / "pipeline.yaml").write_text(
            pipeline.replace("http://thumbnail:8901/", f"http://127.0.0.1:{fn_port}/"))
        service = overlay["services"]["deploy-pipeline"]
        script = service["command"][0] \
            .replace("http://eddy:9000", eddy.s3_url) \
            .replace("/pipelines/pipeline.yaml", str(tmp_path / "pipeline.yaml"))
        bindir = tmp_path / "bin"
        bindir.mkdir()
        (bindir / "eddy").symlink_to(eddy_bin())
        env = dict(os.environ, **service["environment"])
        env.update(EDDY_HTTP_URL=eddy.http_url, PATH=f"{bindir}:{os.environ['PATH']}")
        done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True,
                              timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr

        s3 = boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=eddy.access_key,
                          aws_secret_access_key=eddy.secret_key, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        s3.put_object(Bucket="images", Key="incoming/cat.jpg", Body=b"a cat")
        s3.put_object(Bucket="images", Key="incoming/broken.jpg", Body=b"not a cat")
        c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": "demo-check"})
        c.assign([TopicPartition("dead-letter", p, 0) for p in range(3)])
        dead = None
        deadline = time.monotonic() + 90
        while dead is None and time.monotonic() < deadline:
            m = c.poll(1)
            if m is not None and m.error() is None:
                dead = {k: v.decode() for k, v in m.headers()}
        c.close()
        assert dead is not None, "no dead letter"
        assert dead["ce_subject"] == "incoming/broken.jpg" and dead["eddy_attempts"] == "3"
        metrics = urllib.request.urlopen(f"{eddy.http_url}/metrics").read().decode()
        delivered = [line for line in metrics.splitlines()
                     if line.startswith("eddy_pipeline_delivered_total")
                     and 'pipeline="thumbnails"' in line]
        assert delivered and float(delivered[0].rsplit(" ", 1)[1]) == 1, delivered
    finally:
        fn.terminate()
        fn.wait(30)
        eddy.stop()
