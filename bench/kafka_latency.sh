#!/usr/bin/env bash
# Produce latency of one broker at one rate, with where the time went: a diagnosis
# companion to bench/kafka.sh (which compares brokers side by side).
#
#   bench/kafka_latency.sh BROKER RATE [SECONDS]
#
# BROKER: an eddy binary, or a Tansu binary (its path contains "tansu"; run in memory).
# RATE: messages/s of 1 KiB (acks=all, one partition, librdkafka's rdkafka_performance
# built by bench/kafka.sh in SCRATCH). SECONDS: default 12; the first 2 s are left out.
# Environment: SCRATCH (default /work/scratch-kbench), LINGER (linger.ms, default 5),
# EXTRA (more rdkafka_performance arguments, e.g. "-X debug=protocol": then the
# percentiles of librdkafka's produce round trips are printed too), PERF=1 to record the
# broker with `perf record` meanwhile,
# DATA_ON (a directory for Eddy's data dir instead of SCRATCH, e.g. /dev/shm to take the
# disk out of the measurement).
#
# Prints p50/p90/p99/p99.9/max of produce() to delivery report, the broker's and the
# machine's CPU, and for Eddy how many group commits, commit stages
# (eddy_catalog_commit_stage_seconds), transactions and produce requests took more than
# 12.8 ms and 51.2 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
BROKER=$1 RATE=$2 DUR=${3:-12}
S=${SCRATCH:-/work/scratch-kbench}
PERF=$S/librdkafka/examples/rdkafka_performance
[ -x "$PERF" ] || { echo "no $PERF: run bench/kafka.sh once to build it" >&2; exit 1; }
PY=${PY:-.venv/bin/python}
. bench/lib.sh
W=$(mktemp -d "$S/latency-XXXXXX")
D=$(mktemp -d "${DATA_ON:-$W}/data-XXXXXX")
trap 'kill "$SP" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$D"' EXIT
if [[ $BROKER == *tansu* ]]; then
  setsid "$BROKER" broker --listener-url tcp://127.0.0.1:29092 --advertised-listener-url tcp://127.0.0.1:29092 \
    --storage-engine memory://tansu/ >"$W/server.log" 2>&1 &
else
  EDDY_LOG=warn setsid "$BROKER" serve --data-dir "$D" --kafka-listen 127.0.0.1:29092 \
    --s3-listen 127.0.0.1:29000 --http-listen 127.0.0.1:28181 >"$W/server.log" 2>&1 &
fi
SP=$!
wait_port 127.0.0.1 29092 10
"$PY" -c "
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({'bootstrap.servers': '127.0.0.1:29092'})
[f.result(30) for f in a.create_topics([NewTopic('lat', 1, 1)]).values()]"
metrics() { curl -sf http://127.0.0.1:28181/metrics >"$1" || : >"$1"; }
metrics "$W/m0.txt"
PP=
if [ "${PERF:-}" = 1 ]; then
  perf record -F 499 --call-graph dwarf,16384 -p "$SP" -o "$W/perf.data" -- sleep "$DUR" >/dev/null 2>&1 &
  PP=$!
fi
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
idle() { awk '/^cpu /{print $5}' /proc/stat; }
T0=$(cpu "$SP"); I0=$(idle)
# shellcheck disable=SC2086
"$PERF" -P -t lat -p 0 -b 127.0.0.1:29092 -s 1024 -a -1 -r "$RATE" -c $(( RATE * DUR )) -u -l \
  -A "$W/lat.us" -X "linger.ms=${LINGER:-5}" ${EXTRA:-} >"$W/lat.out" 2>&1
T1=$(cpu "$SP"); I1=$(idle)
metrics "$W/m1.txt"
[ -z "$PP" ] || wait "$PP"
echo "broker CPU $(( T1 - T0 ))/100 s, machine idle $(( I1 - I0 ))/100 s (of $(( $(nproc) * DUR * 100 )))"
"$PY" - "$W" "$RATE" <<'EOF'
import sys
w, rate = sys.argv[1], int(sys.argv[2])
v = sorted(int(l.split()[-1]) for l in list(open(f"{w}/lat.us"))[2 * rate:] if l.strip())
q = lambda p: v[min(len(v) - 1, int(len(v) * p))] / 1000
print(f"n {len(v)} p50 {q(.5):.2f} p90 {q(.9):.2f} p99 {q(.99):.2f} p99.9 {q(.999):.2f} max {v[-1]/1000:.2f} ms")

def load(f):
    d = {}
    for l in open(f):
        if l.strip() and not l.startswith("#"):
            k, x = l.rsplit(" ", 1)
            d[k] = float(x)
    return d

# With EXTRA="-X debug=protocol" librdkafka logs each request's round trip.
import re
rtt = sorted(float(m[1]) for m in re.finditer(r"Received ProduceResponse.*?rtt ([0-9.]+)ms",
                                                   open(f"{w}/lat.out").read()))
if rtt:
    r = lambda p: rtt[min(len(rtt) - 1, int(len(rtt) * p))]
    print(f"produce round trips (librdkafka) n {len(rtt)} p50 {r(.5):.2f} p90 {r(.9):.2f} "
          f"p99 {r(.99):.2f} max {rtt[-1]:.2f} ms")

a, b = load(f"{w}/m0.txt"), load(f"{w}/m1.txt")
if not b:
    sys.exit(0)
def over(name, label, le):
    n = b.get(f"{name}_count{label}", 0) - a.get(f"{name}_count{label}", 0)
    inner = "," + label[1:-1] if label else ""
    key = f'{name}_bucket{{le="{le}"{inner}}}'
    return int(n), int(n - (b.get(key, 0) - a.get(key, 0)))
rows = [("group commits", "eddy_catalog_commit_seconds", "")]
rows += [(f"  stage {s}", "eddy_catalog_commit_stage_seconds", f'{{stage="{s}"}}') for s in ("apply", "log", "store", "flush")]
rows += [("transactions", "eddy_catalog_transaction_seconds", ""), ("produce requests", "eddy_kafka_request_seconds", '{api="Produce"}')]
for title, name, label in rows:
    n, slow = over(name, label, "0.0128")
    _, slower = over(name, label, "0.0512")
    print(f"{title:18s} {n:6d}, over 12.8 ms {slow:4d}, over 51.2 ms {slower:4d}")
EOF
echo "raw: $W"
