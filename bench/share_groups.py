"""Share group (KIP-932) consume rate, Eddy and Apache Kafka 4.4 side by side in one run.

    .venv/bin/python bench/share_groups.py [--records N] [--cases 1x4,1x16,4x4,4x16]

Kafka's own ShareConsumerPerformance (kafka-tools 4.4, implicit acknowledgement, one
share consumer per thread) reads N records of 100 bytes from a fresh topic of P
partitions with C consumers in one share group whose `share.auto.offset.reset` is
`earliest` (set with the Admin client); the rate is the tool's nMsg.sec, and the
server's CPU seconds over the run come from /proc. Each case runs against Eddy (the
binary in EDDY_BIN, embedded catalog, 4+2 over six directories) and against a single
Apache Kafka 4.4 KRaft node at its defaults (scripts/kafka), one system at a time, on the
same disk and cores as the clients.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers"))
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))

from compare import create_topic, kafka_tool, start_eddy, start_kafka  # noqa: E402
from test_share_groups import java  # noqa: E402


def produce(bootstrap, topic, records, partitions):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    value = b"x" * 100
    for i in range(records):
        p.produce(topic, value, partition=i % partitions)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def rate(output):
    """nMsg.sec and MB.sec of ShareConsumerPerformance's summary line."""
    lines = [l for l in output.splitlines() if l.strip()]
    header = next(i for i, l in enumerate(lines) if l.startswith("start.time"))
    names = [n.strip() for n in lines[header].split(",")]
    values = [v.strip() for v in lines[header + 1].split(",")]
    row = dict(zip(names, values))
    if "nMsg.sec" not in row:
        raise RuntimeError(f"ShareConsumerPerformance gave no rate:\n{output[-3000:]}")
    return float(row["nMsg.sec"]), float(row["MB.sec"])


def run_case(server, out, partitions, consumers, records):
    topic = f"share-{partitions}x{consumers}-{int(time.time())}"
    group = f"g-{topic}"
    create_topic(server.bootstrap, topic, partitions)
    produce(server.bootstrap, topic, records, partitions)
    java("config", server.bootstrap, group, "share.auto.offset.reset=earliest")
    cpu0 = server.cpu()
    t0 = time.time()
    text = kafka_tool("org.apache.kafka.tools.ShareConsumerPerformance",
                      "--bootstrap-server", server.bootstrap, "--topic", topic, "--group", group,
                      "--num-records", records, "--threads", consumers, "--timeout", 30000,
                      out_file=out / f"{server.name}-{partitions}x{consumers}.txt")
    seconds = time.time() - t0
    cpu = server.cpu() - cpu0
    msgs, mbs = rate(text)
    return msgs, mbs, cpu, seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--cases", default="1x4,1x16,4x4,4x16")
    args = ap.parse_args()
    cases = [tuple(int(x) for x in c.split("x")) for c in args.cases.split(",")]
    results = {}
    with tempfile.TemporaryDirectory(prefix="share-bench-") as tmp:
        out = Path(tmp)
        for system in ("eddy", "kafka"):
            data = out / system
            data.mkdir()
            server = start_eddy(data, out) if system == "eddy" else start_kafka("kafka", data, out)
            try:
                for p, c in cases:
                    # The tool sometimes ends with "Timeout waiting for results" and no
                    # summary when it interrupts its threads at the end (seen with both
                    # systems): such a run is repeated on a fresh topic, and counted.
                    for attempt in range(3):
                        try:
                            results[(system, p, c)] = run_case(server, out, p, c, args.records)
                            break
                        except RuntimeError as e:
                            print(f"{system} {p}x{c}: run {attempt + 1} gave no summary: "
                                  f"{str(e).splitlines()[-1]}", flush=True)
                    else:
                        results[(system, p, c)] = None
                    print(system, p, c, results[(system, p, c)], flush=True)
            finally:
                server.stop()
    print(f"\n| partitions x consumers | Eddy records/s | Kafka records/s | Eddy vs Kafka | "
          f"server CPU s Eddy / Kafka |")
    print("|---|---|---|---|---|")
    for p, c in cases:
        e, k = results[("eddy", p, c)], results[("kafka", p, c)]
        if e is None or k is None:
            print(f"| {p} x {c} | {'no summary in 3 runs' if e is None else f'{e[0]:,.0f}'} | "
                  f"{'no summary in 3 runs' if k is None else f'{k[0]:,.0f}'} | - | - |")
            continue
        print(f"| {p} x {c} | {e[0]:,.0f} | {k[0]:,.0f} | {e[0] / k[0]:.2f}x | "
              f"{e[2]:.1f} / {k[2]:.1f} |")


if __name__ == "__main__":
    main()
