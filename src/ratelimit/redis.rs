//! The limiter shared by every server process through Redis: one `take.lua` call per check,
//! on the process's one Redis connection (shared with the index, through `crate::redis`), keys
//! under the deployment's prefix. This module owns its keys and its script, and declares what
//! it sends for the start-up check ([`RedisLimiter::needs`]); it knows nothing of the index.
//!
//! | key | type | holds |
//! |---|---|---|
//! | `<prefix>rl:{<client>}:c` | string | the client's cost bucket: when it is full again, in µs of Redis's clock; expires then |
//! | `<prefix>rl:{<client>}:w` | string | the same for its writes bucket |
//!
//! Both keys of a client share the hash tag `{<client>}` ([`ClientKey`] never holds a brace),
//! so the script touches one Redis Cluster slot.
//!
//! **When Redis cannot answer** (down, slow, failing over, or refusing the script), a check
//! neither fails the request nor lets it through unlimited: it is answered by an in-process
//! limiter with the same budgets, and Redis is tried again a second later. Refusing every
//! request while Redis is away would turn an index outage, which today costs only `totalCount`
//! and deep offsets, into a total one; letting everything through would lift the protection
//! exactly when the service is weakest. The price: meanwhile each process keeps its own
//! budgets, so a client spread over `n` processes gets up to `n` times its rate. Those buckets
//! are the process's own for its whole life, used only while Redis is away: at the first
//! outage every client's is full, so a client that was within its budget is served on (with
//! the pages' index-backed parts degraded, not refused with 429), and one that floods gets at
//! most its burst, then its rate, on each process. They are never reset, so a flapping Redis
//! hands no fresh burst: what a client spent in one outage stays spent in the next, refilling at
//! the budget's rate as it would in Redis. (An earlier release started them empty at each
//! outage, which refused every client's next request at once: a Redis blip became a wave of
//! 429s.) Each such check counts in
//! `dynapage_rate_limit_fallback_checks_total`, each failed Redis call in
//! `dynapage_rate_limit_store_errors_total`; the start and the end of an outage are logged.
//! While it lasts, one request a second tries Redis (and waits up to 500 ms for it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::bucket::Take;
use super::{Charge, ClientKey, MemoryLimiter, RateLimits, Verdict};
use crate::redis::{CallError, KeyPrefix, LuaScript, Need, RedisHandle};
use crate::telemetry::metric;

/// `take.lua`: both buckets of a client, charged together or not at all.
const TAKE: &str = include_str!("take.lua");

/// How long a check waits for Redis before limiting in-process: the script is O(1) and
/// answers in well under a millisecond, so this is Redis in trouble (or a machine overloaded),
/// not Redis busy; short, since every request waits for its check.
const CHECK_TIMEOUT: Duration = Duration::from_millis(500);
/// After a failed check, how long checks stay in-process before Redis is tried again.
const RETRY_REDIS_AFTER: Duration = Duration::from_secs(1);

/// Budgets kept in Redis, shared by every process with the same Redis and prefix.
#[derive(Debug)]
pub struct RedisLimiter {
    redis: RedisHandle,
    script: LuaScript,
    fallback: MemoryLimiter,
    epoch: Instant,
    /// 0 while Redis answers; else the microsecond since `epoch` (plus one) from which one
    /// check tries Redis again.
    redis_again_at: AtomicU64,
}

impl RedisLimiter {
    /// A limiter on `redis`'s (shared) connection, with keys under its prefix.
    pub fn new(redis: &RedisHandle, limits: RateLimits) -> Self {
        Self {
            redis: redis.clone(),
            script: LuaScript::new(TAKE),
            fallback: MemoryLimiter::new(limits),
            epoch: Instant::now(),
            redis_again_at: AtomicU64::new(0),
        }
    }

    /// The budgets the limiter enforces.
    pub fn limits(&self) -> &RateLimits {
        self.fallback.limits()
    }

    /// Takes `charge` in Redis, or in-process while Redis cannot answer (module comment).
    pub async fn check(&self, client: &ClientKey, charge: Charge) -> Verdict {
        // `redis_again_at` is 0 while Redis answers; after a failure it is the moment Redis
        // may be tried again, and then one request (the one that moves it on) tries while the
        // others stay in-process: an outage costs one request per second the wait for Redis.
        let now = self.epoch.elapsed().as_micros() as u64 + 1;
        let again = now + RETRY_REDIS_AFTER.as_micros() as u64;
        let at = self.redis_again_at.load(Ordering::Relaxed);
        let tries = at == 0
            || (now >= at
                && self
                    .redis_again_at
                    .compare_exchange(at, again, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok());
        if tries {
            let failure = match tokio::time::timeout(CHECK_TIMEOUT, self.take(client, charge)).await
            {
                Ok(Ok(verdict)) => {
                    if at != 0 {
                        self.redis_again_at.store(0, Ordering::Relaxed);
                        tracing::info!("the rate-limit store (Redis) answers again");
                    }
                    return verdict;
                }
                Ok(Err(error)) => error,
                Err(_) => CallError::Unavailable(
                    format!("no answer within {} ms", CHECK_TIMEOUT.as_millis()).into(),
                ),
            };
            metric::RATE_LIMIT_STORE_ERRORS.counter(&[]).increment(1);
            // One log line per outage, not one per request.
            if self.redis_again_at.swap(again, Ordering::Relaxed) == 0 {
                let error = format!("{:#}", anyhow::Error::from(failure));
                tracing::warn!(
                    error,
                    "the rate-limit store (Redis) did not answer; limiting in this process until it does"
                );
            }
        }
        metric::RATE_LIMIT_FALLBACK_CHECKS.counter(&[]).increment(1);
        self.fallback.check(client, charge)
    }

    /// One call of `take.lua`.
    async fn take(&self, client: &ClientKey, charge: Charge) -> Result<Verdict, CallError> {
        let limits = self.fallback.limits();
        let mut call = self.script.call();
        for key in keys(self.redis.prefix(), client) {
            call.key(key);
        }
        for (spec, n) in [(limits.cost, charge.cost), (limits.writes, charge.writes)] {
            match spec {
                Some(spec) => call.arg(spec.per_second).arg(spec.burst).arg(n),
                None => call.arg(0).arg(0).arg(0),
            };
        }
        let reply: Vec<i64> = call.invoke(&self.redis).await?;
        let [
            cost_allowed,
            cost_available,
            cost_wait,
            writes_allowed,
            writes_available,
            writes_wait,
        ] = reply[..]
        else {
            return Err(CallError::Internal(
                format!("take.lua answered {} numbers, not 6", reply.len()).into(),
            ));
        };
        // The script already answers what is left after its whole decision.
        let take = |allowed: i64, available: i64, wait: i64| {
            let available = u64::try_from(available).unwrap_or(0);
            Take {
                allowed: allowed == 1,
                tat: 0.0,
                available,
                before: available,
                wait_us: u64::try_from(wait).ok().map(|us| us as f64),
            }
        };
        let cost = limits
            .cost
            .map(|_| take(cost_allowed, cost_available, cost_wait));
        let writes = limits
            .writes
            .map(|_| take(writes_allowed, writes_available, writes_wait));
        Ok(Verdict::of(limits, cost, writes))
    }
}

/// `<prefix>rl:{<client>}:c` and `:w`.
fn keys(prefix: &KeyPrefix, client: &ClientKey) -> [String; 2] {
    let stem = prefix.key(format_args!("rl:{{{}}}", client.as_str()));
    [format!("{stem}:c"), format!("{stem}:w")]
}

const SCRIPT: &str = "the rate limits (take.lua)";
const INSIDE: &str = "the rate limits, inside take.lua";

impl RedisLimiter {
    /// What a check sends, for the start-up check: `take.lua`, and what it calls inside Redis
    /// (Redis's clock, and the two buckets).
    pub fn needs(prefix: &KeyPrefix) -> Vec<Need> {
        let client = ClientKey::new(None, std::net::Ipv4Addr::LOCALHOST.into());
        let [cost, writes] = keys(prefix, &client);
        let mut needs = LuaScript::new(TAKE)
            .needs(
                SCRIPT,
                &[cost.clone(), writes],
                &["1", "1", "1", "1", "1", "1"],
            )
            .to_vec();
        needs.extend(script_calls(&cost));
        needs
    }
}

/// What `take.lua` calls inside Redis, on a bucket `key`.
fn script_calls(key: &str) -> [Need; 3] {
    [
        Need::new(INSIDE, ["TIME"]),
        Need::new(INSIDE, ["GET", key]),
        Need::new(INSIDE, ["SET", key, "1", "PX", "1"]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_keys_share_one_hash_tag_under_the_prefix() {
        let client = ClientKey::new(Some("a b"), std::net::Ipv4Addr::LOCALHOST.into());
        assert_eq!(
            keys(&KeyPrefix::new("dynapage:"), &client),
            [
                "dynapage:rl:{sub:a%20b}:c".to_owned(),
                "dynapage:rl:{sub:a%20b}:w".to_owned()
            ]
        );
    }

    #[test]
    fn the_commands_declared_inside_take_lua_are_exactly_those_it_calls() {
        let called: std::collections::BTreeSet<String> =
            script_calls("k").iter().map(Need::name).collect();
        assert_eq!(called, crate::redis::commands_called(TAKE));
    }
}
