"""Produce throughput and latency with the PostgreSQL catalog as a ratio to the embedded
one, with 1 and 3 nodes, and the failover pause (docs/scale-out.md, issue 19).

    .venv/bin/python bench/scale_out.py BIN [SECONDS]

PARTS (default "throughput,failover") picks the parts to run.

Each setup gets a fresh data dir. PostgreSQL is Debian's, started here with durable
commits (the catalog's acknowledgements rest on them; the embedded catalog fsyncs too).
Load: one confluent-kafka producer bootstrapped on every node address, 1 KiB values,
acks=all, linger.ms=5, idempotent, on a topic of 6 partitions, as fast as it goes;
latency is each record's produce() to its delivery report, so it includes the client's
own queue. Setups alternate within one run, ROUNDS times (default 2), so a noisy machine
weighs on every setup alike.

RDKAFKA_PERF=<rdkafka_performance> makes the saturated load librdkafka's C tool
(RDKAFKA_MB megabytes, default 600, the same settings, bootstrapped on every node's
address) instead of the Python producer, which takes a core of its own at full load.

Reported with the saturated run, to say where the time goes: the cores used by the Eddy
nodes, by PostgreSQL and by the client (this process), and the group commits per second
with their mean time and the share run again after a serialization failure.

Latency at a fixed rate: the same producer paced at RATE records/s (default 2000, well
under what any setup takes), linger.ms=1, so p50/p99 are the commit path's and not the
client queue's.

Failover: 3 nodes, each holding one address, one producer over every address; one node
is killed (SIGKILL) a third of the way into the run. Reported: the pause, the longest
time a partition went without an acknowledgement from a second before the kill to the
end of the run; `served`, from the kill until every address accepts connections again
(the server's share: noticing the dead node by its liveness lock, the round, the bind;
or, for a node whose lock PostgreSQL still holds, the lease's expiry); the rest is the
client's share, mostly librdkafka's reconnect backoff to the moved address
(`reconnect.backoff.max.ms`, 10 s by default), which a second run lowers to 1 s; and the
addresses taken from the kill to the end (their lease epochs' growth): 1 is the killed
node's, more are takeovers of live nodes' addresses.
"""

import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))

import postgres  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from conftest import Eddy, free_port  # noqa: E402

from cdc import cpu_seconds, tree_cpu  # noqa: E402  (bench/cdc.py)

HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
RATE = int(os.environ.get("RATE", "2000"))
# With RDKAFKA_PERF (librdkafka's rdkafka_performance, as bench/peers/run builds it), the
# saturated load is that C tool sending RDKAFKA_MB megabytes, bootstrapped on every
# node's address; the paced runs stay the Python producer.
RDKAFKA_PERF = os.environ.get("RDKAFKA_PERF")
RDKAFKA_MB = int(os.environ.get("RDKAFKA_MB", "600"))


def start(tmp: Path, nodes: int, url: str | None, lease_ms: int = 6000) -> list:
    port = free_port()
    out = []
    for i in range(nodes):
        hosts = HOSTS[:nodes] if url else ["127.0.0.1"]
        extra = ["--catalog", url, "--node-id", f"n{i}", "--lease-timeout-ms", str(lease_ms)] if url else []
        n = Eddy(data_dir=tmp / "data", s3_port=free_port(), kafka_ports=[port] * len(hosts),
                 kafka_hosts=hosts, http_port=free_port(), extra_args=extra)
        out.append(n.start())
    return out


def load(bootstrap: str, seconds: float, rate: float | None = None, **conf) -> tuple:
    """MB/s acknowledged (from the first produce to the last acknowledgement), latencies
    (ms, produce() to delivery, so at full load they include the client's queue), and
    (acknowledgement time, partition) pairs. With `rate`, records go at that many per
    second; extra producer settings in `conf` (dots as underscores)."""
    lat, acks = [], []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "enable.idempotence": True, "message.timeout.ms": 120000,
                  **{k.replace("_", "."): v for k, v in conf.items()}})
    value = os.urandom(1024)
    # Connected, with its producer id, before the clock starts: the first records would
    # otherwise wait out InitProducerId and the metadata (about 0.45 s, 1% of a paced run).
    p.produce("bench", value=value)
    p.flush(60)
    began = time.monotonic()
    end = began + seconds
    n = 0
    while time.monotonic() < end:
        if rate is not None:
            ahead = began + n / rate - time.monotonic()
            if ahead > 0:
                # Not p.poll(ahead): librdkafka takes whole milliseconds, so a wait under
                # one became poll(0) and the pacing loop spun a core (7.5 s of CPU in an
                # 8.5 s run at 2000/s, measured 2026-12-06) that the servers needed.
                time.sleep(ahead)
                p.poll(0)
                continue
        sent = time.monotonic()

        def done(err, m, sent=sent):
            if err is None:
                now = time.monotonic()
                lat.append((now - sent) * 1000)
                acks.append((now, m.partition()))
        try:
            p.produce("bench", value=value, on_delivery=done)
            n += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    p.flush(120)
    mb = len(acks) * 1024 / 1e6 / max(acks[-1][0] - began, 1e-9) if acks else 0.0
    return mb, lat, acks


def load_rdkafka(bootstrap: str, megabytes: int) -> tuple:
    """The saturated load from librdkafka's own C tool instead: `megabytes` of 1 KiB
    values with the same settings. (MB/s, its CPU seconds.) It runs under `nice`: its
    broker threads poll in a loop while their requests in flight wait, and at the
    servers' priority they took 0.95 cores of the two from three nodes (2026-12-06)."""
    records = megabytes * 1_000_000 // 1024
    cmd = ["nice", "-n", "19", RDKAFKA_PERF, "-P", "-t", "bench", "-b", bootstrap,
           "-s", "1024", "-a", "-1", "-c", str(records), "-u", "-X", "linger.ms=5",
           "-X", "enable.idempotence=true", "-X", "sticky.partitioning.linger.ms=0"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    rows = [r.replace("|", " ").split() for r in out.splitlines() if re.match(r"^\|\s+\d", r)]
    # Its last row: elapsed ms, msgs, bytes, rtt, dr, dr_m/s, dr_MB/s (10^6 bytes), ...
    return (float(rows[-1][6]) if rows else 0.0), cpu


def percentiles(lat: list) -> tuple:
    lat = sorted(lat)
    return lat[len(lat) // 2], lat[int(len(lat) * 0.99)]


def busy_seconds() -> float:
    """CPU seconds the whole machine spent not idle (nor waiting on I/O), from /proc/stat."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def cpu_split(servers: list, pg) -> tuple:
    """CPU seconds so far of the Eddy nodes, of PostgreSQL (its postmaster, backends
    and the backends it reaped), and of this process (the client: confluent-kafka's
    threads run in it)."""
    postgres_s = tree_cpu(pg.proc.pid) if pg else 0.0
    me = resource.getrusage(resource.RUSAGE_SELF)
    return (sum(cpu_seconds(s.proc.pid) for s in servers), postgres_s,
            me.ru_utime + me.ru_stime)


def catalog_counts(servers: list) -> tuple:
    """Group commits, groups run again after a serialization failure, and seconds spent
    in group commits, summed over the nodes' /metrics."""
    total = [0.0, 0.0, 0.0]
    for s in servers:
        text = urllib.request.urlopen(s.http_url + "/metrics", timeout=10).read().decode()
        for i, name in enumerate(("group_commits_total", "conflicts_total", "commit_seconds_sum")):
            m = re.search(rf"^eddy_catalog_{name} (\S+)$", text, re.M)
            total[i] += float(m.group(1)) if m else 0.0
    return tuple(total)


def spread(pg, nodes: int, timeout: float = 60):
    """Waits until each node holds one address. The first node to start takes them all
    and gives them back a lease round at a time as the others join; a load started
    before that measured clients reconnecting to moved addresses."""
    deadline = time.monotonic() + timeout
    while True:
        rows = pg.psql("SELECT count(*) FROM eddy_leases WHERE expires_at > now() GROUP BY node")
        if len(rows) == nodes and all(int(n) == 1 for (n,) in rows):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"addresses not spread over {nodes} nodes: {rows}")
        time.sleep(0.1)


def run_setup(name: str, nodes: int, pg_needed: bool, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as tmp:
        pg = postgres.Postgres(fsync=True).start() if pg_needed else None
        url = (f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
               if pg else None)
        servers = start(Path(tmp), nodes, url)
        try:
            boot = servers[0].bootstrap
            if nodes > 1:
                spread(pg, nodes)
            time.sleep(0.1)
            admin = AdminClient({"bootstrap.servers": boot})
            for f in admin.create_topics([NewTopic("bench", 6)]).values():
                f.result(60)
            load(boot, 2)  # warm-up
            busy0, counts0, cpu0 = busy_seconds(), catalog_counts(servers), cpu_split(servers, pg)
            began = time.monotonic()
            if RDKAFKA_PERF:
                every = ",".join(f"{h}:{servers[0].kafka_ports[0]}" for h in HOSTS[:nodes])
                mb, tool_s = load_rdkafka(every, RDKAFKA_MB)
                lat = [float("nan")]  # it reports no per-record latency at full load
            else:
                mb, lat, _ = load(boot, seconds)
            wall = time.monotonic() - began
            # How much of the machine the saturated run used: where it is all of it,
            # more nodes on the same cores cannot add throughput. And who used it.
            busy = (busy_seconds() - busy0) / wall / os.cpu_count()
            eddy_s, postgres_s, client_s = (b - a for a, b in zip(cpu0, cpu_split(servers, pg)))
            if RDKAFKA_PERF:
                client_s = tool_s
            groups, conflicts, commit_s = (b - a for a, b in zip(counts0, catalog_counts(servers)))
            p50, p99 = percentiles(lat)
            _, paced, _ = load(boot, seconds, rate=RATE, linger_ms=1)
            fixed50, fixed99 = percentiles(paced)
            return {"setup": name, "MB/s": mb, "p50": p50, "p99": p99, "busy": busy,
                    "groups/s": groups / wall, "conflicts": conflicts / max(groups, 1),
                    "commit ms": 1000 * commit_s / max(groups, 1),
                    "cpu": (eddy_s / wall, postgres_s / wall, client_s / wall),
                    "fixed p50": fixed50, "fixed p99": fixed99}
        finally:
            for s in servers:
                s.stop(kill=True)
            if pg:
                pg.stop()


def serving(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.2).close()
        return True
    except OSError:
        return False


def epochs(pg) -> int:
    """The sum of the addresses' lease epochs: every taking of an address bumps its own."""
    return sum(int(e) for (e,) in pg.psql("SELECT epoch FROM eddy_leases"))


def failover(lease_ms: int, seconds: float, **conf) -> tuple:
    """(pause, served, takings): the longest time a partition went without an
    acknowledgement across the kill, the time from the kill until every address is
    served again, and how many times an address was taken from the kill to the end of
    the run (one is the killed node's; more are addresses that moved for nothing)."""
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as tmp:
        pg = postgres.Postgres(fsync=True).start()
        url = f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
        servers = start(Path(tmp), 3, url, lease_ms)
        try:
            # A cluster that has settled: addresses moving as the nodes start would
            # count in the pause and in the client's reconnect backoff.
            spread(pg, 3)
            boot = servers[0].bootstrap
            admin = AdminClient({"bootstrap.servers": boot})
            for f in admin.create_topics([NewTopic("bench", 6)]).values():
                f.result(60)
            result = {}
            t = threading.Thread(target=lambda: result.update(r=load(boot, seconds, **conf)))
            t.start()
            time.sleep(seconds / 3)
            port = servers[0].kafka_ports[0]
            before = epochs(pg)
            killed = time.monotonic()
            servers[1].stop(kill=True)
            while not all(serving(h, port) for h in HOSTS):
                time.sleep(0.01)
            served = time.monotonic() - killed
            t.join()
            takings = epochs(pg) - before
            pause = 0.0
            for part in {p for _, p in result["r"][2]}:
                times = [killed - 1] + [a for a, p in result["r"][2] if p == part and a > killed - 1]
                pause = max(pause, *(b - a for a, b in zip(times, times[1:])))
            return pause, served, takings
        finally:
            for s in servers:
                s.stop(kill=True)
            pg.stop()


def main():
    os.environ["EDDY_BIN"] = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 15
    rounds = int(os.environ.get("ROUNDS", "2"))
    parts = os.environ.get("PARTS", "throughput,failover").split(",")
    print(f"== {os.cpu_count()} cores, load {os.getloadavg()}, {seconds}s per setup, {rounds} rounds")
    if "throughput" in parts:
        throughput(seconds, rounds)
    if "failover" in parts:
        for lease in (6000, 2000):
            for backoff in (None, 1000):
                conf = {"reconnect_backoff_max_ms": backoff} if backoff else {}
                pause, served, takings = failover(lease, 3 * lease / 1000 + 6, **conf)
                print(f"failover, lease {lease} ms, reconnect.backoff.max.ms "
                      f"{backoff or 'default (10000)'}: pause {pause:.2f} s, "
                      f"addresses served again after {served:.2f} s, "
                      f"addresses taken {takings} (1 is the killed node's)", flush=True)


def throughput(seconds: float, rounds: int):
    rows = []
    for _ in range(rounds):
        rows.append(run_setup("embedded, 1 node", 1, False, seconds))
        rows.append(run_setup("postgresql, 1 node", 1, True, seconds))
        rows.append(run_setup("postgresql, 3 nodes", 3, True, seconds))
        for r in rows[-3:]:
            print(f"{r['setup']:22} {r['MB/s']:7.1f} MB/s  p50 {r['p50']:7.1f} ms  p99 {r['p99']:7.1f} ms"
                  f"  machine {100 * r['busy']:3.0f}% busy (cores: eddy {r['cpu'][0]:.2f}, "
                  f"postgresql {r['cpu'][1]:.2f}, client {r['cpu'][2]:.2f})"
                  f"  {r['groups/s']:5.0f} groups/s of {r['commit ms']:.2f} ms, {r['conflicts']:.3f} run again"
                  f"  | {RATE}/s: p50 {r['fixed p50']:6.1f} ms  p99 {r['fixed p99']:6.1f} ms")
    base = statistics.median(r["MB/s"] for r in rows if r["setup"].startswith("embedded"))
    for name in ("postgresql, 1 node", "postgresql, 3 nodes"):
        mb = statistics.median(r["MB/s"] for r in rows if r["setup"] == name)
        print(f"{name}: {mb / base:.2f}x the embedded catalog's MB/s (medians)")
    for name in ("postgresql, 1 node", "postgresql, 3 nodes"):
        p99 = statistics.median(r["fixed p99"] for r in rows if r["setup"] == name)
        base99 = statistics.median(r["fixed p99"] for r in rows if r["setup"].startswith("embedded"))
        print(f"{name}: p99 at {RATE}/s {p99:.1f} ms, {p99 / base99:.2f}x the embedded catalog's")


if __name__ == "__main__":
    main()
