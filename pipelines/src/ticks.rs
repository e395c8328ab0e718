//! Schedule triggers: each tick of the cron expression becomes one event in the
//! trigger's topic, committed with the trigger's cursor moving past that tick, so a tick
//! fires once across restarts and however many nodes run the pipeline. Ticks missed
//! while no server ran fire, in order, when one is back.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use catalog::{Catalog, CatalogError, Op, PipelineOp, Transaction};

use crate::records::{self, OutRecord};
use crate::schedule::Cron;
use crate::spec::Pipeline;

/// Longest sleep before the cursor is read again.
const MAX_SLEEP: Duration = Duration::from_secs(30);

/// The cursor of a schedule trigger (no link name holds a `:`).
pub fn cursor(trigger: &str) -> String {
    format!("schedule:{trigger}")
}

/// Fires the trigger's ticks until aborted.
pub async fn run(
    catalog: Arc<dyn Catalog>,
    p: Arc<Pipeline>,
    trigger: String,
    cron: Cron,
    type_prefix: String,
    ownership: Arc<dyn crate::ownership::Ownership>,
) {
    // A trigger that never fired starts with the first tick after it started running.
    let started = now_secs().saturating_sub(1);
    let key = crate::ownership::key(&p.name, &cursor(&trigger), 0);
    loop {
        let Some(leases) = ownership.owns(&key) else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        if let Err(e) = tick(
            catalog.as_ref(),
            &p,
            &trigger,
            &cron,
            &type_prefix,
            started,
            leases,
        )
        .await
        {
            tracing::warn!(pipeline = %p.name, trigger = %trigger, error = %e, "schedule trigger could not fire; retrying");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

async fn tick(
    catalog: &dyn Catalog,
    p: &Pipeline,
    trigger: &str,
    cron: &Cron,
    type_prefix: &str,
    started: u64,
    leases: Vec<catalog::Lease>,
) -> Result<(), CatalogError> {
    let cursor = cursor(trigger);
    let at = catalog.pipelines().position(&p.name, &cursor, 0).await?;
    let now = now_secs();
    // Never fired: the first tick after the trigger started. Else the first at or after
    // the cursor.
    let base = if at == 0 { started } else { at - 1 };
    let Some(t) = cron.next_after(base) else {
        tokio::time::sleep(MAX_SLEEP).await;
        return Ok(());
    };
    if t > now {
        tokio::time::sleep(Duration::from_secs(t - now).min(MAX_SLEEP)).await;
        return Ok(());
    }
    let name = p.topic_of(trigger);
    let topic = catalog
        .kafka()
        .topic(&name)
        .await?
        .ok_or(CatalogError::UnknownTopic(name))?;
    let ms = i64::try_from(t).unwrap_or(i64::MAX).saturating_mul(1000);
    let time = notify::record::event_time(ms);
    let s = |v: String| Bytes::from(v);
    let record = OutRecord {
        key: Some(Bytes::from(trigger.to_owned())),
        value: Bytes::from(serde_json::json!({ "scheduled": time }).to_string()),
        headers: vec![
            ("ce_specversion".into(), Bytes::from_static(b"1.0")),
            ("ce_id".into(), s(format!("{}/{trigger}/{t}", p.name))),
            (
                "ce_source".into(),
                s(format!("/pipelines/{}/triggers/{trigger}", p.name)),
            ),
            ("ce_type".into(), s(format!("{type_prefix}Schedule.Tick"))),
            ("ce_time".into(), s(time)),
            ("ce_traceparent".into(), s(crate::trace::new_traceparent())),
            (
                "content-type".into(),
                Bytes::from_static(b"application/json"),
            ),
        ],
        timestamp_ms: ms,
    };
    let ops = vec![
        records::append(topic.id, 0, &[record])?,
        Op::Pipeline(PipelineOp::Advance {
            pipeline: p.name.clone(),
            cursor,
            partition: 0,
            expected: at,
            next: t + 1,
        }),
    ];
    match catalog.commit(Transaction { ops, leases }).await {
        // Another node fired it first.
        Ok(_) | Err(CatalogError::PreconditionFailed(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

fn now_secs() -> u64 {
    u64::try_from(crate::now_ms() / 1000).unwrap_or(0)
}
