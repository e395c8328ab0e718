//! Reads of the function-pipeline domain: pipelines and their cursors' positions (shared
//! by every view, like users and policies).

use super::{Pipelines, Reads};
use crate::error::CatalogResult;
use crate::model::{PipelinePosition, PipelineRecord};
use crate::{read, tables};

/// One cursor's position: (cursor, partition, next).
pub type CursorPosition = (String, u32, u64);

impl Reads<'_, Pipelines> {
    /// A pipeline.
    pub async fn pipeline(&self, name: &str) -> CatalogResult<Option<PipelineRecord>> {
        read::get(self.kv, tables::PIPELINES, name.as_bytes()).await
    }

    /// Every pipeline, by name.
    pub async fn pipelines(&self) -> CatalogResult<Vec<PipelineRecord>> {
        let found: Vec<(Vec<u8>, PipelineRecord)> =
            read::scan(self.kv, tables::PIPELINES, b"", usize::MAX).await?;
        Ok(found.into_iter().map(|(_, p)| p).collect())
    }

    /// Where one cursor of a pipeline is (0: never moved).
    pub async fn position(
        &self,
        pipeline: &str,
        cursor: &str,
        partition: u32,
    ) -> CatalogResult<u64> {
        let at: Option<PipelinePosition> = read::get(
            self.kv,
            tables::PIPELINE_POSITIONS,
            &tables::pipeline_position_key(pipeline, cursor, partition),
        )
        .await?;
        Ok(at.map_or(0, |p| p.next))
    }

    /// Every cursor position of a pipeline.
    pub async fn positions(&self, pipeline: &str) -> CatalogResult<Vec<CursorPosition>> {
        let prefix = tables::pipeline_positions_prefix(pipeline);
        let found: Vec<(Vec<u8>, PipelinePosition)> =
            read::scan(self.kv, tables::PIPELINE_POSITIONS, &prefix, usize::MAX).await?;
        Ok(found
            .into_iter()
            .filter_map(|(k, p)| {
                let (cursor, partition) = tables::pipeline_position_of(&prefix, &k)?;
                Some((cursor, partition, p.next))
            })
            .collect())
    }
}
