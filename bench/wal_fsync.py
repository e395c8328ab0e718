#!/usr/bin/env python3
"""What one durable commit costs the disk, as the write-ahead log makes it: one frame
appended to a file on each of six drive directories, then `fdatasync` of each in turn
(storage/src/wal.rs). Measured two ways, alternating:

  - append: the files grow with every frame, as the log's segments do now, so every
    `fdatasync` also has to commit the file's new size (on ext4, a journal commit);
  - overwrite: the same writes into files written full of zeros beforehand, so the
    size never changes and `fdatasync` only flushes data.

The gap between the two is what preallocated (zero-filled) log segments would save per
commit; commits/s at one writer is what a producer that waits for each request sees.

    python3 bench/wal_fsync.py [--dir DIR] [--commits N] [--frame BYTES] [--rounds R]
"""

import argparse
import os
import statistics
import tempfile
import time


def run(root, overwrite, commits, frame):
    fds = []
    for i in range(6):
        d = os.path.join(root, f"d{i}")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "segment")
        if os.path.exists(path):
            os.unlink(path)
        flags = os.O_CREAT | os.O_WRONLY | (0 if overwrite else os.O_APPEND)
        fd = os.open(path, flags, 0o644)
        if overwrite:
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
        rates = {"append": [], "overwrite": []}
        for r in range(args.rounds):
            order = ["append", "overwrite"] if r % 2 == 0 else ["overwrite", "append"]
            for kind in order:
                rate = run(root, kind == "overwrite", args.commits, args.frame)
                rates[kind].append(rate)
                print(f"round {r + 1} {kind:9s} {rate:8.0f} commits/s", flush=True)
        a, o = statistics.median(rates["append"]), statistics.median(rates["overwrite"])
        print(f"median: append {a:.0f}, overwrite {o:.0f} commits/s; overwrite/append {o / a:.2f}x")


if __name__ == "__main__":
    main()
