"""The audit trail: administrative changes and refused requests of every protocol, with
who, what, when and from where, appended to the `__eddy_audit` topic and read back with
a Kafka consumer. A policy change made through the admin API (the CLI), a refused S3
request, a Kafka produce refused by a policy, a topic created over SASL, a failed SASL login, a refused Iceberg token, a
namespace made through the REST catalog and a schema registry request with a wrong
secret each appear with their principal; clients cannot write the trail."""

import json
import time
import uuid

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from test_iceberg import catalog
from test_policies import (bob, create, create_as, eddy, ok, produce, put_policy,  # noqa: F401
                           sasl, statement)

TOPIC = "__eddy_audit"


def trail(eddy, want, timeout=30):
    """The trail's events, read from the start until `want(events)` holds."""
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": f"audit-{uuid.uuid4().hex}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    events, deadline = [], time.time() + timeout
    try:
        while not want(events):
            assert time.time() < deadline, f"not in the trail: {events[-20:]}"
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            e = json.loads(m.value())
            assert m.key() == (e["principal"].encode() if e["principal"] else None)
            events.append(e)
    finally:
        c.close()
    return events


def has(**fields):
    return lambda events: any(all(e.get(k) == v for k, v in fields.items()) for e in events)


def s3(eddy, key, secret):
    return boto3.client("s3", endpoint_url=eddy.s3_url, aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def test_a_policy_change_and_refused_requests_are_in_the_trail(eddy, bob, tmp_path):
    policy = f"audit-{uuid.uuid4().hex[:6]}"
    put_policy(eddy, tmp_path, policy, statement("Deny", "s3:PutObject", "arn:aws:s3:::*"), "bob")
    events = trail(eddy, has(action=f"PUT /admin/v1/policies/{policy}", outcome="changed"))
    change = next(e for e in events if e["action"] == f"PUT /admin/v1/policies/{policy}")
    assert change["principal"] == eddy.access_key and change["protocol"] == "admin"
    assert change["source"].startswith("127.0.0.1:")
    assert abs(change["time_ms"] / 1000 - time.time()) < 120

    bucket = f"audit-{uuid.uuid4().hex[:8]}"
    s3(eddy, eddy.access_key, eddy.secret_key).create_bucket(Bucket=bucket)
    with pytest.raises(ClientError) as refused:
        s3(eddy, "bob", "bob-s3-secret").put_object(Bucket=bucket, Key="k", Body=b"x")
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    events = trail(eddy, has(protocol="s3", principal="bob", outcome="refused"))
    e = next(e for e in events if e["protocol"] == "s3" and e["principal"] == "bob")
    assert e["action"] == "s3:PutObject" and e["resource"] == f"arn:aws:s3:::{bucket}/k"
    assert e["source"] == "127.0.0.1"
    # A bucket's creation and a change of its configuration, by the administrator.
    s3(eddy, eddy.access_key, eddy.secret_key).put_bucket_versioning(
        Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for op in ("s3:CreateBucket", "s3:PutBucketVersioning"):
        trail(eddy, has(protocol="s3", principal=eddy.access_key, action=op, outcome="changed",
                        resource=f"arn:aws:s3:::{bucket}"))
    # A wrong secret: refused before any policy, named by the key it claims.
    with pytest.raises(ClientError):
        s3(eddy, "bob", "not-bobs-secret").list_objects_v2(Bucket=bucket)
    trail(eddy, has(protocol="s3", principal="bob", action=f"GET /{bucket}", outcome="refused"))

    topic = f"audit-{uuid.uuid4().hex[:8]}"
    create(eddy, topic)
    put_policy(eddy, tmp_path, f"{policy}-kafka", statement("Deny", "KafkaWrite"), "bob")
    assert produce(bob, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    trail(eddy, has(protocol="kafka", principal="bob", action="KafkaWrite", outcome="refused"))

    # Kafka's own administrative changes, by the SASL principal that made them.
    made = f"audit-made-{uuid.uuid4().hex[:8]}"
    assert create_as(bob, made) is None
    trail(eddy, has(protocol="kafka", principal="bob", action="CreateTopics", outcome="changed",
                    resource=f"vast:kafka:topic:default:{made}"))

    # ACLs made and deleted by the administrator over SCRAM.
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AdminClient,
                                       AclPermissionType, ResourcePatternType, ResourceType)
    admin = AdminClient(sasl(eddy, eddy.access_key, eddy.secret_key, "SCRAM-SHA-512"))
    binding = AclBinding(ResourceType.TOPIC, made, ResourcePatternType.LITERAL, "User:carol", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    admin.create_acls([binding])[binding].result(30)
    flt = AclBindingFilter(ResourceType.TOPIC, made, ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    admin.delete_acls([flt])[flt].result(30)
    for action in ("CreateAcls", "DeleteAcls"):
        events = trail(eddy, has(protocol="kafka", principal=eddy.access_key, action=action))
        acl = next(e for e in events if e["action"] == action)
        assert f"name={made}" in acl["resource"] and "principal=User:carol" in acl["resource"]

    # A SASL authentication that fails, named by the user it claims.
    wrong = Producer({**bob, "sasl.password": "not-bobs-password", "reconnect.backoff.ms": 1000})
    wrong.poll(0)  # connects, and fails to authenticate
    trail(eddy, has(protocol="kafka", principal="bob", action="SaslAuthenticate", outcome="refused"))
    del wrong

    # The Iceberg REST catalog: a token refused for a wrong secret, a namespace made.
    r = requests.post(f"{eddy.http_url}/iceberg/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": "bob", "client_secret": "wrong"})
    assert r.status_code == 401
    trail(eddy, has(protocol="iceberg", principal="bob", outcome="refused"))
    ns = f"audit_{uuid.uuid4().hex[:8]}"
    catalog(eddy).create_namespace(ns)
    trail(eddy, has(protocol="iceberg", principal=eddy.access_key, outcome="changed",
                    action="POST /iceberg/v1/namespaces"))

    r = requests.get(f"{eddy.http_url}/schema-registry/subjects", auth=("bob", "wrong"), timeout=30)
    assert r.status_code == 401
    trail(eddy, has(protocol="schema-registry", principal="bob", outcome="refused"))


def test_clients_cannot_write_the_trail(eddy):
    conf = {"bootstrap.servers": eddy.bootstrap}
    trail(eddy, lambda events: True)  # the topic exists from the start
    assert produce(conf, TOPIC) == KafkaError.TOPIC_EXCEPTION
