"""What an operator watches in /metrics besides the counters: a topic's stored bytes and
a consumer group's lag per topic, read from the catalog at each scrape: the lag rises as
records are produced, falls as the group commits, and a topic's size grows with it."""

import re
import uuid

import requests
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def gauge(eddy, name, **labels):
    """The value of one sample of `name` with exactly `labels` (None: no such sample)."""
    text = requests.get(f"{eddy.http_url}/metrics", timeout=30).text
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        m = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if m and ",".join(sorted(m.group(1).split(","))) == want:
            return float(m.group(2))
    return None


def commit(eddy, group, topic, offset):
    """Sets the group's committed offset (an empty group, as an operator's reset does)."""
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    futures = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, offset)])])
    for f in futures.values():
        f.result(timeout=30)


def test_topic_bytes_and_group_lag(eddy):
    topic, group = f"lag_{uuid.uuid4().hex[:8]}", f"g_{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    assert gauge(eddy, "eddy_kafka_topic_bytes", topic=topic) == 0
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for i in range(10):
        p.produce(topic, f"record {i}".encode(), partition=0)
    assert p.flush(30) == 0
    size = gauge(eddy, "eddy_kafka_topic_bytes", topic=topic)
    assert size > 10 * len("record 0")
    assert gauge(eddy, "eddy_kafka_group_lag", group=group, topic=topic) is None
    commit(eddy, group, topic, 4)
    assert gauge(eddy, "eddy_kafka_group_lag", group=group, topic=topic) == 6
    for i in range(5):
        p.produce(topic, b"more", partition=0)
    assert p.flush(30) == 0
    assert gauge(eddy, "eddy_kafka_group_lag", group=group, topic=topic) == 11
    assert gauge(eddy, "eddy_kafka_topic_bytes", topic=topic) > size
    commit(eddy, group, topic, 15)
    assert gauge(eddy, "eddy_kafka_group_lag", group=group, topic=topic) == 0
