"""Consumer group benchmark against one broker (run by bench/groups.sh).

1. Time to a stable assignment: MEMBERS confluent-kafka consumers (threads of this
   process) subscribe to a PARTITIONS-partition topic in a new group; the clock runs
   from the first subscribe until every partition is owned by exactly one member and
   every member owns some. ROUNDS rounds, each on a new group.
2. Offset commits per second by one group member for DUR seconds: synchronous commits
   of one partition's offset (each waits for its response), then asynchronous commits
   (the client pipelines them; counted when their callbacks report success).

Prints one JSON object."""

import json
import os
import sys
import threading
import time
import uuid

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOT = sys.argv[1]
MEMBERS = int(os.environ.get("MEMBERS", 10))
PARTITIONS = int(os.environ.get("PARTITIONS", 100))
ROUNDS = int(os.environ.get("ROUNDS", 3))
DUR = float(os.environ.get("DUR", 5))


def create_topic():
    topic = f"groups-{uuid.uuid4().hex[:8]}"
    a = AdminClient({"bootstrap.servers": BOOT})
    a.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=60)
    # Wait until metadata shows every partition (some brokers create asynchronously).
    deadline = time.time() + 60
    while time.time() < deadline:
        md = a.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == PARTITIONS:
            return topic
        time.sleep(0.1)
    raise SystemExit(f"topic {topic} did not appear")


def time_to_stable(topic):
    group = f"bench-{uuid.uuid4().hex[:8]}"
    owned = [set() for _ in range(MEMBERS)]
    lock = threading.Lock()
    stop = threading.Event()

    def member(i):
        def on_assign(c, parts):
            with lock:
                owned[i].update(p.partition for p in parts)

        def on_revoke(c, parts):
            with lock:
                owned[i].difference_update(p.partition for p in parts)

        c = Consumer({"bootstrap.servers": BOOT, "group.id": group,
                      "enable.auto.commit": False, "session.timeout.ms": 10000,
                      "heartbeat.interval.ms": 500})
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        while not stop.is_set():
            c.poll(0.05)
        c.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=member, args=(i,)) for i in range(MEMBERS)]
    for t in threads:
        t.start()
    stable_at = None
    deadline = t0 + 120
    while time.perf_counter() < deadline:
        with lock:
            every = sorted(p for o in owned for p in o)
            if every == list(range(PARTITIONS)) and all(owned):
                stable_at = time.perf_counter() - t0
                break
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join()
    return stable_at


def commits_per_second(topic):
    group = f"commit-{uuid.uuid4().hex[:8]}"
    done = {"ok": 0, "err": 0}

    def on_commit(err, parts):
        done["err" if err else "ok"] += 1

    c = Consumer({"bootstrap.servers": BOOT, "group.id": group, "enable.auto.commit": False,
                  "on_commit": on_commit})
    c.subscribe([topic])
    deadline = time.time() + 60
    while not c.assignment() and time.time() < deadline:
        c.poll(0.1)
    parts = c.assignment()
    if not parts:
        raise SystemExit("the committing member got no partitions")
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < DUR:
        p = parts[n % len(parts)]
        c.commit(offsets=[TopicPartition(topic, p.partition, n)], asynchronous=False)
        n += 1
    sync_rate = n / (time.perf_counter() - t0)
    c.poll(0)
    done["ok"] = done["err"] = 0
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < DUR:
        p = parts[n % len(parts)]
        c.commit(offsets=[TopicPartition(topic, p.partition, n)], asynchronous=True)
        n += 1
        c.poll(0)
    while done["ok"] + done["err"] < n and time.perf_counter() - t0 < DUR + 30:
        c.poll(0.01)
    async_rate = done["ok"] / (time.perf_counter() - t0)
    errors = done["err"]
    c.close()
    return sync_rate, async_rate, errors


def main():
    topic = create_topic()
    stable = [time_to_stable(topic) for _ in range(ROUNDS)]
    sync_rate, async_rate, errors = commits_per_second(topic)
    print(json.dumps({"stable_s": stable, "commits_sync": sync_rate,
                      "commits_async": async_rate, "commit_errors": errors}))


if __name__ == "__main__":
    main()
