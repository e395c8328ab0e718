"""The server's log as an operator's collector sees it: `--log-format json` writes one
JSON object per line, and a request's lines carry its id, the `x-request-id` every HTTP
response has (the caller's own when it sent one), and its connection's client; the default text format has no ANSI
colour codes when stderr is not a terminal; an unknown format is a clear CLI error."""

import json
import re
import subprocess

import requests

from conftest import eddy_bin, new_eddy


def lines(path):
    return path.read_text().splitlines()


def test_json_logs_carry_the_request_id(tmp_path):
    log = tmp_path / "eddy.log"
    eddy = new_eddy(tmp_path)
    eddy.log_path = log
    eddy.env = {"EDDY_LOG_FORMAT": "json", "EDDY_LOG": "info,eddy=debug"}
    eddy.start()
    try:
        r = requests.get(f"{eddy.http_url}/health", headers={"x-request-id": "req-abc-123"}, timeout=30)
        assert r.status_code == 200 and r.headers["x-request-id"] == "req-abc-123"
        refused = requests.get(f"{eddy.http_url}/iceberg/v1/config", timeout=30)
        assert refused.status_code == 401
        generated = refused.headers["x-request-id"]
        assert re.fullmatch(r"[0-9a-f]{32}", generated), generated
        # A header that is not a usable id (too long) gets a fresh one.
        r = requests.get(f"{eddy.http_url}/health", headers={"x-request-id": "x" * 500}, timeout=30)
        assert re.fullmatch(r"[0-9a-f]{32}", r.headers["x-request-id"])
    finally:
        eddy.stop()
    records = [json.loads(line) for line in lines(log)]  # every line is one object
    assert records, "nothing logged"
    for rec in records:
        assert {"timestamp", "level", "target"} <= rec.keys(), rec
    requests_seen = {(rec.get("span") or {}).get("request_id"): rec for rec in records
                     if rec.get("message") == "http request"}
    assert requests_seen["req-abc-123"]["status"] == 200
    assert requests_seen["req-abc-123"]["span"]["path"] == "/health"
    # The enclosing spans: the connection's listener and client.
    connection = requests_seen["req-abc-123"]["spans"][0]
    assert connection["name"] == "connection" and connection["listener"] == "http"
    assert connection["peer"].startswith("127.0.0.1:")
    assert requests_seen[generated]["status"] == 401
    assert any(rec["level"] == "INFO" for rec in records)


def test_text_logs_have_no_colour_codes_when_redirected(tmp_path):
    log = tmp_path / "eddy.log"
    eddy = new_eddy(tmp_path)
    eddy.log_path = log
    eddy.env = {"EDDY_LOG": "info"}
    eddy.start()
    eddy.stop()
    text = log.read_text()
    assert "INFO" in text, text[:2000]
    assert "\x1b[" not in text


def test_an_unknown_log_format_is_a_cli_error(tmp_path):
    r = subprocess.run([eddy_bin(), "--log-format", "yaml", "serve", "--data-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "invalid value 'yaml' for '--log-format" in r.stderr and "json" in r.stderr, r.stderr
