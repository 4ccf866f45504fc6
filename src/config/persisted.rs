//! Persisted documents (`crate::persisted`): automatic persisted queries, and the manifest of
//! trusted documents.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::persisted::{Manifest, PersistedDocuments, RedisStore};
use crate::ratelimit::RateLimiter;
use crate::redis::RedisHandle;

/// Automatic persisted queries and trusted documents.
#[derive(Args, Clone, Debug)]
pub struct PersistedArgs {
    /// Bytes of automatic persisted query texts kept in this server's memory (least recently
    /// used out first); 0 turns the protocol off (clients are told
    /// `PERSISTED_QUERY_NOT_SUPPORTED` and send their texts).
    #[arg(long, env = "DYNAPAGE_PERSISTED_QUERIES_BYTES", default_value_t = crate::http::PERSISTED_QUERIES_BYTES)]
    pub persisted_queries_bytes: usize,
    /// With `--index redis`, automatic persisted queries are also kept in Redis, shared by
    /// every server, for this many seconds after their last registration.
    #[arg(long, env = "DYNAPAGE_PERSISTED_QUERIES_TTL_SECS", default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..))]
    pub persisted_queries_ttl_secs: u64,
    /// With `--index redis`, the most bytes of automatic persisted queries Redis holds for the
    /// whole deployment (texts, hashes and Redis's own keeping of them); the least recently
    /// registered leave first. A client cannot make Redis grow past it, whatever it registers.
    #[arg(long, env = "DYNAPAGE_PERSISTED_QUERIES_REDIS_BYTES", default_value_t = 16 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1024..))]
    pub persisted_queries_redis_bytes: u64,
    /// Automatic persisted queries one client (its token's subject, else its address) may
    /// register per hour, in a burst or spread out; more run, but are not kept. An app
    /// registers each of its operations once; 0: no limit.
    #[arg(long, env = "DYNAPAGE_RATE_LIMIT_REGISTRATIONS", default_value_t = 100)]
    pub rate_limit_registrations: u32,
    /// A manifest of trusted documents (Apollo's persisted query manifest, Relay's
    /// `persisted_queries.json`, or GraphQL Code Generator's persisted documents): requests
    /// may name them with `documentId`, and they skip parsing.
    #[arg(long, env = "DYNAPAGE_TRUSTED_DOCUMENTS")]
    pub trusted_documents: Option<PathBuf>,
    /// Run only the documents of `--trusted-documents`: any other is refused with
    /// `QUERY_NOT_IN_SAFELIST`.
    #[arg(
        long,
        env = "DYNAPAGE_REQUIRE_TRUSTED_DOCUMENTS",
        requires = "trusted_documents"
    )]
    pub require_trusted_documents: bool,
}

impl PersistedArgs {
    /// The server's persisted documents: the manifest read and parsed, the automatic store in
    /// memory and, when `redis` is given (the Redis index's), in Redis.
    pub fn documents(
        &self,
        redis: Option<&RedisHandle>,
        max_document_bytes: usize,
    ) -> anyhow::Result<PersistedDocuments> {
        let trusted = match &self.trusted_documents {
            None => None,
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| {
                    format!(
                        "cannot read {} (--trusted-documents / DYNAPAGE_TRUSTED_DOCUMENTS)",
                        path.display()
                    )
                })?;
                let manifest = Manifest::parse(&text).with_context(|| {
                    format!(
                        "{} (--trusted-documents / DYNAPAGE_TRUSTED_DOCUMENTS)",
                        path.display()
                    )
                })?;
                tracing::info!(documents = manifest.len(), "trusted documents loaded");
                Some(manifest)
            }
        };
        let ttl = Duration::from_secs(self.persisted_queries_ttl_secs);
        let max_bytes = usize::try_from(self.persisted_queries_redis_bytes).unwrap_or(usize::MAX);
        let store = redis.map(|redis| RedisStore::new(redis.clone(), ttl, max_bytes));
        let documents = PersistedDocuments::new(
            trusted,
            self.require_trusted_documents,
            self.persisted_queries_bytes,
            store,
            max_document_bytes,
        );
        // One point a registration, the hour's share as its burst.
        let hour = Duration::from_secs(3600);
        let limiter = RateLimiter::count_per(self.rate_limit_registrations, hour, redis);
        Ok(documents.with_registration_limit(limiter))
    }
}
