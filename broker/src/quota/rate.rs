//! A rate over Kafka's sampled window (`quota.window.num` samples of
//! `quota.window.size.seconds` each), and the throttle time Kafka's quota managers
//! derive from it: long enough that, had the client waited it, its rate over the window
//! would be back at the quota. Time is an argument, so the arithmetic is tested
//! without clocks.

use std::time::{Duration, Instant};

/// One sensor's recent samples.
#[derive(Debug, Clone)]
pub struct Rate {
    samples: Vec<(Instant, f64)>,
    window: Duration,
    count: usize,
    /// When the sensor was last recorded into (idle sensors are dropped).
    pub last: Instant,
}

impl Rate {
    /// A rate of `count` windows of `window` each.
    pub fn new(window: Duration, count: usize, now: Instant) -> Self {
        Self {
            samples: Vec::new(),
            window,
            count: count.max(2),
            last: now,
        }
    }

    /// Adds `value` at `now`.
    pub fn record(&mut self, value: f64, now: Instant) {
        self.last = now;
        let span = self.window * self.count as u32;
        self.samples
            .retain(|(start, _)| now.saturating_duration_since(*start) < span);
        match self.samples.last_mut() {
            Some((start, v)) if now.saturating_duration_since(*start) < self.window => *v += value,
            _ => self.samples.push((now, value)),
        }
    }

    /// The time the samples cover: from the oldest sample's start to `now`, and at least
    /// all windows but the current one (so one burst at the start does not read as an
    /// enormous rate), as Kafka's `Rate` measures it.
    fn elapsed(&self, now: Instant) -> Duration {
        let oldest = self.samples.first().map_or(now, |(s, _)| *s);
        now.saturating_duration_since(oldest)
            .max(self.window * (self.count as u32 - 1))
    }

    /// The rate per second at `now`.
    pub fn per_second(&self, now: Instant) -> f64 {
        let total: f64 = self.samples.iter().map(|(_, v)| v).sum();
        total / self.elapsed(now).as_secs_f64()
    }

    /// How long the client must wait for its rate to be back at `quota` (per second):
    /// zero within quota, and never more than the whole sampled window.
    pub fn throttle(&self, quota: f64, now: Instant) -> Duration {
        let rate = self.per_second(now);
        if quota <= 0.0 || rate <= quota {
            return Duration::ZERO;
        }
        let elapsed = self.elapsed(now);
        let wait = elapsed.mul_f64((rate - quota) / quota);
        wait.min(self.window * self.count as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_quota_no_throttle_and_over_it_the_wait_that_restores_it() {
        let t0 = Instant::now();
        let mut r = Rate::new(Duration::from_secs(1), 11, t0);
        for i in 0..10 {
            r.record(100.0, t0 + Duration::from_secs(i));
        }
        let now = t0 + Duration::from_secs(10);
        // 1000 over 10 s: 100/s.
        assert!((r.per_second(now) - 100.0).abs() < 1e-9);
        assert_eq!(r.throttle(100.0, now), Duration::ZERO);
        // At a quota of 50/s the client must wait as long again: 1000 / 20 s = 50/s.
        assert_eq!(r.throttle(50.0, now), Duration::from_secs(10));
    }

    #[test]
    fn a_first_burst_is_measured_over_the_whole_window() {
        let t0 = Instant::now();
        let mut r = Rate::new(Duration::from_secs(1), 11, t0);
        r.record(1000.0, t0);
        assert!((r.per_second(t0) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn old_samples_leave_the_window_and_the_wait_is_capped() {
        let t0 = Instant::now();
        let mut r = Rate::new(Duration::from_secs(1), 3, t0);
        r.record(1e9, t0);
        assert_eq!(r.throttle(1.0, t0), Duration::from_secs(3));
        let later = t0 + Duration::from_secs(5);
        r.record(1.0, later);
        assert!(r.per_second(later) < 1.0);
    }
}
