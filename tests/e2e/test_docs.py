"""The documentation's code blocks, run against a real server.

Every fenced block of README.md and docs/*.md whose language is `sh`, `bash`, `shell` or
`python` runs, unless it is marked to be skipped. The rules:

- **One server and one working dir per file.** A file with blocks to run gets a fresh
  `eddy serve` (free loopback ports, a fresh data dir, the default credentials
  `eddyadmin` / `eddyadmin`) and an empty working dir. Its blocks run in file order in
  that dir, so a block may use the files, buckets and topics an earlier block of the same
  file made. As in one terminal, the variables a shell block exports are in the
  environment of the blocks after it (a plain shell variable or a `cd` is not: each block
  is a process of its own, started in the working dir).
- **Addresses.** The docs use the default ports. In a block's text, `127.0.0.1:9000`,
  `127.0.0.1:9092` and `127.0.0.1:8181` (and the same with `localhost`) become the test
  server's S3, Kafka and HTTP addresses. `EDDY_HTTP_URL` is set to the test server's HTTP
  URL, since the `eddy` CLI's default server is `http://127.0.0.1:8181` without saying so.
- **Skipping.** A block that cannot run here is marked on the line right before its fence:
  `<!-- doc-test: skip (needs PostgreSQL) -->`. The reason in parentheses is required. A
  block that starts a server (`eddy serve`, `cargo run ... serve`) must be marked: the
  runner starts its own, and refuses to run such a block.
- **How blocks run.** Shell blocks with `bash -euo pipefail`; Python blocks with the
  interpreter running this test (the venv's). PATH starts with a dir holding `eddy` (a
  symlink to the binary under test, `$EDDY_BIN`), then the venv's `bin` (aws, kafka-python,
  pyiceberg...), then the inherited PATH. The environment is the inherited one without
  its `AWS_*` and `EDDY_*` variables, with HOME an empty dir of its own; stdin is empty.
  Each block has `BLOCK_TIMEOUT` seconds.
- **Failure** reports the file and line of the block's fence, the block as it ran and
  its output (stdout and stderr together), and stops that file's run. Every block's
  output is printed as well (`pytest -s` shows it).

`console` blocks (commands mixed with their output) and blocks of other languages are not
run.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT, eddy_bin, new_eddy

BLOCK_TIMEOUT = 120
SHELL = {"sh", "bash", "shell"}
PYTHON = {"python"}
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")
MARKER = re.compile(r"^\s*<!--\s*doc-test:(?P<body>.*?)-->\s*$")
SKIP = re.compile(r"^skip\b\s*(?:\((?P<reason>.*)\))?$")
ADDRESS = re.compile(r"\b(?:127\.0\.0\.1|localhost):(9000|9092|8181)\b")
STARTS_SERVER = re.compile(r"\beddy\s+serve\b|\bcargo\s+run\b.*\bserve\b")


class DocError(Exception):
    """A block that failed, or a marker the runner cannot follow."""


def shown(path: Path) -> str:
    """A path as failures name it: relative to the repository when it is inside."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip: str | None  # the reason, when marked to be skipped

    @property
    def where(self) -> str:
        return f"{shown(self.path)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.skip is None and (self.lang in SHELL or self.lang in PYTHON)


def blocks(path: Path) -> list:
    """Every fenced block of a markdown file, with its skip marker. A marker must sit on
    the line right before a fence and be `skip (reason)` with a reason."""
    lines = path.read_text().split("\n")
    out, i, marker = [], 0, None
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            if marker is not None:
                raise DocError(f"{shown(path)}:{marker[0]}: a doc-test marker not followed by a fence")
            marker = (i + 1, m.group("body").strip())
            i += 1
            continue
        f = FENCE.match(lines[i])
        if not f:
            if marker is not None:
                raise DocError(f"{shown(path)}:{marker[0]}: a doc-test marker must be on the line "
                               "right before a fence")
            i += 1
            continue
        indent, fence, lang = len(f.group("indent")), f.group("fence"), f.group("info").lower()
        body, j = [], i + 1
        while j < len(lines):
            close = lines[j].strip()
            if close.startswith(fence) and close.strip(fence[0]) == "":
                break
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if j == len(lines):
            raise DocError(f"{shown(path)}:{i + 1}: a fence that is never closed")
        skip = None
        if marker is not None:
            s = SKIP.match(marker[1])
            if not s:
                raise DocError(f"{shown(path)}:{marker[0]}: unknown doc-test marker {marker[1]!r} "
                               "(the one known: `skip (reason)`)")
            skip = (s.group("reason") or "").strip()
            if not skip:
                raise DocError(f"{shown(path)}:{marker[0]}: `doc-test: skip` needs a reason in "
                               "parentheses")
        out.append(Block(path, i + 1, lang, "\n".join(body) + "\n", skip))
        marker = None
        i = j + 1
    if marker is not None:
        raise DocError(f"{shown(path)}:{marker[0]}: a doc-test marker not followed by a fence")
    return out


def rewrite(code: str, server) -> str:
    """The block with the default ports replaced by the test server's."""
    ports = {"9000": server.s3_port, "9092": server.kafka_ports[0], "8181": server.http_port}
    return ADDRESS.sub(lambda m: f"127.0.0.1:{ports[m.group(1)]}", code)


# Runs a shell block the way a terminal would: variables exported by earlier blocks are
# in the environment already; the ones this block leaves exported are saved at exit.
SHELL_WRAPPER = """\
trap 'env -0 > "$DOC_TEST_ENV_OUT"' EXIT
. "$1"
"""
NOT_CARRIED = {"PWD", "OLDPWD", "SHLVL", "_", "DOC_TEST_ENV_OUT"}


def run_block(block: Block, server, work: Path, scratch: Path, env: dict) -> dict:
    """Runs one block in `work` with the environment `env`; returns the environment the
    next block gets (a shell block's exports carry over, as in one terminal)."""
    code = rewrite(block.code, server)
    script = scratch / f"block-{block.line}.{'py' if block.lang in PYTHON else 'sh'}"
    script.write_text(code)
    env_out = scratch / f"block-{block.line}.env"
    if block.lang in PYTHON:
        argv = [sys.executable, str(script)]
    else:
        wrapper = scratch / "shell-wrapper.sh"
        wrapper.write_text(SHELL_WRAPPER)
        argv = ["bash", "-euo", "pipefail", str(wrapper), str(script)]
    proc = subprocess.Popen(argv, cwd=work, env={**env, "DOC_TEST_ENV_OUT": str(env_out)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=BLOCK_TIMEOUT)
        status = f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        status = f"timed out after {BLOCK_TIMEOUT} s"
    text = output.decode(errors="replace")
    print(f"--- {block.where} ({status}) ---\n{text}", end="" if text.endswith("\n") else "\n")
    if proc.returncode != 0:
        if len(text) > 12_000:
            text = "[...]\n" + text[-12_000:]
        raise DocError(
            f"{block.where}: {block.lang} block failed ({status})\n"
            f"--- the block, as run ---\n{code}"
            f"--- its output ---\n{text}"
        )
    if block.lang in PYTHON or not env_out.exists():
        return env
    pairs = (item.split("=", 1) for item in env_out.read_text().split("\0") if "=" in item)
    return {k: v for k, v in pairs if k not in NOT_CARRIED}


def block_env(home: Path, bin_dir: Path, server) -> dict:
    """The environment of a file's first block."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "EDDY_"))}
    env.update(
        PATH=os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent),
                              os.environ.get("PATH", "")]),
        HOME=str(home),
        EDDY_HTTP_URL=server.http_url,
        PYTHONUNBUFFERED="1",
    )
    return env


def run_doc(path: Path, server_for) -> list:
    """Runs a markdown file's blocks in order against one server, made by
    `server_for(tmp_dir)` only when some block runs (and stopped afterwards if
    started here). Returns the blocks; raises DocError at the first failure."""
    found = blocks(path)
    todo = [b for b in found if b.runs]
    for b in todo:
        if b.lang in SHELL and STARTS_SERVER.search(b.code):
            raise DocError(f"{b.where}: this block starts a server; mark it `<!-- doc-test: "
                           "skip (starts a server) -->` (the runner starts its own)")
    if not todo:
        return found
    with tempfile.TemporaryDirectory(prefix="eddy-docs-") as tmp:
        tmp = Path(tmp)
        work, home, bin_dir, scratch = (tmp / d for d in ("work", "home", "bin", "blocks"))
        for d in (work, home, bin_dir, scratch):
            d.mkdir()
        (bin_dir / "eddy").symlink_to(Path(eddy_bin()).resolve())
        server = server_for(tmp)
        try:
            env = block_env(home, bin_dir, server)
            for b in todo:
                env = run_block(b, server, work, scratch, env)
        finally:
            if server.proc is not None:
                server.stop()
    return found


def started(tmp: Path):
    return new_eddy(tmp).start()


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_doc_blocks_run(doc):
    try:
        found, failure = run_doc(doc, started), None
    except DocError as e:
        found, failure = [], str(e)
    if failure:
        pytest.fail(failure, pytrace=False)
    for b in found:
        if b.skip and (b.lang in SHELL or b.lang in PYTHON):
            print(f"{b.where}: skipped ({b.skip})")


# The runner itself: a broken block must fail the run, at the right place.

BROKEN = """\
# A page

```sh
export MADE=made
echo "$MADE" > made.txt
```

Text between blocks.

<!-- doc-test: skip (shows a command that cannot run here) -->
```sh
exit 1
```

```python
import os
assert open("made.txt").read().strip() == os.environ["MADE"] == "made"
```

```bash
echo "before the failure"
cat does-not-exist.txt
echo "never printed"
```

```python
raise SystemExit("never run: the file stops at the first failure")
```
"""


def unstarted(tmp: Path):
    """A server's addresses without its process: the blocks below never reach it."""
    return new_eddy(tmp)


def test_a_failing_block_is_reported_with_its_file_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(BROKEN)
    with pytest.raises(DocError) as failed:
        run_doc(page, unstarted)
    message = str(failed.value)
    assert f"{page}:20: bash block failed (exit 1)" in message, message
    assert "before the failure" in message and "does-not-exist.txt" in message, message
    assert "never printed" in message  # the block is shown...
    assert message.count("never printed") == 1  # ...but did not run past the failure
    assert "never run" not in message


def test_blocks_share_the_working_dir_and_see_the_servers_ports(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(BROKEN.split("```bash")[0])
    run_doc(page, unstarted)  # the python block reads the file and the variable of the first
    server = unstarted(tmp_path)
    s3, kafka, http = server.s3_port, server.kafka_ports[0], server.http_port
    assert rewrite("http://127.0.0.1:9000 localhost:9092 127.0.0.1:8181/iceberg", server) == (
        f"http://127.0.0.1:{s3} 127.0.0.1:{kafka} 127.0.0.1:{http}/iceberg")
    # Other hosts and longer numbers stay.
    assert rewrite("0.0.0.0:9000 127.0.0.1:90000 :9092", server) == "0.0.0.0:9000 127.0.0.1:90000 :9092"


@pytest.mark.parametrize("text, error", [
    ("<!-- doc-test: skip -->\n```sh\ntrue\n```\n", "needs a reason"),
    ("<!-- doc-test: skip () -->\n```sh\ntrue\n```\n", "needs a reason"),
    ("<!-- doc-test: skip (why) -->\n\n```sh\ntrue\n```\n", "right before a fence"),
    ("<!-- doc-test: sometimes -->\n```sh\ntrue\n```\n", "unknown doc-test marker"),
    ("```sh\neddy serve --data-dir x\n```\n", "starts a server"),
    ("```sh\ntrue\n", "never closed"),
], ids=["no-reason", "empty-reason", "not-right-before", "unknown", "starts-a-server", "unclosed"])
def test_markers_are_checked(tmp_path, text, error):
    page = tmp_path / "page.md"
    page.write_text(text)
    with pytest.raises(DocError, match=error):
        run_doc(page, unstarted)
