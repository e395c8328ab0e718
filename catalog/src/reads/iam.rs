//! Reads of users and identity policies (shared by every view).

use super::all;
use super::{Iam, Reads};
use crate::error::CatalogResult;
use crate::model::{PolicyRecord, UserRecord};
use crate::tables;

impl Reads<'_, Iam> {
    /// Every user, by name.
    pub async fn users(&self) -> CatalogResult<Vec<UserRecord>> {
        all(self.kv, tables::USERS).await
    }

    /// Every named identity policy, by name.
    pub async fn policies(&self) -> CatalogResult<Vec<PolicyRecord>> {
        all(self.kv, tables::POLICIES).await
    }
}
