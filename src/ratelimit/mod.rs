//! Rate limits: how much one client may ask of the service, so no client can take the server or
//! the table's capacity from the others.
//!
//! Two budgets per client, each a token bucket ([`bucket`]):
//!
//! * **cost**: every operation takes its price (counted before execution by
//!   `graphql::pricing`, the same one `--max-query-complexity` bounds) from a bucket of `burst`
//!   tokens refilled at `per_second`. The cost is taken up front, from the requested page sizes; it is
//!   not refunded when a page comes back short (see `actualQueryCost` in docs/api/rate-limits.md).
//! * **writes**: every mutation takes one token per root field it selects (so aliases cannot
//!   dodge it) from a bucket of `per_minute` tokens refilled at `per_minute` a minute.
//!
//! A check takes from both buckets or from neither, atomically: a refused request spends
//! nothing. The key is the verified token's subject, else the client address ([`ClientKey`]).
//!
//! Two stores: [`MemoryLimiter`], in this process, and [`RedisLimiter`], one Lua script per
//! check on Redis's clock, shared by every server process that uses the same Redis and prefix.
//! When Redis cannot answer, the Redis limiter limits in-process until it can (see there).
//!
//! This module knows nothing of HTTP or GraphQL.

pub mod bucket;
mod client;
mod memory;
mod redis;

use std::sync::Arc;
use std::time::Duration;

pub use self::bucket::BucketSpec;
use self::bucket::Take;
pub use self::client::{ClientKey, network};
pub use self::memory::MemoryLimiter;
pub use self::redis::RedisLimiter;

/// The budgets every client gets. A budget that is `None` is not limited.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimits {
    /// Query cost: complexity points restored per second, and the most a client may hold.
    pub cost: Option<BucketSpec>,
    /// Writes: one token per mutation root field.
    pub writes: Option<BucketSpec>,
}

impl RateLimits {
    /// The limits the flags describe: a rate of 0 turns its budget off.
    pub fn new(cost_per_second: u32, cost_burst: u32, writes_per_minute: u32) -> Self {
        Self {
            cost: (cost_per_second > 0).then_some(BucketSpec {
                per_second: f64::from(cost_per_second),
                burst: f64::from(cost_burst.max(1)),
            }),
            writes: (writes_per_minute > 0).then_some(BucketSpec {
                per_second: f64::from(writes_per_minute) / 60.0,
                burst: f64::from(writes_per_minute),
            }),
        }
    }

    /// Whether any budget is limited.
    pub fn any(&self) -> bool {
        self.cost.is_some() || self.writes.is_some()
    }
}

/// What one request asks of its client's budgets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    /// The operation's complexity.
    pub cost: u64,
    /// Mutation root fields (0 for a query).
    pub writes: u64,
}

/// The cost budget as `extensions.cost.throttleStatus` reports it (Shopify's shape).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throttle {
    /// The bucket's size (`--rate-limit-cost-burst`).
    pub maximum_available: u64,
    /// Whole points left after this request (before it, if it was refused).
    pub currently_available: u64,
    /// Points restored per second (`--rate-limit-cost`).
    pub restore_rate: f64,
}

/// Which budget refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The query cost budget.
    Cost,
    /// The mutation writes budget.
    Writes,
}

impl Limit {
    /// The budget's name in logs and metric labels: `cost` or `writes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Cost => "cost",
            Limit::Writes => "writes",
        }
    }
}

/// Why a request was refused and when to try again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Refused {
    /// The budget that refused (the one with the longer wait when both did).
    pub limit: Limit,
    /// When the request would pass; `None` when it never can (it asks for more than the
    /// budget's maximum).
    pub retry_after: Option<Duration>,
}

/// The answer of a check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// `None`: allowed, and the charge was taken.
    pub refused: Option<Refused>,
    /// The cost budget after the check; `None` when cost is not limited.
    pub cost: Option<Throttle>,
}

impl Verdict {
    /// Combines the takes of the two buckets (each `None` when its budget is off).
    fn of(limits: &RateLimits, cost: Option<Take>, writes: Option<Take>) -> Self {
        let mut refused: Option<Refused> = None;
        for (limit, take) in [(Limit::Cost, cost), (Limit::Writes, writes)] {
            let Some(take) = take.filter(|t| !t.allowed) else {
                continue;
            };
            let retry_after = take
                .wait_us
                .map(|us| Duration::from_micros(us.max(0.0).ceil() as u64));
            let longer = match refused {
                None => true,
                Some(Refused {
                    retry_after: None, ..
                }) => false,
                Some(Refused {
                    retry_after: Some(before),
                    ..
                }) => retry_after.is_none_or(|after| after > before),
            };
            if longer {
                refused = Some(Refused { limit, retry_after });
            }
        }
        Verdict {
            refused,
            cost: limits.cost.zip(cost).map(|(spec, take)| Throttle {
                maximum_available: spec.burst as u64,
                // A refused request took nothing, from either bucket.
                currently_available: if refused.is_some() {
                    take.before
                } else {
                    take.available
                },
                restore_rate: spec.per_second,
            }),
        }
    }
}

/// The configured limiter: in this process, or shared through Redis.
#[derive(Clone, Debug)]
pub enum RateLimiter {
    /// Buckets kept in this process.
    Memory(Arc<MemoryLimiter>),
    /// Buckets kept in Redis, shared by every server that uses it.
    Redis(Arc<RedisLimiter>),
}

impl RateLimiter {
    /// A limiter of `count` events per `period` for each client (one point an event, the
    /// period's count as its burst), kept in `redis` (shared by every server) when given,
    /// else in this process; `None` when `count` is 0 (no limit). The rates of opening
    /// subscriptions and of registering persisted queries are such limiters.
    pub fn count_per(
        count: u32,
        period: std::time::Duration,
        redis: Option<&crate::redis::RedisHandle>,
    ) -> Option<Self> {
        let rate = RateLimits {
            cost: (count > 0).then_some(BucketSpec {
                per_second: f64::from(count) / period.as_secs_f64(),
                burst: f64::from(count),
            }),
            writes: None,
        };
        rate.any().then(|| match redis {
            Some(redis) => RateLimiter::Redis(Arc::new(RedisLimiter::new(redis, rate))),
            None => RateLimiter::Memory(Arc::new(MemoryLimiter::new(rate))),
        })
    }

    /// Takes `charge` from `client`'s budgets if both hold enough; never fails (see
    /// [`RedisLimiter`] for what happens when Redis cannot answer).
    pub async fn check(&self, client: &ClientKey, charge: Charge) -> Verdict {
        match self {
            RateLimiter::Memory(limiter) => limiter.check(client, charge),
            RateLimiter::Redis(limiter) => limiter.check(client, charge).await,
        }
    }

    /// The budgets the limiter enforces.
    pub fn limits(&self) -> &RateLimits {
        match self {
            RateLimiter::Memory(limiter) => limiter.limits(),
            RateLimiter::Redis(limiter) => limiter.limits(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(allowed: bool, wait_us: Option<f64>) -> Take {
        Take {
            allowed,
            tat: 0.0,
            available: 7,
            before: 9,
            wait_us,
        }
    }

    #[test]
    fn a_rate_of_zero_turns_a_budget_off() {
        let limits = RateLimits::new(0, 100, 0);
        assert!(!limits.any());
        let limits = RateLimits::new(50, 1000, 30);
        assert_eq!(
            limits.writes,
            Some(BucketSpec {
                per_second: 0.5,
                burst: 30.0
            })
        );
        assert_eq!(
            limits.cost,
            Some(BucketSpec {
                per_second: 50.0,
                burst: 1000.0
            })
        );
    }

    #[test]
    fn the_verdict_names_the_budget_with_the_longer_wait_and_never_beats_any_wait() {
        let limits = RateLimits::new(10, 100, 30);
        let allowed = Verdict::of(&limits, Some(take(true, Some(0.0))), None);
        assert_eq!(allowed.refused, None);
        assert_eq!(
            allowed.cost,
            Some(Throttle {
                maximum_available: 100,
                currently_available: 7,
                restore_rate: 10.0
            })
        );
        let one = Verdict::of(
            &limits,
            Some(take(true, Some(0.0))),
            Some(take(false, Some(1.0))),
        );
        assert_eq!(
            one.cost.map(|c| c.currently_available),
            Some(9),
            "a refusal by the writes budget leaves the cost budget as it was"
        );
        let both = Verdict::of(
            &limits,
            Some(take(false, Some(1_500_000.0))),
            Some(take(false, Some(2_000_000.5))),
        );
        assert_eq!(
            both.refused,
            Some(Refused {
                limit: Limit::Writes,
                retry_after: Some(Duration::from_micros(2_000_001))
            })
        );
        let never = Verdict::of(
            &limits,
            Some(take(false, None)),
            Some(take(false, Some(9e9))),
        );
        assert_eq!(
            never.refused,
            Some(Refused {
                limit: Limit::Cost,
                retry_after: None
            })
        );
        let writes_only = Verdict::of(&RateLimits::new(0, 1, 30), None, Some(take(true, None)));
        assert_eq!(writes_only.cost, None);
    }
}
