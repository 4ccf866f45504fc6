//! How the server listens and what it accepts, page sizes, and the keys that seal cursors.

use std::net::SocketAddr;

use clap::Args;

use super::StoreKind;
use crate::http::CorsOrigins;
use crate::pagination::{CursorCodec, PagingSettings};

/// Keys that seal cursors.
#[derive(Args, Clone, Debug)]
pub struct CursorArgs {
    /// Secret(s) that seal cursors, at least 16 characters; comma-separated or repeated for
    /// rotation: the first seals, all open. Required with `--store dynamodb`; with the embedded
    /// store, unset means a public development key (with a warning).
    #[arg(
        long,
        env = "DYNAPAGE_CURSOR_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub cursor_secret: Vec<String>,
}

impl CursorArgs {
    /// The codec of a server on `store`. A server on DynamoDB holds real data, so it never
    /// seals with the public development key: a missing secret stops start-up, as a missing
    /// `--auth` does, so that a forgeable cursor is never a default in production.
    pub fn codec(&self, store: StoreKind) -> anyhow::Result<CursorCodec> {
        if self.cursor_secret.is_empty() && store == StoreKind::Dynamodb {
            anyhow::bail!(
                "--cursor-secret / DYNAPAGE_CURSOR_SECRET is required with --store dynamodb: \
                 without it cursors would be sealed with the PUBLIC development key, which anyone \
                 can forge. Set a random secret of at least 16 characters (e.g. the output of \
                 `openssl rand -base64 32`), the same on every server"
            );
        }
        if self.cursor_secret.is_empty() {
            tracing::warn!(
                "no --cursor-secret / DYNAPAGE_CURSOR_SECRET set: cursors are sealed with the PUBLIC development key; \
                 anyone can forge them. Set a random secret in production"
            );
            return Ok(CursorCodec::development());
        }
        CursorCodec::new(&self.cursor_secret)
            .map_err(|e| anyhow::anyhow!("--cursor-secret / DYNAPAGE_CURSOR_SECRET: {e}"))
    }
}

/// Page sizes and the offset threshold.
#[derive(Args, Clone, Debug)]
pub struct PagingArgs {
    /// Page size when neither `first` nor `last` is given.
    #[arg(long, env = "DYNAPAGE_DEFAULT_PAGE_SIZE", default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub default_page_size: u16,
    /// Largest `first`/`last` accepted.
    #[arg(long, env = "DYNAPAGE_MAX_PAGE_SIZE", default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub max_page_size: u16,
    /// Offsets up to this are read straight from the store (exact while the index lags);
    /// larger ones go through the index.
    #[arg(long, env = "DYNAPAGE_OFFSET_INDEX_THRESHOLD", default_value_t = 100)]
    pub offset_index_threshold: u64,
}

impl PagingArgs {
    /// The paging settings; fails when `--default-page-size` exceeds `--max-page-size`.
    pub fn settings(&self) -> anyhow::Result<PagingSettings> {
        anyhow::ensure!(
            self.default_page_size <= self.max_page_size,
            "--default-page-size / DYNAPAGE_DEFAULT_PAGE_SIZE ({}) must not exceed --max-page-size / DYNAPAGE_MAX_PAGE_SIZE ({})",
            self.default_page_size,
            self.max_page_size
        );
        Ok(PagingSettings {
            default_page_size: usize::from(self.default_page_size),
            max_page_size: usize::from(self.max_page_size),
            offset_index_threshold: self.offset_index_threshold,
        })
    }
}

/// How the server listens and what it accepts.
#[derive(Args, Clone, Debug)]
pub struct ServerArgs {
    /// Address to listen on.
    #[arg(long, env = "DYNAPAGE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Deepest query accepted, in nested fields (an `ofType` inside introspection does not
    /// count, so GraphiQL's and other clients' introspection query passes).
    #[arg(long, env = "DYNAPAGE_MAX_QUERY_DEPTH", default_value_t = 12)]
    pub max_query_depth: usize,
    /// Most complex query accepted (a connection counts its page size times its fields, plus
    /// the items it may read beyond them: store-served offsets, each partition of a rating
    /// filter; `nodes(ids:)` counts each id).
    #[arg(long, env = "DYNAPAGE_MAX_QUERY_COMPLEXITY", default_value_t = 5_000)]
    pub max_query_complexity: usize,
    /// Longest `nodes(ids:)` list accepted.
    #[arg(long, env = "DYNAPAGE_MAX_NODE_IDS", default_value_t = 100)]
    pub max_node_ids: usize,
    /// Aliased fields one query may select, counted per fragment expansion (a fragment with
    /// 10 aliases spread 10 times is 100).
    #[arg(long, env = "DYNAPAGE_MAX_ALIASES", default_value_t = 30)]
    pub max_aliases: usize,
    /// Fields one document may select, counted per fragment expansion; larger documents are
    /// refused (`GRAPHQL_VALIDATION_FAILED`) before they are validated against the schema.
    #[arg(long, env = "DYNAPAGE_MAX_SELECTIONS", default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_selections: u64,
    /// Most items one request may read from the store (`TOO_MANY_ITEMS` beyond): refused before
    /// execution when the query's complexity already exceeds it, and checked before every read.
    #[arg(long, env = "DYNAPAGE_MAX_ITEMS_PER_REQUEST", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_items_per_request: u64,
    /// A request still running after this many milliseconds answers `REQUEST_TIMEOUT`.
    #[arg(long, env = "DYNAPAGE_REQUEST_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout_ms: u64,
    /// Requests executing at once; more are refused with 503 (`SERVICE_UNAVAILABLE`), not queued.
    #[arg(long, env = "DYNAPAGE_MAX_CONCURRENT_REQUESTS", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent_requests: u32,
    /// Largest request body accepted, in bytes; larger ones get 413. 64 KiB holds any real
    /// query or mutation (a comment body is at most 4,000 characters); a larger document would
    /// only cost parsing.
    #[arg(long, env = "DYNAPAGE_MAX_BODY_BYTES", default_value_t = 64 * 1024)]
    pub max_body_bytes: usize,
    /// On SIGINT/SIGTERM, in-flight requests get this many milliseconds to finish before they
    /// are cut and the process exits.
    #[arg(long, env = "DYNAPAGE_SHUTDOWN_GRACE_MS", default_value_t = 10_000)]
    pub shutdown_grace_ms: u64,
    /// Browser origins allowed to call the API (CORS), e.g. https://shop.example.com;
    /// comma-separated or repeated; `*` for any. None by default.
    #[arg(long, env = "DYNAPAGE_CORS_ORIGIN", value_delimiter = ',')]
    pub cors_origin: Vec<String>,
    /// Serve the Apollo Federation v2 subgraph schema (`schema.subgraph.graphql`): `Product`
    /// and `Comment` as entities, `_entities` and `_service` for a gateway
    /// (docs/federation.md). Off: the stand-alone schema (`schema.graphql`).
    #[arg(long, env = "DYNAPAGE_FEDERATION")]
    pub federation: bool,
    /// Subscriptions (`commentEvents`) open at once on this server; more are refused.
    #[arg(long, env = "DYNAPAGE_MAX_SUBSCRIPTIONS", default_value_t = 10_000)]
    pub max_subscriptions: usize,
    /// Subscriptions one WebSocket connection may hold at once; more are refused.
    #[arg(
        long,
        env = "DYNAPAGE_MAX_SUBSCRIPTIONS_PER_CONNECTION",
        default_value_t = 10
    )]
    pub max_subscriptions_per_connection: usize,
    /// Changes a subscriber may fall behind the live feed before it is closed with
    /// `SLOW_SUBSCRIBER` (the feed's ring, shared by every subscriber of the server).
    #[arg(long, env = "DYNAPAGE_SUBSCRIPTION_BUFFER", default_value_t = 1_024, value_parser = clap::value_parser!(u32).range(1..))]
    pub subscription_buffer: u32,
    /// A WebSocket that sends no `connection_init` within this many milliseconds is closed
    /// (4408, as graphql-transport-ws says).
    #[arg(long, env = "DYNAPAGE_CONNECTION_INIT_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub connection_init_timeout_ms: u64,
    /// A WebSocket is pinged this often, in milliseconds; a client (of either protocol) that
    /// answers nothing for two intervals is closed (3008).
    #[arg(long, env = "DYNAPAGE_WEBSOCKET_KEEPALIVE_MS", default_value_t = 15_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub websocket_keepalive_ms: u64,
    /// The kernel's send buffer of a WebSocket, in bytes (Linux doubles it for its bookkeeping):
    /// what a client that stops reading can leave queued in the server's kernel before the send
    /// deadline starts to run (Linux holds it to `net.core.wmem_max`). 0 keeps the kernel's own
    /// sizing (up to `net.ipv4.tcp_wmem`'s last value, 4 MiB by default).
    #[arg(long, env = "DYNAPAGE_WEBSOCKET_SEND_BUFFER_BYTES", default_value_t = 32_768, value_parser = clap::value_parser!(u32).range(0..=16 * 1024 * 1024))]
    pub websocket_send_buffer_bytes: u32,
    /// A connection that has started a request but not sent all its headers within this many
    /// milliseconds (from the request's first byte) is closed.
    #[arg(long, env = "DYNAPAGE_HEADER_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_ms: u64,
    /// The longest request head (request line and headers, a GET query's URL included) a
    /// connection may send, in bytes; a longer one is answered 431 and the connection closed.
    /// What one unfinished head can hold in the server's memory. Browsers send a few kB;
    /// 32 KiB is what common CDNs and proxies accept in all (hyper's floor is 8 KiB).
    #[arg(long, env = "DYNAPAGE_MAX_REQUEST_HEAD_BYTES", default_value_t = 32 * 1024, value_parser = clap::value_parser!(u32).range(8192..=1024 * 1024))]
    pub max_request_head_bytes: u32,
    /// A request body not received in full within this many milliseconds of its headers fails
    /// with 408 (`REQUEST_TIMEOUT`), and its connection is closed.
    #[arg(long, env = "DYNAPAGE_BODY_TIMEOUT_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub body_timeout_ms: u64,
    /// A keep-alive connection that sends no request for this many milliseconds (or, during a
    /// request, neither sends nor reads a byte) is closed. Keep it above the idle timeout of a
    /// load balancer in front (AWS ALB: 60 s).
    #[arg(long, env = "DYNAPAGE_IDLE_TIMEOUT_MS", default_value_t = 75_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_ms: u64,
    /// Connections (WebSockets included) open at once; more are closed as soon as accepted.
    /// Kept below the file-descriptor limit, whose soft value is raised to the hard one.
    #[arg(long, env = "DYNAPAGE_MAX_CONNECTIONS", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Connections open at once from one client address (not counting --trusted-proxies,
    /// which are held to --max-connections only); more are closed as soon as accepted.
    #[arg(long, env = "DYNAPAGE_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections_per_address: u32,
    /// Serve `/metrics` on this address only (e.g. 127.0.0.1:9090, or a private interface the
    /// monitoring system reaches), and not on --listen. Unset: `/metrics` is on --listen.
    #[arg(long, env = "DYNAPAGE_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,
}

impl ServerArgs {
    /// The schema to serve (`--federation`).
    pub fn surface(&self) -> crate::graphql::Surface {
        match self.federation {
            true => crate::graphql::Surface::Subgraph,
            false => crate::graphql::Surface::Standalone,
        }
    }

    /// The connections' timeouts and caps; `trusted` peers are exempt from the per-address cap.
    pub fn connection_options(
        &self,
        trusted: crate::http::TrustedProxies,
    ) -> crate::http::ConnectionOptions {
        use std::time::Duration;
        crate::http::ConnectionOptions {
            timeouts: crate::http::Timeouts {
                header: Duration::from_millis(self.header_timeout_ms),
                body: Duration::from_millis(self.body_timeout_ms),
                idle: Duration::from_millis(self.idle_timeout_ms),
            },
            max_connections: self.max_connections as usize,
            max_connections_per_address: self.max_connections_per_address as usize,
            max_head_bytes: self.max_request_head_bytes as usize,
            trusted,
            websocket_send_buffer: self.websocket_send_buffer_bytes as usize,
        }
    }

    /// The HTTP layer's limits and CORS origins; fails on a bad `--cors-origin`.
    pub fn http_options(&self) -> anyhow::Result<crate::http::HttpOptions> {
        let cors = CorsOrigins::parse(&self.cors_origin)
            .map_err(|e| anyhow::anyhow!("--cors-origin / DYNAPAGE_CORS_ORIGIN: {e}"))?;
        Ok(crate::http::HttpOptions {
            request_timeout: std::time::Duration::from_millis(self.request_timeout_ms),
            max_concurrent_requests: self.max_concurrent_requests as usize,
            max_aliases: self.max_aliases,
            max_selections: self.max_selections as usize,
            max_depth: self.max_query_depth,
            max_body_bytes: self.max_body_bytes,
            cors,
            metrics: crate::telemetry::metrics_handle(),
            max_subscriptions: self.max_subscriptions,
            max_subscriptions_per_connection: self.max_subscriptions_per_connection,
            connection_init_timeout: std::time::Duration::from_millis(
                self.connection_init_timeout_ms,
            ),
            websocket_keepalive: std::time::Duration::from_millis(self.websocket_keepalive_ms),
            ..crate::http::HttpOptions::default()
        })
    }
}
