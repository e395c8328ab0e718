#!/usr/bin/env bash
# Two (or more) Eddy builds side by side, alternating in one run: produce throughput (one
# partition, 1 KiB records, acks=all, linger.ms=5, as bench/kafka.sh) and produce latency
# at a fixed rate (rdkafka_performance -l), each build on a fresh data dir.
#
#   bench/kafka_ab.sh BIN_A BIN_B [...]
#
# Environment: SCRATCH (default /work/scratch-kbench; rdkafka_performance must have been
# built there by bench/kafka.sh), RUNS (default 3), DUR (seconds per measurement, default
# 12), RATE (msgs/s of the latency runs, default 30000).
# Prints one row per build and run: MB/s, msgs/s, then latency p50/p99/max in ms.
set -euo pipefail
cd "$(dirname "$0")/.."
S=${SCRATCH:-/work/scratch-kbench}
PERF=$S/librdkafka/examples/rdkafka_performance
[ -x "$PERF" ] || { echo "no $PERF: run bench/kafka.sh once to build it" >&2; exit 1; }
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-3} DUR=${DUR:-12} RATE=${RATE:-30000}
. bench/lib.sh
W=$(mktemp -d "$S/ab-XXXXXX")
PIDS=()
trap 'stop_all; rm -rf "$W"/data' EXIT
echo "== $(nproc) cores, $(date -u +'%F %T') UTC, load $(loadavg); RUNS=$RUNS DUR=${DUR}s RATE=$RATE"
printf 'run\tbuild\tMBps\tmsgs_s\tlat_p50\tlat_p99\tlat_max\n'
for run in $(seq 1 "$RUNS"); do
  for bin in "$@"; do
    rm -rf "$W/data"; mkdir -p "$W/data"
    EDDY_LOG=warn setsid "$bin" serve --data-dir "$W/data" --kafka-listen 127.0.0.1:29092 \
      --s3-listen 127.0.0.1:29000 --http-listen 127.0.0.1:28181 >"$W/server.log" 2>&1 &
    PIDS=($!)
    wait_port 127.0.0.1 29092 30
    "$PY" -c "
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({'bootstrap.servers': '127.0.0.1:29092'})
[f.result(30) for f in a.create_topics([NewTopic('p1', 1, 1), NewTopic('lat', 1, 1)]).values()]"
    timeout -s INT "$DUR" "$PERF" -P -t p1 -b 127.0.0.1:29092 -s 1024 -a -1 -c 1000000000 -u \
      -X linger.ms=5 >"$W/tp.out" 2>&1 || true
    # last table row of -u: | elapsed | msgs | bytes | rtt | dr | dr_m/s | dr_MB/s | ...
    read -r -a row <<<"$(grep -E '^\| +[0-9]' "$W/tp.out" | tail -1 | tr -d '|')"
    "$PERF" -P -t lat -p 0 -b 127.0.0.1:29092 -s 1024 -a -1 -r "$RATE" -c $(( RATE * DUR )) -u -l \
      -A "$W/lat.us" -X linger.ms=5 >"$W/lat.out" 2>&1 || true
    lat=$(tail -n +$(( RATE * 2 + 1 )) "$W/lat.us" | sort -n | awk '{v[NR]=$1} END {
      if (NR==0) {print "- - -"; exit}
      printf "%.2f\t%.2f\t%.2f", v[int(NR*0.5)]/1000, v[int(NR*0.99)]/1000, v[NR]/1000}')
    printf '%s\t%s\t%s\t%s\t%s\n' "$run" "$bin" "${row[6]:--}" "${row[5]:--}" "$lat"
    stop_all
  done
done
