//! The rate-limit check of a request, made between validation and execution
//! (`crate::ratelimit` holds the budgets; the HTTP layer says whose they are).
//!
//! Why an async-graphql extension, on the `validation` hook: a request's cost is its
//! complexity, which async-graphql computes while it validates the document against the
//! schema with the request's variables. The hook receives it the moment it is known, before
//! anything executes, may await the limiter (a Redis round trip), and may end the request with
//! an error; so a refused request resolves no field and writes nothing, and the document is
//! not walked a second time to price it. (The HTTP layer could only price it by re-implementing
//! async-graphql's complexity count over the schema.) Requests that fail parsing or validation
//! never reach the check and spend nothing; they are not executed either.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_graphql::extensions::{ExtensionContext, NextValidation};
use async_graphql::{ServerError, ValidationResult};

use super::{ErrorCode, RequestMeta};
use crate::ratelimit::{Charge, ClientKey, Limit, RateLimiter, Refused, Verdict};

/// One request's budget check: whose budgets, what the request writes, and, once checked, what
/// it cost and what the limiter said. The HTTP layer puts it in the request's data and reads
/// it back for the response.
#[derive(Debug)]
pub struct Budget {
    limiter: Option<RateLimiter>,
    client: ClientKey,
    writes: u64,
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
            checked: Mutex::new(None),
        }
    }

    /// The check's result, if the request got that far.
    pub fn checked(&self) -> Option<Checked> {
        *self.checked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client's cost budget without spending any of it: for responses to requests that
    /// never reached the check (they failed parsing or validation).
    pub async fn peek(&self) -> Option<Verdict> {
        match &self.limiter {
            Some(limiter) => Some(limiter.check(&self.client, Charge::default()).await),
            None => None,
        }
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
        metrics::counter!("dynapage_rate_limited_total", "limit" => refused.limit.as_str())
            .increment(1);
        let checked = Checked {
            cost,
            verdict: Some(verdict),
        };
        Err(self.refusal(&checked, refused))
    }

    async fn check(&self, cost: u64) -> Checked {
        let verdict = match &self.limiter {
            Some(limiter) => {
                let charge = Charge {
                    cost,
                    writes: self.writes,
                };
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

/// `Retry-After`: whole seconds, rounded up, at least 1.
pub fn retry_after_seconds(wait: Duration) -> u64 {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    seconds.max(1)
}

/// The check, on async-graphql's `validation` hook (`graphql::hooks`); a request without a
/// [`Budget`] in its data is not checked (the SDL export, tests that execute the schema
/// directly).
pub(super) async fn on_validation(
    ctx: &ExtensionContext<'_>,
    next: NextValidation<'_>,
) -> Result<ValidationResult, Vec<ServerError>> {
    let result = next.run(ctx).await?;
    let Some(budget) = ctx.data_opt::<Arc<Budget>>() else {
        return Ok(result);
    };
    let checked = budget.check(result.complexity as u64).await;
    let Some(refused) = checked.refused() else {
        return Ok(result);
    };
    metrics::counter!("dynapage_rate_limited_total", "limit" => refused.limit.as_str())
        .increment(1);
    let mut error = ServerError::new(budget.refusal(&checked, refused), None);
    let extensions = error.extensions.get_or_insert_with(Default::default);
    extensions.set("code", ErrorCode::RateLimited.as_str());
    if let Some(meta) = ctx.data_opt::<Arc<RequestMeta>>() {
        extensions.set("requestId", meta.request_id.as_str());
    }
    Err(vec![error])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_of_at_least_one() {
        assert_eq!(retry_after_seconds(Duration::from_micros(1)), 1);
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_seconds(Duration::from_millis(2001)), 3);
    }
}
