#!/usr/bin/env python3
"""What one durable commit costs the disk, as the write-ahead log makes it: one frame
appended to a file on each of six drive directories, then `fdatasync` of each in turn
(storage/src/wal.rs). Measured two ways, alternating:

  - append: the files grow with every frame, as the log's segments do now, so every
    `fdatasync` also has to commit the file's new size (on ext4, a journal commit);
  - overwrite: the same writes into files written full of zeros beforehand, so the
    size never changes and `fdatasync` only flushes data (what the log does since its
    segments are zero-filled ahead: storage/src/wal_zeroed.rs);
  - fallocate: files given their space with posix_fallocate, which costs no writes but
    leaves unwritten extents that each `fdatasync` must still convert.

The gap between them is what zero-filled log segments save per commit; commits/s at one
writer is what a producer that waits for each request sees.

    python3 bench/wal_fsync.py [--dir DIR] [--commits N] [--frame BYTES] [--rounds R]
"""

import argparse
import os
import statistics
import tempfile
import time


def run(root, mode, commits, frame):
    fds = []
    for i in range(6):
        d = os.path.join(root, f"d{i}")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "segment")
        if os.path.exists(path):
            os.unlink(path)
        flags = os.O_CREAT | os.O_WRONLY | (os.O_APPEND if mode == "append" else 0)
        fd = os.open(path, flags, 0o644)
        if mode == "fallocate":
            os.posix_fallocate(fd, 0, commits * frame + (1 << 20))
            os.fsync(fd)
        if mode == "overwrite":
            zeros = b"\0" * (1 << 20)
            for _ in range(commits * frame // len(zeros) + 1):
                os.write(fd, zeros)
            os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_SET)
        dfd = os.open(d, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
        fds.append(fd)
    payload = os.urandom(frame)
    start = time.perf_counter()
    for _ in range(commits):
        for fd in fds:
            os.write(fd, payload)
        for fd in fds:
            os.fdatasync(fd)
    rate = commits / (time.perf_counter() - start)
    for fd in fds:
        os.close(fd)
    return rate


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=None, help="where the six directories go (default: a temp dir under /work)")
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--frame", type=int, default=4 * 1024 + 64,
                    help="bytes per drive per commit (a 16 KiB record over 4 data shards, plus framing)")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir or "/work", prefix="wal-fsync-") as root:
        rates = {"append": [], "overwrite": [], "fallocate": []}
        for r in range(args.rounds):
            order = list(rates) if r % 2 == 0 else list(reversed(rates))
            for kind in order:
                rate = run(root, kind, args.commits, args.frame)
                rates[kind].append(rate)
                print(f"round {r + 1} {kind:9s} {rate:8.0f} commits/s", flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        print("median: " + ", ".join(f"{k} {v:.0f}" for k, v in med.items()) + " commits/s; "
              f"overwrite/append {med['overwrite'] / med['append']:.2f}x, "
              f"fallocate/append {med['fallocate'] / med['append']:.2f}x")


if __name__ == "__main__":
    main()
