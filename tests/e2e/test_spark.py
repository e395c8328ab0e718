"""Spark reads Kafka topics as Iceberg tables: a local SparkSession (pyspark) with the
Iceberg Spark runtime and catalog `eddy` from compose/spark/spark-defaults.conf, on
Eddy's REST catalog and S3 endpoint. Records produced with confluent-kafka are queried
with Spark SQL and the DataFrame API: namespaces, tables, columns, exact rows, JSON in
values, time travel, a topic joined with its blob expansion, transactions, and writes
refused with Eddy's reason. The SQL of docs/analytics.md and compose/README.md marked for
Spark runs as written."""

import json

import pytest

from conftest import ROOT
from engines import run_doc_with_engine, spark_session, spark_shown
from test_expansion import attach, field
from test_iceberg import catalog, create, produce, sample_records
from test_trino import by_offset, produce_json, topic_name
from test_txn_tables import in_txn, txn_producer


@pytest.fixture(scope="module")
def spark(eddy):
    with spark_session(eddy) as s:
        yield s


def spark_rows(spark, topic, at=""):
    """SELECT key, value, partition, offset, timestamp, headers as users write it, in
    the shape test_iceberg.produce returns (timestamps in ms, headers as pairs)."""
    rows = spark.sql(f"SELECT key, value, partition, offset, timestamp, headers "
                     f"FROM eddy.kafka_topics.{topic} {at}").collect()
    return by_offset({
        "key": None if r.key is None else bytes(r.key),
        "value": None if r.value is None else bytes(r.value),
        "partition": r.partition, "offset": r.offset,
        "timestamp": int(r.timestamp.timestamp() * 1000 + 0.5),
        "headers": [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers],
    } for r in rows)


def test_the_docs_spark_examples_run_as_written(eddy, spark):
    """docs/analytics.md from the top (topic, expansion, records), every Spark query in
    it with the output it shows; then compose/README.md's Spark queries."""
    def run(sql):
        try:
            return True, spark_shown(spark.sql(sql))
        except Exception as e:  # the doc shows what the user is told
            return False, str(e)

    assert run_doc_with_engine(ROOT / "docs" / "analytics.md", eddy, "spark", run) >= 6
    assert run_doc_with_engine(ROOT / "compose" / "README.md", eddy, "spark", run,
                               run_blocks=False) >= 3


def test_namespaces_tables_and_columns(eddy, spark):
    topic = topic_name("shape")
    create(eddy, topic, 2)
    assert "kafka_topics" in [r.namespace for r in spark.sql("SHOW NAMESPACES IN eddy").collect()]
    assert topic in [r.tableName for r in spark.sql("SHOW TABLES IN eddy.kafka_topics").collect()]
    described = [(r.col_name, r.data_type) for r in
                 spark.sql(f"DESCRIBE TABLE eddy.kafka_topics.{topic}").collect()]
    assert described[:7] == [
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
        ("timestamp_broker", "timestamp"),
        ("key", "binary"),
        ("value", "binary"),
        ("headers", "array<struct<key:string,value:binary>>"),
    ]
    # The table's identity partitioning on the Kafka partition.
    assert ("partition", "int") in described[7:]
    assert spark.table(f"eddy.kafka_topics.{topic}").count() == 0


def test_rows_are_exactly_the_produced_records(eddy, spark):
    topic = topic_name("rows")
    create(eddy, topic, 3)
    first = produce(eddy, topic, sample_records(40, 3))
    assert spark_rows(spark, topic) == by_offset(first)
    # Acknowledged just now: the next query sees them (the catalog's cache is off in
    # spark-defaults.conf, so each query loads the table, and the load seals the tail).
    second = produce(eddy, topic, sample_records(9, 3))
    assert spark_rows(spark, topic) == by_offset(first + second)


def test_dataframe_api(eddy, spark):
    from pyspark.sql import functions as F

    topic = topic_name("frames")
    create(eddy, topic, 2)
    docs = [{"item": it, "qty": q} for it, q in [("apple", 3), ("pear", 1), ("apple", 4), ("plum", 7)]]
    at = produce_json(eddy, topic, docs, partitions=2)
    df = spark.table(f"eddy.kafka_topics.{topic}")
    apples = (df.filter(F.get_json_object(F.col("value").cast("string"), "$.item") == "apple")
                .select("partition", "offset", F.col("key").cast("string").alias("key"))
                .orderBy("partition", "offset").collect())
    assert [tuple(r) for r in apples] == [(*at[0], "k0"), (*at[2], "k2")]
    one = df.filter((F.col("partition") == at[3][0]) & (F.col("offset") == at[3][1])).collect()
    assert [json.loads(bytes(r.value)) for r in one] == [docs[3]]
    totals = (df.groupBy(F.get_json_object(F.col("value").cast("string"), "$.item").alias("item"))
                .agg(F.sum(F.get_json_object(F.col("value").cast("string"), "$.qty").cast("int")).alias("qty"))
                .orderBy("item").collect())
    assert [tuple(r) for r in totals] == [("apple", 7), ("pear", 1), ("plum", 7)]


def test_json_values_in_spark_sql(eddy, spark):
    topic = topic_name("json")
    create(eddy, topic, 2)
    docs = [{"item": it, "qty": q, "shop": {"city": c}} for it, q, c in
            [("apple", 3, "Berlin"), ("pear", 1, "Paris"), ("apple", 4, "Paris"), ("plum", 7, "Berlin")]]
    produce_json(eddy, topic, docs, partitions=2)
    rows = spark.sql(f"""
        SELECT CAST(key AS STRING) AS key FROM eddy.kafka_topics.{topic}
        WHERE get_json_object(CAST(value AS STRING), '$.shop.city') = 'Paris'
        ORDER BY key""").collect()
    assert [r.key for r in rows] == ["k1", "k2"]
    rows = spark.sql(f"""
        SELECT o.item, sum(o.qty) AS qty FROM (
          SELECT from_json(CAST(value AS STRING), 'item STRING, qty INT') AS o
          FROM eddy.kafka_topics.{topic})
        GROUP BY o.item ORDER BY o.item""").collect()
    assert [tuple(r) for r in rows] == [("apple", 7), ("pear", 1), ("plum", 7)]
    rows = spark.sql(f"""
        SELECT DISTINCT h.key, CAST(h.value AS STRING) AS value
        FROM eddy.kafka_topics.{topic} LATERAL VIEW explode(headers) AS h""").collect()
    assert [tuple(r) for r in rows] == [("source", "test")]


def test_time_travel_to_an_older_snapshot(eddy, spark):
    topic = topic_name("travel")
    create(eddy, topic, 2)
    first = produce(eddy, topic, sample_records(10, 2))
    assert spark_rows(spark, topic) == by_offset(first)
    # The snapshot id from PyIceberg (Spark's metadata tables have it too:
    # test_metadata_tables below).
    older = catalog(eddy).load_table(("kafka_topics", topic)).current_snapshot().snapshot_id
    second = produce(eddy, topic, sample_records(6, 2))
    assert spark_rows(spark, topic) == by_offset(first + second)
    assert spark_rows(spark, topic, f"VERSION AS OF {older}") == by_offset(first)
    df = spark.read.option("versionAsOf", older).table(f"eddy.kafka_topics.{topic}")
    assert df.count() == len(first)


def test_metadata_tables(eddy, spark):
    topic = topic_name("meta")
    create(eddy, topic, 1)
    produce(eddy, topic, sample_records(4, 1))
    assert spark.table(f"eddy.kafka_topics.{topic}").count() == 4
    snaps = spark.sql(f"SELECT snapshot_id, operation FROM eddy.kafka_topics.{topic}.snapshots").collect()
    assert [r.operation for r in snaps][-1] == "append"
    assert spark.sql(f"SELECT count(*) AS n FROM eddy.kafka_topics.{topic}.files").first().n == 1


def expanded_topic(eddy):
    """A one-partition topic with a flattened expansion into expanded.<target>, and three
    JSON records (one with a field the schema lacks, one with a mismatched type)."""
    topic = topic_name("joined")
    target = topic_name("orders")
    create(eddy, topic, 1)
    attach(eddy, topic, {"type": "struct", "fields": [
        field("id", "long"), field("item", "string"), field("qty", "int"),
        field("customer", {"type": "struct", "fields": [field("name", "string")]}),
    ]}, f"expanded.{target}", flatten_path=True)
    docs = [{"id": 1, "item": "apple", "qty": 3, "customer": {"name": "Ada"}},
            {"id": 2, "item": "pear", "qty": 1, "customer": {"name": "Grace"}, "note": "gift"},
            {"id": 3, "item": "plum", "qty": "seven", "customer": {"name": "Ada"}}]
    return topic, target, produce_json(eddy, topic, docs)


def test_an_expansion_target_read_without_its_partition_column(eddy, spark):
    topic, target, at = expanded_topic(eddy)
    assert target in [r.tableName for r in spark.sql("SHOW TABLES IN eddy.expanded").collect()]
    rows = spark.sql(f"""
        SELECT _offset, id, item, qty, customer__name, _excess_values, _parse_error
        FROM eddy.expanded.{target} ORDER BY _offset""").collect()
    assert [tuple(r) for r in rows] == [
        (at[0][1], 1, "apple", 3, "Ada", 0, 0),
        (at[1][1], 2, "pear", 1, "Grace", 1, 0),
        (at[2][1], 3, "plum", None, "Ada", 0, 1),  # "seven" is no int: null, parse error
    ]
    totals = spark.sql(f"""
        SELECT customer__name, sum(qty) AS qty FROM eddy.expanded.{target}
        GROUP BY customer__name ORDER BY customer__name""").collect()
    assert [tuple(r) for r in totals] == [("Ada", 3), ("Grace", 1)]


def test_a_topic_joined_with_its_expansion(eddy, spark):
    topic, target, at = expanded_topic(eddy)
    rows = spark.sql(f"""
        SELECT o.partition, o.offset, CAST(o.key AS STRING) AS key, e.id, e.customer__name
        FROM eddy.kafka_topics.{topic} o
        JOIN eddy.expanded.{target} e ON e._kafka_partition = o.partition AND e._offset = o.offset
        ORDER BY o.offset""").collect()
    assert [tuple(r) for r in rows] == [
        (*at[0], "k0", 1, "Ada"), (*at[1], "k1", 2, "Grace"), (*at[2], "k2", 3, "Ada")]
    # The same join with the DataFrame API.
    o = spark.table(f"eddy.kafka_topics.{topic}")
    e = spark.table(f"eddy.expanded.{target}")
    # `o["offset"]`: `o.offset` is DataFrame.offset(), a method.
    joined = (o.join(e, (e._kafka_partition == o["partition"]) & (e._offset == o["offset"]))
               .filter(e.customer__name == "Ada").select(o["offset"]).orderBy(o["offset"])
               .collect())
    assert [r["offset"] for r in joined] == [at[0][1], at[2][1]]
    # SELECT * reads every column of the target, the record's partition included.
    every = spark.sql(f"SELECT * FROM eddy.expanded.{target} ORDER BY _offset").collect()
    assert [(r["_kafka_partition"], r["_offset"]) for r in every] == [tuple(a) for a in at]


def test_open_and_aborted_transactions_never_show(eddy, spark):
    topic = topic_name("txn")
    create(eddy, topic, 1)
    p = txn_producer(eddy, f"tid-{topic}")
    in_txn(p, topic, [b"c1", b"c2"], commit=True)
    in_txn(p, topic, [b"a1", b"a2"], commit=False)

    def values():
        return [bytes(r.value) for r in spark.sql(
            f"SELECT value FROM eddy.kafka_topics.{topic} ORDER BY offset").collect()]

    assert values() == [b"c1", b"c2"]
    p.begin_transaction()
    p.produce(topic, key=b"k", value=b"open", partition=0)
    assert p.flush(30) == 0
    assert values() == [b"c1", b"c2"]
    p.abort_transaction(30)
    assert values() == [b"c1", b"c2"]
    in_txn(p, topic, [b"c3"], commit=True)
    assert values() == [b"c1", b"c2", b"c3"]


def test_writes_to_topic_tables_are_refused_with_the_reason(eddy, spark):
    topic = topic_name("readonly")
    create(eddy, topic, 1)
    produce(eddy, topic, sample_records(3, 1))
    before = spark_rows(spark, topic)

    # INSERT writes its Parquet file first: Eddy's S3 endpoint refuses it (403) with its
    # reason, which reaches the user in the error Spark raises.
    with pytest.raises(Exception) as e:
        spark.sql(f"INSERT INTO eddy.kafka_topics.{topic} "
                  "VALUES (0, 99, current_timestamp(), NULL, NULL, NULL, array())")
    assert "bucket kafka is managed by the broker" in str(e.value), str(e.value)[:3000]

    # Changes that go to the catalog get its 403 and message.
    for sql in (f"ALTER TABLE eddy.kafka_topics.{topic} SET TBLPROPERTIES ('note' = 'mine')",
                f"ALTER TABLE eddy.kafka_topics.{topic} ADD COLUMN note STRING",
                f"DROP TABLE eddy.kafka_topics.{topic}",
                "CREATE TABLE eddy.kafka_topics.made_by_sql (a INT)"):
        with pytest.raises(Exception) as e:
            spark.sql(sql)
        assert "Kafka topics and read-only" in str(e.value), (sql, str(e.value)[:3000])
    assert spark_rows(spark, topic) == before
