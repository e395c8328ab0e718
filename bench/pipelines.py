#!/usr/bin/env python3
"""A two-hop function pipeline against a hand-written loop doing the same work.

Both run against one `eddy serve` (fresh data dir) and one trivial function (a Node HTTP
server answering `{"ok":1}`, bench/function_echo.js), side by side in one run:

- **pipeline**: a topic trigger on a 3-partition topic, function `f1`, its replies to
  function `f2`; `f2`'s replies are kept in its topic (a link with labels no reply has
  reads them), so both sides write two topics.
- **loop**: two Python processes, one per hop, each a confluent-kafka consume -> HTTP
  POST (requests, keep-alive, CloudEvents binary-mode headers) -> produce loop, committing
  offsets asynchronously (at-least-once, as such loops are written).

Throughput: `--events` records are produced up front; events/s is that count over the
time until the second hop's topic holds them all. Latency: `--latency-events` records at
`--rate` per second; each event's added latency per hop is (the second hop's record
timestamp - the input record's timestamp) / 2, the function's own time included (the
same function for both). Passes alternate which side goes first.

    .venv/bin/python bench/pipelines.py [--events 3000] [--latency-events 300] [--rate 50] [--passes 2]

Needs the venv of scripts/test, node, and a built binary ($EDDY_BIN, else the release
build, else the debug build, in $CARGO_TARGET_DIR or target/).
"""

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from conftest import free_port, new_eddy  # noqa: E402

PARTITIONS = 3


def eddy_binary():
    if os.environ.get("EDDY_BIN"):
        return os.environ["EDDY_BIN"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    for kind in ("release", "debug"):
        if (target / kind / "eddy").exists():
            return str(target / kind / "eddy")
    raise SystemExit("no eddy binary: build one or set EDDY_BIN")


def admin_call(server, method, path, body=None):
    tok = json.load(urllib.request.urlopen(urllib.request.Request(
        server.http_url + "/iceberg/v1/oauth/tokens", method="POST",
        data=f"grant_type=client_credentials&client_id={server.access_key}&client_secret={server.secret_key}".encode(),
        headers={"content-type": "application/x-www-form-urlencoded"})))["access_token"]
    req = urllib.request.Request(server.http_url + "/admin/v1" + path, method=method, data=body,
                                 headers={"authorization": f"Bearer {tok}"})
    return json.load(urllib.request.urlopen(req, timeout=120))


def end_offsets(bootstrap, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watch"})
    try:
        total = 0
        for p in range(PARTITIONS):
            _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            total += high
        return total
    finally:
        c.close()


def read_all(bootstrap, topic, n, timeout=120):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-read-{time.time()}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out, deadline = [], time.time() + timeout
    while len(out) < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            out.append(m)
    c.close()
    return out


def loop_hop(bootstrap, src, dst, url, group, ready):
    """One hop of the hand-written loop."""
    import requests
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    s = requests.Session()
    c.subscribe([src])
    ready.set()
    while True:
        m = c.poll(0.1)
        if m is None or m.error() is not None:
            continue
        h = dict(m.headers() or [])
        r = s.post(url, data=m.value(), headers={
            "ce-specversion": "1.0", "ce-id": (h.get("ce_id") or f"{m.partition()}/{m.offset()}".encode()).decode(),
            "ce-source": src, "ce-type": "bench", "content-type": "application/json"}, timeout=30)
        p.produce(dst, key=m.key(), value=r.content, headers=[("ce_id", h.get("ce_id") or b"")])
        p.poll(0)
        c.commit(message=m, asynchronous=True)


def produce(bootstrap, topic, n, rate=None):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0 if rate else 5})
    for i in range(n):
        p.produce(topic, key=f"k{i}", value=json.dumps({"n": i}))
        if rate:
            p.flush()
            time.sleep(1 / rate)
        else:
            p.poll(0)
    p.flush()


def wait_count(bootstrap, topic, n, timeout=600):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if end_offsets(bootstrap, topic) >= n:
            return time.time()
        time.sleep(0.05)
    raise SystemExit(f"{topic}: fewer than {n} records after {timeout} s")


def latencies(bootstrap, src, dst, n):
    born = {m.key(): m.timestamp()[1] for m in read_all(bootstrap, src, n)}
    out = []
    for m in read_all(bootstrap, dst, n):
        if m.key() in born:
            out.append((m.timestamp()[1] - born[m.key()]) / 2)
    return sorted(out)


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def run_pipeline(server, fn_url, tag, n, rate):
    src = f"pin-{tag}"
    name = f"bench-{tag}"
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(src, num_partitions=PARTITIONS, replication_factor=1)])[src].result()
    definition = {
        "name": name, "partitions": PARTITIONS,
        "triggers": [{"name": "in", "kind": "topic", "topic": src}],
        "functions": [{"name": "f1", "url": fn_url}, {"name": "f2", "url": fn_url},
                      {"name": "sink", "url": fn_url}],
        "links": [{"from": "in", "to": "f1"}, {"from": "f1", "to": "f2"},
                  {"from": "f2", "to": "sink", "labels": {"never": "x"}}],
    }
    admin_call(server, "PUT", f"/pipelines/{name}", json.dumps(definition).encode())
    admin_call(server, "POST", f"/pipelines/{name}/deploy")
    while admin_call(server, "GET", f"/pipelines/{name}")["status"] != "Ready":
        time.sleep(0.1)
    t0 = time.time()
    produce(server.bootstrap, src, n, rate)
    t1 = wait_count(server.bootstrap, f"pipeline.{name}.f2", n)
    return n / (t1 - t0), (src, f"pipeline.{name}.f2")


def run_loop(server, fn_url, tag, n, rate):
    src, mid, dst = f"lin-{tag}", f"lmid-{tag}", f"lout-{tag}"
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    fs = admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1)
                              for t in (src, mid, dst)])
    for f in fs.values():
        f.result()
    ready = [multiprocessing.Event(), multiprocessing.Event()]
    procs = [multiprocessing.Process(target=loop_hop, args=(server.bootstrap, a, b, fn_url, f"g-{tag}-{i}", ready[i]),
                                     daemon=True)
             for i, (a, b) in enumerate([(src, mid), (mid, dst)])]
    for p in procs:
        p.start()
    for r in ready:
        r.wait(30)
    time.sleep(3)  # the consumers join their groups
    t0 = time.time()
    produce(server.bootstrap, src, n, rate)
    t1 = wait_count(server.bootstrap, dst, n)
    for p in procs:
        p.terminate()
    return n / (t1 - t0), (src, dst)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--latency-events", type=int, default=300)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    os.environ["EDDY_BIN"] = eddy_binary()
    fport = free_port()
    fn = subprocess.Popen(["node", str(ROOT / "bench" / "function_echo.js")], env=dict(os.environ, PORT=str(fport)))
    fn_url = f"http://127.0.0.1:{fport}/"
    time.sleep(0.5)
    rows = {"pipeline": {"tput": [], "lat": []}, "loop": {"tput": [], "lat": []}}
    with tempfile.TemporaryDirectory(prefix="eddy-bench-pipelines-") as tmp:
        server = new_eddy(Path(tmp)).start()
        try:
            for pno in range(args.passes):
                order = ["pipeline", "loop"] if pno % 2 == 0 else ["loop", "pipeline"]
                for side in order:
                    run = run_pipeline if side == "pipeline" else run_loop
                    tput, _ = run(server, fn_url, f"{side[0]}t{pno}", args.events, None)
                    _, (src, dst) = run(server, fn_url, f"{side[0]}l{pno}", args.latency_events, args.rate)
                    lat = latencies(server.bootstrap, src, dst, args.latency_events)
                    rows[side]["tput"].append(tput)
                    rows[side]["lat"].extend(lat)
                    print(f"pass {pno} {side:8}: {tput:8.0f} events/s, per hop p50 {pct(lat, .5):.1f} ms "
                          f"p99 {pct(lat, .99):.1f} ms", flush=True)
        finally:
            server.stop()
            fn.kill()
    print()
    print("| side | events/s (mean of passes) | added per hop p50 | p99 |")
    print("|---|---|---|---|")
    for side in ("pipeline", "loop"):
        r = rows[side]
        lat = sorted(r["lat"])
        print(f"| {side} | {statistics.mean(r['tput']):.0f} | {pct(lat, .5):.1f} ms | {pct(lat, .99):.1f} ms |")
    ratio = statistics.mean(rows["pipeline"]["tput"]) / statistics.mean(rows["loop"]["tput"])
    print(f"\nthroughput pipeline/loop: {ratio:.2f}")


if __name__ == "__main__":
    main()
