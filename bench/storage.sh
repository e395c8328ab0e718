#!/usr/bin/env bash
# Storage benchmarks with the raw-disk baseline measured in the same run, on the same
# disk: dd sequential writes (fsync'd), then erasure coding (criterion), then blob and
# group-commit throughput on a 4+2 drive set.
#
#   bench/storage.sh [DIR]     DIR: where to write (default: ./target/bench-data)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${1:-$PWD/target/bench-data}"
mkdir -p "$DIR"
echo "== machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(df -h "$DIR" | awk 'NR==2{print $1}'), $(date -u +%F)"
echo "== raw disk (dd, 1 GiB, 1 MiB blocks)"
dd if=/dev/zero of="$DIR/raw" bs=1M count=1024 conv=fdatasync 2>&1 | tail -1 | sed 's/^/streamed, one fdatasync:   /'
dd if=/dev/zero of="$DIR/raw" bs=1M count=256 oflag=direct,dsync 2>&1 | tail -1 | sed 's/^/O_DIRECT|O_DSYNC per block: /'
dd if=/dev/zero of="$DIR/raw" bs=64k count=2048 oflag=dsync 2>&1 | tail -1 | sed 's/^/64 KiB O_DSYNC per block:  /'
rm -f "$DIR/raw"
echo "== erasure coding (criterion)"
cargo bench --bench storage -- --noplot 2>&1 | grep -E "^erasure|thrpt" || true
echo "== blobs and group commit"
cargo bench --bench throughput -- "$DIR"
