"""Users' own Iceberg tables written by one engine and read by the others, on one Eddy:
a real Trino server (catalog `eddy`, compose/trino/catalog/eddy.properties), a local
Spark session (compose/spark/spark-defaults.conf) and PyIceberg share the REST catalog
and write the data files to Eddy's S3 with the caller's own keys. Trino inserts,
updates and deletes rows (merge-on-read position deletes) and adds a column; Spark
inserts, overwrites a partition, deletes, updates, merges, adds a column, creates a table
as select (a staged create) and views; PyIceberg appends, overwrites, deletes and evolves
the schema. Each time the other two read exactly the same rows. Then time travel in
Trino and Spark, a format-version table property taken as the table's format version,
and tables, views and namespaces dropped from both engines."""

from datetime import timezone

import pyarrow as pa
import pytest
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

from engines import spark_session, trino_server
from test_trino import causes
from test_user_tables import catalog, keys_under, name


@pytest.fixture(scope="module")
def trino(eddy):
    with trino_server(eddy) as t:
        yield t


@pytest.fixture(scope="module")
def spark(eddy):
    with spark_session(eddy) as s:
        # Timestamps are compared as text; UTC makes Spark's text the same as the others'.
        s.conf.set("spark.sql.session.timeZone", "UTC")
        yield s


@pytest.fixture(scope="module")
def cat(eddy):
    return catalog(eddy)


def trino_rows(trino, sql):
    return sorted(tuple(r) for r in trino.query(sql))


def spark_rows(spark, sql):
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def pyiceberg_rows(table, columns, convert=None):
    """The rows of a fresh scan as sorted tuples of `columns` (`convert` maps a column's
    values, e.g. a timestamp to text)."""
    convert = convert or {}
    return sorted(tuple(convert.get(c, lambda v: v)(r[c]) for c in columns)
                  for r in table.scan().to_arrow().to_pylist())


def utc_text(ts):
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def error_text(e) -> str:
    """What an engine's error says, causes included (Trino keeps them in failure_info)."""
    if hasattr(e, "failure_info"):
        return "\n".join(causes(e))
    return str(e)


# --- Trino writes ------------------------------------------------------------------------

TRINO_SHAPE = "id bigint, name varchar, ts timestamp(6) with time zone"
# What the readers see after trino_changes, timestamps as UTC text.
AFTER_TRINO = [
    (1, "a", "2024-01-01 10:00:00", 1),
    (2, "B", "2024-01-01 11:00:00", None),
    (4, "d", "2024-01-03 10:00:00", None),
    (5, "e", "2024-01-03 12:00:00", 7),
]


def trino_changes(trino, table):
    """Rows over three days, an UPDATE and a DELETE (position deletes: Trino writes
    merge-on-read), a new column, more rows, an UPDATE of the new column."""
    trino.query(f"INSERT INTO {table} VALUES "
                "(1, 'a', TIMESTAMP '2024-01-01 10:00:00 UTC'), (2, 'b', TIMESTAMP '2024-01-01 11:00:00 UTC'), "
                "(3, 'c', TIMESTAMP '2024-01-02 10:00:00 UTC'), (4, 'd', TIMESTAMP '2024-01-03 10:00:00 UTC')")
    assert trino.query(f"UPDATE {table} SET name = 'B' WHERE id = 2") == [[1]]
    assert trino.query(f"DELETE FROM {table} WHERE id = 3") == [[1]]
    trino.query(f"ALTER TABLE {table} ADD COLUMN qty integer")
    trino.query(f"INSERT INTO {table} VALUES (5, 'e', TIMESTAMP '2024-01-03 12:00:00 UTC', 7)")
    assert trino.query(f"UPDATE {table} SET qty = 1 WHERE id = 1") == [[1]]


def check_trino_table(trino, spark, cat, ns, t):
    table = f"eddy.{ns}.{t}"
    assert trino_rows(trino, f"SELECT id, name, format_datetime(ts AT TIME ZONE 'UTC', "
                             f"'yyyy-MM-dd HH:mm:ss'), qty FROM {table}") == AFTER_TRINO
    # The three changed rows are gone by position: delete files, not rewritten data files.
    assert trino.query(f'SELECT sum(record_count) FROM eddy.{ns}."{t}$files" WHERE content = 1') == [[3]]
    assert trino_rows(trino, f"SELECT id FROM {table} WHERE ts >= TIMESTAMP '2024-01-03 00:00:00 UTC'") == [(4,), (5,)]

    assert spark_rows(spark, f"SELECT id, name, date_format(ts, 'yyyy-MM-dd HH:mm:ss'), qty "
                             f"FROM {table}") == AFTER_TRINO
    assert spark_rows(spark, f"SELECT id FROM {table} WHERE ts >= '2024-01-03'") == [(4,), (5,)]

    loaded = cat.load_table(f"{ns}.{t}")
    assert loaded.location().startswith(f"s3://warehouse/{ns}/{t}-")
    assert [f.name for f in loaded.schema().fields] == ["id", "name", "ts", "qty"]
    assert pyiceberg_rows(loaded, ["id", "name", "ts", "qty"], {"ts": utc_text}) == AFTER_TRINO


def test_trino_creates_a_partitioned_table_that_spark_and_pyiceberg_read(trino, spark, cat):
    ns = name("trino")
    trino.query(f"CREATE SCHEMA eddy.{ns}")
    assert (ns,) in cat.list_namespaces()
    # Trino's create is a staged create whose properties hold format-version, a reserved
    # property the catalog takes as the table's format version.
    trino.query(f"CREATE TABLE eddy.{ns}.events ({TRINO_SHAPE}) "
                "WITH (partitioning = ARRAY['day(ts)'])")
    trino_changes(trino, f"eddy.{ns}.events")
    check_trino_table(trino, spark, cat, ns, "events")


def test_trino_writes_rows_that_spark_and_pyiceberg_read(trino, spark, cat):
    """As above with the table made by PyIceberg, in the shape Trino's CREATE TABLE gives
    it: Trino's inserts, row-level updates and deletes and its schema change on a table
    another engine made, read by Spark and PyIceberg."""
    ns = name("trino")
    trino.query(f"CREATE SCHEMA eddy.{ns}")
    assert (ns,) in cat.list_namespaces()
    assert cat.load_namespace_properties(ns)["location"] == f"s3://warehouse/{ns}"
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "ts", TimestamptzType(), required=False))
    cat.create_table(f"{ns}.events", schema, partition_spec=PartitionSpec(
        PartitionField(source_id=3, field_id=1000, transform=DayTransform(), name="ts_day")))
    assert trino.query(f"SHOW TABLES FROM eddy.{ns}") == [["events"]]
    trino_changes(trino, f"eddy.{ns}.events")
    check_trino_table(trino, spark, cat, ns, "events")


# --- Spark writes ------------------------------------------------------------------------

AFTER_SPARK = [
    (1, "green tea", "eu", None),
    (20, "bun", "us", None),
    (21, "fruit tart", "us", None),
    (30, "scone", "ap", None),
    (40, "cookie", "eu", 5),
]


def test_spark_writes_tables_and_views_that_trino_and_pyiceberg_read(trino, spark, cat):
    ns = name("spark")
    t = f"eddy.{ns}.orders"
    spark.sql(f"CREATE NAMESPACE eddy.{ns}")
    # Merge-on-read, so that the readers have Spark's position deletes to apply too.
    spark.sql(f"CREATE TABLE {t} (id BIGINT, item STRING, region STRING) USING iceberg "
              "PARTITIONED BY (region) TBLPROPERTIES ('write.delete.mode' = 'merge-on-read', "
              "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'tea', 'eu'), (2, 'cake', 'us'), (3, 'jam', 'eu'), (4, 'pie', 'us')")
    spark.sql(f"INSERT OVERWRITE {t} PARTITION (region = 'us') VALUES (20, 'bun'), (21, 'tart')")
    assert spark_rows(spark, f"SELECT id FROM {t}") == [(1,), (3,), (20,), (21,)]
    spark.sql(f"DELETE FROM {t} WHERE id = 3")
    spark.sql(f"UPDATE {t} SET item = 'green tea' WHERE id = 1")
    spark.sql(f"""MERGE INTO {t} o
        USING (SELECT 21 AS id, 'fruit tart' AS item, 'us' AS region
               UNION ALL SELECT 30, 'scone', 'ap') s
        ON o.id = s.id
        WHEN MATCHED THEN UPDATE SET o.item = s.item
        WHEN NOT MATCHED THEN INSERT *""")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN qty INT")
    spark.sql(f"INSERT INTO {t} VALUES (40, 'cookie', 'eu', 5)")
    # Spark's CTAS is a staged create (POST .../tables with stage-create), its rows and
    # the table then committed as one create transaction.
    spark.sql(f"CREATE TABLE eddy.{ns}.us_orders USING iceberg AS "
              f"SELECT id, item FROM {t} WHERE region = 'us'")
    spark.sql(f"CREATE VIEW eddy.{ns}.eu_orders AS SELECT id, item FROM {t} WHERE region = 'eu'")

    cols = "id, item, region, qty"
    assert spark_rows(spark, f"SELECT {cols} FROM {t}") == AFTER_SPARK
    assert trino_rows(trino, f"SELECT {cols} FROM {t}") == AFTER_SPARK
    assert trino.query(f'SELECT sum(record_count) FROM eddy.{ns}."orders$files" WHERE content = 1') == [[3]]
    assert pyiceberg_rows(cat.load_table(f"{ns}.orders"), ["id", "item", "region", "qty"]) == AFTER_SPARK

    us = [(20, "bun"), (21, "fruit tart")]
    assert trino_rows(trino, f"SELECT id, item FROM eddy.{ns}.us_orders") == us
    assert pyiceberg_rows(cat.load_table(f"{ns}.us_orders"), ["id", "item"]) == us
    assert sorted(cat.list_tables(ns)) == [(ns, "orders"), (ns, "us_orders")]

    eu = [(1, "green tea"), (40, "cookie")]
    assert spark_rows(spark, f"SELECT * FROM eddy.{ns}.eu_orders") == eu
    assert cat.list_views(ns) == [(ns, "eu_orders")]
    rep = cat.load_view(f"{ns}.eu_orders").metadata.versions[-1].representations[0]
    rep = getattr(rep, "root", rep)
    assert (rep.dialect, rep.sql) == ("spark", f"SELECT id, item FROM {t} WHERE region = 'eu'")
    # Trino 476 lists REST catalog views and reads those with a `trino` SQL
    # representation (below), but not Spark's: its refusal is Trino's own, not Eddy's.
    assert sorted(r[0] for r in trino.query(f"SHOW TABLES FROM eddy.{ns}")) == [
        "eu_orders", "orders", "us_orders"]
    with pytest.raises(Exception) as e:
        trino.query(f"SELECT * FROM eddy.{ns}.eu_orders")
    assert "Cannot read unsupported dialect 'spark'" in error_text(e.value), error_text(e.value)

    # A view Trino makes: Trino reads it, and Spark reads its Trino SQL (Iceberg's
    # Spark runtime falls back to the view's only representation).
    trino.query(f"CREATE VIEW eddy.{ns}.us_view AS SELECT id, item FROM {t} WHERE region = 'us'")
    assert trino_rows(trino, f"SELECT * FROM eddy.{ns}.us_view") == us
    assert spark_rows(spark, f"SELECT * FROM eddy.{ns}.us_view") == us
    assert sorted(cat.list_views(ns)) == [(ns, "eu_orders"), (ns, "us_view")]


def test_a_format_version_table_property_is_the_tables_format_version(spark, cat):
    ns = name("format")
    cat.create_namespace(ns)
    spark.sql(f"CREATE TABLE eddy.{ns}.s (id BIGINT) USING iceberg "
              "TBLPROPERTIES ('format-version' = '1')")
    loaded = cat.load_table(f"{ns}.s")
    assert loaded.format_version == 1
    assert "format-version" not in loaded.properties
    cat.create_table(f"{ns}.p", Schema(NestedField(1, "id", LongType(), required=False)),
                     properties={"format-version": "2"})
    assert cat.load_table(f"{ns}.p").format_version == 2
    # Set later, it upgrades the table.
    spark.sql(f"ALTER TABLE eddy.{ns}.s SET TBLPROPERTIES ('format-version' = '2')")
    assert cat.load_table(f"{ns}.s").format_version == 2


# --- PyIceberg writes --------------------------------------------------------------------

AFTER_PYICEBERG = [
    (1, "pen", "office", None),
    (5, "poems", "books", None),
    (6, "clip", "office", None),
    (7, "map", "travel", None),
    (8, "tape", "office", 3),
]


def items(ids, names, categories):
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string()),
                     "category": pa.array(categories, pa.string())})


def test_pyiceberg_writes_a_table_that_trino_and_spark_read(trino, spark, cat):
    ns = name("pyiceberg")
    cat.create_namespace(ns)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "category", StringType(), required=False))
    t = cat.create_table(f"{ns}.items", schema, partition_spec=PartitionSpec(
        PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="category")))
    t.append(items([1, 2, 3, 4], ["pen", "ink", "novel", "atlas"], ["office", "office", "books", "books"]))
    t.overwrite(items([5], ["poems"], ["books"]), overwrite_filter=EqualTo("category", "books"))
    t.append(items([6, 7], ["clip", "map"], ["office", "travel"]))
    t.delete(EqualTo("id", 2))
    # Added and renamed: the readers find columns by field id, not by name.
    with t.update_schema() as u:
        u.add_column("qty", LongType())
        u.rename_column("name", "label")
    t.append(pa.table({"id": pa.array([8], pa.int64()), "label": ["tape"], "category": ["office"],
                       "qty": pa.array([3], pa.int64())}))

    cols = "id, label, category, qty"
    assert pyiceberg_rows(cat.load_table(f"{ns}.items"), ["id", "label", "category", "qty"]) == AFTER_PYICEBERG
    assert trino_rows(trino, f"SELECT {cols} FROM eddy.{ns}.items") == AFTER_PYICEBERG
    assert [r[0] for r in trino.query(f"DESCRIBE eddy.{ns}.items")] == ["id", "label", "category", "qty"]
    assert spark_rows(spark, f"SELECT {cols} FROM eddy.{ns}.items") == AFTER_PYICEBERG
    assert spark_rows(spark, f"SELECT id FROM eddy.{ns}.items WHERE category = 'office'") == [(1,), (6,), (8,)]


# --- time travel -------------------------------------------------------------------------

def test_time_travel_in_trino_and_spark(trino, spark, cat):
    ns = name("travel")
    t = f"eddy.{ns}.t"
    spark.sql(f"CREATE NAMESPACE eddy.{ns}")
    spark.sql(f"CREATE TABLE {t} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {t} VALUES (1), (2)")
    trino.query(f"INSERT INTO {t} VALUES 3")
    trino.query(f"DELETE FROM {t} WHERE id = 1")
    # The snapshots, oldest first, as each engine's metadata tables tell them (the
    # table's snapshot list has no order of its own; its history, the snapshot log, does).
    snaps = [r[0] for r in trino.query(f'SELECT snapshot_id FROM eddy.{ns}."t$history" ORDER BY made_current_at')]
    assert len(snaps) == 3
    assert [r.snapshot_id for r in spark.sql(
        f"SELECT snapshot_id FROM {t}.history ORDER BY made_current_at").collect()] == snaps
    assert [h.snapshot_id for h in cat.load_table(f"{ns}.t").history()] == snaps
    for snap, ids in zip(snaps, [[1, 2], [1, 2, 3], [2, 3]]):
        want = [(i,) for i in ids]
        assert trino_rows(trino, f"SELECT id FROM {t} FOR VERSION AS OF {snap}") == want, snap
        assert spark_rows(spark, f"SELECT id FROM {t} VERSION AS OF {snap}") == want, snap
    assert trino_rows(trino, f"SELECT id FROM {t}") == [(2,), (3,)]


# --- drops -------------------------------------------------------------------------------

def objects_of(eddy, location):
    bucket, prefix = location.removeprefix("s3://").split("/", 1)
    return keys_under(eddy, bucket, prefix + "/")


def test_tables_views_and_schemas_dropped_from_trino_and_spark(eddy, trino, spark, cat):
    # Trino: DROP TABLE asks the catalog to purge (DELETE ...?purgeRequested=true), and
    # Eddy deletes the table's files.
    ns = name("dropt")
    trino.query(f"CREATE SCHEMA eddy.{ns}")
    spark.sql(f"CREATE TABLE eddy.{ns}.a (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO eddy.{ns}.a VALUES (1), (2)")
    spark.sql(f"CREATE VIEW eddy.{ns}.v AS SELECT id FROM eddy.{ns}.a")
    location = cat.load_table(f"{ns}.a").location()
    assert any(k.endswith(".parquet") for k in objects_of(eddy, location))
    trino.query(f"DROP TABLE eddy.{ns}.a")
    trino.query(f"DROP VIEW eddy.{ns}.v")
    assert trino.query(f"SHOW TABLES FROM eddy.{ns}") == []
    assert spark.sql(f"SHOW TABLES IN eddy.{ns}").collect() == []
    assert cat.list_tables(ns) == [] and cat.list_views(ns) == []
    assert objects_of(eddy, location) == []
    trino.query(f"DROP SCHEMA eddy.{ns}")
    assert [ns] not in trino.query("SHOW SCHEMAS FROM eddy")
    assert (ns,) not in cat.list_namespaces()

    # Spark: DROP TABLE ... PURGE drops the table from the catalog without purgeRequested
    # and deletes the files it reaches from the last metadata itself, with its own keys.
    ns = name("drops")
    spark.sql(f"CREATE NAMESPACE eddy.{ns}")
    spark.sql(f"CREATE TABLE eddy.{ns}.b (id BIGINT, part STRING) USING iceberg PARTITIONED BY (part)")
    spark.sql(f"INSERT INTO eddy.{ns}.b VALUES (1, 'x'), (2, 'y')")
    spark.sql(f"DELETE FROM eddy.{ns}.b WHERE id = 1")
    spark.sql(f"CREATE VIEW eddy.{ns}.w AS SELECT id FROM eddy.{ns}.b")
    location = cat.load_table(f"{ns}.b").location()
    assert any(k.endswith(".parquet") for k in objects_of(eddy, location))
    spark.sql(f"DROP VIEW eddy.{ns}.w")
    assert cat.list_views(ns) == []
    spark.sql(f"DROP TABLE eddy.{ns}.b PURGE")
    assert spark.sql(f"SHOW TABLES IN eddy.{ns}").collect() == []
    assert trino.query(f"SHOW TABLES FROM eddy.{ns}") == []
    assert cat.list_tables(ns) == []
    assert objects_of(eddy, location) == []
    spark.sql(f"DROP NAMESPACE eddy.{ns}")
    assert ns not in [r.namespace for r in spark.sql("SHOW NAMESPACES IN eddy").collect()]
    assert [ns] not in trino.query("SHOW SCHEMAS FROM eddy")


def test_a_typed_avro_table_in_trino_and_spark(eddy, trino, spark):
    """A topic written by confluent-kafka's AvroSerializer, expanded by its registered
    schema (test_typed_tables.py): Trino and Spark read every mapped type as produced."""
    import uuid as uuidlib

    from test_iceberg import catalog as kafka_catalog
    from test_typed_tables import NS, avro_topic, order

    topic = f"typed_engines_{uuidlib.uuid4().hex[:6]}"
    values = [order(i) for i in range(4)]
    avro_topic(eddy, topic, values)
    table = f"eddy.{NS}.{topic}"

    def expected(v):
        either = v["either"] if isinstance(v["either"], str) else None
        return (v["id"], v["qty"], v["paid"], str(v["price"]), v["day"].isoformat(),
                v["at"].strftime("%Y-%m-%d %H:%M:%S.%f"), str(v["uid"]), v["state"],
                v["note"], either, len(v["tags"]), v["attrs"]["k"], v["customer"]["name"],
                v["blob"].hex())

    want = sorted(expected(v) for v in values)
    # A load through PyIceberg seals the tail first, so both engines see every record.
    kafka_catalog(eddy).load_table(f"{NS}.{topic}")
    assert trino_rows(trino, f"""
        SELECT id, qty, paid, CAST(price AS varchar), CAST(day AS varchar),
               replace(CAST(at AT TIME ZONE 'UTC' AS varchar), ' UTC', ''),
               CAST(uid AS varchar), state, note, either.string, cardinality(tags),
               element_at(attrs, 'k'), customer.name, to_hex(blob)
        FROM {table}""") == [(*w[:13], w[13].upper()) for w in want]
    assert spark_rows(spark, f"""
        SELECT id, qty, paid, CAST(price AS string), CAST(day AS string),
               date_format(at, 'yyyy-MM-dd HH:mm:ss.SSSSSS'), uid, state, note,
               either.string, size(tags), attrs['k'], customer.name, lower(hex(blob))
        FROM {table}""") == want
