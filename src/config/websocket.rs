//! What one client may hold and do over WebSockets (docs/api/rate-limits.md,
//! docs/api/live-comments.md).

use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::http::WebSocketLimits;
use crate::live::shares::Shares;
use crate::ratelimit::RateLimiter;
use crate::redis::RedisHandle;

/// Per-client caps on WebSockets and subscriptions, and the send deadline.
#[derive(Args, Clone, Debug)]
pub struct WebSocketArgs {
    /// WebSockets one client (a token's subject, else an address) may hold open at once on
    /// this server; more are refused with 429 (`TOO_MANY_SOCKETS`).
    #[arg(long, env = "DYNAPAGE_MAX_SOCKETS_PER_CLIENT", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sockets_per_client: u32,
    /// Subscriptions one client may hold at once on this server, over all its sockets; more
    /// are refused (`TOO_MANY_SUBSCRIPTIONS`).
    #[arg(long, env = "DYNAPAGE_MAX_SUBSCRIPTIONS_PER_CLIENT", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_subscriptions_per_client: u32,
    /// A WebSocket message the client has not taken within this many milliseconds closes the
    /// socket (4008, `SLOW_SUBSCRIBER`), and its memory is returned.
    #[arg(long, env = "DYNAPAGE_WEBSOCKET_SEND_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub websocket_send_timeout_ms: u64,
    /// How long a socket's writer waits, after a live event is ready for it, for more to send
    /// in the same write (one system call and one wake-up for several events instead of one
    /// each): a delivery is up to this much later, and costs less CPU. 0 sends each event at
    /// once.
    #[arg(long, env = "DYNAPAGE_WEBSOCKET_COALESCE_MS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1000))]
    pub websocket_coalesce_ms: u64,
    /// Subscriptions one client may open per minute, in a burst or spread out (besides the
    /// cost each one takes from its query-cost budget); 0: no limit.
    #[arg(long, env = "DYNAPAGE_RATE_LIMIT_SUBSCRIPTIONS", default_value_t = 60)]
    pub rate_limit_subscriptions: u32,
}

impl WebSocketArgs {
    /// The limits, with the subscription rate kept in `redis` (shared by every server) when
    /// given, else in this process.
    pub fn limits(&self, redis: Option<&RedisHandle>) -> WebSocketLimits {
        let subscribe_limiter = RateLimiter::count_per(
            self.rate_limit_subscriptions,
            Duration::from_secs(60),
            redis,
        );
        WebSocketLimits {
            shares: Shares::new(
                self.max_sockets_per_client as usize,
                self.max_subscriptions_per_client as usize,
            ),
            send_timeout: Duration::from_millis(self.websocket_send_timeout_ms),
            coalesce: Duration::from_millis(self.websocket_coalesce_ms),
            subscribe_limiter,
            cohorts: Arc::default(),
        }
    }
}
