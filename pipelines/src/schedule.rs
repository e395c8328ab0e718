//! Cron expressions of schedule triggers (croner's syntax: five fields, or six with
//! seconds first; UTC), and the ticks they name, as whole seconds since the epoch.

use std::str::FromStr;

use chrono::{DateTime, Utc};

/// A parsed cron expression.
#[derive(Debug, Clone)]
pub struct Cron(croner::Cron);

impl Cron {
    /// Parses `text`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        croner::Cron::from_str(text)
            .map(Self)
            .map_err(|e| format!("cron {text:?}: {e}"))
    }

    /// The first tick strictly after `secs` (none when the expression never fires again).
    pub fn next_after(&self, secs: u64) -> Option<u64> {
        let at = DateTime::<Utc>::from_timestamp(i64::try_from(secs).ok()?, 0)?;
        let next = self.0.find_next_occurrence(&at, false).ok()?;
        u64::try_from(next.timestamp()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_follow_the_expression() {
        let c = Cron::parse("0 3 * * *").unwrap();
        // 2026-12-04T00:00:00Z -> 03:00 the same day, then the next day.
        let midnight = 1_796_342_400;
        assert_eq!(c.next_after(midnight), Some(midnight + 3 * 3600));
        assert_eq!(
            c.next_after(midnight + 3 * 3600),
            Some(midnight + 27 * 3600)
        );
        assert!(Cron::parse("61 * * * *").is_err());
        assert!(Cron::parse("every day").is_err());
    }
}
