"""One consumer-group member in its own process, so a test can run several and kill one
with SIGKILL. It subscribes with confluent-kafka or kafka-python and prints one JSON line
per event on stdout: `assign` / `revoke` (the partitions in that callback and the
member's whole assignment after it; `tps` and `owned_tps` as [topic, partition] pairs),
`error`, `ready` once subscribed and `closed` after a SIGTERM closed the consumer. `m`
is CLOCK_MONOTONIC, the same clock in every process, so a test can order the events of
several members. With `--protocol consumer` the member uses KIP-848's consumer group
protocol (`group.protocol=consumer`, the server-side assignor `--assignor`)."""

import argparse
import json
import os
import signal
import sys
import time


def emit(event, **fields):
    print(json.dumps({"event": event, "t": time.time(), "m": time.monotonic(), **fields}),
          flush=True)


class Stop(Exception):
    """SIGTERM: close the consumer (a static member leaves with epoch -2) and exit."""


def on_sigterm(signum, frame):
    raise Stop()


def run_confluent(args):
    from confluent_kafka import Consumer

    owned = set()

    def change(event, partitions):
        tps = sorted([p.topic, p.partition] for p in partitions)
        if event == "assign":
            owned.update(map(tuple, tps))
        else:
            owned.difference_update(map(tuple, tps))
        emit(event, partitions=sorted(p for _, p in tps), owned=sorted(p for _, p in owned),
             tps=tps, owned_tps=sorted(map(list, owned)))

    def on_assign(consumer, partitions):
        change("assign", partitions)

    def on_revoke(consumer, partitions):
        change("revoke", partitions)

    def on_error(err):
        emit("error", code=err.code(), name=err.name(), fatal=err.fatal(), text=err.str())

    conf = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "error_cb": on_error,
    }
    if args.protocol == "consumer":
        conf["group.protocol"] = "consumer"
        if args.assignor:
            conf["group.remote.assignor"] = args.assignor
    else:
        conf.update({"session.timeout.ms": args.session_ms, "heartbeat.interval.ms": 500,
                     "partition.assignment.strategy": args.strategy})
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    if os.environ.get("GROUP_MEMBER_DEBUG"):
        conf["debug"] = os.environ["GROUP_MEMBER_DEBUG"]
    consumer = Consumer(conf)
    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    signal.signal(signal.SIGTERM, on_sigterm)
    emit("ready")
    try:
        while True:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error():
                err = msg.error()
                emit("error", code=err.code(), name=err.name(), fatal=err.fatal(), text=err.str())
    except Stop:
        consumer.close()
        emit("closed")


def run_kafka_python(args):
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    owned = set()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):
            owned.update(p.partition for p in assigned)
            emit("assign", partitions=sorted(p.partition for p in assigned), owned=sorted(owned))

        def on_partitions_revoked(self, revoked):
            owned.difference_update(p.partition for p in revoked)
            emit("revoke", partitions=sorted(p.partition for p in revoked), owned=sorted(owned))

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap.split(","),
        group_id=args.group,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=500,
    )
    consumer.subscribe([args.topic], listener=Listener())
    emit("ready")
    while True:
        consumer.poll(timeout_ms=200)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--client", choices=["confluent", "kafka-python"], default="confluent")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--strategy", default="range,roundrobin")
    p.add_argument("--instance-id")
    p.add_argument("--session-ms", type=int, default=6000)
    p.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    p.add_argument("--assignor", help="KIP-848 server assignor (uniform, range)")
    args = p.parse_args()
    try:
        if args.client == "confluent":
            run_confluent(args)
        else:
            run_kafka_python(args)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
