#!/usr/bin/env python3
"""Time to a stable assignment: MEMBERS (default 10) confluent-kafka consumers, one process
each, subscribe to a PARTITIONS (default 100) partition topic in a new group, with the
classic group protocol (JoinGroup/SyncGroup, the client's default assignors) or with
`--protocol consumer` (KIP-848: ConsumerGroupHeartbeat, the broker assigns).

Every member is created first and waits at a start line; the clock starts when they are
all let go to `subscribe()`. Each member reports its assignment and revocation callbacks
(incremental or not: the parent keeps each member's set of partitions). The group is
stable once every partition is owned by exactly one member, every member owns some, and
no callback has come for QUIET seconds (default 2); the time reported is that of the
last assignment callback, without the quiet wait. ROUNDS (default 3) rounds, each with a
new group on the same topic.

    .venv/bin/python bench/kip848.py --eddy-bin target/release/eddy [--protocol consumer]
    .venv/bin/python bench/kip848.py --bootstrap HOST:PORT [--protocol consumer]

With --eddy-bin it starts its own server (fresh data dir under /tmp, free loopback ports,
removed afterwards; --rebalance-delay-ms sets --kafka-group-initial-rebalance-delay-ms,
which the classic protocol waits out once per new group). With `--protocol consumer`
the members set `group.protocol=consumer` and none of session.timeout.ms,
heartbeat.interval.ms and partition.assignment.strategy, which librdkafka refuses there
(the broker owns them). A round that is not stable within --timeout seconds (default 60)
fails, with what the members' error callbacks and polls reported; `--protocol consumer`
against a broker whose ApiVersions lacks ConsumerGroupHeartbeat (key 68) stops at once,
since librdkafka then only logs it at debug level and never joins.

Prints one JSON object on stdout: the settings, each round's seconds and callbacks.
"""

import argparse
import json
import multiprocessing as mp
import os
import queue
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path


def log(msg):
    print(f"== {msg}", file=sys.stderr, flush=True)


def free_port():
    """A free loopback port below the ephemeral range (see tests/e2e/conftest.py)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    while True:
        port = random.randrange(10_000, low) if low > 12_000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]


def api_versions(boot):
    """{api key: (min, max)} from an ApiVersions v0 request to the first bootstrap address."""
    host, port = boot.split(",")[0].rsplit(":", 1)
    client = b"kip848"
    body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        raw = b""
        while len(raw) < 4 or len(raw) < 4 + struct.unpack(">i", raw[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit("ApiVersions: connection closed")
            raw += chunk
    _, error, count = struct.unpack(">ihi", raw[4:14])
    if error:
        raise SystemExit(f"ApiVersions v0: error {error}")
    return {k: (lo, hi) for k, lo, hi in (struct.unpack(">hhh", raw[14 + 6 * j:20 + 6 * j]) for j in range(count))}


def member(i, boot, topic, group, protocol, events, start, stop):
    """One group member: reports ("ready"), then each callback as (kind, i, partitions,
    monotonic time), and errors, until `stop`."""
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": boot, "group.id": group, "enable.auto.commit": False,
            "client.id": f"kip848-{i}",
            "error_cb": lambda e: events.put(("error", i, str(e), time.monotonic()))}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)

    def report(kind):
        return lambda _c, parts: events.put((kind, i, [p.partition for p in parts], time.monotonic()))

    events.put(("ready", i, [], time.monotonic()))
    start.wait()
    c.subscribe([topic], on_assign=report("assign"), on_revoke=report("revoke"), on_lost=report("lost"))
    while not stop.is_set():
        m = c.poll(0.05)
        if m is not None and m.error() is not None:  # e.g. the broker lacks the group protocol
            events.put(("error", i, str(m.error()), time.monotonic()))
    c.close()


def one_round(ctx, boot, topic, args, n):
    group = f"kip848-{n}-{uuid.uuid4().hex[:8]}"
    events, start, stop = ctx.Queue(), ctx.Event(), ctx.Event()
    procs = [ctx.Process(target=member, args=(i, boot, topic, group, args.protocol, events, start, stop))
             for i in range(args.members)]
    for p in procs:
        p.start()
    owned = [set() for _ in range(args.members)]
    callbacks, errors = [], []
    try:
        ready = 0
        deadline = time.monotonic() + 60
        while ready < args.members:
            kind, i, _, _ = events.get(timeout=max(0.1, deadline - time.monotonic()))
            ready += kind == "ready"
        t0 = time.monotonic()
        start.set()
        last_assign = None
        stable_since = None
        deadline = t0 + args.timeout
        while True:
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(
                    f"round {n}: not stable after {args.timeout} s; owned {[sorted(o) for o in owned]}; "
                    f"errors {errors[:10]}")
            try:
                kind, i, parts, t = events.get(timeout=0.05)
            except queue.Empty:
                every = sorted(p for o in owned for p in o)
                if every == list(range(args.partitions)) and all(owned):
                    stable_since = stable_since or time.monotonic()
                    if time.monotonic() - stable_since >= args.quiet:
                        break
                continue
            stable_since = None
            if kind == "error":
                errors.append((i, parts))
                continue
            callbacks.append({"kind": kind, "member": i, "partitions": len(parts), "at_s": round(t - t0, 4)})
            if kind == "assign":
                owned[i].update(parts)
                last_assign = t
            else:
                owned[i].difference_update(parts)
        return {"round": n, "stable_s": last_assign - t0, "callbacks": len(callbacks),
                "assigns": sum(c["kind"] == "assign" for c in callbacks),
                "revokes": sum(c["kind"] != "assign" for c in callbacks),
                "per_member": sorted(len(o) for o in owned), "errors": errors[:10]}
    finally:
        stop.set()
        start.set()
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()


def start_eddy(args, data):
    kafka, http, s3 = (f"127.0.0.1:{free_port()}" for _ in range(3))
    cmd = [args.eddy_bin, "serve", "--data-dir", str(data), "--kafka-listen", kafka,
           "--http-listen", http, "--s3-listen", s3]
    if args.rebalance_delay_ms is not None:
        cmd += ["--kafka-group-initial-rebalance-delay-ms", str(args.rebalance_delay_ms)]
    logf = open(data.parent / "server.log", "w")
    p = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True,
                         env={**os.environ, "EDDY_LOG": os.environ.get("EDDY_LOG", "warn")})
    deadline = time.time() + 60
    while "eddy ready:" not in (data.parent / "server.log").read_text():
        if p.poll() is not None or time.time() > deadline:
            raise SystemExit(f"eddy did not start: {(data.parent / 'server.log').read_text()[-2000:]}")
        time.sleep(0.1)
    return p, kafka


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap", help="a running broker")
    where.add_argument("--eddy-bin", help="start this eddy on a fresh data dir")
    ap.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    ap.add_argument("--members", type=int, default=int(os.environ.get("MEMBERS", 10)))
    ap.add_argument("--partitions", type=int, default=int(os.environ.get("PARTITIONS", 100)))
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 3)))
    ap.add_argument("--quiet", type=float, default=float(os.environ.get("QUIET", 2)))
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--rebalance-delay-ms", type=int, default=None,
                    help="with --eddy-bin: the server's initial rebalance delay (its default: 3000)")
    args = ap.parse_args()

    from confluent_kafka import libversion, version
    from confluent_kafka.admin import AdminClient, NewTopic

    tmp = server = None
    try:
        if args.eddy_bin:
            tmp = Path(tempfile.mkdtemp(prefix="eddy-kip848-"))
            server, boot = start_eddy(args, tmp / "data")
        else:
            boot = args.bootstrap
        heartbeat = api_versions(boot).get(68)  # ConsumerGroupHeartbeat
        if args.protocol == "consumer" and heartbeat is None:
            # librdkafka says so only in its debug log ("ConsumerGroupHeartbeatRequest not
            # supported by broker") and waits forever: say it here.
            raise SystemExit(f"{boot} does not offer ConsumerGroupHeartbeat (API key 68): "
                             "the consumer group protocol (KIP-848) cannot run")
        topic = f"kip848-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": boot})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(timeout=60)
        del admin
        ctx = mp.get_context("spawn")  # no librdkafka state carried into the members
        rounds = []
        for n in range(1, args.rounds + 1):
            r = one_round(ctx, boot, topic, args, n)
            log(json.dumps(r))
            rounds.append(r)
        print(json.dumps({"protocol": args.protocol, "members": args.members, "partitions": args.partitions,
                          "quiet_s": args.quiet, "rebalance_delay_ms": args.rebalance_delay_ms,
                          "consumer_group_heartbeat_versions": heartbeat,
                          "confluent_kafka": version() if isinstance(version(), str) else version()[0], "librdkafka": libversion()[0],
                          "stable_s": [round(r["stable_s"], 3) for r in rounds], "rounds": rounds}))
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
