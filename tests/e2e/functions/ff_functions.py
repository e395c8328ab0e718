"""Functions on Google's functions-framework (`functions-framework --target NAME`), as a
user of any CloudEvents platform writes them: each appends what it received to the file
$OUT (one JSON line per event) and fails on request, so the tests can see every
delivery."""

import json
import os
import time

import functions_framework


def _record(name, cloud_event):
    line = {
        "function": name,
        "id": cloud_event["id"],
        "type": cloud_event["type"],
        "source": cloud_event["source"],
        "subject": cloud_event.get("subject"),
        "elementpath": cloud_event.get("elementpath"),
        "traceparent": cloud_event.get("traceparent"),
        "data": cloud_event.data if not isinstance(cloud_event.data, bytes) else cloud_event.data.decode(),
    }
    with open(os.environ["OUT"], "a") as f:
        f.write(json.dumps(line) + "\n")


@functions_framework.cloud_event
def thumbnail(cloud_event):
    """Fails for keys holding "fail" (every attempt), hangs for keys holding "hang"."""
    _record("thumbnail", cloud_event)
    key = cloud_event.get("subject") or ""
    if "fail" in key:
        raise RuntimeError(f"cannot make a thumbnail of {key}")
    if "hang" in key:
        time.sleep(30)


@functions_framework.cloud_event
def index(cloud_event):
    _record("index", cloud_event)
