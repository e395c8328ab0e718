//! Reads of the schema-registry domain: schemas by id or fingerprint, subjects and the
//! registry's settings (shared by every view, like users and policies).

use super::{Reads, Schemas};
use crate::error::CatalogResult;
use crate::model::{SchemaRecord, SubjectRecord};
use crate::{read, tables};

impl Reads<'_, Schemas> {
    /// The schema bound to `id`.
    pub async fn schema(&self, id: u32) -> CatalogResult<Option<SchemaRecord>> {
        read::get(self.kv, tables::SCHEMAS, &id.to_be_bytes()).await
    }

    /// The id of the schema with this fingerprint.
    pub async fn id_of(&self, fingerprint: &[u8]) -> CatalogResult<Option<u32>> {
        let raw = read::get_raw(self.kv, tables::SCHEMA_FINGERPRINTS, fingerprint).await?;
        Ok(raw.and_then(|v| v.as_slice().try_into().ok().map(u32::from_be_bytes)))
    }

    /// The highest id bound so far (0: none).
    pub async fn last_id(&self) -> CatalogResult<u32> {
        let raw = read::get_raw(self.kv, tables::META, tables::SCHEMA_ID).await?;
        let last = raw
            .and_then(|v| v.as_slice().try_into().ok().map(u64::from_be_bytes))
            .unwrap_or(0);
        Ok(u32::try_from(last).unwrap_or(u32::MAX))
    }

    /// A subject (the empty name: the registry's settings).
    pub async fn subject(&self, name: &str) -> CatalogResult<Option<SubjectRecord>> {
        read::get(self.kv, tables::SCHEMA_SUBJECTS, name.as_bytes()).await
    }

    /// Every subject, by name (the registry's settings left out).
    pub async fn subjects(&self) -> CatalogResult<Vec<(String, SubjectRecord)>> {
        let found: Vec<(Vec<u8>, SubjectRecord)> =
            read::scan(self.kv, tables::SCHEMA_SUBJECTS, b"", usize::MAX).await?;
        Ok(found
            .into_iter()
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, s)| (String::from_utf8_lossy(&k).into_owned(), s))
            .collect())
    }
}
