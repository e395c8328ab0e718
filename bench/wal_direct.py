#!/usr/bin/env python3
"""The node log's write pattern with no Eddy running, through the page cache and with
O_DIRECT, to tell the disk's and the kernel's part of a slow commit from Eddy's.

Every commit writes one frame of --frame bytes to each of six growing files (one per
drive, as 4+2 does), then `fdatasync`s the six, paced to --rate MB/s of frames. The
files roll over every 64 MiB and only the four newest are kept, so old segments are
deleted as the log's are. Buffered, each write's writeback is started at once with `sync_file_range`, as
the log does; with O_DIRECT the frame goes from an aligned buffer to the disk and
never passes through the page cache.

    python3 bench/wal_direct.py [--dir DIR] [--seconds S] [--rate MB/S] [--frame BYTES]
        [--rounds R]

Prints, per mode and round, the MB/s reached and the distribution of the mean commit
time over 0.2 s slots (median, p90, p99, max in ms): a window in which every commit
slows shows up in the slots' upper percentiles.
"""

import argparse
import ctypes
import mmap
import os
import tempfile
import time

LIBC = ctypes.CDLL(None, use_errno=True)
SYNC_FILE_RANGE_WRITE = 2
SEGMENT = 64 << 20
DRIVES = 6
SLOT = 0.2


def run(directory, seconds, rate, frame, direct):
    """One paced run; the mean commit ms of each 0.2 s slot and the MB/s written."""
    flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if direct else 0)
    # mmap'd memory is page-aligned, as O_DIRECT needs; each drive gets its own frame.
    buf = mmap.mmap(-1, DRIVES * frame)
    buf.write(os.urandom(DRIVES * frame))
    frames = [memoryview(buf)[d * frame:(d + 1) * frame] for d in range(DRIVES)]

    def open_segment(n):
        return [os.open(os.path.join(directory, f"d{d}-{n}"), flags, 0o600) for d in range(DRIVES)]

    def remove_segment(n):
        for d in range(DRIVES):
            try:
                os.unlink(os.path.join(directory, f"d{d}-{n}"))
            except FileNotFoundError:
                pass

    segment, offset = 0, 0
    fds = open_segment(segment)
    slots, slot_start, slot_ms, slot_n = [], time.monotonic(), 0.0, 0
    started = time.monotonic()
    due, written = started, 0
    while time.monotonic() - started < seconds:
        t = time.monotonic()
        for fd, f in zip(fds, frames):
            os.pwrite(fd, f, offset)
            if not direct:
                LIBC.sync_file_range(fd, ctypes.c_longlong(offset), ctypes.c_longlong(frame),
                                     SYNC_FILE_RANGE_WRITE)
        for fd in fds:
            os.fdatasync(fd)
        done = time.monotonic()
        slot_ms += (done - t) * 1000
        slot_n += 1
        offset += frame
        written += DRIVES * frame
        if offset >= SEGMENT:
            for fd in fds:
                os.close(fd)
            remove_segment(segment - 3)
            segment, offset = segment + 1, 0
            fds = open_segment(segment)
        if done - slot_start >= SLOT:
            slots.append(slot_ms / slot_n)
            slot_start, slot_ms, slot_n = done, 0.0, 0
        due += DRIVES * frame / (rate * 1e6)
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        else:
            due = time.monotonic()
    elapsed = time.monotonic() - started
    for fd in fds:
        os.close(fd)
    for n in range(segment - 3, segment + 1):
        remove_segment(n)
    return sorted(slots), written / elapsed / 1e6


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=None, help="where the files go (default: a temporary "
                   "directory under the current one, on the disk being measured)")
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--rate", type=float, default=345, help="MB/s of frames over the six files")
    p.add_argument("--frame", type=int, default=1 << 20, help="bytes per file per commit "
                   "(a multiple of 4096 for O_DIRECT)")
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    if a.frame % 4096:
        p.error("--frame must be a multiple of 4096")
    with tempfile.TemporaryDirectory(dir=a.dir or ".") as d:
        print(f"{a.rate:.0f} MB/s of {a.frame}-byte frames on {DRIVES} files, {a.seconds:.0f} s "
              "per run; mean commit ms per 0.2 s slot")
        print("| round | mode | MB/s | median | p90 | p99 | max |")
        print("|---|---|---|---|---|---|---|")
        for r in range(1, a.rounds + 1):
            for direct in (False, True):
                slots, mbps = run(d, a.seconds, a.rate, a.frame, direct)
                mode = "O_DIRECT" if direct else "page cache"
                print(f"| {r} | {mode} | {mbps:.0f} | {pct(slots, 0.5):.2f} | {pct(slots, 0.9):.2f} "
                      f"| {pct(slots, 0.99):.2f} | {slots[-1]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
