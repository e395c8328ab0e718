//! The dirty part of a partition: what a cleaning pass may take, and whether one is due.
//!
//! Eddy keeps no log segments per partition, so the **head** that Kafka never compacts
//! (its active segment) is defined the way Kafka's segments roll: walking the dirty
//! batches in offset order, a new virtual segment starts when the current one would pass
//! `segment.bytes` or when a batch's timestamp is `segment.ms` past the segment's first
//! one. The last virtual segment is the head. Unlike Kafka, whose active segment rolls
//! only when a record arrives, an idle head whose first timestamp is older than
//! `segment.ms` (or `max.compaction.lag.ms`) rolls too, so a partition that stops
//! receiving records still gets compacted. Batches newer than `min.compaction.lag.ms`
//! and everything after them stay dirty as well.

use catalog::BatchInfo;

use super::policy::Policy;

/// What a walk over a partition's dirty batches found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dirty {
    /// The first dirty offset (the cleaned point, or the log start if that is later).
    pub first_dirty: u64,
    /// Cleanable batches end before this offset (the head or the compaction lag).
    pub cleanable_end: u64,
    /// Bytes of the cleanable dirty batches.
    pub dirty_bytes: u64,
    /// Bytes of the cleaned batches before `first_dirty`.
    pub clean_bytes: u64,
    /// Largest timestamp of the first cleanable batch (`i64::MAX`: none).
    pub first_dirty_timestamp: i64,
}

impl Dirty {
    /// Dirty bytes over all cleanable bytes (0 when there are none).
    pub fn ratio(&self) -> f64 {
        let total = self.dirty_bytes + self.clean_bytes;
        if total == 0 {
            0.0
        } else {
            self.dirty_bytes as f64 / total as f64
        }
    }

    /// Whether dirty batches are cleanable at all.
    pub fn any(&self) -> bool {
        self.cleanable_end > self.first_dirty && self.dirty_bytes > 0
    }

    /// Whether the dirty part calls for a pass: enough of it is dirty, or a dirty record
    /// has waited `max.compaction.lag.ms`.
    pub fn due(&self, policy: &Policy, now_ms: i64) -> bool {
        self.any()
            && (self.ratio() >= policy.min_dirty_ratio
                || self.first_dirty_timestamp < now_ms.saturating_sub(policy.max_lag_ms))
    }
}

/// A forward walk over the batches from the first dirty offset.
pub struct Walk {
    policy: Policy,
    now_ms: i64,
    first_dirty: u64,
    /// Start, bytes and first timestamp of the current virtual segment.
    segment: Option<(u64, u64, i64)>,
    /// Bytes of the batches before the current segment.
    before_segment: u64,
    /// Where `min.compaction.lag.ms` stops the cleanable range, and the bytes before it.
    lag_stop: Option<(u64, u64)>,
    first_timestamp: i64,
    /// Bytes of every batch walked.
    walked: u64,
    /// The cleanable range ends before the batch holding this offset.
    limit: u64,
}

impl Walk {
    /// A walk from `first_dirty` under `policy` at `now_ms`.
    pub fn new(policy: Policy, now_ms: i64, first_dirty: u64) -> Self {
        Self {
            policy,
            now_ms,
            first_dirty,
            segment: None,
            before_segment: 0,
            lag_stop: None,
            first_timestamp: i64::MAX,
            walked: 0,
            limit: u64::MAX,
        }
    }

    /// Ends the cleanable range before the batch holding `limit` (none: no limit): the
    /// first record a topic's expansion has not read.
    pub fn keeping_from(mut self, limit: Option<u64>) -> Self {
        self.limit = limit.unwrap_or(u64::MAX);
        self
    }

    /// Takes the next batch.
    pub fn step(&mut self, b: &BatchInfo) {
        let len = u64::from(b.len);
        if self.walked == 0 {
            self.first_timestamp = b.max_timestamp;
        }
        if self.lag_stop.is_none()
            && (b.max_timestamp > self.now_ms.saturating_sub(self.policy.min_lag_ms)
                || b.last_offset >= self.limit)
        {
            self.lag_stop = Some((b.base_offset, self.walked));
        }
        match &mut self.segment {
            Some((_, bytes, first_ts))
                if *bytes + len <= self.policy.segment_bytes
                    && b.max_timestamp.saturating_sub(*first_ts) < self.policy.segment_ms =>
            {
                *bytes += len;
            }
            _ => {
                self.before_segment = self.walked;
                self.segment = Some((b.base_offset, len, b.max_timestamp));
            }
        }
        self.walked += len;
    }

    /// The result, for a partition ending at `next_offset` holding `total_bytes`.
    pub fn finish(self, next_offset: u64, total_bytes: u64) -> Dirty {
        let (head_start, before_head) = match self.segment {
            // An idle head rolls once its first record is older than the segment age or
            // the compaction lag allows.
            Some((_, _, first_ts))
                if first_ts
                    < self
                        .now_ms
                        .saturating_sub(self.policy.segment_ms.min(self.policy.max_lag_ms)) =>
            {
                (next_offset, self.walked)
            }
            Some((start, _, _)) => (start, self.before_segment),
            None => (next_offset, 0),
        };
        let (cleanable_end, dirty_bytes) = match self.lag_stop {
            Some((at, bytes)) if at < head_start => (at, bytes),
            _ => (head_start, before_head),
        };
        Dirty {
            first_dirty: self.first_dirty,
            cleanable_end: cleanable_end.max(self.first_dirty),
            dirty_bytes,
            clean_bytes: total_bytes.saturating_sub(self.walked),
            first_dirty_timestamp: if dirty_bytes > 0 {
                self.first_timestamp
            } else {
                i64::MAX
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_000_000;

    fn policy() -> Policy {
        Policy {
            min_lag_ms: 0,
            max_lag_ms: i64::MAX,
            min_dirty_ratio: 0.5,
            delete_retention_ms: 0,
            segment_ms: 1000,
            segment_bytes: 300,
        }
    }

    fn batch(base: u64, ts: i64) -> BatchInfo {
        BatchInfo {
            base_offset: base,
            last_offset: base + 9,
            max_timestamp: ts,
            len: 100,
        }
    }

    fn walk(p: Policy, from: u64, batches: &[BatchInfo], clean_bytes: u64) -> Dirty {
        let mut w = Walk::new(p, NOW, from);
        batches.iter().for_each(|b| w.step(b));
        let next = batches.last().map_or(from, |b| b.last_offset + 1);
        w.finish(next, clean_bytes + 100 * batches.len() as u64)
    }

    #[test]
    fn the_last_virtual_segment_is_the_head() {
        // Segments of three 100-byte batches: 0-29, 30-59, then the head 60-69.
        let batches: Vec<_> = (0..7).map(|i| batch(i * 10, NOW - 10)).collect();
        let d = walk(policy(), 0, &batches, 0);
        assert_eq!(d.cleanable_end, 60);
        assert_eq!(d.dirty_bytes, 600);
        assert_eq!(d.ratio(), 1.0);
        assert!(d.due(&policy(), NOW));
    }

    #[test]
    fn a_young_head_is_kept_and_an_idle_one_rolls() {
        let batches = [batch(0, NOW - 10), batch(10, NOW - 5)];
        let d = walk(policy(), 0, &batches, 0);
        assert_eq!(d.cleanable_end, 0);
        assert!(!d.due(&policy(), NOW));
        let idle = [batch(0, NOW - 5000), batch(10, NOW - 4990)];
        let d = walk(policy(), 0, &idle, 0);
        assert_eq!(d.cleanable_end, 20);
    }

    #[test]
    fn age_rolls_a_segment() {
        let batches = [
            batch(0, NOW - 3000),
            batch(10, NOW - 1500),
            batch(20, NOW - 10),
        ];
        let d = walk(policy(), 0, &batches, 0);
        // 0 and 10 are 1500 ms apart (> segment.ms): three segments, the last the head.
        assert_eq!(d.cleanable_end, 20);
    }

    #[test]
    fn min_lag_stops_the_cleanable_range() {
        let p = Policy {
            min_lag_ms: 2000,
            segment_bytes: 100,
            ..policy()
        };
        let batches = [
            batch(0, NOW - 5000),
            batch(10, NOW - 1000),
            batch(20, NOW - 900),
        ];
        let d = walk(p, 0, &batches, 0);
        assert_eq!(d.cleanable_end, 10);
        assert_eq!(d.dirty_bytes, 100);
    }

    #[test]
    fn records_an_expansion_has_not_read_end_the_cleanable_range() {
        let p = Policy {
            segment_bytes: 100,
            ..policy()
        };
        let batches = [
            batch(0, NOW - 5000),
            batch(10, NOW - 5000),
            batch(20, NOW - 5000),
            batch(30, NOW - 5000),
        ];
        let mut w = Walk::new(p, NOW, 0).keeping_from(Some(15));
        batches.iter().for_each(|b| w.step(b));
        let d = w.finish(40, 400);
        // The batch holding 15 is the first the expansion still needs.
        assert_eq!(d.cleanable_end, 10);
        assert_eq!(d.dirty_bytes, 100);
        // Without the limit the idle head rolls too: everything is cleanable.
        assert_eq!(walk(p, 0, &batches, 0).cleanable_end, 40);
    }

    #[test]
    fn ratio_counts_the_clean_part_and_max_lag_forces_a_pass() {
        let p = Policy {
            segment_bytes: 100,
            min_dirty_ratio: 0.9,
            max_lag_ms: 60_000,
            ..policy()
        };
        let batches = [batch(100, NOW - 1000), batch(110, NOW - 900)];
        let d = walk(p, 100, &batches, 900);
        assert_eq!(d.cleanable_end, 110);
        assert_eq!(d.ratio(), 0.1);
        assert!(!d.due(&p, NOW));
        let overdue = [batch(100, NOW - 120_000), batch(110, NOW - 900)];
        let d = walk(p, 100, &overdue, 900);
        assert!(d.due(&p, NOW));
    }
}
