//! Reading a topic's committed log into Arrow rows for a snapshot, as a part of
//! [`super::Tabler`]: which batches a pass takes (bounded by bytes), their rows, and the
//! offsets a data file's name holds.

use super::*;

/// Rows of one partition read from the log for one snapshot.
pub(super) struct PartitionRows {
    pub(super) partition: u32,
    pub(super) first: u64,
    pub(super) next: u64,
    /// In offset order, in as many record batches as they were built in.
    pub(super) rows: Vec<RecordBatch>,
}

/// What one pass over a topic's partitions collected.
pub(super) struct Collected {
    pub(super) files: Vec<PartitionRows>,
    pub(super) tabled: Vec<u64>,
    pub(super) more: bool,
    /// The expansions, holding their rows of the same records.
    pub(super) expansions: expand::StepExpansions,
}

/// How many data records the log holds for offsets `first..next` of one partition, from
/// the batch headers; `None` when a batch reaches outside the range or is a control or
/// transactional batch (only decoding tells then).
pub(super) fn log_count(
    catalog: &dyn Catalog,
    topic_id: u128,
    partition: u32,
    first: u64,
    next: u64,
) -> TableResult<Option<u64>> {
    let mut count = 0u64;
    let mut pos = first;
    while pos < next {
        let batches = wait(
            catalog
                .kafka()
                .read_batches(topic_id, partition, pos, 4 << 20),
        )?;
        if batches.is_empty() {
            break;
        }
        for b in &batches {
            if b.base_offset >= next {
                return Ok(Some(count));
            }
            // A transactional batch may be one an abort dropped: decoding tells.
            let control = b.bytes.get(22).is_some_and(|a| a & (1 << 5 | 1 << 4) != 0);
            let records = b
                .bytes
                .get(57..61)
                .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]));
            match records {
                Some(n) if !control && b.base_offset >= first && b.last_offset < next => {
                    count += u64::try_from(n).unwrap_or(0);
                }
                _ => return Ok(None),
            }
            pos = b.last_offset + 1;
        }
    }
    Ok(Some(count))
}

/// The rows the log holds for offsets `first..next` of one partition.
pub(super) fn log_rows(
    catalog: &dyn Catalog,
    topic: &TopicRecord,
    partition: u32,
    first: u64,
    next: u64,
    schema: arrow::datatypes::SchemaRef,
) -> TableResult<Vec<RecordBatch>> {
    let mut rows = RowBuilder::new(schema, partition)?;
    add_log_range(
        catalog,
        topic,
        partition,
        &mut rows,
        (first, next),
        usize::MAX,
        &mut |_| {},
    )?;
    Ok(rows.finish())
}

/// Adds the log's records of offsets `from..to` of one partition to `rows` (and passes
/// each to `each`), until they hold `budget` bytes; returns the offset it stopped at
/// (`to` when it read them all).
pub(super) fn add_log_range(
    catalog: &dyn Catalog,
    topic: &TopicRecord,
    partition: u32,
    rows: &mut RowBuilder,
    (from, to): (u64, u64),
    budget: usize,
    each: &mut dyn FnMut(&kafka_protocol::records::Record),
) -> TableResult<u64> {
    let mut pos = from;
    // A table holds what a read_committed consumer sees: aborted batches stay out.
    let (kafka, txns) = (catalog.kafka(), catalog.txns());
    let aborted = wait(txns.aborted_txns(topic.id, partition, from, to))?;
    while pos < to && rows.bytes < budget {
        let batches = wait(kafka.read_batches(topic.id, partition, pos, 4 << 20))?;
        let Some(last) = batches.last() else {
            return Ok(to);
        };
        let next = (last.last_offset + 1).clamp(pos, to);
        let kept = batches
            .iter()
            .filter(|b| b.base_offset < to && !b.is_aborted(&aborted));
        rows.add_batches(&topic.name, partition, kept, (pos, to), each)?;
        pos = next;
        if batches.iter().any(|b| b.base_offset >= to) {
            return Ok(to);
        }
    }
    Ok(pos)
}

/// Partition and offset range (`first..next`) of a data file, from its name.
pub(super) fn file_range(path: &str) -> Option<(u32, u64, u64)> {
    let (dir, name) = path.rsplit_once('/')?;
    let p = dir.rsplit_once("/partition=")?.1.parse().ok()?;
    let mut parts = name.split('-');
    let first = parts.next()?.parse().ok()?;
    let next = parts.next()?.parse().ok()?;
    Some((p, first, next))
}

/// Reads the untabled records of every partition, up to `max_bytes` in all, and
/// expands them as `expansions` say (a partition's step ends where another version of
/// an expansion takes effect), none past `until` when it is given.
pub(super) fn collect(
    catalog: &dyn Catalog,
    topic: &TopicRecord,
    tabled: &[u64],
    schema: arrow::datatypes::SchemaRef,
    max_bytes: usize,
    mut expansions: expand::StepExpansions,
    until: Option<&[u64]>,
) -> TableResult<Collected> {
    let mut out = Collected {
        files: Vec::new(),
        tabled: vec![0; topic.partitions as usize],
        more: false,
        expansions: expand::StepExpansions::default(),
    };
    let mut budget = max_bytes;
    for p in 0..topic.partitions {
        let before = tabled.get(p as usize).copied().unwrap_or(0);
        out.tabled[p as usize] = before;
        // Sealing stops at the last stable offset: an open transaction's rows appear
        // once it commits.
        let Some((st, end)) = wait(catalog.kafka().stable_partition(topic.id, p))? else {
            continue;
        };
        // A table being rebuilt goes no further than it was (`until`) before it goes on.
        let end = until
            .and_then(|u| u.get(p as usize))
            .map_or(end, |u| end.min(*u));
        let first = before.max(st.log_start_offset);
        if first >= end {
            out.tabled[p as usize] = first;
            continue;
        }
        if budget == 0 {
            out.more = true;
            continue;
        }
        let to = expansions.end(p, first, end);
        let mut rows = RowBuilder::new(schema.clone(), p)?;
        let mut expanders = expansions.expanders(p, first)?;
        let pos = add_log_range(
            catalog,
            topic,
            p,
            &mut rows,
            (first, to),
            budget,
            &mut |r| expanders.push(p, r),
        )?;
        budget = budget.saturating_sub(rows.bytes);
        out.more |= pos < end;
        out.tabled[p as usize] = pos;
        expansions.take(expanders, p, (first, pos))?;
        if !rows.is_empty() {
            out.files.push(PartitionRows {
                partition: p,
                first,
                next: pos,
                rows: rows.finish(),
            });
        }
    }
    // Older records an expansion asked to backfill, with what the budget leaves.
    let (_, more) = expansions.backfill(catalog, topic, budget)?;
    out.more |= more;
    out.expansions = expansions;
    Ok(out)
}
