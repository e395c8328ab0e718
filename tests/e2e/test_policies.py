"""Users and policies with real clients. Users are made with `eddy user` (S3 keys and a
Kafka password that becomes SCRAM credentials in the catalog), identity policies with
`eddy policy`; confluent-kafka and kafka-python over SASL see TOPIC_AUTHORIZATION_FAILED,
GROUP_AUTHORIZATION_FAILED and CLUSTER_AUTHORIZATION_FAILED where a policy denies (the
policy matrix: each API family under Allow, Deny and no statement, and the documents'
example policy); boto3, aws-cli and unsigned HTTP see AccessDenied where an identity or
bucket policy denies, including through a presigned URL, and an anonymous GET works
where a bucket policy grants it. Changes take effect at once and survive a restart."""

import json
import subprocess
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

import s3util
from conftest import eddy_bin, free_port, metric, new_eddy

USERS = """
[[users]]
access_key = "alice"
secret_key = "alice-secret"
"""


def name(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def start(tmp: Path, *extra):
    """A server with a PLAINTEXT and a SASL_PLAINTEXT listener; `eddyadmin` is the
    administrator and `alice` a user of the config file."""
    (tmp / "eddy.toml").write_text(USERS)
    server = new_eddy(tmp, extra_args=["--config", str(tmp / "eddy.toml"), *extra])
    server.sasl_port = free_port()
    server.kafka_listeners = [f"SASL_PLAINTEXT://127.0.0.1:{server.sasl_port}"]
    return server.start()


@pytest.fixture(scope="module")
def eddy(tmp_path_factory):
    server = start(tmp_path_factory.mktemp("policies"))
    yield server
    server.stop()


def cli(eddy, *args, access_key=None, secret_key=None):
    """`eddy ARGS --url ...` as the administrator (or the given user): (exit code,
    stdout, stderr)."""
    env = {"EDDY_ACCESS_KEY": access_key or eddy.access_key,
           "EDDY_SECRET_KEY": secret_key or eddy.secret_key, "PATH": "/usr/bin:/bin"}
    p = subprocess.run([eddy_bin(), args[0], "--url", eddy.http_url, *args[1:]], capture_output=True,
                       text=True, timeout=60, env=env)
    return p.returncode, p.stdout, p.stderr


def ok(eddy, *args):
    code, out, err = cli(eddy, *args)
    assert code == 0, err
    return json.loads(out) if out.strip() else None


def put_policy(eddy, tmp_path, policy, document, *attach):
    f = tmp_path / f"{policy}.json"
    f.write_text(json.dumps(document))
    return ok(eddy, "policy", "put", policy, "--file", str(f), *(["--attach", *attach] if attach else []))


def statement(effect, action, resource="*"):
    return {"Version": "2012-10-17", "Statement": [
        {"Sid": "s1", "Effect": effect, "Action": action, "Resource": resource}]}


def sasl(eddy, user, password, mechanism="SCRAM-SHA-256"):
    return {"bootstrap.servers": f"127.0.0.1:{eddy.sasl_port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


@pytest.fixture(scope="module")
def bob(eddy):
    """A user made with the CLI: S3 keys and a Kafka password."""
    ok(eddy, "user", "put", "bob", "--s3-secret", "bob-s3-secret", "--kafka-password", "bob-pw")
    return sasl(eddy, "bob", "bob-pw")


def admin_conf(eddy):
    return {"bootstrap.servers": eddy.bootstrap}


def create(eddy, topic, partitions=1):
    a = AdminClient(admin_conf(eddy))
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def create_as(conf, topic):
    """Creates a topic as `conf`'s user: None, or the error's code."""
    a = AdminClient(conf)
    return admin_error(a.create_topics([NewTopic(topic, 1, 1)])[topic])


def delete_as(conf, topic):
    """Deletes a topic as `conf`'s user: None, or the error's code."""
    a = AdminClient(conf)
    return admin_error(a.delete_topics([topic])[topic])


def produce(conf, topic):
    """Produces one record: None, or the delivery error's code."""
    p = Producer({**conf, "message.timeout.ms": 5000})
    errors = []
    p.produce(topic, value=b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert errors, "no delivery report"
    return errors[0].code() if errors[0] is not None else None


def consume(conf, topic, group=None):
    """Reads from a topic holding at least one record: None when a record arrives, or
    the error's code."""
    c = Consumer({**conf, "group.id": group or name("g"), "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        if group is None:
            c.assign([TopicPartition(topic, 0, 0)])
        else:
            c.subscribe([topic])
        for _ in range(30):
            m = c.poll(1)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                return m.error().code()
            return None
        raise AssertionError("neither a record nor an error")
    finally:
        c.close()


def admin_error(future):
    try:
        future.result(30)
        return None
    except KafkaException as e:
        return e.args[0].code()


# --- Kafka: the policy matrix --------------------------------------------------------

FAMILIES = {
    # family: (action, what the client sees when it is denied)
    "produce": ("KafkaWrite", KafkaError.TOPIC_AUTHORIZATION_FAILED),
    "fetch": ("KafkaRead", KafkaError.TOPIC_AUTHORIZATION_FAILED),
    "describe": ("KafkaDescribe", KafkaError.TOPIC_AUTHORIZATION_FAILED),
    "create": ("KafkaCreate", KafkaError.TOPIC_AUTHORIZATION_FAILED),
    "delete": ("KafkaDelete", KafkaError.TOPIC_AUTHORIZATION_FAILED),
    "group": ("KafkaRead", KafkaError.GROUP_AUTHORIZATION_FAILED),
}


def run_family(eddy, conf, family, topic):
    """Does what the family names as `conf`'s user: None on success, else the code."""
    if family == "produce":
        return produce(conf, topic)
    if family == "fetch":
        return consume(conf, topic)
    if family == "describe":
        a = AdminClient(conf)
        t = a.list_topics(topic=topic, timeout=10).topics[topic]
        return t.error.code() if t.error is not None else None
    if family == "create":
        return create_as(conf, name(f"{topic}-new"))
    if family == "delete":
        return delete_as(conf, topic)
    if family == "group":
        return consume(conf, topic, group=name("grp"))
    raise ValueError(family)


@pytest.mark.parametrize("effect", ["Allow", "Deny", None])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_policy_matrix(eddy, bob, tmp_path, family, effect):
    """Each API family under an Allow, a Deny and no statement: allowed, refused with
    Kafka's authorization error, allowed (the documents' default)."""
    topic = name(f"m-{family}")
    create(eddy, topic)
    assert produce(admin_conf(eddy), topic) is None
    action, denied = FAMILIES[family]
    resource = (f"vast:kafka:group:default:*" if family == "group"
                else f"vast:kafka:topic:default:{topic}*")
    policy = name("matrix")
    if effect is not None:
        put_policy(eddy, tmp_path, policy, statement(effect, action, resource), "bob")
    try:
        got = run_family(eddy, bob, family, topic)
        assert got == (denied if effect == "Deny" else None), (family, effect, got)
    finally:
        if effect is not None:
            ok(eddy, "policy", "delete", policy)
    # The policy is gone: what it denied works again at once.
    if effect == "Deny" and family not in ("create", "delete"):
        assert run_family(eddy, bob, family, topic) is None


def test_the_documents_example_policy(eddy, tmp_path):
    """Read and write allowed, create and delete denied: a producer and a consumer work,
    an admin client cannot create or delete topics, and metadata still lists them."""
    ok(eddy, "user", "put", "reader", "--kafka-password", "reader-pw")
    conf = sasl(eddy, "reader", "reader-pw", "SCRAM-SHA-512")
    put_policy(eddy, tmp_path, name("example"), {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["KafkaRead", "KafkaWrite"], "Resource": "vast:kafka:topic:*"},
            {"Effect": "Deny", "Action": ["KafkaCreate", "KafkaDelete"], "Resource": "*"},
        ]}, "reader")
    topic = name("example")
    create(eddy, topic, 2)
    assert produce(conf, topic) is None
    assert consume(conf, topic, group=name("example-group")) is None
    admin = AdminClient(conf)
    new = name("not-created")
    assert admin_error(admin.create_topics([NewTopic(new, 1, 1)])[new]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert admin_error(admin.delete_topics([topic])[topic]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert admin_error(admin.create_partitions([NewPartitions(topic, 4)])[topic]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert topic in admin.list_topics(timeout=10).topics
    assert new not in AdminClient(admin_conf(eddy)).list_topics(timeout=10).topics


def test_topics_the_principal_may_not_describe_are_left_out_of_listings(eddy, bob, tmp_path):
    hidden, shown = name("hidden"), name("shown")
    create(eddy, hidden)
    create(eddy, shown)
    policy = name("hide")
    put_policy(eddy, tmp_path, policy, statement("Deny", "KafkaDescribe", f"vast:kafka:topic:default:{hidden}"), "bob")
    try:
        topics = AdminClient(bob).list_topics(timeout=10).topics
        assert shown in topics and hidden not in topics
        assert hidden in AdminClient(admin_conf(eddy)).list_topics(timeout=10).topics
        assert metric(eddy, "eddy_kafka_authorization_refusals") > 0
    finally:
        ok(eddy, "policy", "delete", policy)


def test_kafka_python_sees_the_refusal(eddy, bob, tmp_path):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError
    topic = name("kp")
    create(eddy, topic)
    policy = name("kp-deny")
    put_policy(eddy, tmp_path, policy, statement("Deny", "KafkaWrite", f"vast:kafka:topic:default:{topic}"), "bob")
    try:
        p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{eddy.sasl_port}", security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="bob",
                          sasl_plain_password="bob-pw", max_block_ms=10000)
        with pytest.raises(TopicAuthorizationFailedError):
            p.send(topic, b"v").get(timeout=15)
        p.close()
    finally:
        ok(eddy, "policy", "delete", policy)


def test_a_policy_on_everyone_applies_to_anonymous_clients(eddy, tmp_path):
    """`*` attaches a policy to every principal, ANONYMOUS (the plaintext listener)
    included; quota changes are a cluster action."""
    policy = name("everyone")
    topic = name("anon")
    create(eddy, topic)
    put_policy(eddy, tmp_path, policy, {"Statement": [
        {"Effect": "Deny", "Action": "KafkaWrite", "Resource": f"vast:kafka:topic:default:{topic}"}]}, "*")
    try:
        assert produce(admin_conf(eddy), topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        ok(eddy, "policy", "delete", policy)
    assert produce(admin_conf(eddy), topic) is None


def test_the_administrator_is_never_refused_by_a_policy(tmp_path):
    """The administrator is Kafka's super user: with `--kafka-deny-unless-allowed` and
    no statement, and with a Deny of every Kafka action attached to them, they still
    create, produce, consume and delete, so no policy locks them out of the broker;
    the same Deny still refuses another user."""
    server = start(tmp_path, "--kafka-deny-unless-allowed")
    try:
        admin = sasl(server, server.access_key, server.secret_key)
        topic = name("super")
        assert create_as(admin, topic) is None
        assert produce(admin, topic) is None
        ok(server, "user", "put", "erin", "--kafka-password", "erin-pw")
        put_policy(server, tmp_path, "deny-all", statement("Deny", "Kafka*"), server.access_key, "erin")
        assert produce(admin, topic) is None
        assert consume(admin, topic, group=name("super-g")) is None
        assert delete_as(admin, topic) is None
        assert create_as(sasl(server, "erin", "erin-pw"), name("erin")) == \
            KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        server.stop()


def test_deny_unless_allowed_refuses_what_no_statement_allows(tmp_path):
    server = start(tmp_path, "--kafka-deny-unless-allowed")
    try:
        ok(server, "user", "put", "dave", "--kafka-password", "dave-pw")
        conf = sasl(server, "dave", "dave-pw")
        topic = name("strict")
        assert create_as(conf, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
        put_policy(server, tmp_path, "dave-all", statement("Allow", "Kafka*"), "dave")
        assert create_as(conf, topic) is None
        assert produce(conf, topic) is None
        assert consume(conf, topic, group=name("strict-g")) is None
        # ANONYMOUS has no statement: refused.
        assert produce(admin_conf(server), topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        server.stop()


# --- Users ---------------------------------------------------------------------------

def test_users_made_with_the_cli_use_s3_and_kafka_and_survive_a_restart(tmp_path):
    server = start(tmp_path)
    try:
        made = ok(server, "user", "put", "carol", "--s3-secret", "carol-s3-secret",
                  "--kafka-password", "carol-pw")
        assert made["s3"] is True
        assert sorted(c["mechanism"] for c in made["scram"]) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert all(c["iterations"] >= 4096 for c in made["scram"])
        listed = ok(server, "user", "list")["users"]
        assert [u["name"] for u in listed] == sorted(u["name"] for u in listed)
        assert {"alice", "carol", "eddyadmin"} <= {u["name"] for u in listed}
        assert next(u for u in listed if u["name"] == "eddyadmin")["admin"] is True
        assert "carol-pw" not in json.dumps(listed) and "carol-s3-secret" not in json.dumps(listed)

        s3 = s3util.client(server, "carol", "carol-s3-secret")
        bucket = s3util.new_bucket(s3, "carol")
        s3.put_object(Bucket=bucket, Key="k", Body=b"carol's")
        topic = name("carol")
        create(server, topic)
        assert produce(sasl(server, "carol", "carol-pw", "SCRAM-SHA-512"), topic) is None
        assert produce(sasl(server, "carol", "carol-pw", "PLAIN"), topic) is None

        # Only the administrator manages users; a config file's user is changed there.
        code, _, err = cli(server, "user", "list", access_key="carol", secret_key="carol-s3-secret")
        assert code != 0 and "403" in err and "not the administrator" in err
        code, _, err = cli(server, "user", "put", "alice", "--kafka-password", "x")
        assert code != 0 and "config file" in err

        server.restart()
        s3 = s3util.client(server, "carol", "carol-s3-secret")
        assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"carol's"
        assert produce(sasl(server, "carol", "carol-pw", "SCRAM-SHA-256"), topic) is None

        # A new password replaces the old one at once.
        ok(server, "user", "put", "carol", "--kafka-password", "carol-pw-2")
        assert produce(sasl(server, "carol", "carol-pw-2"), topic) is None
        assert produce(sasl(server, "carol", "carol-pw"), topic) in (
            KafkaError._AUTHENTICATION, KafkaError._MSG_TIMED_OUT), "the old password still authenticates"

        ok(server, "user", "delete", "carol")
        with pytest.raises(ClientError) as e:
            s3.list_buckets()
        assert s3util.error_code(e) == "InvalidAccessKeyId"
    finally:
        server.stop()


# --- S3 ------------------------------------------------------------------------------

def unsigned_get(eddy, path):
    """A GET without credentials, with curl: (status, body)."""
    out = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", f"{eddy.s3_url}/{path}"],
                         capture_output=True, timeout=30, check=True)
    body, _, code = out.stdout.rpartition(b"\n")
    return int(code), body


def test_a_bucket_policy_grants_anonymous_reads_of_a_prefix(eddy):
    s3 = s3util.client(eddy)
    bucket = s3util.new_bucket(s3, "public")
    s3.put_object(Bucket=bucket, Key="public/logo.txt", Body=b"hello world")
    s3.put_object(Bucket=bucket, Key="private/secret.txt", Body=b"secret")
    assert unsigned_get(eddy, f"{bucket}/public/logo.txt")[0] == 403
    policy = {"Version": "2012-10-17", "Statement": [{
        "Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
        "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/public/*"}]}
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == policy
    assert unsigned_get(eddy, f"{bucket}/public/logo.txt") == (200, b"hello world")
    status, body = unsigned_get(eddy, f"{bucket}/private/secret.txt")
    assert status == 403 and b"<Code>AccessDenied</Code>" in body
    assert unsigned_get(eddy, f"{bucket}?list-type=2")[0] == 403
    # Another signed-in user is not "the public" plus more: the grant is to everyone.
    s3.delete_bucket_policy(Bucket=bucket)
    assert unsigned_get(eddy, f"{bucket}/public/logo.txt")[0] == 403
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=bucket)
    assert s3util.error_code(e) == "NoSuchBucketPolicy"


def test_malformed_bucket_policies_are_refused(eddy):
    s3 = s3util.client(eddy)
    bucket = s3util.new_bucket(s3, "malformed")
    for bad in ["not json", json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                                                        "Resource": "*"}]}),
                json.dumps({"Statement": [{"Effect": "allow", "Principal": "*",
                                           "Action": "s3:GetObject", "Resource": "*"}]})]:
        with pytest.raises(ClientError) as e:
            s3.put_bucket_policy(Bucket=bucket, Policy=bad)
        assert s3util.error_code(e) == "MalformedPolicy", bad
    with pytest.raises(ClientError) as e:
        s3.get_bucket_policy(Bucket=bucket)
    assert s3util.error_code(e) == "NoSuchBucketPolicy"


def test_an_identity_policy_denies_delete_on_every_path(eddy, bob, tmp_path):
    """boto3 DeleteObject and DeleteObjects, aws-cli and a presigned URL: all refused,
    and the object is still there."""
    s3 = s3util.client(eddy, "bob", "bob-s3-secret")
    bucket = s3util.new_bucket(s3, "bob")
    s3.put_object(Bucket=bucket, Key="keep", Body=b"kept")
    policy = name("no-delete")
    put_policy(eddy, tmp_path, policy, statement("Deny", "s3:DeleteObject", "arn:aws:s3:::*"), "bob")
    try:
        with pytest.raises(ClientError) as e:
            s3.delete_object(Bucket=bucket, Key="keep")
        assert s3util.error_code(e) == "AccessDenied"
        r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "keep"}]})
        assert [x["Code"] for x in r.get("Errors", [])] == ["AccessDenied"]
        url = s3.generate_presigned_url("delete_object", Params={"Bucket": bucket, "Key": "keep"})
        req = urllib.request.Request(url, method="DELETE")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 403
        aws = s3util.aws(eddy, "s3", "rm", f"s3://{bucket}/keep",
                         access_key="bob", secret_key="bob-s3-secret", check=False)
        assert aws.returncode != 0 and "AccessDenied" in aws.stderr
        assert s3.get_object(Bucket=bucket, Key="keep")["Body"].read() == b"kept"
        s3.put_object(Bucket=bucket, Key="other", Body=b"writes still work")
    finally:
        ok(eddy, "policy", "delete", policy)
    s3.delete_object(Bucket=bucket, Key="keep")


def test_a_presigned_url_of_a_denied_user_is_refused(eddy, bob, tmp_path):
    s3 = s3util.client(eddy, "bob", "bob-s3-secret")
    bucket = s3util.new_bucket(s3, "presign")
    s3.put_object(Bucket=bucket, Key="doc", Body=b"doc")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "doc"})
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == b"doc"
    policy = name("no-get")
    put_policy(eddy, tmp_path, policy, statement("Deny", "s3:GetObject", f"arn:aws:s3:::{bucket}/*"), "bob")
    try:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url, timeout=10)
        assert e.value.code == 403 and b"AccessDenied" in e.value.read()
    finally:
        ok(eddy, "policy", "delete", policy)
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == b"doc"


def test_other_users_buckets_open_only_by_policy(eddy, bob):
    """alice's bucket is closed to bob until alice's bucket policy names him, and then
    only for what it grants; a copy from it needs GetObject on the source."""
    alice = s3util.client(eddy, "alice", "alice-secret")
    bucket = s3util.new_bucket(alice, "alice")
    alice.put_object(Bucket=bucket, Key="shared/a", Body=b"for bob")
    s3 = s3util.client(eddy, "bob", "bob-s3-secret")
    mine = s3util.new_bucket(s3, "bobs")
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="shared/a")
    assert s3util.error_code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=mine, Key="copy", CopySource={"Bucket": bucket, "Key": "shared/a"})
    assert s3util.error_code(e) == "AccessDenied"
    alice.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Statement": [{
        "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::000000000000:user/bob"]},
        "Action": ["s3:GetObject", "s3:ListBucket"],
        "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/shared/*"]}]}))
    assert s3.get_object(Bucket=bucket, Key="shared/a")["Body"].read() == b"for bob"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["shared/a"]
    s3.copy_object(Bucket=mine, Key="copy", CopySource={"Bucket": bucket, "Key": "shared/a"})
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="shared/b", Body=b"no")
    assert s3util.error_code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.delete_bucket_policy(Bucket=bucket)
    assert s3util.error_code(e) == "AccessDenied"


# --- SCRAM credentials from Kafka admin clients -------------------------------------

def test_kafka_admin_clients_manage_scram_credentials(eddy, bob):
    """AlterUserScramCredentials from the administrator over SASL makes a user that
    authenticates with the new credential; DescribeUserScramCredentials shows its
    mechanism and iterations; other principals are refused; bad upsertions and unknown
    users get Kafka's errors; a deletion stops the login."""
    from confluent_kafka.admin import (ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion, UserScramCredentialUpsertion)
    admin = AdminClient(sasl(eddy, eddy.access_key, eddy.secret_key, "SCRAM-SHA-512"))
    erin = name("erin")
    upsert = UserScramCredentialUpsertion(
        erin, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"erin-pw", b"erin-salt")
    admin.alter_user_scram_credentials([upsert])[erin].result(30)
    topic = name("erin")
    create(eddy, topic)
    assert produce(sasl(eddy, erin, "erin-pw", "SCRAM-SHA-512"), topic) is None
    assert produce(sasl(eddy, erin, "erin-pw", "PLAIN"), topic) is None
    assert produce(sasl(eddy, erin, "erin-pw", "SCRAM-SHA-256"), topic) in (
        KafkaError._AUTHENTICATION, KafkaError._MSG_TIMED_OUT)
    d = admin.describe_user_scram_credentials([erin, "bob"])
    infos = d[erin].result(30).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_512, 8192)]
    assert sorted(i.mechanism for i in d["bob"].result(30).scram_credential_infos) == \
        [ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512]
    listed = ok(eddy, "user", "list")["users"]
    assert {"name": erin, "s3": False, "scram": [{"mechanism": "SCRAM-SHA-512", "iterations": 8192}],
            "from_config": False, "admin": False} in listed
    with pytest.raises(KafkaException) as e:
        admin.describe_user_scram_credentials(["nobody"])["nobody"].result(30)
    assert e.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND

    weak = UserScramCredentialUpsertion(
        erin, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"pw", b"salt")
    with pytest.raises(KafkaException) as e:
        admin.alter_user_scram_credentials([weak])[erin].result(30)
    assert e.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL

    # Neither bob nor an anonymous client may set anyone's password.
    for conf in (bob, admin_conf(eddy)):
        other = AdminClient(conf)
        takeover = UserScramCredentialUpsertion(
            erin, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"stolen", b"s")
        with pytest.raises(KafkaException) as e:
            other.alter_user_scram_credentials([takeover])[erin].result(30)
        assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert produce(sasl(eddy, erin, "erin-pw", "SCRAM-SHA-512"), topic) is None

    delete = UserScramCredentialDeletion(erin, ScramMechanism.SCRAM_SHA_512)
    admin.alter_user_scram_credentials([delete])[erin].result(30)
    assert produce(sasl(eddy, erin, "erin-pw", "SCRAM-SHA-512"), topic) in (
        KafkaError._AUTHENTICATION, KafkaError._MSG_TIMED_OUT)
    with pytest.raises(KafkaException) as e:
        admin.alter_user_scram_credentials([delete])[erin].result(30)
    assert e.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND


# --- Kafka ACL APIs -----------------------------------------------------------------

@pytest.fixture(scope="module")
def java_acls(tmp_path_factory):
    import shutil
    from test_kafka import kafka_clients_classpath
    from conftest import javac
    cp = kafka_clients_classpath()
    if shutil.which("javac") is None or cp is None:
        pytest.skip("Java or the kafka-clients jar is not installed")
    out = javac(Path(__file__).parent / "java" / "Acls.java", cp)

    def run(eddy, *args):
        p = subprocess.run(["java", "-cp", f"{out}:{cp}", "Acls", f"127.0.0.1:{eddy.sasl_port}",
                            eddy.access_key, eddy.secret_key, *args],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr[-4000:]
        return p.stdout.strip().splitlines()
    return run


def test_acls_from_java_and_librdkafka_are_enforced_as_policies(eddy, bob, java_acls):
    """The Java admin client denies bob READ on a topic; librdkafka's describe sees the
    binding, bob's consumer gets TOPIC_AUTHORIZATION_FAILED, `eddy policy` shows the
    binding as a statement; librdkafka's delete removes it and bob reads again. bob
    (not the administrator) may not create ACLs."""
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                       AclPermissionType, ResourcePatternType, ResourceType)
    topic = name("acl")
    create(eddy, topic)
    assert produce(admin_conf(eddy), topic) is None
    assert java_acls(eddy, "create", topic, "User:bob", "READ", "DENY") == ["ok"]
    assert java_acls(eddy, "describe", topic) == ["User:bob READ DENY LITERAL *"]
    admin = AdminClient(sasl(eddy, eddy.access_key, eddy.secret_key, "SCRAM-SHA-512"))
    flt = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.ANY, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    found = admin.describe_acls(flt).result(30)
    assert [(b.principal, b.operation, b.permission_type) for b in found] == \
        [("User:bob", AclOperation.READ, AclPermissionType.DENY)]
    assert consume(bob, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    stored = ok(eddy, "policy", "get", "kafka-acl:User:bob")
    assert stored["attached"] == ["bob"]
    assert stored["document"]["Statement"] == [
        {"Effect": "Deny", "Action": "KafkaRead", "Resource": f"vast:kafka:topic:default:{topic}"}]

    # A prefixed ALLOW for everyone, from librdkafka, appears to Java too.
    prefix = AclBinding(ResourceType.TOPIC, f"{topic}-", ResourcePatternType.PREFIXED, "User:*", "*",
                        AclOperation.WRITE, AclPermissionType.ALLOW)
    admin.create_acls([prefix])[prefix].result(30)
    assert sorted(java_acls(eddy, "describe", topic)) == ["User:bob READ DENY LITERAL *"]
    assert java_acls(eddy, "describe", f"{topic}-") == ["User:* WRITE ALLOW PREFIXED *"]

    other = AdminClient(bob)
    denied = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "*",
                        AclOperation.ALL, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as e:
        other.create_acls([denied])[denied].result(30)
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    deleted = admin.delete_acls([flt])[flt].result(30)
    assert [(b.principal, b.operation) for b in deleted] == [("User:bob", AclOperation.READ)]
    assert consume(bob, topic) is None
    assert java_acls(eddy, "delete", f"{topic}-") == ["1"]
    assert admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                                AclOperation.ANY, AclPermissionType.ANY)).result(30) == []


# --- mutual TLS: the certificate's CN is the principal ------------------------------

@pytest.mark.parametrize("rules", [None, r"RULE:^CN=([^,]*)$/$1-cert/L,DEFAULT"])
def test_the_client_certificate_names_the_principal(tmp_path, rules):
    """On an mTLS listener the certificate's CN (or what a Kafka mapping rule makes of
    the subject) is the principal its policies apply to: bob's certificate is refused
    the topic a policy denies him, alice's is not; confluent-kafka and kafka-python."""
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError
    from test_tls import make_ca, make_cert, ssl_conf, tls_args
    make_ca(tmp_path, "ca")
    make_cert(tmp_path, "ca", "server", "eddy", server=True)
    make_cert(tmp_path, "ca", "bob", "Bob")
    make_cert(tmp_path, "ca", "alice", "alice")
    extra = ["--tls-principal-rules", rules] if rules else []
    server = new_eddy(tmp_path, extra_args=[*tls_args(tmp_path, mutual=True), *extra])
    server.ssl_port = free_port()
    server.kafka_listeners = [f"SSL://127.0.0.1:{server.ssl_port}"]
    server.start()
    try:
        principal = "bob-cert" if rules else "Bob"
        topic = name("mtls")
        create(server, topic)
        put_policy(server, tmp_path, "no-write", statement(
            "Deny", "KafkaWrite", f"vast:kafka:topic:default:{topic}"), principal)
        assert produce(ssl_conf(server, tmp_path, cert="bob"), topic) == \
            KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert produce(ssl_conf(server, tmp_path, cert="alice"), topic) is None
        assert produce(admin_conf(server), topic) is None, "the plaintext listener is ANONYMOUS"
        p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{server.ssl_port}", security_protocol="SSL",
                          ssl_cafile=str(tmp_path / "ca.pem"), ssl_certfile=str(tmp_path / "bob.pem"),
                          ssl_keyfile=str(tmp_path / "bob.key"), ssl_check_hostname=False,
                          max_block_ms=10000)
        with pytest.raises(TopicAuthorizationFailedError):
            p.send(topic, b"v").get(timeout=15)
        p.close()
        import shutil
        if shutil.which("kcat"):
            def kcat(cert):
                x = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={tmp_path / 'ca.pem'}",
                     "-X", f"ssl.certificate.location={tmp_path / cert}.pem",
                     "-X", f"ssl.key.location={tmp_path / cert}.key"]
                return subprocess.run(["kcat", "-b", f"127.0.0.1:{server.ssl_port}", *x, "-P", "-t", topic],
                                      input="k\n", text=True, capture_output=True, timeout=60)
            denied = kcat("bob")
            assert "authorization failed" in denied.stderr.lower(), denied.stderr
            assert kcat("alice").returncode == 0
        if shutil.which("javac") and rules is None:
            # The Java client: bob's certificate may not create topics, alice's may.
            from test_tls import java_round_trip
            put_policy(server, tmp_path, "no-create", statement("Deny", "KafkaCreate"), principal)

            def java(cert):
                return java_round_trip(
                    f"127.0.0.1:{server.ssl_port}", "security.protocol=SSL", "ssl.truststore.type=PEM",
                    f"ssl.truststore.location={tmp_path / 'ca.pem'}", "ssl.keystore.type=PEM",
                    f"ssl.keystore.certificate.chain={(tmp_path / f'{cert}.pem').read_text()}",
                    f"ssl.keystore.key={(tmp_path / f'{cert}.key').read_text()}")
            refused = java("bob")
            assert refused.returncode != 0 and "TopicAuthorizationException" in refused.stderr, \
                refused.stderr[-3000:]
            allowed = java("alice")
            assert allowed.returncode == 0 and allowed.stdout.strip().endswith("ok"), allowed.stderr[-3000:]
    finally:
        server.stop()


def test_a_bad_principal_rule_is_refused_at_start(tmp_path):
    out = subprocess.run([eddy_bin(), "serve", "--data-dir", str(tmp_path / "d"),
                          "--kafka-listen", f"127.0.0.1:{free_port()}",
                          "--s3-listen", f"127.0.0.1:{free_port()}",
                          "--http-listen", f"127.0.0.1:{free_port()}",
                          "--tls-principal-rules", "RULE:^CN=(x/$1/"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "rule pattern" in out.stderr, out.stderr


# --- the Iceberg catalog and the admin API answer to the same policies -------------

def test_a_topic_a_policy_hides_is_hidden_from_the_iceberg_catalog_too(eddy, bob, tmp_path):
    """bob, denied KafkaRead on one topic and KafkaDescribe on another, gets 403 loading
    the first as a table with PyIceberg and does not see the second listed; the
    administrator loads both; bob may not attach an expansion to a topic he may not
    create on."""
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import ForbiddenError

    def catalog(user, secret):
        return RestCatalog("eddy", uri=f"{eddy.http_url}/iceberg", credential=f"{user}:{secret}",
                           warehouse="kafka", **{"oauth2-server-uri": f"{eddy.http_url}/iceberg/v1/oauth/tokens"})
    unread, unseen, open_ = name("unread"), name("unseen"), name("open")
    for t in (unread, unseen, open_):
        create(eddy, t)
        assert produce(admin_conf(eddy), t) is None
    policy = name("tables")
    put_policy(eddy, tmp_path, policy, {"Statement": [
        {"Effect": "Deny", "Action": "KafkaRead", "Resource": f"vast:kafka:topic:default:{unread}"},
        {"Effect": "Deny", "Action": "KafkaDescribe", "Resource": f"vast:kafka:topic:default:{unseen}"},
        {"Effect": "Deny", "Action": "KafkaCreate", "Resource": "*"}]}, "bob")
    try:
        mine = catalog("bob", "bob-s3-secret")
        listed = {t[1] for t in mine.list_tables("kafka_topics")}
        assert open_ in listed and unread in listed and unseen not in listed
        with pytest.raises(ForbiddenError):
            mine.load_table(("kafka_topics", unread))
        assert mine.load_table(("kafka_topics", open_)).name()[-1] == open_
        admin = catalog(eddy.access_key, eddy.secret_key)
        assert unseen in {t[1] for t in admin.list_tables("kafka_topics")}
        admin.load_table(("kafka_topics", unread))
        code, _, err = cli(eddy, "expansion", "get", open_, access_key="bob", secret_key="bob-s3-secret")
        assert code != 0 and "403" in err and "KafkaCreate" in err
    finally:
        ok(eddy, "policy", "delete", policy)


def test_a_deleted_buckets_policy_does_not_open_a_new_bucket_of_its_name(eddy):
    s3 = s3util.client(eddy)
    bucket = name("reborn")
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
    s3.put_object(Bucket=bucket, Key="k", Body=b"old")
    assert unsigned_get(eddy, f"{bucket}/k")[0] == 200
    s3.delete_object(Bucket=bucket, Key="k")
    s3.delete_bucket(Bucket=bucket)
    alice = s3util.client(eddy, "alice", "alice-secret")
    alice.create_bucket(Bucket=bucket)
    alice.put_object(Bucket=bucket, Key="k", Body=b"alice's")
    assert unsigned_get(eddy, f"{bucket}/k")[0] == 403
    with pytest.raises(ClientError) as e:
        alice.get_bucket_policy(Bucket=bucket)
    assert s3util.error_code(e) == "NoSuchBucketPolicy"


def test_broker_configs_answer_to_the_cluster_and_topic_configs_to_the_topic(eddy, bob, tmp_path):
    """A Deny of KafkaDescribe on every topic refuses a topic's configs with
    TOPIC_AUTHORIZATION_FAILED but leaves the broker's configs to the cluster action."""
    from confluent_kafka.admin import ConfigResource, ResourceType
    topic = name("cfg")
    create(eddy, topic)
    policy = name("no-topic-describe")
    put_policy(eddy, tmp_path, policy, statement("Deny", "KafkaDescribe", "vast:kafka:topic:*"), "bob")
    try:
        admin = AdminClient(bob)
        node = str(next(iter(AdminClient(admin_conf(eddy)).list_topics(timeout=10).brokers)))
        broker = ConfigResource(ResourceType.BROKER, node)
        assert admin.describe_configs([broker])[broker].result(30)
        t = ConfigResource(ResourceType.TOPIC, topic)
        with pytest.raises(KafkaException) as e:
            admin.describe_configs([t])[t].result(30)
        assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        ok(eddy, "policy", "delete", policy)


def test_policy_conditions_on_prefix_transport_and_address(eddy, bob, tmp_path):
    """A bucket policy lets anyone list only under `s3:prefix` public/ (curl); an
    identity policy denying bob everything over plain HTTP (`aws:SecureTransport` false)
    refuses his requests here; one denying his address (`aws:SourceIp`) does too, and one
    denying another address does not."""
    s3 = s3util.client(eddy)
    bucket = name("cond")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="public/a", Body=b"a")
    s3.put_object(Bucket=bucket, Key="private/b", Body=b"b")
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
        "Resource": f"arn:aws:s3:::{bucket}",
        "Condition": {"StringLike": {"s3:prefix": "public/*"}}}]}))
    status, body = unsigned_get(eddy, f"{bucket}?list-type=2&prefix=public/")
    assert status == 200 and b"<Key>public/a</Key>" in body
    assert unsigned_get(eddy, f"{bucket}?list-type=2")[0] == 403
    assert unsigned_get(eddy, f"{bucket}?list-type=2&prefix=private/")[0] == 403

    mine = s3util.client(eddy, "bob", "bob-s3-secret")
    own = s3util.new_bucket(mine, "bob-cond")
    for condition, refused in [
        ({"Bool": {"aws:SecureTransport": "false"}}, True),
        ({"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}, True),
        ({"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}, False),
    ]:
        policy = name("cond")
        put_policy(eddy, tmp_path, policy, {"Statement": [{
            "Effect": "Deny", "Action": "s3:*", "Resource": "*", "Condition": condition}]}, "bob")
        try:
            if refused:
                with pytest.raises(ClientError) as e:
                    mine.list_objects_v2(Bucket=own)
                assert s3util.error_code(e) == "AccessDenied", condition
            else:
                mine.list_objects_v2(Bucket=own)
        finally:
            ok(eddy, "policy", "delete", policy)


@pytest.fixture(scope="module")
def java_describes(tmp_path_factory):
    """Runs tests/e2e/java/Describes.java as a user: {call: "ok" or the exception's class}."""
    import shutil
    from test_kafka import kafka_clients_classpath
    from conftest import javac
    cp = kafka_clients_classpath()
    if shutil.which("javac") is None or cp is None:
        pytest.fail("Java or the kafka-clients jar is not installed", pytrace=False)
    out = javac(Path(__file__).parent / "java" / "Describes.java", cp)

    def run(eddy, user, password, topic, group):
        p = subprocess.run(["java", "-cp", f"{out}:{cp}", "Describes", f"127.0.0.1:{eddy.sasl_port}",
                            user, password, topic, group], capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr[-4000:]
        # The client logs to stdout too: the program's lines are those naming a call.
        calls = ("producers", "logdirs", "quotas", "group")
        found = [line.split(" ", 1) for line in p.stdout.splitlines() if line.split(" ")[0] in calls]
        assert sorted(k for k, _ in found) == sorted(calls), p.stdout
        return dict(found)
    return run


def test_describes_and_transactional_offsets_follow_the_policies(eddy, bob, tmp_path, java_describes):
    """The APIs a policy used to let through: describeProducers (KafkaRead on the topic),
    describeLogDirs and describeClientQuotas (KafkaDescribe on the cluster),
    describeConsumerGroups of a consumer-protocol group (ConsumerGroupDescribe: KafkaDescribe
    on the group), and a transaction's offsets (AddOffsetsToTxn, TxnOffsetCommit: KafkaRead
    on the group) are refused with the authorization errors under a Deny, and served
    without one."""
    topic, group = name("desc"), name("desc-group")
    create(eddy, topic)
    # A consumer-protocol group to describe, made by the administrator.
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    c.poll(5)
    try:
        allowed = java_describes(eddy, "bob", "bob-pw", topic, group)
        assert allowed == {"producers": "ok", "logdirs": "ok", "quotas": "ok", "group": "ok"}, allowed
        policy = name("no-describe")
        put_policy(eddy, tmp_path, policy, {"Version": "2012-10-17", "Statement": [
            {"Effect": "Deny", "Action": "KafkaRead", "Resource": f"vast:kafka:topic:*:{topic}"},
            {"Effect": "Deny", "Action": "KafkaDescribe", "Resource": "vast:kafka:cluster:*"},
            {"Effect": "Deny", "Action": ["KafkaDescribe", "KafkaRead"],
             "Resource": f"vast:kafka:group:*:{group}"}]}, "bob")
        try:
            denied = java_describes(eddy, "bob", "bob-pw", topic, group)
            assert denied == {"producers": "TopicAuthorizationException",
                              "logdirs": "ClusterAuthorizationException",
                              "quotas": "ClusterAuthorizationException",
                              "group": "GroupAuthorizationException"}, denied
            # A transaction may not hold offsets of a group its user may not read.
            other = name("txn-out")
            create(eddy, other)
            p = Producer({**bob, "transactional.id": name("bob-txn"), "transaction.timeout.ms": 10000})
            p.init_transactions(30)
            p.begin_transaction()
            p.produce(other, value=b"v")
            meta = Consumer({**bob, "group.id": group}).consumer_group_metadata()
            with pytest.raises(KafkaException) as e:
                p.send_offsets_to_transaction([TopicPartition(topic, 0, 1)], meta, 30)
            assert e.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED, e.value
            p.abort_transaction(30)
            admin = AdminClient(admin_conf(eddy))
            from confluent_kafka import ConsumerGroupTopicPartitions
            offsets = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])[group].result(30)
            assert [tp.offset for tp in offsets.topic_partitions] == [-1001]
        finally:
            ok(eddy, "policy", "delete", policy)
    finally:
        c.close()
