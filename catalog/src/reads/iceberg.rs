//! Reads of the Iceberg side: where each topic's table stands, the tables and views
//! outside `kafka_topics`, users' namespaces, and topics' expansions into tables of their
//! own (by the view's topic names and namespaces).

use super::{Iceberg, Reads};
use crate::error::CatalogResult;
use crate::model::{self, Expansion, NamespaceRecord, TableRecord, TopicRecord, TopicTable};
use crate::{read, tables};

impl Reads<'_, Iceberg> {
    /// Where a topic's Iceberg table stands (none before its first snapshot).
    pub async fn topic_table(&self, topic: &str) -> CatalogResult<Option<TopicTable>> {
        let Some(t) = self.names.stored(topic) else {
            return Ok(None);
        };
        read::get(self.kv, tables::TOPIC_TABLES, t.as_bytes()).await
    }

    /// A topic's expansions, by source column.
    pub async fn expansions(&self, topic: &str) -> CatalogResult<Vec<(String, Expansion)>> {
        let Some(t) = self.names.stored(topic) else {
            return Ok(Vec::new());
        };
        let found: Vec<(Vec<u8>, Expansion)> = read::scan(
            self.kv,
            tables::EXPANSIONS,
            &tables::expansions_prefix(&t),
            usize::MAX,
        )
        .await?;
        found
            .into_iter()
            .filter_map(|(k, e)| Some((tables::expansion_source(&t, &k)?, e)))
            .map(|(source, e)| Ok((source, self.names.expansion(e, false)?)))
            .collect()
    }

    /// The first offset of a partition that the topic's expansions have not read yet
    /// (none without an expansion): retention, DeleteRecords and compaction remove
    /// nothing from it on ([`model::expanded_to`]).
    pub async fn expanded_to(
        &self,
        topic: &TopicRecord,
        partition: u32,
    ) -> CatalogResult<Option<u64>> {
        let expansions = self.expansions(&topic.name).await?;
        if expansions.is_empty() {
            return Ok(None);
        }
        let table = self.topic_table(&topic.name).await?;
        Ok(model::expanded_to(
            &expansions,
            table.as_ref(),
            topic.id,
            partition,
        ))
    }

    /// A table outside `kafka_topics`.
    pub async fn other_table(
        &self,
        namespace: &str,
        name: &str,
    ) -> CatalogResult<Option<TableRecord>> {
        let Some(ns) = self.names.stored(namespace) else {
            return Ok(None);
        };
        read::get(self.kv, tables::OTHER_TABLES, &tables::table_key(&ns, name)).await
    }

    /// Every table outside `kafka_topics`, as (namespace, name, record), in that order.
    pub async fn other_tables(&self) -> CatalogResult<Vec<(String, String, TableRecord)>> {
        let found: Vec<(Vec<u8>, TableRecord)> =
            read::scan(self.kv, tables::OTHER_TABLES, b"", usize::MAX).await?;
        Ok(found
            .into_iter()
            .filter_map(|(k, t)| {
                let (namespace, name) = tables::table_of_key(&k)?;
                Some((self.names.client(&namespace)?, name, t))
            })
            .collect())
    }

    /// A users' namespace (levels joined by 0x1F).
    pub async fn namespace(&self, namespace: &str) -> CatalogResult<Option<NamespaceRecord>> {
        let Some(ns) = self.names.stored(namespace) else {
            return Ok(None);
        };
        read::get(self.kv, tables::NAMESPACES, ns.as_bytes()).await
    }

    /// Every users' namespace, with its record, in key order.
    pub async fn namespaces(&self) -> CatalogResult<Vec<(String, NamespaceRecord)>> {
        let found: Vec<(Vec<u8>, NamespaceRecord)> =
            read::scan(self.kv, tables::NAMESPACES, b"", usize::MAX).await?;
        Ok(found
            .into_iter()
            .filter_map(|(k, n)| {
                let stored = String::from_utf8(k).ok()?;
                Some((self.names.client(&stored)?, n))
            })
            .collect())
    }

    /// An Iceberg view.
    pub async fn view(&self, namespace: &str, name: &str) -> CatalogResult<Option<TableRecord>> {
        let Some(ns) = self.names.stored(namespace) else {
            return Ok(None);
        };
        read::get(
            self.kv,
            tables::ICEBERG_VIEWS,
            &tables::table_key(&ns, name),
        )
        .await
    }

    /// The Iceberg views of a namespace, as (name, record), by name.
    pub async fn views(&self, namespace: &str) -> CatalogResult<Vec<(String, TableRecord)>> {
        let Some(ns) = self.names.stored(namespace) else {
            return Ok(Vec::new());
        };
        let found: Vec<(Vec<u8>, TableRecord)> = read::scan(
            self.kv,
            tables::ICEBERG_VIEWS,
            &tables::namespace_prefix(&ns),
            usize::MAX,
        )
        .await?;
        Ok(found
            .into_iter()
            .filter_map(|(k, v)| Some((tables::table_of_key(&k)?.1, v)))
            .collect())
    }
}
