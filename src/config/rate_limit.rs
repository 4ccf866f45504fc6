//! Rate limits per client, and which proxies may name the client.

use clap::Args;

use crate::http::TrustedProxies;
use crate::ratelimit::RateLimits;

/// Rate limits per client (docs/api/rate-limits.md). Shared by every server through Redis with
/// `--index redis`, kept in each process otherwise.
#[derive(Args, Clone, Debug)]
pub struct RateLimitArgs {
    /// Writes (mutation root fields) one client may make per minute, in a burst or spread out;
    /// 0: no limit.
    #[arg(long, env = "DYNAPAGE_RATE_LIMIT_WRITES", default_value_t = 30)]
    pub rate_limit_writes: u32,
    /// Query cost (the complexity --max-query-complexity bounds) restored to each client's
    /// budget per second; 0: no limit. Responses show the budget in `RateLimit-Policy` and
    /// `RateLimit` headers (and in `extensions.cost.throttleStatus`, except on anonymous GETs).
    #[arg(long, env = "DYNAPAGE_RATE_LIMIT_COST", default_value_t = 1_000)]
    pub rate_limit_cost: u32,
    /// The most query cost a client's budget holds (its burst); a query costing more can never
    /// pass.
    #[arg(long, env = "DYNAPAGE_RATE_LIMIT_COST_BURST", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_limit_cost_burst: u32,
    /// Proxies whose X-Forwarded-For names the client (addresses or networks such as
    /// 10.0.0.0/8, comma-separated); from any other peer the header is ignored. None by default.
    #[arg(long, env = "DYNAPAGE_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<String>,
}

impl RateLimitArgs {
    /// The write and query-cost limits, as the rate limiter takes them.
    pub fn limits(&self) -> RateLimits {
        RateLimits::new(
            self.rate_limit_cost,
            self.rate_limit_cost_burst,
            self.rate_limit_writes,
        )
    }

    /// The parsed `--trusted-proxies`; an entry that is not an address or a network fails, naming
    /// the flag and its variable.
    pub fn trusted_proxies(&self) -> anyhow::Result<TrustedProxies> {
        TrustedProxies::parse(&self.trusted_proxies)
            .map_err(|e| anyhow::anyhow!("--trusted-proxies / DYNAPAGE_TRUSTED_PROXIES: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Rates {
        #[command(flatten)]
        rates: RateLimitArgs,
    }

    fn rates(args: &[&str]) -> Result<RateLimitArgs, clap::Error> {
        Rates::try_parse_from(std::iter::once("test").chain(args.iter().copied())).map(|r| r.rates)
    }

    #[test]
    fn rate_limits_default_to_30_writes_a_minute_and_1000_cost_a_second_and_0_turns_them_off() {
        let defaults = rates(&[]).expect("defaults").limits();
        assert_eq!(defaults, RateLimits::new(1_000, 10_000, 30));
        let off = rates(&["--rate-limit-writes", "0", "--rate-limit-cost", "0"])
            .expect("valid")
            .limits();
        assert!(!off.any());
        assert!(rates(&["--rate-limit-cost-burst", "0"]).is_err());
    }

    #[test]
    fn a_bad_trusted_proxy_is_an_error_naming_the_flag_and_its_variable() {
        let args = rates(&["--trusted-proxies", "10.0.0.0/8,proxy.local"]).expect("parses");
        let message = args
            .trusted_proxies()
            .expect_err("not an address")
            .to_string();
        assert!(
            message.contains("--trusted-proxies / DYNAPAGE_TRUSTED_PROXIES"),
            "{message}"
        );
        assert!(message.contains("proxy.local"), "{message}");
    }
}
