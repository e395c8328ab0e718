//! Consumer lag for operators: per group and topic, the records between each
//! partition's high watermark and the group's committed offset, summed over the
//! topic's partitions. Refreshed on an interval rather than per scrape, so a scrape never
//! walks every group's offsets.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::Broker;
use crate::metrics::LagLabels;

/// Recomputes the lag gauges every `every` until `shutdown` flips.
pub async fn run(broker: Arc<Broker>, every: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        match measure(&broker).await {
            Ok(lags) => {
                let family = &broker.metrics.consumer_lag;
                family.clear();
                for (labels, lag) in lags {
                    family.get_or_create(&labels).set(lag);
                }
            }
            Err(e) => tracing::warn!(error = %e, "measuring consumer lag failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.changed() => return,
        }
    }
}

async fn measure(broker: &Broker) -> catalog::CatalogResult<BTreeMap<LagLabels, i64>> {
    let catalog = &broker.catalog;
    let mut out = BTreeMap::new();
    let mut topics = BTreeMap::new();
    for group in catalog.groups().all().await? {
        for (topic, partition, committed) in catalog.groups().offsets(&group.name).await? {
            if !topics.contains_key(&topic) {
                topics.insert(topic.clone(), catalog.kafka().topic(&topic).await?);
            }
            let Some(Some(t)) = topics.get(&topic) else {
                continue;
            };
            let Some(state) = catalog.kafka().partition(t.id, partition).await? else {
                continue;
            };
            let lag = (state.next_offset as i64 - committed.offset.max(0)).max(0);
            *out.entry(LagLabels {
                group: group.name.clone(),
                topic: topic.clone(),
            })
            .or_insert(0) += lag;
        }
    }
    Ok(out)
}
