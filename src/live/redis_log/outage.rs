//! How the change-log reader waits while Redis is away: exponential backoff with jitter, capped,
//! and one warning per outage instead of one per retry.
//!
//! A fixed 500 ms retry used to warn twice a second for as long as Redis was down, from every
//! server at once: a minute's outage was 120 identical lines per server, and every server
//! retried in step. Here the first failure of an outage warns; later ones are logged at debug,
//! with a warning again only each time the wait has reached its cap (a reminder that the feed
//! is still down, one per half to whole [`CAP`]); the first read that succeeds again says how
//! long the feed was down. The waits double from [`FIRST`] to [`CAP`], each drawn between half
//! and all of its step ([`crate::backoff`]'s jitter), so servers that lost Redis together do not
//! retry together.
//!
//! This module knows nothing of Redis: it is told of failures and successes.

use std::time::{Duration, Instant};

use crate::backoff::Backoff;

/// The first wait after a failed read.
pub const FIRST: Duration = Duration::from_millis(250);
/// The longest wait between two reads.
pub const CAP: Duration = Duration::from_secs(30);

/// The reader's state between reads: how many reads in a row failed, since when.
#[derive(Debug)]
pub struct Outage {
    backoff: Backoff,
    since: Option<Instant>,
}

impl Default for Outage {
    fn default() -> Self {
        Self {
            backoff: Backoff::new(FIRST, CAP).with_jitter(),
            since: None,
        }
    }
}

impl Outage {
    /// After a failed read: logs it (a warning on the first failure of an outage and whenever
    /// the wait is at its cap, debug otherwise) and returns how long to wait before the next.
    pub fn failed(&mut self, error: &dyn std::fmt::Display) -> Duration {
        let since = *self.since.get_or_insert_with(Instant::now);
        let wait = self.backoff.next_pause();
        let failures = self.backoff.failures();
        let down_ms = since.elapsed().as_millis() as u64;
        let wait_ms = wait.as_millis() as u64;
        if failures == 1 || self.backoff.step(failures) == CAP {
            tracing::warn!(
                %error,
                failures,
                down_ms,
                wait_ms,
                "live feed: reading the change log failed; retrying with backoff"
            );
        } else {
            tracing::debug!(%error, failures, down_ms, wait_ms, "live feed: reading the change log failed again");
        }
        wait
    }

    /// After a read that succeeded: ends the outage, if there was one, and says so.
    pub fn succeeded(&mut self) {
        if let Some(since) = self.since.take() {
            tracing::info!(
                failures = self.backoff.failures(),
                down_ms = since.elapsed().as_millis() as u64,
                "live feed: the change log is readable again"
            );
        }
        self.backoff.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_the_first_to_the_cap_each_between_half_and_all_of_its_step() {
        let mut outage = Outage::default();
        let step = |n| outage.backoff.step(n);
        let steps: Vec<u64> = (1..=10).map(|n| step(n).as_millis() as u64).collect();
        assert_eq!(
            steps,
            [
                250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000
            ]
        );
        assert_eq!(step(u32::MAX), CAP);
        let steps: Vec<Duration> = (1..=12).map(step).collect();
        let mut waits = Vec::new();
        for n in 1..=12 {
            let wait = outage.failed(&"refused");
            assert!(
                wait >= steps[n - 1] / 2 && wait <= steps[n - 1],
                "{n}: {wait:?}"
            );
            waits.push(wait);
        }
        // Jitter: twelve waits drawn independently are not all at the bottom of their range.
        assert!(waits.iter().zip(&steps).any(|(w, s)| *w > *s / 2));
        outage.succeeded();
        assert_eq!(outage.backoff.failures(), 0);
        assert!(outage.failed(&"refused") <= FIRST);
    }
}
