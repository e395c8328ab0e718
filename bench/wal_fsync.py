#!/usr/bin/env python3
"""What one durable commit costs the disk, as the write-ahead log makes it: one frame
written to a file on each of six drive directories, its writeback started
(`sync_file_range`), then every file made durable (`fdatasync`): in turn, as the log did
until 2026-12-06, and with `--parallel` also all six at once, as the log does since
(storage/src/wal_sync.rs). Runs before `--parallel` was added did not start the writeback
first, so their numbers are lower. The files are measured three ways, alternating:

  - append: the files grow with every frame, as the log's segments do when they are not
    zero-filled (records over 512 KiB, or `wal_zero_fill = false`), so every
    `fdatasync` also has to commit the file's new size (on ext4, a journal commit);
  - overwrite: the same writes into files written full of zeros beforehand, so the
    size never changes and `fdatasync` only flushes data (what the log does since its
    segments are zero-filled ahead: storage/src/wal_zeroed.rs);
  - fallocate: files given their space with posix_fallocate, which costs no writes but
    leaves unwritten extents that each `fdatasync` must still convert.

The gap between them is what zero-filled log segments save per commit; commits/s at one
writer is what a producer that waits for each request sees.

    python3 bench/wal_fsync.py [--dir DIR] [--commits N] [--frame BYTES] [--rounds R]
                               [--parallel]
"""

import argparse
import ctypes
import os
import statistics
import tempfile
import time

LIBC = ctypes.CDLL(None, use_errno=True)
SYNC_FILE_RANGE_WRITE = 2


def start_writeback(fd):
    LIBC.sync_file_range(fd, ctypes.c_longlong(0), ctypes.c_longlong(0), SYNC_FILE_RANGE_WRITE)


class AtOnce:
    """Syncs the six files at once, as storage/src/wal_sync.rs does: this process syncs the
    first itself and hands each other file to a helper kept for the run (a process, not a
    thread, so no interpreter lock sits between the syncs), woken through a pipe."""

    def __init__(self, fds):
        self.first, self.helpers = fds[0], []
        for fd in fds[1:]:
            go_r, go_w = os.pipe()
            done_r, done_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                while os.read(go_r, 1) == b"s":
                    os.fdatasync(fd)
                    os.write(done_w, b"d")
                os._exit(0)
            os.close(go_r)
            os.close(done_w)
            self.helpers.append((pid, go_w, done_r))

    def sync(self):
        for _, go, _ in self.helpers:
            os.write(go, b"s")
        os.fdatasync(self.first)
        for _, _, done in self.helpers:
            os.read(done, 1)

    def close(self):
        for pid, go, done in self.helpers:
            os.write(go, b"q")
            os.waitpid(pid, 0)
            os.close(go)
            os.close(done)


def run(root, mode, commits, frame, at_once=False):
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
    pool = AtOnce(fds) if at_once else None
    start = time.perf_counter()
    for _ in range(commits):
        for fd in fds:
            os.write(fd, payload)
            start_writeback(fd)
        if pool:
            pool.sync()
        else:
            for fd in fds:
                os.fdatasync(fd)
    rate = commits / (time.perf_counter() - start)
    if pool:
        pool.close()
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
    ap.add_argument("--parallel", action="store_true",
                    help="also sync the six files at once")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir or "/work", prefix="wal-fsync-") as root:
        kinds = [(m, False) for m in ("append", "overwrite", "fallocate")]
        if args.parallel:
            kinds += [(m, True) for m, _ in kinds]
        rates = {k: [] for k in kinds}
        for r in range(args.rounds):
            order = kinds if r % 2 == 0 else list(reversed(kinds))
            for mode, at_once in order:
                rate = run(root, mode, args.commits, args.frame, at_once)
                rates[(mode, at_once)].append(rate)
                how = "at once" if at_once else "in turn"
                print(f"round {r + 1} {mode:9s} {how} {rate:8.0f} commits/s", flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        for at_once in sorted({a for _, a in kinds}):
            m = {mode: v for (mode, a), v in med.items() if a == at_once}
            print(f"median, synced {'at once' if at_once else 'in turn'}: "
                  + ", ".join(f"{k} {v:.0f}" for k, v in m.items()) + " commits/s; "
                  f"overwrite/append {m['overwrite'] / m['append']:.2f}x, "
                  f"fallocate/append {m['fallocate'] / m['append']:.2f}x")
        if args.parallel:
            print("at once / in turn: " + ", ".join(
                f"{mode} {med[(mode, True)] / med[(mode, False)]:.2f}x"
                for mode in ("append", "overwrite", "fallocate")))


if __name__ == "__main__":
    main()
