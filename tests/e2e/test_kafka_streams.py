"""A Kafka Streams 4.4 application with `processing.guarantee=exactly_once_v2` against
eddy (tests/e2e/java/StreamsEos.java: numbers re-keyed by their remainder modulo 4
through a repartition topic, counted per key in a state store with a compacted
changelog, every new count written out). The application is killed with SIGKILL
mid-stream and restarted on an empty state directory (its store restored from the
changelog), then eddy itself is killed with SIGKILL and restarted under it. The output
read at read_committed must be exact: each key's counts 1, 2, ..., 1000 once each, in
order, and the application's group committed at the input's end."""

import signal
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import javac, kafka_classpath, new_eddy, read_to_end

JAVA = Path(__file__).parent / "java" / "StreamsEos.java"
RECORDS = 4000
KEYS = 4


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def read_committed(bootstrap, topic):
    """Every record of `topic` at read_committed, from the start to the last stable
    offset: {key: [values in offset order]}."""
    out = defaultdict(list)
    for m in read_to_end(bootstrap, topic, isolation_level="read_committed"):
        out[m.key().decode()].append(int(m.value()))
    return out


class Watcher(threading.Thread):
    """Counts the output's records at read_committed as they come (an end-of-partition
    read cannot tell while the application keeps a transaction open)."""

    def __init__(self, bootstrap, topic, partitions):
        super().__init__(daemon=True)
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": name("watch"),
                           "isolation.level": "read_committed", "enable.auto.commit": False,
                           "reconnect.backoff.max.ms": 500})
        self.c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        self.seen = 0
        self.stopping = threading.Event()

    def run(self):
        try:
            while not self.stopping.is_set():
                m = self.c.poll(0.2)
                if m is not None and not m.error():
                    self.seen += 1
        finally:
            self.c.close()


class App:
    """One run of StreamsEos, its output in a file."""

    def __init__(self, bootstrap, app_id, src, dst, state, log):
        cp = kafka_classpath()
        self.log = log
        self.proc = subprocess.Popen(
            ["java", "-Xmx512m", "-cp", f"{javac(JAVA, cp)}:{cp}", "StreamsEos", bootstrap, app_id,
             src, dst, str(state)],
            stdout=open(log, "a"), stderr=subprocess.STDOUT)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def tail(self):
        return Path(self.log).read_text(errors="replace")[-4000:]


def wait_for(cond, timeout, what, app):
    deadline = time.time() + timeout
    while True:
        got = cond()
        if got:
            return got
        assert app.proc.poll() is None, f"the application exited while waiting for {what}:\n{app.tail()}"
        assert time.time() < deadline, f"timed out waiting for {what}:\n{app.tail()}"
        time.sleep(0.5)


def test_exactly_once_v2_through_an_application_kill_and_a_broker_kill(tmp_path):
    eddy = new_eddy(tmp_path / "eddy").start()
    app = None
    try:
        src, dst, app_id = name("streams-in"), name("streams-out"), name("streams-app")
        a = AdminClient({"bootstrap.servers": eddy.bootstrap})
        for f in a.create_topics([NewTopic(src, 2, 1), NewTopic(dst, 2, 1)]).values():
            f.result(30)
        # The input comes in while the application runs (about 200 records/s), so both
        # kills land mid-stream; idempotent, so a retry across the broker's kill cannot
        # put a number in twice.
        failed = []

        def feed(numbers):
            p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 5,
                          "enable.idempotence": True, "message.timeout.ms": 120000,
                          "reconnect.backoff.max.ms": 500})
            for i in numbers:
                p.produce(src, str(i).encode(), partition=i % 2,
                          on_delivery=lambda err, m: err and failed.append(err))
                if i % 20 == 19:
                    p.poll(0)
                    time.sleep(0.1)
            p.flush(120)

        half = RECORDS // 2
        first = threading.Thread(target=feed, args=(range(half),), daemon=True)
        second = threading.Thread(target=feed, args=(range(half, RECORDS),), daemon=True)

        watcher = Watcher(eddy.bootstrap, dst, 2)
        watcher.start()

        def done_at_least(n):
            return lambda: watcher.seen if watcher.seen >= n else None

        log = tmp_path / "streams.log"
        app = App(eddy.bootstrap, app_id, src, dst, tmp_path / "state-1", log)
        wait_for(lambda: "state RUNNING" in app.tail(), 120, "the application running", app)
        first.start()
        print("application killed at", wait_for(done_at_least(300), 180, "300 counts out", app),
              "counts out")
        app.kill()
        # A new instance on an empty state directory: its store comes back from the
        # changelog (read at read_committed), its transactional id fences the old one.
        app = App(eddy.bootstrap, app_id, src, dst, tmp_path / "state-2", log)
        wait_for(lambda: app.tail().count("state RUNNING") >= 2, 120, "the application back", app)
        first.join(timeout=120)
        second.start()
        print("eddy killed at", wait_for(done_at_least(half + 500), 180, "counts out", app),
              "counts out")
        eddy.stop(kill=True)
        eddy.start()
        per_key = RECORDS // KEYS

        def finished():
            got = read_committed(eddy.bootstrap, dst)
            return got if all(len(got.get(f"g{k}", [])) >= per_key for k in range(KEYS)) else None

        watcher.stopping.set()
        got = wait_for(finished, 240, "every key's last count", app)
        second.join(timeout=60)
        assert not failed, failed
        for k in range(KEYS):
            assert got[f"g{k}"] == list(range(1, per_key + 1)), \
                f"g{k}: {len(got[f'g{k}'])} counts, first differences " \
                f"{[(i, v) for i, v in enumerate(got[f'g{k}']) if v != i + 1][:5]}"

        def caught_up():
            c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": app_id})
            try:
                offs = c.committed([TopicPartition(src, 0), TopicPartition(src, 1)], timeout=10)
            finally:
                c.close()
            return [o.offset for o in offs] == [RECORDS // 2, RECORDS // 2]

        wait_for(caught_up, 60, "the application's offsets at the input's end", app)
    finally:
        if app is not None and app.proc.poll() is None:
            app.kill()
        eddy.stop()
