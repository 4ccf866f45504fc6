//! Waiting to retry: exponential backoff (the pause doubles with each failure in a row, up to a
//! cap, and may be drawn with jitter), and waits that a shutdown can interrupt. One schedule
//! serves every retry loop: the store's batch and transaction retries, the sync worker's index
//! writes and stream reads, and the live feed's reads of the change log; each names its own
//! first pause, cap and whether it jitters.
//!
//! Jitter is "equal jitter": each pause is drawn between half and all of its step, so callers
//! that failed together (parallel batches, servers that lost Redis at once) do not retry
//! together. This module imports nothing from the crate, so any layer can use it.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// A backoff schedule and how many failures in a row it has counted.
#[derive(Clone, Debug)]
pub struct Backoff {
    first: Duration,
    cap: Duration,
    jitter: bool,
    failures: u32,
}

impl Backoff {
    /// Pauses that double from `first` up to `cap`, without jitter. The first pause is `first`
    /// whatever the cap: a cap below it shortens only the later pauses.
    pub const fn new(first: Duration, cap: Duration) -> Self {
        Self {
            first,
            cap,
            jitter: false,
            failures: 0,
        }
    }

    /// The same schedule, each pause drawn between half and all of its step.
    pub const fn with_jitter(self) -> Self {
        Self {
            jitter: true,
            ..self
        }
    }

    /// The failures in a row counted since the last [`reset`](Self::reset).
    pub const fn failures(&self) -> u32 {
        self.failures
    }

    /// The step after the `failures`-th failure in a row (from 1): `first` doubled
    /// `failures - 1` times, up to the cap, before jitter.
    pub fn step(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(31);
        if doublings == 0 {
            return self.first;
        }
        self.first.saturating_mul(1 << doublings).min(self.cap)
    }

    /// The pause after the `failures`-th failure in a row: its step, jittered if the schedule
    /// jitters. Counts nothing: for loops that count their own attempts.
    pub fn pause(&self, failures: u32) -> Duration {
        let step = self.step(failures);
        if self.jitter { jittered(step) } else { step }
    }

    /// Counts one more failure and returns the pause before the next try.
    pub fn next_pause(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.pause(self.failures)
    }

    /// Starts over from the first pause (after a success).
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Counts one more failure and sleeps its pause; `false` if `shutdown` fired meanwhile.
    pub async fn wait(&mut self, shutdown: &CancellationToken) -> bool {
        let pause = self.next_pause();
        sleep_or_cancel(pause, shutdown).await
    }
}

/// A pause drawn between half and all of `step`.
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

/// `future`'s output, or `None` if `shutdown` fires first (the future is then dropped).
pub async fn until_cancelled<T>(
    future: impl std::future::Future<Output = T>,
    shutdown: &CancellationToken,
) -> Option<T> {
    tokio::select! {
        output = future => Some(output),
        () = shutdown.cancelled() => None,
    }
}

/// Sleeps `pause`; `false` if `shutdown` fired first.
pub async fn sleep_or_cancel(pause: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = tokio::time::sleep(pause) => true,
        () = shutdown.cancelled() => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(backoff: &Backoff, failures: impl IntoIterator<Item = u32>) -> Vec<u64> {
        failures
            .into_iter()
            .map(|n| backoff.step(n).as_millis() as u64)
            .collect()
    }

    #[test]
    fn steps_double_from_the_first_to_the_cap() {
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(5));
        assert_eq!(
            millis(&backoff, 1..=9),
            [50, 100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000]
        );
        assert_eq!(backoff.step(u32::MAX), Duration::from_secs(5));
    }

    #[test]
    fn the_first_pause_is_the_first_step_even_above_a_lower_cap() {
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_millis(20));
        assert_eq!(millis(&backoff, 1..=3), [50, 20, 20]);
    }

    #[test]
    fn a_schedule_without_jitter_pauses_its_steps_and_starts_over_on_reset() {
        let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(5));
        let pauses: Vec<u64> = (0..3)
            .map(|_| backoff.next_pause().as_millis() as u64)
            .collect();
        assert_eq!(pauses, [50, 100, 200]);
        assert_eq!(backoff.failures(), 3);
        backoff.reset();
        assert_eq!(backoff.next_pause(), Duration::from_millis(50));
    }

    #[test]
    fn jittered_pauses_are_between_half_and_all_of_their_step() {
        let backoff =
            Backoff::new(Duration::from_millis(100), Duration::from_secs(3)).with_jitter();
        let pauses: Vec<Duration> = (1..=12).map(|n| backoff.pause(n)).collect();
        for (pause, n) in pauses.iter().zip(1..) {
            assert!(
                *pause >= backoff.step(n) / 2 && *pause <= backoff.step(n),
                "{n}: {pause:?}"
            );
        }
        // Twelve pauses drawn independently are not all at the bottom of their range.
        assert!(
            pauses
                .iter()
                .zip(1..)
                .any(|(p, n)| *p > backoff.step(n) / 2)
        );
    }
}
