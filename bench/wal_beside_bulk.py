#!/usr/bin/env python3
"""How much a bulk writer on the same disk slows a small durable commit: one 16 KiB write
into a zero-filled file and its `fdatasync`, every millisecond, as the node log commits a
small produce, alone and while another process writes 64 MiB files the way a blob writer
does (1 MiB writes, each one's writeback started with `sync_file_range`, an `fdatasync`
at the end of each file): at full speed; at full speed but waiting, after each write,
for the writeback of the MiB --behind MiB earlier (as a background blob writer waits for
the stripe before); and paced to --pace MB/s. The background tabler's Parquet seals,
catalog checkpoints and large S3 PUTs are such bulk writers.

    python3 bench/wal_beside_bulk.py [--dir DIR] [--commits N] [--behind MIB] [--pace MB/S]
        [--rounds R]

Prints each mode's commit p50/p99/p99.9/max in ms and the bulk writer's MB/s.
"""

import argparse
import ctypes
import multiprocessing as mp
import os
import tempfile
import time

LIBC = ctypes.CDLL(None, use_errno=True)
SYNC_FILE_RANGE_WAIT_BEFORE = 1
SYNC_FILE_RANGE_WRITE = 2
SYNC_FILE_RANGE_WAIT_AFTER = 4
MIB = 1 << 20


def bulk(directory, stop, pace, written, behind=0):
    """Writes 64 MiB files until stopped, at most `pace` MB/s (0: as fast as it can); with
    `behind`, each write then waits until the writeback of the MiB `behind` MiB earlier is
    done, so at most that many MiB of the file are queued at the disk at once."""
    buf = os.urandom(MIB)
    started, n = time.monotonic(), 0
    while not stop.is_set():
        fd = os.open(os.path.join(directory, f"bulk{n % 4}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        for i in range(64):
            if stop.is_set():
                break
            os.pwrite(fd, buf, i * MIB)
            LIBC.sync_file_range(fd, ctypes.c_longlong(i * MIB), ctypes.c_longlong(MIB),
                                 SYNC_FILE_RANGE_WRITE)
            if behind and i >= behind:
                LIBC.sync_file_range(fd, ctypes.c_longlong((i - behind) * MIB), ctypes.c_longlong(MIB),
                                     SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)
            with written.get_lock():
                written.value += MIB
            if pace:
                ahead = written.value / (pace * 1e6) - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
        os.fdatasync(fd)
        os.close(fd)
        n += 1


def commits(directory, n):
    """`n` small commits, one a millisecond; their latencies in ms, sorted."""
    fd = os.open(os.path.join(directory, "log"), os.O_RDWR | os.O_CREAT)
    os.pwrite(fd, bytes(64 * MIB), 0)
    os.fsync(fd)
    frame, lat = os.urandom(16384), []
    for i in range(n):
        t = time.monotonic()
        os.pwrite(fd, frame, (i * len(frame)) % (60 * MIB))
        os.fdatasync(fd)
        lat.append((time.monotonic() - t) * 1e3)
        time.sleep(0.001)
    os.close(fd)
    return sorted(lat)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=None, help="a directory on the disk to measure (default: a temporary one under /work)")
    ap.add_argument("--commits", type=int, default=3000)
    ap.add_argument("--pace", type=int, default=64, help="the paced bulk writer's MB/s")
    ap.add_argument("--behind", type=int, default=4, help="the bounded bulk writer's MiB in flight")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir or "/work") as d:
        for r in range(args.rounds):
            modes = (("alone", None, 0), ("bulk at full speed", 0, 0),
                     (f"bulk with {args.behind} MiB in flight", 0, args.behind),
                     (f"bulk paced to {args.pace} MB/s", args.pace, 0))
            for mode, pace, behind in modes:
                stop, written, writer = mp.Event(), mp.Value("q", 0), None
                if pace is not None:
                    writer = mp.Process(target=bulk, args=(d, stop, pace, written, behind))
                    writer.start()
                    while written.value == 0:  # under way before the first commit
                        time.sleep(0.01)
                t0, w0 = time.monotonic(), written.value
                lat = commits(d, args.commits)
                rate = (written.value - w0) / 1e6 / (time.monotonic() - t0)
                if writer:
                    stop.set()
                    writer.join()
                q = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))]  # noqa: E731
                print(f"round {r + 1}, {mode}: commit p50 {q(0.5):.2f} p99 {q(0.99):.2f} "
                      f"p99.9 {q(0.999):.2f} max {lat[-1]:.2f} ms; bulk {rate:.0f} MB/s", flush=True)


if __name__ == "__main__":
    main()
