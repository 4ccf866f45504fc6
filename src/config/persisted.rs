//! Persisted documents (`crate::persisted`): automatic persisted queries, and the manifest of
//! trusted documents.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::persisted::{Manifest, PersistedDocuments, RedisStore};
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
        let store = redis.map(|redis| RedisStore::new(redis.clone(), ttl));
        Ok(PersistedDocuments::new(
            trusted,
            self.require_trusted_documents,
            self.persisted_queries_bytes,
            store,
            max_document_bytes,
        ))
    }
}
