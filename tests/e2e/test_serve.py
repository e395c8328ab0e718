"""The server process seen from an operator's HTTP client."""

import json
import urllib.request


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read().decode()


def test_health_and_metrics(eddy):
    status, body = get(eddy.http_url + "/health")
    assert status == 200
    assert json.loads(body)["status"] == "ok"
    status, metrics = get(eddy.http_url + "/metrics")
    assert status == 200
    assert "eddy_catalog_group_commits_total" in metrics
    assert 'eddy_drive_online{drive="0"' in metrics
