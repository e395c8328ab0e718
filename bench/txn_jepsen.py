#!/usr/bin/env python3
"""Kafka transactions under kill -9, the long run: the workload and checker of
tests/e2e/txn_checker.py (transactional producers committing and aborting at random
across partitions of two topics, live read_committed and read_uncommitted consumers,
the server killed with SIGKILL at random moments and restarted on the same data dir;
then lost commits, aborted or dirty reads, duplicates, offset conflicts, partial
transactions and stuck offsets are looked for).

    .venv/bin/python bench/txn_jepsen.py [--bin BIN] [--rounds 20] [--producers 4]
        [--client confluent|java] ...

BIN is an `eddy` build (default $EDDY_BIN, else target/debug/eddy), run on a fresh data
dir under $SCRATCH (default /tmp/eddy-bench) with the coordinator looking for timed-out
transactions every 200 ms, and down for up to 8 s after each kill (longer than the
transactions' 5 s timeout now and then). Prints the counts (transactions acked, aborted, uncertain;
values checked and visible; records read; kills), the producers' errors by kind, and
every anomaly found; exits 1 if there is one. --seed repeats a run's random choices
(the kill moments fall where they fall)."""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

from conftest import new_eddy  # noqa: E402
from txn_checker import Workload  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("EDDY_BIN"))
    ap.add_argument("--rounds", type=int, default=20, help="kills (default 20)")
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--gap-min", type=float, default=0.5, help="seconds from a restart's "
                    "first commits to the next kill, drawn between min and max")
    ap.add_argument("--gap-max", type=float, default=4.0)
    ap.add_argument("--down-min", type=float, default=0.0, help="seconds the server stays "
                    "down after a kill, drawn between min and max (past --txn-timeout-ms, "
                    "the open transactions time out)")
    ap.add_argument("--down-max", type=float, default=8.0)
    ap.add_argument("--client", choices=["confluent", "java"], default="confluent",
                    help="the producers: librdkafka's (transaction version 1) or Apache "
                    "Kafka's Java client (version 2, KIP-890)")
    ap.add_argument("--debug", help="librdkafka debug contexts for the producers (eos,...)")
    ap.add_argument("--commit-ratio", type=float, default=0.7)
    ap.add_argument("--max-writes", type=int, default=12, help="values per transaction, "
                    "at most (at least 2)")
    ap.add_argument("--txn-timeout-ms", type=int, default=5000)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--keep", action="store_true", help="keep the data dir")
    args = ap.parse_args()
    if args.bin:
        os.environ["EDDY_BIN"] = args.bin
    scratch = Path(os.environ.get("SCRATCH", "/tmp/eddy-bench"))
    scratch.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="txn-jepsen-", dir=scratch))
    eddy = new_eddy(tmp, extra_args=["--kafka-transaction-abort-interval-ms", "200"]).start()
    started = time.time()
    try:
        w = Workload(eddy, producers=args.producers, commit_ratio=args.commit_ratio,
                     writes=(2, max(2, args.max_writes)), txn_timeout_ms=args.txn_timeout_ms,
                     seed=args.seed, log=lambda m: print(f"[{time.time() - started:7.1f}s] {m}",
                                                         flush=True),
                     producer_conf={"debug": args.debug} if args.debug else None,
                     client=args.client)
        print(f"seed {w.seed}, {args.rounds} kills, {args.producers} producers, "
              f"topics {w.topics}", flush=True)
        report = w.run(args.rounds, gap=(args.gap_min, args.gap_max),
                       down=(args.down_min, args.down_max))
    finally:
        eddy.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{time.time() - started:.0f} s, seed {w.seed}")
    print(report.summary(details=20))
    if report.errors:
        print("producer errors: " + ", ".join(f"{k} x{v}" for k, v in sorted(report.errors.items())))
    sys.exit(0 if report.ok else 1)


if __name__ == "__main__":
    main()
