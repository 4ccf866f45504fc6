//! Settings: clap argument groups with an environment variable behind every flag (STYLE 3).
//! Defaults match `docker-compose.yml`; a bad value fails at start-up naming the flag.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::graphql::QueryLimits;
use crate::http::{CorsOrigins, TrustedProxies};
use crate::pagination::{CursorCodec, PagingSettings};
use crate::ratelimit::RateLimits;
use crate::redis::{RedisConfig, TrustedCa};

/// Where comments live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StoreKind {
    /// In-process, seeded with demo data by `serve`; gone when the process ends.
    Memory,
    /// Amazon DynamoDB (or DynamoDB Local with `--dynamodb-endpoint`).
    Dynamodb,
}

/// Where the page index lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IndexKind {
    /// In-process, fed by the store's changes.
    Memory,
    /// Redis sorted sets.
    Redis,
}

/// Which backends to use and how to reach them.
#[derive(Args, Clone, Debug)]
pub struct BackendArgs {
    /// Where comments live.
    #[arg(long, env = "DYNAPAGE_STORE", value_enum, default_value_t = StoreKind::Memory)]
    pub store: StoreKind,
    /// Where the page index lives.
    #[arg(long, env = "DYNAPAGE_INDEX", value_enum, default_value_t = IndexKind::Memory)]
    pub index: IndexKind,
    /// DynamoDB endpoint URL, e.g. http://127.0.0.1:8000 for DynamoDB Local. Absent: the
    /// standard AWS endpoint, region and credential chain.
    #[arg(long, env = "DYNAPAGE_DYNAMODB_ENDPOINT")]
    pub dynamodb_endpoint: Option<String>,
    /// DynamoDB table name.
    #[arg(long, env = "DYNAPAGE_DYNAMODB_TABLE", default_value = "comments")]
    pub dynamodb_table: String,
    /// AWS region (default: from the AWS environment; us-east-1 with an endpoint).
    #[arg(long, env = "DYNAPAGE_DYNAMODB_REGION")]
    pub dynamodb_region: Option<String>,
    /// Create the table, its two GSIs and its stream if missing, and wait until they are active.
    #[arg(long, env = "DYNAPAGE_CREATE_TABLES")]
    pub create_tables: bool,
    /// Redis URL; several comma-separated URLs mean Redis Cluster. `rediss://` is TLS;
    /// `redis://user:password@host:port` logs in as an ACL user.
    #[arg(
        long,
        env = "DYNAPAGE_REDIS_URL",
        default_value = "redis://127.0.0.1:6379",
        value_delimiter = ','
    )]
    pub redis_url: Vec<String>,
    /// Prefix of every Redis key, so deployments can share one Redis.
    #[arg(long, env = "DYNAPAGE_REDIS_PREFIX", default_value = "dynapage:")]
    pub redis_prefix: String,
    /// Treat a single `--redis-url` as a Redis Cluster node.
    #[arg(long, env = "DYNAPAGE_REDIS_CLUSTER")]
    pub redis_cluster: bool,
    /// PEM file of the CA that signs a `rediss://` Redis's certificate, trusted instead of the
    /// system roots (a private CA). Unset: the system roots.
    #[arg(long, env = "DYNAPAGE_REDIS_CA_FILE")]
    pub redis_ca_file: Option<PathBuf>,
}

impl BackendArgs {
    /// The Redis index's settings: several URLs are the seed nodes of a Redis Cluster, and
    /// `--redis-cluster` makes a single URL one too (the flag can only add Cluster mode, never
    /// take it from several URLs). Fails on a CA file that cannot be read or holds no
    /// certificate.
    pub fn redis_config(&self) -> anyhow::Result<RedisConfig> {
        let mut config = RedisConfig::new(&self.redis_url.join(","), &self.redis_prefix);
        if self.redis_cluster {
            config = config.with_cluster(true);
        }
        if let Some(path) = &self.redis_ca_file {
            let ca = TrustedCa::from_file(path)
                .map_err(|e| anyhow::anyhow!("--redis-ca-file / DYNAPAGE_REDIS_CA_FILE: {e}"))?;
            config = config.with_ca(ca);
        }
        Ok(config)
    }

    /// Refuses to run `command` unless it reads a DynamoDB table and writes a Redis index
    /// (`sync`, `reindex`, `verify`: an embedded store or index lives only inside `serve`).
    pub fn require_dynamodb_and_redis(&self, command: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.store == StoreKind::Dynamodb && self.index == IndexKind::Redis,
            "`{command}` works on a DynamoDB table and a Redis index: pass --store dynamodb --index redis \
             (DYNAPAGE_STORE, DYNAPAGE_INDEX); an embedded store or index lives only inside `serve`"
        );
        Ok(())
    }
}

/// How writes are authorised (`--auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// Anyone may add, edit and delete any comment (demos, or a gateway in front that checks).
    Off,
    /// Writes need a bearer token (a JWT) from the identity provider.
    Jwt,
}

/// Who may write, and how their tokens are checked.
#[derive(Args, Clone, Debug)]
pub struct AuthArgs {
    /// `jwt`: writes need a bearer token verified against --auth-jwks-url; `off`: anyone may
    /// write anything. Default `off` with the embedded store (with a warning); required with
    /// `--store dynamodb`, so that `off` is always deliberate.
    #[arg(long, env = "DYNAPAGE_AUTH", value_enum)]
    pub auth: Option<AuthMode>,
    /// The identity provider's JWKS: its `jwks_uri` (https://…), or `file:PATH` for a local
    /// file such as `dynapage token`'s `file:.dynapage/jwks.json`.
    #[arg(long, env = "DYNAPAGE_AUTH_JWKS_URL")]
    pub auth_jwks_url: Option<String>,
    /// The `iss` every token must carry, e.g. https://login.shop.example/.
    #[arg(long, env = "DYNAPAGE_AUTH_ISSUER")]
    pub auth_issuer: Option<String>,
    /// A value the token's `aud` must hold (the API's identifier at the provider).
    #[arg(long, env = "DYNAPAGE_AUTH_AUDIENCE")]
    pub auth_audience: Option<String>,
    /// The claim holding the author's display name (`sub` when a token lacks it).
    #[arg(long, env = "DYNAPAGE_AUTH_NAME_CLAIM", default_value = "name")]
    pub auth_name_claim: String,
    /// The claim holding the token's roles: an array of strings or a space-separated string;
    /// a dotted path such as `realm_access.roles` reaches into an object.
    #[arg(long, env = "DYNAPAGE_AUTH_ROLES_CLAIM", default_value = "roles")]
    pub auth_roles_claim: String,
    /// The role that may edit and delete anyone's comments.
    #[arg(
        long,
        env = "DYNAPAGE_AUTH_MODERATOR_ROLE",
        default_value = "moderator"
    )]
    pub auth_moderator_role: String,
}

impl AuthArgs {
    /// The write policy for a server on `store`; a missing setting fails naming its flag.
    pub fn auth(&self, store: StoreKind) -> anyhow::Result<crate::auth::Auth> {
        use crate::auth::{Auth, JwksSource, JwtSettings, JwtVerifier, KeyCache};
        let mode = match (self.auth, store) {
            (Some(mode), _) => mode,
            (None, StoreKind::Memory) => {
                tracing::warn!(
                    "no --auth / DYNAPAGE_AUTH set: anyone may add, edit and delete any comment \
                     (the embedded store's demo default). Use --auth jwt in production"
                );
                AuthMode::Off
            }
            (None, StoreKind::Dynamodb) => anyhow::bail!(
                "--auth / DYNAPAGE_AUTH is required with --store dynamodb: `jwt` to accept writes \
                 only with a bearer token from your identity provider, or `off` to let anyone \
                 write anything (deliberately: behind a gateway that checks, say)"
            ),
        };
        if mode == AuthMode::Off {
            return Ok(Auth::Off);
        }
        let required = |value: &Option<String>, flag: &str| {
            value
                .clone()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| anyhow::anyhow!("--auth jwt needs {flag}"))
        };
        let source = JwksSource::parse(&required(
            &self.auth_jwks_url,
            "--auth-jwks-url / DYNAPAGE_AUTH_JWKS_URL",
        )?)
        .map_err(|e| anyhow::anyhow!("--auth-jwks-url / DYNAPAGE_AUTH_JWKS_URL: {e}"))?;
        let settings = JwtSettings {
            issuer: required(&self.auth_issuer, "--auth-issuer / DYNAPAGE_AUTH_ISSUER")?,
            audience: required(
                &self.auth_audience,
                "--auth-audience / DYNAPAGE_AUTH_AUDIENCE",
            )?,
            name_claim: self.auth_name_claim.clone(),
            roles_claim: self.auth_roles_claim.clone(),
            moderator_role: self.auth_moderator_role.clone(),
        };
        let keys = KeyCache::new(source)
            .map_err(|e| anyhow::anyhow!("cannot build the JWKS client: {e}"))?;
        Ok(Auth::Jwt(std::sync::Arc::new(JwtVerifier::new(
            settings, keys,
        ))))
    }
}

/// Keys that seal cursors.
#[derive(Args, Clone, Debug)]
pub struct CursorArgs {
    /// Secret(s) that seal cursors, at least 16 characters; comma-separated or repeated for
    /// rotation: the first seals, all open. Unset: a public development key (with a warning).
    #[arg(
        long,
        env = "DYNAPAGE_CURSOR_SECRET",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub cursor_secret: Vec<String>,
}

impl CursorArgs {
    pub fn codec(&self) -> anyhow::Result<CursorCodec> {
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
    /// Most complex query accepted (a connection counts its page size times its fields).
    #[arg(long, env = "DYNAPAGE_MAX_QUERY_COMPLEXITY", default_value_t = 5_000)]
    pub max_query_complexity: usize,
    /// Longest `nodes(ids:)` list accepted.
    #[arg(long, env = "DYNAPAGE_MAX_NODE_IDS", default_value_t = 100)]
    pub max_node_ids: usize,
    /// Aliased fields one query may declare.
    #[arg(long, env = "DYNAPAGE_MAX_ALIASES", default_value_t = 30)]
    pub max_aliases: usize,
    /// A request still running after this many milliseconds answers `REQUEST_TIMEOUT`.
    #[arg(long, env = "DYNAPAGE_REQUEST_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout_ms: u64,
    /// Requests executing at once; more are refused with 503 (`SERVICE_UNAVAILABLE`), not queued.
    #[arg(long, env = "DYNAPAGE_MAX_CONCURRENT_REQUESTS", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent_requests: u32,
    /// Largest request body accepted, in bytes; larger ones get 413.
    #[arg(long, env = "DYNAPAGE_MAX_BODY_BYTES", default_value_t = 256 * 1024)]
    pub max_body_bytes: usize,
    /// On SIGINT/SIGTERM, in-flight requests get this many milliseconds to finish before they
    /// are cut and the process exits.
    #[arg(long, env = "DYNAPAGE_SHUTDOWN_GRACE_MS", default_value_t = 10_000)]
    pub shutdown_grace_ms: u64,
    /// Browser origins allowed to call the API (CORS), e.g. https://shop.example.com;
    /// comma-separated or repeated; `*` for any. None by default.
    #[arg(long, env = "DYNAPAGE_CORS_ORIGIN", value_delimiter = ',')]
    pub cors_origin: Vec<String>,
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
    /// A WebSocket is pinged this often, in milliseconds; a graphql-transport-ws client that
    /// answers nothing for two intervals is closed (3008).
    #[arg(long, env = "DYNAPAGE_WEBSOCKET_KEEPALIVE_MS", default_value_t = 15_000, value_parser = clap::value_parser!(u64).range(100..))]
    pub websocket_keepalive_ms: u64,
}

impl ServerArgs {
    pub fn limits(&self) -> QueryLimits {
        QueryLimits {
            max_complexity: self.max_query_complexity,
        }
    }

    pub fn http_options(&self) -> anyhow::Result<crate::http::HttpOptions> {
        let cors = CorsOrigins::parse(&self.cors_origin)
            .map_err(|e| anyhow::anyhow!("--cors-origin / DYNAPAGE_CORS_ORIGIN: {e}"))?;
        Ok(crate::http::HttpOptions {
            request_timeout: std::time::Duration::from_millis(self.request_timeout_ms),
            max_concurrent_requests: self.max_concurrent_requests as usize,
            max_aliases: self.max_aliases,
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

/// Rate limits per client (README: Rate limits). Shared by every server through Redis with
/// `--index redis`, kept in each process otherwise.
#[derive(Args, Clone, Debug)]
pub struct RateLimitArgs {
    /// Writes (mutation root fields) one client may make per minute, in a burst or spread out;
    /// 0: no limit.
    #[arg(long, env = "DYNAPAGE_RATE_LIMIT_WRITES", default_value_t = 30)]
    pub rate_limit_writes: u32,
    /// Query cost (the complexity --max-query-complexity bounds) restored to each client's
    /// budget per second; 0: no limit.
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
    pub fn limits(&self) -> RateLimits {
        RateLimits::new(
            self.rate_limit_cost,
            self.rate_limit_cost_burst,
            self.rate_limit_writes,
        )
    }

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
    struct Backend {
        #[command(flatten)]
        backend: BackendArgs,
    }

    fn redis(args: &[&str]) -> RedisConfig {
        let argv = std::iter::once("test").chain(args.iter().copied());
        Backend::try_parse_from(argv)
            .expect("valid flags")
            .backend
            .redis_config()
            .expect("a valid Redis configuration")
    }

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

    #[test]
    fn several_redis_urls_mean_a_cluster_with_or_without_the_flag() {
        let two = "redis://127.0.0.1:7000,redis://127.0.0.1:7001";
        for args in [
            vec!["--redis-url", two],
            vec!["--redis-url", two, "--redis-cluster"],
        ] {
            let config = redis(&args);
            assert!(config.cluster, "{args:?}");
            assert_eq!(config.urls.len(), 2);
        }
        assert!(!redis(&["--redis-url", "redis://127.0.0.1:7000"]).cluster);
        assert!(redis(&["--redis-url", "redis://127.0.0.1:7000", "--redis-cluster"]).cluster);
    }

    #[test]
    fn an_unreadable_ca_file_is_an_error_naming_the_flag_and_its_variable() {
        let argv = [
            "test",
            "--redis-url",
            "rediss://127.0.0.1:6380",
            "--redis-ca-file",
            "/nonexistent/ca.pem",
        ];
        let err = Backend::try_parse_from(argv)
            .expect("valid flags")
            .backend
            .redis_config()
            .expect_err("the file does not exist");
        let message = err.to_string();
        assert!(
            message.contains("--redis-ca-file / DYNAPAGE_REDIS_CA_FILE"),
            "{message}"
        );
        assert!(message.contains("/nonexistent/ca.pem"), "{message}");
    }
}
