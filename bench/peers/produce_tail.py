#!/usr/bin/env python3
"""Where Eddy's produce tail at half load comes from: the same paced load right after a
full-load burst, with the background tabler sealing as by default and with its seals
deferred past the run, on a fresh server each time.

    .venv/bin/python bench/peers/produce_tail.py [--rate 250000] [--partitions 16] [--runs 2]
        [--before OTHER_EDDY_BIN]

Each run: a fresh `eddy serve` ($EDDY_BIN), --burst-mb MiB of 1 KiB values at full speed
into a topic of --partitions partitions (librdkafka's rdkafka_performance, $RDKAFKA_PERF,
as bench/peers/run builds it), then --rate msgs/s for 12 s into another (the first 2 s
left out). Prints the burst's msgs/s (so a run shows what share of full load the paced
rate is on that machine), p50/p99/p99.9, the server's CPU seconds in the paced run, and its
group commits from /metrics: how many, their mean time, how many took over 12.8 ms and
over 51.2 ms, and how many of their log stages (the node log's writes and `fdatasync`s)
took over 12.8 ms.
With --before, a second build also runs with seals as by default, alternating with the
others, so a change's effect on the tail is measured in one run.
"""

import argparse
import os
import re
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402

DEFER = compare.SEALS_HELD_BACK


def commits(server):
    text = urllib.request.urlopen(server.eddy.http_url + "/metrics", timeout=10).read().decode()

    def value(pattern):
        m = re.search(pattern, text, re.M)
        return float(m.group(1)) if m else 0.0
    return (value(r"^eddy_catalog_commit_seconds_count (\S+)"),
            value(r"^eddy_catalog_commit_seconds_sum (\S+)"),
            value(r'^eddy_catalog_commit_seconds_bucket\{le="0.0128"\} (\S+)'),
            value(r'^eddy_catalog_commit_seconds_bucket\{le="0.0512"\} (\S+)'),
            value(r'^eddy_catalog_commit_stage_seconds_bucket\{(?=[^}]*stage="log")(?=[^}]*le="0.0128")[^}]*\} (\S+)'),
            value(r'^eddy_catalog_commit_stage_seconds_count\{stage="log"\} (\S+)'))


def one(args, env, scratch, binary):
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        out = Path(tmp)
        # conftest's Eddy takes its binary from EDDY_BIN when it starts.
        os.environ["EDDY_BIN"] = binary
        server = compare.start_eddy(out, out, env=env)
        try:
            compare.create_topic(server.bootstrap, "burst", args.partitions)
            burst = compare.rdkafka_produce(args, server, "burst", 1024, args.burst_mb * 1024, None,
                                            args.partitions, out / "burst.txt")
            m0, c0 = commits(server), server.cpu()
            lat = compare.latency_run(args, server, "rdkafka", "paced", 1024, args.partitions,
                                      args.rate, {}, out)
            m1, cpu = commits(server), server.cpu() - c0
        finally:
            server.stop()
    n = m1[0] - m0[0]
    # Cumulative buckets: what is not at or under a bound took longer.
    over = [n - (m1[i] - m0[i]) for i in (2, 3)]
    slow_logs = (m1[5] - m0[5]) - (m1[4] - m0[4])
    burst_msgs = burst["msgs"] if burst else 0
    return lat, cpu, n, (m1[1] - m0[1]) * 1000 / n if n else 0, over, slow_logs, burst_msgs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=int, default=250_000)
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--burst-mb", type=int, default=256)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--scratch", default="/work/scratch-peers")
    ap.add_argument("--before", help="another eddy build, run with seals as by default")
    args = ap.parse_args()
    binary = compare.eddy_under_test(args)
    args.half_s = 10
    variants = [("as by default", {}, binary), ("deferred", DEFER, binary)]
    if args.before:
        variants.append(("before: as by default", {}, args.before))
    print(f"Paced at {args.rate} msgs/s; the burst's full-load rate per run is the last column.")
    print("| seals | p50 ms | p99 ms | p99.9 ms | server CPU s | commits | mean commit ms | over 12.8 ms "
          "| over 51.2 ms | log stages over 12.8 ms | burst msgs/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in range(args.runs):
        for name, env, build in variants[:: 1 if run % 2 == 0 else -1]:
            lat, cpu, n, mean, (over_12, over_51), slow_logs, burst = one(args, env, args.scratch, build)
            if not lat:
                print(f"| {name} | no result | | | | | | | | | |")
                continue
            print(f"| {name} | {lat['p50']:.1f} | {lat['p99']:.1f} | {lat['p999']:.1f} | {cpu:.1f} | "
                  f"{n:.0f} | {mean:.2f} | {over_12:.0f} | {over_51:.0f} | {slow_logs:.0f} | "
                  f"{burst:.0f} |", flush=True)


if __name__ == "__main__":
    main()
