//! The token bucket, as arithmetic on one number: GCRA (the generic cell rate algorithm).
//!
//! A bucket of `burst` tokens that refills at `per_second` is fully described by its
//! *theoretical arrival time* (`tat`): the moment it will be full again. Tokens available at
//! `now` are `burst - (tat - now) * per_second`; taking `n` moves `tat` forward by
//! `n / per_second`. So a bucket is one stored number, a check is a read and a write, and a
//! bucket that is full needs no state at all (an absent `tat` means "full"), which lets the
//! Redis copy expire when the bucket is full.
//!
//! `take.lua` does exactly this arithmetic on Redis's clock, in the same order and with the same
//! rounding; the in-process limiter does it here. Times are microseconds in `f64` (Lua has no
//! other number type): whole microseconds are exact below 2^53 µs, and Redis's clock, about
//! 1.8 × 10^15 µs since 1970, resolves a quarter of one, so a token costs its time to within a
//! microsecond (Redis keeps `tat` in whole microseconds) as long as it takes at least a few:
//! rates up to about 100,000 tokens a second.

/// How one bucket fills and how much it holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BucketSpec {
    /// Tokens restored per second.
    pub per_second: f64,
    /// Tokens a full bucket holds: the most one request may ever take.
    pub burst: f64,
}

/// What a take decided for one bucket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Take {
    /// Whether the bucket held enough.
    pub allowed: bool,
    /// The bucket's `tat` after the take (unchanged when refused).
    pub tat: f64,
    /// Whole tokens available after the take (before it, when refused).
    pub available: u64,
    /// Whole tokens available before the take: what is left if another bucket refuses.
    pub before: u64,
    /// Microseconds until the take would be allowed; `None` when it never can be (more than
    /// `burst`), 0 when allowed.
    pub wait_us: Option<f64>,
}

/// Tolerance for floating-point residue when counting whole tokens: `9.999999` tokens are 10.
const WHOLE: f64 = 1e-6;

impl BucketSpec {
    /// Microseconds one token takes to come back.
    fn emission_us(self) -> f64 {
        1e6 / self.per_second
    }

    /// Takes `n` tokens at `now_us` from the bucket whose state is `tat` (`None`: full).
    pub fn take(self, tat: Option<f64>, now_us: f64, n: f64) -> Take {
        let emission = self.emission_us();
        let tolerance = self.burst * emission;
        let base = tat.map_or(now_us, |tat| tat.max(now_us));
        let available = |tat: f64| {
            let tokens = (tolerance - (tat - now_us)) / emission;
            (tokens + WHOLE).floor().max(0.0) as u64
        };
        let before = available(base);
        if n > self.burst {
            return Take {
                allowed: false,
                tat: base,
                available: before,
                before,
                wait_us: None,
            };
        }
        let next = base + n * emission;
        let over = next - now_us - tolerance;
        if over <= WHOLE * emission {
            Take {
                allowed: true,
                tat: next,
                available: available(next),
                before,
                wait_us: Some(0.0),
            }
        } else {
            Take {
                allowed: false,
                tat: base,
                available: before,
                before,
                wait_us: Some(over),
            }
        }
    }

    /// How long a bucket left at `tat` keeps state: until it is full again (in whole
    /// milliseconds, rounded up, at least 1). After that, an absent state means the same.
    pub fn ttl_ms(tat: f64, now_us: f64) -> u64 {
        (((tat - now_us) / 1000.0).ceil() as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: f64 = 1e6;

    fn spec(per_second: f64, burst: f64) -> BucketSpec {
        BucketSpec { per_second, burst }
    }

    #[test]
    fn a_full_bucket_gives_its_burst_then_refuses_until_it_refills() {
        let bucket = spec(10.0, 100.0);
        let mut tat = None;
        let mut now = 5.0 * SECOND;
        for left in [70, 40, 10] {
            let take = bucket.take(tat, now, 30.0);
            assert!(take.allowed);
            assert_eq!(take.available, left);
            tat = Some(take.tat);
        }
        let refused = bucket.take(tat, now, 30.0);
        assert!(!refused.allowed);
        assert_eq!(refused.available, 10, "a refusal takes nothing");
        assert_eq!(refused.tat, tat.unwrap_or_default());
        // 20 more tokens are needed at 10 a second.
        assert_eq!(refused.wait_us, Some(2.0 * SECOND));
        now += 2.0 * SECOND;
        let later = bucket.take(tat, now, 30.0);
        assert!(later.allowed, "{later:?}");
        assert_eq!(later.available, 0);
    }

    #[test]
    fn the_bucket_never_holds_more_than_its_burst() {
        let bucket = spec(10.0, 100.0);
        let take = bucket.take(Some(0.0), 3600.0 * SECOND, 0.0);
        assert!(take.allowed);
        assert_eq!(take.available, 100);
        assert_eq!(take.tat, 3600.0 * SECOND, "a stale state counts as full");
    }

    #[test]
    fn more_than_the_burst_can_never_pass() {
        let bucket = spec(10.0, 100.0);
        let take = bucket.take(None, 0.0, 101.0);
        assert!(!take.allowed);
        assert_eq!(take.wait_us, None);
        assert_eq!(take.available, 100);
        assert!(
            bucket.take(None, 0.0, 100.0).allowed,
            "exactly the burst passes"
        );
    }

    #[test]
    fn fractional_rates_count_whole_tokens() {
        // 30 writes a minute: one every two seconds.
        let bucket = spec(0.5, 30.0);
        let mut tat = None;
        for n in 0..30 {
            let take = bucket.take(tat, 0.0, 1.0);
            assert!(take.allowed, "write {n}");
            assert_eq!(take.available, 29 - n);
            tat = Some(take.tat);
        }
        let refused = bucket.take(tat, 0.0, 1.0);
        assert_eq!(refused.wait_us, Some(2.0 * SECOND));
        // A rate whose emission is not a whole number of microseconds still adds up.
        let seventh = spec(7.0, 7.0);
        let mut tat = None;
        for _ in 0..7 {
            let take = seventh.take(tat, 0.0, 1.0);
            assert!(take.allowed);
            tat = Some(take.tat);
        }
        assert!(!seventh.take(tat, 0.0, 1.0).allowed);
        assert_eq!(seventh.take(tat, SECOND, 0.0).available, 7);
    }

    #[test]
    fn state_lives_until_the_bucket_is_full() {
        assert_eq!(BucketSpec::ttl_ms(2.5 * SECOND, 0.0), 2500);
        assert_eq!(BucketSpec::ttl_ms(1.0, 0.0), 1);
        assert_eq!(BucketSpec::ttl_ms(0.0, 0.0), 1);
    }
}
