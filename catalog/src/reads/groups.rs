//! Reads of consumer groups, their committed offsets and share groups' partition states,
//! by the view's names.

use super::{Groups, Reads};
use crate::error::{CatalogError, CatalogResult};
use crate::model::{GroupRecord, OffsetRecord, ShareStateRecord};
use crate::{read, tables};

impl Reads<'_, Groups> {
    /// A committed offset.
    pub async fn offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> CatalogResult<Option<OffsetRecord>> {
        let (Some(g), Some(t)) = (self.names.stored(group), self.names.stored(topic)) else {
            return Ok(None);
        };
        read::get(
            self.kv,
            tables::OFFSETS,
            &tables::offset_key(&g, &t, partition),
        )
        .await
    }

    /// Every committed offset of a group as (topic, partition, offset).
    pub async fn offsets(&self, group: &str) -> CatalogResult<Vec<(String, u32, OffsetRecord)>> {
        let Some(g) = self.names.stored(group) else {
            return Ok(Vec::new());
        };
        Ok(read::offsets(self.kv, &g)
            .await?
            .into_iter()
            .filter_map(|(t, p, o)| Some((self.names.client(&t)?, p, o)))
            .collect())
    }

    /// A share group's stored state of one partition.
    pub async fn share_state(
        &self,
        group: &str,
        topic_id: u128,
        partition: u32,
    ) -> CatalogResult<Option<ShareStateRecord>> {
        let Some(g) = self.names.stored(group) else {
            return Ok(None);
        };
        read::get(
            self.kv,
            tables::SHARE_STATES,
            &tables::share_state_key(&g, topic_id, partition),
        )
        .await
    }

    /// Every stored partition state of a share group as (topic id, partition, state), by
    /// topic id, then partition.
    pub async fn share_states(
        &self,
        group: &str,
    ) -> CatalogResult<Vec<(u128, u32, ShareStateRecord)>> {
        let Some(g) = self.names.stored(group) else {
            return Ok(Vec::new());
        };
        let found: Vec<(Vec<u8>, ShareStateRecord)> = read::scan(
            self.kv,
            tables::SHARE_STATES,
            &tables::group_prefix(&g),
            usize::MAX,
        )
        .await?;
        found
            .into_iter()
            .map(|(k, s)| {
                let (topic_id, partition) = tables::share_state_of(&g, &k).ok_or_else(|| {
                    CatalogError::Corrupt(format!("share state key of {} bytes", k.len()))
                })?;
                Ok((topic_id, partition, s))
            })
            .collect()
    }

    /// A group's stored state.
    pub async fn group(&self, name: &str) -> CatalogResult<Option<GroupRecord>> {
        let Some(g) = self.names.stored(name) else {
            return Ok(None);
        };
        let found: Option<GroupRecord> = read::get(self.kv, tables::GROUPS, g.as_bytes()).await?;
        Ok(found.and_then(|g| self.names.group_out(g)))
    }

    /// Every stored group.
    pub async fn all(&self) -> CatalogResult<Vec<GroupRecord>> {
        let found: Vec<GroupRecord> = super::all(self.kv, tables::GROUPS).await?;
        Ok(found
            .into_iter()
            .filter_map(|g| self.names.group_out(g))
            .collect())
    }
}
