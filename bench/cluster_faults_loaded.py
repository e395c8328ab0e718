#!/usr/bin/env python3
"""The three-node fault test on a machine whose cores are all busy: how often a cluster
comes through a SIGKILL, a SIGSTOP and a PostgreSQL restart when every round trip is
slow, for one or two builds alternating in one run.

    .venv/bin/python bench/cluster_faults_loaded.py [--before OTHER_EDDY_BIN] [--runs 4]
                                                    [--busy 2]

Each run starts `tests/e2e/test_cluster_faults.py -k three_nodes` with $EDDY_BIN (then
--before) while --busy processes spin on the CPU (one per core by default), and keeps
the test's output of a failed run under the results directory. Prints, per build, the
runs passed and, for each failure, its assertion and how often the nodes logged the
lines that told the known causes apart:
  - `kept conflicting`: lease rounds that failed to serialize on every attempt;
  - `expired unrenewed`: a node that stopped serving its addresses because its rounds
    kept failing;
  - `cannot bind`: an address leased to a node but still bound by another process.
A run is bounded (--timeout): a test that hangs counts as failed.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIGNS = {
    "kept conflicting": "lease round kept conflicting",
    "expired unrenewed": "address leases expired unrenewed",
    "cannot bind": "cannot bind a leased address yet",
}


def busy(n: int) -> list:
    """`n` processes that keep a core each busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def one_run(binary: str, timeout: float, out: Path) -> dict:
    env = dict(os.environ, EDDY_BIN=binary)
    started = time.monotonic()
    try:
        p = subprocess.run(
            [str(ROOT / ".venv/bin/python"), "-m", "pytest", "-q", "-x",
             "tests/e2e/test_cluster_faults.py", "-k", "three_nodes"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        text, passed = p.stdout + p.stderr, p.returncode == 0
    except subprocess.TimeoutExpired as e:
        # What the test printed before it was stopped (bytes, whatever `text` says).
        text = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or ""
        passed = False
    seconds = time.monotonic() - started
    result = {"passed": passed, "seconds": seconds}
    if not passed:
        out.write_text(text)
        m = re.search(r"^E\s+(\w*Error.*)$", text, re.M)
        result["error"] = m.group(1) if m else "timed out" if seconds >= timeout else "?"
        result["signs"] = {k: text.count(v) for k, v in SIGNS.items()}
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="another eddy binary, run alternately")
    ap.add_argument("--runs", type=int, default=4, help="runs per build")
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 2,
                    help="processes spinning on the CPU throughout")
    ap.add_argument("--timeout", type=float, default=420, help="seconds per run")
    args = ap.parse_args()
    after = os.environ.get("EDDY_BIN", str(ROOT / "target/debug/eddy"))
    builds = {"after": after}
    if args.before:
        builds["before"] = args.before
    results_dir = Path(tempfile.mkdtemp(prefix="eddy-cluster-faults-"))
    print(f"results: {results_dir}; {args.busy} busy processes", flush=True)
    spinners = busy(args.busy)
    got = {name: [] for name in builds}
    try:
        for i in range(args.runs):
            for name, binary in builds.items():
                r = one_run(binary, args.timeout, results_dir / f"{name}-{i + 1}.log")
                got[name].append(r)
                print(f"run {i + 1} {name}: {'passed' if r['passed'] else 'FAILED'} "
                      f"in {r['seconds']:.0f} s"
                      + ("" if r["passed"] else f": {r['error']} {r['signs']}"), flush=True)
    finally:
        for s in spinners:
            s.kill()
    for name, runs in got.items():
        print(f"{name}: {sum(r['passed'] for r in runs)} of {len(runs)} runs passed")


if __name__ == "__main__":
    main()
