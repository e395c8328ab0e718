"""Apache Kafka 4.4's own command-line tools against eddy, run as their classes on the
jars scripts/kafka installs from Maven Central (what `bin/kafka-*.sh` run):
kafka-topics, kafka-configs, kafka-console-producer and -consumer, kafka-consumer-groups
(describe, and --reset-offsets to the earliest offset, by a shift, to a date-time),
kafka-get-offsets, kafka-transactions (list, describe, describe-producers,
find-hanging), kafka-acls (onto eddy's policies), kafka-producer-perf-test and
kafka-features. Each test checks what an operator reads off the tool's output, and
then the same fact through another client."""

import re
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from conftest import free_port, kafka_classpath, new_eddy

TOOLS = "org.apache.kafka.tools."


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def tool(cls, *args, stdin=None, check=True, timeout=120):
    """Runs a Kafka tool class (`TopicCommand`, `consumer.ConsoleConsumer`, ...): its
    exit code and output."""
    out = subprocess.run(["java", "-cp", kafka_classpath(), TOOLS + cls, *map(str, args)],
                         input=stdin, capture_output=True, text=True, timeout=timeout)
    if check:
        assert out.returncode == 0, f"{cls} {args} exited {out.returncode}\n{out.stdout}\n{out.stderr[-4000:]}"
    return out


def table(text):
    """The rows of a tool's whitespace-aligned table, as dicts by header."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    head = next(i for i, cols in enumerate(lines) if cols and cols[0] in ("GROUP", "Topic:", "TOPIC"))
    return [dict(zip(lines[head], cols)) for cols in lines[head + 1:] if len(cols) == len(lines[head])]


def test_kafka_topics_creates_lists_describes_alters_and_deletes(eddy):
    b, t = eddy.bootstrap, name("tools-topic")
    tool("TopicCommand", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", 3,
         "--replication-factor", 1, "--config", "retention.ms=3600000")
    assert t in tool("TopicCommand", "--bootstrap-server", b, "--list").stdout.split()
    d = tool("TopicCommand", "--bootstrap-server", b, "--describe", "--topic", t).stdout
    assert re.search(rf"Topic: {t}\s+TopicId: \S+\s+PartitionCount: 3\s+ReplicationFactor: 1", d), d
    assert "retention.ms=3600000" in d, d
    assert len(re.findall(rf"Topic: {t}\s+Partition: \d\s+Leader: \d+", d)) == 3, d
    tool("TopicCommand", "--bootstrap-server", b, "--alter", "--topic", t, "--partitions", 5)
    d = tool("TopicCommand", "--bootstrap-server", b, "--describe", "--topic", t).stdout
    assert "PartitionCount: 5" in d, d
    # A second create of the same name is refused with Kafka's message.
    again = tool("TopicCommand", "--bootstrap-server", b, "--create", "--topic", t, check=False)
    assert again.returncode != 0 and "already exists" in again.stdout + again.stderr
    tool("TopicCommand", "--bootstrap-server", b, "--delete", "--topic", t)
    md = AdminClient({"bootstrap.servers": b}).list_topics(timeout=10)
    assert t not in md.topics


def test_kafka_configs_alters_and_describes_topic_configs_and_client_quotas(eddy):
    b, t = eddy.bootstrap, name("tools-configs")
    tool("TopicCommand", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", 1)
    tool("ConfigCommand", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", t,
         "--alter", "--add-config", "retention.ms=7200000,cleanup.policy=compact")
    d = tool("ConfigCommand", "--bootstrap-server", b, "--entity-type", "topics",
             "--entity-name", t, "--describe").stdout
    assert "retention.ms=7200000" in d and "cleanup.policy=compact" in d, d
    tool("ConfigCommand", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", t,
         "--alter", "--delete-config", "cleanup.policy")
    d = tool("ConfigCommand", "--bootstrap-server", b, "--entity-type", "topics",
             "--entity-name", t, "--describe").stdout
    assert "retention.ms=7200000" in d and "cleanup.policy" not in d, d
    # An unknown config is refused, and nothing changes.
    bad = tool("ConfigCommand", "--bootstrap-server", b, "--entity-type", "topics",
               "--entity-name", t, "--alter", "--add-config", "no.such.config=1", check=False)
    assert bad.returncode != 0, bad.stdout
    user = name("quota-user")
    tool("ConfigCommand", "--bootstrap-server", b, "--entity-type", "users", "--entity-name", user,
         "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
    d = tool("ConfigCommand", "--bootstrap-server", b, "--entity-type", "users",
             "--entity-name", user, "--describe").stdout
    assert "producer_byte_rate=1048576.0" in d and "consumer_byte_rate=2097152.0" in d, d


def produce_lines(b, topic, lines):
    tool("ConsoleProducer", "--bootstrap-server", b, "--topic", topic,
         "--property", "parse.key=true", "--property", "key.separator=:",
         stdin="".join(f"{line}\n" for line in lines))


def consume(b, topic, n, *extra):
    out = tool("consumer.ConsoleConsumer", "--bootstrap-server", b, "--topic", topic,
               "--max-messages", n, "--timeout-ms", 30000, "--formatter-property", "print.key=true",
               "--formatter-property", "key.separator=:", *extra)
    return out.stdout.splitlines()


def describe_group(b, group):
    out = tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", b, "--describe",
               "--group", group)
    return {int(r["PARTITION"]): r for r in table(out.stdout)}


def test_console_producer_and_consumer_and_consumer_group_resets(eddy):
    """Lines with keys in through kafka-console-producer, out through
    kafka-console-consumer in a group; kafka-consumer-groups shows the group's offsets
    and lag, and --reset-offsets (to the earliest, by a shift, to a date-time) moves the
    group so that the next console consumer reads again from there."""
    b, t, g = eddy.bootstrap, name("tools-console"), name("tools-group")
    tool("TopicCommand", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", 1)
    lines = [f"k{i}:v{i}" for i in range(10)]
    produce_lines(b, t, lines)
    assert consume(b, t, 10, "--from-beginning", "--group", g) == lines
    assert g in tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", b,
                     "--list").stdout.split()
    row = describe_group(b, g)[0]
    assert (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"]) == ("10", "10", "0"), row

    # A dry run changes nothing; --execute moves the group.
    plan = tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", b, "--reset-offsets",
                "--group", g, "--topic", t, "--to-earliest", "--dry-run").stdout
    assert re.search(rf"{g}\s+{t}\s+0\s+0", plan), plan
    assert describe_group(b, g)[0]["CURRENT-OFFSET"] == "10"
    tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", b, "--reset-offsets",
         "--group", g, "--topic", t, "--to-earliest", "--execute")
    row = describe_group(b, g)[0]
    assert (row["CURRENT-OFFSET"], row["LAG"]) == ("0", "10"), row
    assert consume(b, t, 10, "--group", g) == lines

    tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", b, "--reset-offsets",
         "--group", g, "--topic", t, "--shift-by", -3, "--execute")
    assert describe_group(b, g)[0]["CURRENT-OFFSET"] == "7"
    assert consume(b, t, 3, "--group", g) == lines[7:]

    # To a date-time between the two batches: the offset of the first record at or after it.
    cut = time.time()
    time.sleep(0.05)
    later = [f"n{i}:w{i}" for i in range(3)]
    produce_lines(b, t, later)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(cut)) + f".{int(cut * 1000) % 1000:03d}Z"
    tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", b, "--reset-offsets",
         "--group", g, "--topic", t, "--to-datetime", stamp, "--execute")
    assert describe_group(b, g)[0]["CURRENT-OFFSET"] == "10"
    assert consume(b, t, 3, "--group", g) == later

    tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", b, "--delete", "--group", g)
    assert g not in tool("consumer.group.ConsumerGroupCommand", "--bootstrap-server", b,
                         "--list").stdout.split()


def test_kafka_get_offsets_and_producer_perf_test(eddy):
    """kafka-producer-perf-test sends its records with acks=all and reports them;
    kafka-get-offsets then gives each partition's latest and earliest offsets, which
    add up to the records sent."""
    b, t = eddy.bootstrap, name("tools-perf")
    tool("TopicCommand", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", 2)
    out = tool("ProducerPerformance", "--topic", t, "--num-records", 3000, "--record-size", 100,
               "--throughput", -1, "--producer-props", f"bootstrap.servers={b}", "acks=all").stdout
    assert re.search(r"^3000 records sent, [\d.]+ records/sec", out, re.M), out
    latest = dict(line.rsplit(":", 1) for line in tool(
        "GetOffsetShell", "--bootstrap-server", b, "--topic", t).stdout.split())
    assert sorted(latest) == [f"{t}:0", f"{t}:1"]
    assert sum(int(v) for v in latest.values()) == 3000, latest
    earliest = tool("GetOffsetShell", "--bootstrap-server", b, "--topic", t, "--time", -2).stdout
    assert sorted(earliest.split()) == [f"{t}:0:0", f"{t}:1:0"]


def test_kafka_transactions_lists_and_describes_an_open_transaction(eddy):
    """kafka-transactions on a transaction left open by a confluent-kafka producer:
    list shows it Ongoing, describe its producer, epoch and partition, and
    describe-producers the partition's producer with its transaction's first offset;
    find-hanging finds none (eddy writes a transaction's markers in one commit with its
    end, so none can hang), and `abort` of one partition is refused (eddy serves no
    WriteTxnMarkers) without harm: the transaction then commits, CompleteCommit."""
    b, t, tid = eddy.bootstrap, name("tools-txn"), name("tools-tid")
    tool("TopicCommand", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", 1)
    p = Producer({"bootstrap.servers": b, "transactional.id": tid})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(t, b"open", partition=0)
    p.flush(30)
    rows = {r.split()[0]: r.split() for r in tool(
        "TransactionsCommand", "--bootstrap-server", b, "list").stdout.splitlines()[1:]}
    assert tid in rows and rows[tid][-1] == "Ongoing", rows.get(tid)
    d = tool("TransactionsCommand", "--bootstrap-server", b, "describe",
             "--transactional-id", tid).stdout
    assert "Ongoing" in d and f"{t}-0" in d, d
    prod = tool("TransactionsCommand", "--bootstrap-server", b, "describe-producers",
                "--topic", t, "--partition", 0).stdout.splitlines()
    assert len(prod) == 2, prod
    head, row = prod[0].split(), prod[1].split()
    got = dict(zip(head, row))
    assert got["CurrentTransactionStartOffset"] == "0", got
    hanging = tool("TransactionsCommand", "--bootstrap-server", b, "find-hanging",
                   "--broker-id", 0).stdout
    assert len(hanging.strip().splitlines()) == 1 and "ProducerId" in hanging, hanging
    # Aborting one partition of a transaction by hand (Kafka's remedy for a hanging
    # one) is refused: eddy's coordinator ends a transaction everywhere at once.
    abort = tool("TransactionsCommand", "--bootstrap-server", b, "abort", "--topic", t,
                 "--partition", 0, "--start-offset", 0, check=False)
    assert abort.returncode != 0
    assert "does not support WRITE_TXN_MARKERS" in abort.stdout + abort.stderr, abort.stdout
    p.commit_transaction(30)
    d = tool("TransactionsCommand", "--bootstrap-server", b, "describe",
             "--transactional-id", tid).stdout
    assert "CompleteCommit" in d, d


def test_kafka_acls_become_policies_and_are_listed_and_removed(tmp_path):
    """kafka-acls as the administrator (over SASL/SCRAM) adds, lists and removes
    bindings, which eddy holds as policies (their enforcement and `eddy policy` view are
    checked in test_policies.py); an unauthenticated client is refused with Kafka's
    ClusterAuthorizationException and adds nothing."""
    server = new_eddy(tmp_path)
    server.sasl_port = free_port()
    server.kafka_listeners = [f"SASL_PLAINTEXT://127.0.0.1:{server.sasl_port}"]
    server.start()
    try:
        admin = tmp_path / "admin.properties"
        admin.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{server.access_key}" password="{server.secret_key}";\n')
        b = ["--bootstrap-server", f"127.0.0.1:{server.sasl_port}", "--command-config", admin]
        t, user = name("tools-acl"), f"User:{name('alice')}"
        binding = ["--allow-principal", user, "--operation", "Read", "--operation", "Describe",
                   "--topic", t]
        refused = tool("AclCommand", "--bootstrap-server", server.bootstrap, "--add", *binding,
                       check=False)
        assert refused.returncode != 0, refused.stdout
        assert "ClusterAuthorizationException" in refused.stdout + refused.stderr, refused.stdout
        assert user not in tool("AclCommand", *b, "--list", "--topic", t).stdout
        tool("AclCommand", *b, "--add", *binding)
        listed = tool("AclCommand", *b, "--list", "--topic", t).stdout
        assert f"principal={user}" in listed and "operation=READ" in listed, listed
        assert "operation=DESCRIBE" in listed and "permissionType=ALLOW" in listed, listed
        tool("AclCommand", *b, "--remove", "--force", *binding)
        assert user not in tool("AclCommand", *b, "--list", "--topic", t).stdout
    finally:
        server.stop()


def test_kafka_features_describes_the_transaction_version(eddy):
    out = tool("FeatureCommand", "--bootstrap-server", eddy.bootstrap, "describe").stdout
    line = next((l for l in out.splitlines() if "transaction.version" in l), None)
    assert line is not None, out
    assert re.search(r"SupportedMinVersion:\s*0\s+SupportedMaxVersion:\s*2\s+"
                     r"FinalizedVersionLevel:\s*2", line), line
