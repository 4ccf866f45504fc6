//! The rate-limit check of a request, made after it is priced and before it runs
//! (`crate::ratelimit` holds the budgets; the HTTP layer says whose they are).
//!
//! A request's cost is its price (`graphql::pricing`), counted from the parsed document and the
//! request's variables before anything executes: [`Budget::admit`] holds it to
//! `--max-query-complexity` and `--max-items-per-request`, then charges it, and may end the
//! request with an error; so a refused request resolves no field and writes nothing.
//!
//! Failures cost too: a request that fails parsing or validation was work all the same, and a
//! client sending nothing but failing documents must run out of budget like any other. The HTTP
//! layer charges such a request [`Budget::charge_failure`]: a floor by its size,
//! [`FAILURE_POINTS_PER_KIB`] per KiB begun, less what its price already paid.
//!
//! And every request pays at least for its bytes ([`bytes_floor`], set on the budget by
//! [`Budget::for_bytes`]), whatever its outcome: a document of free fields (`__typename`,
//! thousands of unknown arguments on it, long comments) priced 0 while its 62 kB took 5 ms
//! to parse and validate, and four connections of one address kept 1.8 cores busy for nothing
//! (issue 42, item 3).

use std::sync::Mutex;
use std::time::Duration;

use async_graphql::ServerError;

use super::pricing::Priced;
use super::{ApiError, ApiState, ErrorCode, RequestMeta};
use crate::ratelimit::{Charge, ClientKey, Limit, RateLimiter, Refused, Verdict};
use crate::telemetry::metric;

/// One request's budget check: whose budgets, what the request writes, and, once checked, what
/// it cost and what the limiter said. The HTTP layer puts it in the request's data and reads
/// it back for the response.
#[derive(Debug)]
pub struct Budget {
    limiter: Option<RateLimiter>,
    client: ClientKey,
    writes: u64,
    /// The least the request pays whatever its price ([`bytes_floor`] of its size).
    floor: u64,
    checked: Mutex<Option<Checked>>,
}

/// What the check found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Checked {
    /// The request's complexity: `requestedQueryCost`.
    pub cost: u64,
    /// The limiter's answer; `None` when no budget is limited.
    pub verdict: Option<Verdict>,
}

impl Checked {
    /// Whether the limiter refused the request.
    pub fn refused(&self) -> Option<Refused> {
        self.verdict.and_then(|v| v.refused)
    }
}

impl Budget {
    /// A check of `client`'s budgets by `limiter` (none: nothing is limited, the cost is only
    /// reported), for a request making `writes` writes (mutation root fields).
    pub fn new(limiter: Option<RateLimiter>, client: ClientKey, writes: u64) -> Self {
        Self {
            limiter,
            client,
            writes,
            floor: 0,
            checked: Mutex::new(None),
        }
    }

    /// The same check for a request of `bytes` (its body, URL or message, or the document it
    /// runs when that is longer): whatever its price, it pays at least [`bytes_floor`].
    pub fn for_bytes(mut self, bytes: usize) -> Self {
        self.floor = bytes_floor(bytes);
        self
    }

    /// Whose budgets these are.
    pub fn client(&self) -> &ClientKey {
        &self.client
    }

    /// The check's result, if the request got that far.
    pub fn checked(&self) -> Option<Checked> {
        *self.checked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Charges a request that failed parsing or validation the floor for a document of
    /// `bytes` ([`failure_floor`]), less the `paid` its price already took when it was priced
    /// before validation refused it: such a request costs the larger of the two. It writes
    /// nothing, so it spends no writes.
    pub async fn charge_failure(&self, bytes: usize, paid: u64) -> Checked {
        let floor = failure_floor(bytes);
        if let Some(checked) = self.checked().filter(|_| paid >= floor) {
            return checked;
        }
        let mut checked = self.charge(floor.saturating_sub(paid), 0).await;
        checked.cost = floor.max(paid);
        *self.checked.lock().unwrap_or_else(|p| p.into_inner()) = Some(checked);
        checked
    }

    /// The checks a request's `price` passes before it runs, in order: the price within
    /// `--max-query-complexity` and the items it may read within `--max-items-per-request`
    /// (refused unread, and uncharged: the HTTP layer charges the failure floor), then the
    /// client's budgets, charged the price or the request's bytes floor ([`Budget::for_bytes`]),
    /// whichever is larger. A price the walk could not count ([`Priced::Unknown`]) is
    /// async-graphql's validation to refuse; an argument it could not read
    /// ([`Priced::Invalid`]) is refused here. `Err`: the error to answer with instead of
    /// running.
    pub async fn admit(
        &self,
        price: Priced,
        state: &ApiState,
        meta: Option<&RequestMeta>,
    ) -> Result<(), ServerError> {
        let cost = match price {
            Priced::Cost(cost) => cost,
            Priced::Unknown => return Ok(()),
            Priced::Invalid(why) => return Err(super::invalid_request(why)),
        };
        if cost > state.max_complexity as u64 {
            let max = state.max_complexity;
            return Err(super::invalid_request(format!(
                "the query costs {cost}, more than the {max} one query may cost: ask for fewer \
                 items or fields"
            )));
        }
        if cost > state.max_items_per_request {
            let max = state.max_items_per_request;
            let error = ApiError::TooManyItems { max }.into_graphql(meta);
            return Err(error.into_server_error(async_graphql::Pos::default()));
        }
        let checked = self.charge(cost.max(self.floor), self.writes).await;
        let request_id = meta.map(|meta| meta.request_id.as_str());
        match self.refusal_error(&checked, request_id) {
            None => Ok(()),
            Some(error) => Err(error),
        }
    }

    /// Charges an answer served from the response cache `points` (it ran nothing, so there is
    /// no complexity to price): [`cached_answer_price`] of its body, 0 for a `304`; at least
    /// the request's bytes floor, so a `304` is not free either.
    pub async fn charge_cached(&self, points: u64) -> Checked {
        self.charge(points.max(self.floor), 0).await
    }

    /// Takes `cost` more from the client's cost budget, after the request's own check: work a
    /// request does beyond what its complexity priced (a resumed subscription's replay, whose
    /// size only the index knows). `Err` holds the message to answer with `RATE_LIMITED`.
    pub async fn spend_more(&self, cost: u64) -> Result<(), String> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        let charge = Charge { cost, writes: 0 };
        let verdict = limiter.check(&self.client, charge).await;
        let Some(refused) = verdict.refused else {
            return Ok(());
        };
        metric::RATE_LIMITED
            .counter(&[("limit", refused.limit.as_str())])
            .increment(1);
        let checked = Checked {
            cost,
            verdict: Some(verdict),
        };
        Err(self.refusal(&checked, refused))
    }

    /// Whether the client's budget could not pay the failure floor of a document of `bytes`,
    /// asked before the document is parsed and without spending anything: the refusal when it
    /// could not; `None` when it could, or when cost is not limited.
    pub async fn unaffordable(&self, bytes: usize) -> Option<Checked> {
        let limiter = self.limiter.as_ref()?;
        let floor = failure_floor(bytes);
        let throttle = limiter.check(&self.client, Charge::default()).await.cost?;
        let missing = floor.checked_sub(throttle.currently_available)?;
        if missing == 0 {
            return None;
        }
        let wait = missing as f64 / throttle.restore_rate;
        let retry_after = (floor <= throttle.maximum_available && wait.is_finite())
            .then(|| Duration::from_secs_f64(wait));
        let refused = Refused {
            limit: Limit::Cost,
            retry_after,
        };
        let verdict = Verdict {
            refused: Some(refused),
            cost: Some(throttle),
        };
        Some(Checked {
            cost: floor,
            verdict: Some(verdict),
        })
    }

    /// The `RATE_LIMITED` error a refused request answers, with `request_id` when known.
    pub fn refusal_error(
        &self,
        checked: &Checked,
        request_id: Option<&str>,
    ) -> Option<ServerError> {
        let refused = checked.refused()?;
        metric::RATE_LIMITED
            .counter(&[("limit", refused.limit.as_str())])
            .increment(1);
        let mut error = ServerError::new(self.refusal(checked, refused), None);
        let extensions = error.extensions.get_or_insert_with(Default::default);
        extensions.set("code", ErrorCode::RateLimited.as_str());
        if let Some(request_id) = request_id {
            extensions.set("requestId", request_id);
        }
        Some(error)
    }

    async fn charge(&self, cost: u64, writes: u64) -> Checked {
        let verdict = match &self.limiter {
            Some(limiter) => {
                let charge = Charge { cost, writes };
                Some(limiter.check(&self.client, charge).await)
            }
            None => None,
        };
        let checked = Checked { cost, verdict };
        *self.checked.lock().unwrap_or_else(|p| p.into_inner()) = Some(checked);
        checked
    }

    /// The error a refused request answers with: what was asked, what the budget allows, and
    /// when to retry (or that retrying cannot help).
    fn refusal(&self, checked: &Checked, refused: Refused) -> String {
        let limits = self.limiter.as_ref().map(|l| *l.limits());
        let cost = checked.cost;
        match (refused.limit, refused.retry_after) {
            (Limit::Cost, retry) => {
                let status = checked.verdict.and_then(|v| v.cost);
                let maximum = status.map_or(0, |s| s.maximum_available);
                match retry {
                    None => format!(
                        "the query costs {cost}, more than the {maximum} this client's budget can \
                         ever hold, so it can never pass: ask for fewer items or fields"
                    ),
                    Some(wait) => format!(
                        "the query costs {cost} and this client's budget holds {} of {maximum} \
                         ({} come back each second): retry in {} s",
                        status.map_or(0, |s| s.currently_available),
                        status.map_or(0.0, |s| s.restore_rate),
                        retry_after_seconds(wait)
                    ),
                }
            }
            (Limit::Writes, retry) => {
                let per_minute = limits.and_then(|l| l.writes).map_or(0.0, |w| w.burst);
                match retry {
                    None => format!(
                        "the mutation makes {} writes, more than the {per_minute} a minute this \
                         client may make, so it can never pass: send fewer mutation fields",
                        self.writes
                    ),
                    Some(wait) => format!(
                        "this client has made its {per_minute} writes of the minute: retry in {} s",
                        retry_after_seconds(wait)
                    ),
                }
            }
        }
    }
}

/// Points a failed request pays per KiB of its document begun.
///
/// Why 10: parsing is most of what a failed request costs, and async-graphql's parser took
/// 0.3 ms per KiB of a document of bare fields in a release build on a 2-core machine (2.9 ms
/// for 4.9 kB, 40 ms for 160 kB), while an honest page of about 220 points takes well under a
/// millisecond. At 10 points a KiB, a budget restoring 1,000 points a second buys about 30 ms
/// of parsing a second; at 1 it bought 300.
pub(super) const FAILURE_POINTS_PER_KIB: u64 = 10;

/// The least an answer served from the response cache costs its client: the one index read it
/// made (a page it would otherwise have run costs its complexity, 3 points or more). A `304`
/// costs nothing (issue 24: revalidating is free).
pub const CACHED_ANSWER_POINTS: u64 = 1;

/// Points an answer served from the response cache pays per KiB begun of the body it sends,
/// as sent (the encoded size when compressed).
///
/// Why 1: `bench/hit-cost.py` (now `cargo bench-tool hit-cost`) on main's release build (2
/// cores, 7 alternating rounds of 3,000 sequential requests, server CPU from `/proc`;
/// `bench/results/hit-cost.txt`) measured a
/// computed first page of 20 with bodies (price 221) at 183 µs of server CPU, a hit of that
/// page (5,085 bytes) at 77 µs and a hit of 76,066 bytes at 90 µs: a KiB sent costs 0.1 to
/// 0.2 µs, 0.1 to 0.25 points at the page's rate. One point per KiB begun is the smallest
/// whole rate above that, four to nine times the CPU, the rest paying for the bandwidth a
/// loopback measurement does not see. A kept answer is sent as the bytes kept, encoded once
/// per coding, so the rate holds for every coding. (A hit's fixed part, 77 µs, is mostly the
/// request's own parse and checks, which every request pays, hit or not.)
pub const CACHED_POINTS_PER_KIB: u64 = 1;

/// What an answer served from the response cache costs: [`CACHED_POINTS_PER_KIB`] per KiB
/// begun of the `bytes` it sends, at least [`CACHED_ANSWER_POINTS`]. Its price follows what it
/// sends because sending is what a hit costs: a 147 kB kept answer cost the same point as a
/// 1 kB one while taking a hundred times the work.
pub fn cached_answer_price(bytes: usize) -> u64 {
    ((bytes as u64).div_ceil(1024) * CACHED_POINTS_PER_KIB).max(CACHED_ANSWER_POINTS)
}

/// What a request that failed parsing or validation costs: [`FAILURE_POINTS_PER_KIB`] per KiB
/// of its document begun (an empty document pays for one).
pub fn failure_floor(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(1024).max(1) * FAILURE_POINTS_PER_KIB
}

/// What every request pays at least, whatever its outcome: [`FAILURE_POINTS_PER_KIB`] per KiB
/// of it, counted to the byte and rounded up (so at least 1 point for any request). A request
/// that fails pays the coarser [`failure_floor`] instead, which is never less.
///
/// Why the failure rate: what a request's bytes cost the server is reading, parsing and
/// validating them, which is what that rate prices; an honest query is a few hundred bytes and
/// priced far above its floor (a page of 20 with bodies: about 220 points for 2 or 3 of
/// bytes), so only documents whose fields are free pay it.
pub fn bytes_floor(bytes: usize) -> u64 {
    (bytes as u64)
        .saturating_mul(FAILURE_POINTS_PER_KIB)
        .div_ceil(1024)
        .max(1)
}

/// `Retry-After`: whole seconds, rounded up, at least 1.
pub fn retry_after_seconds(wait: Duration) -> u64 {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    seconds.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_costs_ten_points_per_kib_begun() {
        assert_eq!(failure_floor(0), 10);
        assert_eq!(failure_floor(1024), 10);
        assert_eq!(failure_floor(1025), 20);
        assert_eq!(failure_floor(64 * 1024), 640);
    }

    #[test]
    fn every_request_pays_ten_points_a_kib_to_the_byte_and_never_more_than_a_failure() {
        assert_eq!(bytes_floor(0), 1);
        assert_eq!(bytes_floor(70), 1);
        assert_eq!(bytes_floor(103), 2);
        assert_eq!(bytes_floor(1024), 10);
        assert_eq!(bytes_floor(62 * 1024), 620);
        for bytes in [0, 1, 500, 1024, 1025, 4000, 65_536, 1 << 20] {
            assert!(bytes_floor(bytes) <= failure_floor(bytes), "{bytes}");
        }
    }

    #[test]
    fn a_hit_costs_its_kib_begun_and_never_less_than_a_point() {
        assert_eq!(cached_answer_price(0), CACHED_ANSWER_POINTS);
        assert_eq!(cached_answer_price(1), CACHED_POINTS_PER_KIB.max(1));
        assert_eq!(cached_answer_price(1024), CACHED_POINTS_PER_KIB.max(1));
        assert_eq!(cached_answer_price(1025), 2 * CACHED_POINTS_PER_KIB);
        assert_eq!(cached_answer_price(147 * 1000), 144 * CACHED_POINTS_PER_KIB);
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_of_at_least_one() {
        assert_eq!(retry_after_seconds(Duration::from_micros(1)), 1);
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_seconds(Duration::from_millis(2001)), 3);
    }
}
