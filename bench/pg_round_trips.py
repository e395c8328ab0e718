"""Where a produce's time goes with the PostgreSQL catalog: PostgreSQL transactions per
produce request, keyed reads per group commit, and the group commit's mean time and
stages (docs/benchmarks.md, "PostgreSQL catalog: transactions per produce request").

    .venv/bin/python bench/pg_round_trips.py BIN [RATE]

One node, PostgreSQL 15 (Debian's, durable commits), a 6-partition topic, one
confluent-kafka producer paced at RATE records/s (default 2000) of 1 KiB, linger.ms=1,
for 5 s. Counts come from PostgreSQL's own statistics (pg_stat_database commits and
rollbacks, pg_stat_user_tables index scans) and Eddy's /metrics (group commits, Produce
requests), taken before and after.
"""

import os
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
sys.path.insert(0, str(HERE))

import postgres  # noqa: E402
import scale_out as bench  # noqa: E402  (bench/scale_out.py)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


# The group commit's stages (eddy_catalog_commit_stage_seconds): BEGIN, reads, checks and
# the writes sent; the node log's append; the wake-up and PostgreSQL's COMMIT.
STAGES = ("apply", "log", "store")


def counter(text: str, pattern: str) -> float:
    return sum(float(m.group(1)) for m in re.finditer(pattern, text, re.M))


def main():
    os.environ["EDDY_BIN"] = sys.argv[1]
    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    with tempfile.TemporaryDirectory(prefix="eddy-bench-") as tmp:
        pg = postgres.Postgres(fsync=True).start()
        url = f"postgres://{postgres.SUPERUSER}:{postgres.PASSWORD}@127.0.0.1:{pg.port}/postgres"
        [node] = bench.start(Path(tmp), 1, url)
        try:
            admin = AdminClient({"bootstrap.servers": node.bootstrap})
            admin.create_topics([NewTopic("bench", 6)])["bench"].result(30)
            bench.load(node.bootstrap, 2, rate=rate, linger_ms=1)  # warm-up

            def snapshot():
                text = urllib.request.urlopen(node.http_url + "/metrics").read().decode()
                xact = pg.psql("SELECT xact_commit, xact_rollback FROM pg_stat_database "
                               "WHERE datname = 'postgres'")[0]
                scans = pg.psql("SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_tables")[0]
                return (counter(text, r"^eddy_catalog_group_commits(?:_total)? (\S+)"),
                        counter(text, r"^eddy_catalog_commit_seconds_sum (\S+)"),
                        *(counter(text, rf'^eddy_catalog_commit_stage_seconds_sum\{{stage="{s}"\}} (\S+)')
                          for s in STAGES),
                        counter(text, r'^eddy_kafka_requests(?:_total)?\{[^}]*api="Produce"[^}]*\} (\S+)'),
                        int(xact[0]), int(xact[1]), int(scans[0]))

            before = snapshot()
            _, lat, acks = bench.load(node.bootstrap, 5, rate=rate, linger_ms=1)
            # A backend reports its statistics at most once a second.
            time.sleep(1.5)
            groups, commit_s, *stages, produces, commits, rollbacks, scans = (
                b - a for a, b in zip(before, snapshot()))
            p50, p99 = bench.percentiles(lat)
            print(f"{len(acks)} records at {rate}/s: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
            print(f"{produces:.0f} Produce requests, {groups:.0f} group commits, "
                  f"{commits} PostgreSQL commits, {rollbacks} read-only transactions, {scans} index scans")
            print(f"a group commit takes {1000 * commit_s / max(groups, 1):.2f} ms on average; "
                  f"the committer was busy {100 * commit_s / 5:.0f}% of the run; stages: " +
                  ", ".join(f"{n} {1000 * v / max(groups, 1):.2f} ms" for n, v in zip(STAGES, stages)))
            # A read-only transaction is one keyed read or more; what is left is the
            # group commits' reads, each a round trip in the committer's transaction.
            print(f"per Produce request: {(commits + rollbacks) / max(produces, 1):.2f} PostgreSQL "
                  f"transactions; per group commit: at most {(scans - rollbacks) / max(groups, 1):.1f} "
                  "index scans")
        finally:
            node.stop(kill=True)
            pg.stop()


if __name__ == "__main__":
    main()
