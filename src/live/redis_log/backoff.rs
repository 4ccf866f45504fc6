//! How the change-log reader waits while Redis is away: exponential backoff with jitter, capped,
//! and one warning per outage instead of one per retry.
//!
//! A fixed 500 ms retry used to warn twice a second for as long as Redis was down, from every
//! server at once: a minute's outage was 120 identical lines per server, and every server
//! retried in step. Here the first failure of an outage warns; later ones are logged at debug,
//! with a warning again only each time the wait has reached its cap (a reminder that the feed
//! is still down, one per half to whole [`CAP`]); the first read that succeeds again says how long the
//! feed was down. The waits double from [`FIRST`] to [`CAP`], each drawn between half and all of
//! its step ("equal jitter"), so servers that lost Redis together do not retry together.
//!
//! This module knows nothing of Redis: it is told of failures and successes.

use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

/// The first wait after a failed read.
pub const FIRST: Duration = Duration::from_millis(250);
/// The longest wait between two reads.
pub const CAP: Duration = Duration::from_secs(30);

/// The reader's state between reads: how many reads in a row failed, since when.
#[derive(Debug, Default)]
pub struct Backoff {
    failures: u32,
    outage_since: Option<Instant>,
}

impl Backoff {
    /// After a failed read: logs it (a warning on the first failure of an outage and whenever
    /// the wait is at its cap, debug otherwise) and returns how long to wait before the next.
    pub fn failed(&mut self, error: &dyn std::fmt::Display) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let since = *self.outage_since.get_or_insert_with(Instant::now);
        let step = step(self.failures);
        let wait = jittered(step);
        let down_ms = since.elapsed().as_millis() as u64;
        let wait_ms = wait.as_millis() as u64;
        if self.failures == 1 || step == CAP {
            tracing::warn!(
                %error,
                failures = self.failures,
                down_ms,
                wait_ms,
                "live feed: reading the change log failed; retrying with backoff"
            );
        } else {
            tracing::debug!(%error, failures = self.failures, down_ms, wait_ms, "live feed: reading the change log failed again");
        }
        wait
    }

    /// After a read that succeeded: ends the outage, if there was one, and says so.
    pub fn succeeded(&mut self) {
        if let Some(since) = self.outage_since.take() {
            tracing::info!(
                failures = self.failures,
                down_ms = since.elapsed().as_millis() as u64,
                "live feed: the change log is readable again"
            );
        }
        self.failures = 0;
    }
}

/// The step of the `failures`-th wait in a row: [`FIRST`] doubled each time, up to [`CAP`].
fn step(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST.saturating_mul(1 << doublings).min(CAP)
}

/// A wait drawn between half and all of `step`.
fn jittered(step: Duration) -> Duration {
    // A random number without a dependency: the standard library seeds each `RandomState`
    // from the system's randomness.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    let random = hasher.finish();
    let half = step / 2;
    let extra_ms = random % (half.as_millis() as u64 + 1);
    half + Duration::from_millis(extra_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_the_first_to_the_cap_each_between_half_and_all_of_its_step() {
        let steps: Vec<u64> = (1..=10).map(|n| step(n).as_millis() as u64).collect();
        assert_eq!(
            steps,
            [
                250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000
            ]
        );
        assert_eq!(step(u32::MAX), CAP);
        let mut backoff = Backoff::default();
        let mut waits = Vec::new();
        for n in 1..=12 {
            let wait = backoff.failed(&"refused");
            assert!(wait >= step(n) / 2 && wait <= step(n), "{n}: {wait:?}");
            waits.push(wait);
        }
        // Jitter: twelve waits drawn independently are not all at the bottom of their range.
        assert!(waits.iter().zip(1..).any(|(w, n)| *w > step(n) / 2));
        backoff.succeeded();
        assert_eq!(backoff.failures, 0);
        assert!(backoff.failed(&"refused") <= FIRST);
    }
}
