//! Persisted documents: a request may name its GraphQL document instead of sending it.
//!
//! * Automatic persisted queries (Apollo's protocol, which Apollo Client's
//!   `createPersistedQueryLink` and urql's `persistedExchange` speak): the request carries
//!   `extensions.persistedQuery = {version: 1, sha256Hash}`. Without a `query`, the text
//!   registered under the hash runs, or the answer is `PersistedQueryNotFound` and the client
//!   sends the text with its hash; a text whose SHA-256 is the hash is registered once the
//!   request passed its check, and paid for like any request. The store is this server's memory
//!   (`memory`, bounded by bytes) and, when the index is Redis, Redis (`redis`, shared by every
//!   server, bounded by bytes and a TTL). A registration is a write into a store others share,
//!   so it is bounded three ways (issue 42, item 4): each client may register only so many texts
//!   an hour (`--rate-limit-registrations`, [`PersistedDocuments::register`]), pays for the
//!   bytes it stores (the HTTP layer charges them), and the shared store drops its oldest texts
//!   rather than grow past `--persisted-queries-redis-bytes`.
//! * Trusted documents (`--trusted-documents FILE`, `manifest`): a request names one with
//!   `documentId` (the GraphQL-over-HTTP persisted documents proposal), or by its hash as an
//!   automatic persisted query. With `--require-trusted-documents` nothing else runs.
//!
//! This module decides what text a request runs, or why it runs none ([`Refused`]); HTTP
//! (`http::admission::persisted`) reads the request and answers. It knows nothing of HTTP.

pub mod manifest;
pub mod memory;
pub mod redis;

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::ratelimit::{Charge, ClientKey, RateLimiter};
use crate::telemetry::metric;

pub use self::manifest::{Manifest, ManifestError, TrustedDocument};
pub use self::memory::MemoryStore;
pub use self::redis::RedisStore;

/// The SHA-256 of `text`, lowercase hex (what Apollo and urql send as `sha256Hash`).
pub fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            use std::fmt::Write;
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// How the server treats persisted documents.
#[derive(Debug)]
pub struct PersistedDocuments {
    trusted: Option<Manifest>,
    require_trusted: bool,
    /// `None`: automatic persisted queries are off (`--persisted-queries-bytes 0`).
    automatic: Option<Automatic>,
    /// The longest text registered (`--max-body-bytes`).
    max_document_bytes: usize,
}

#[derive(Debug)]
struct Automatic {
    memory: MemoryStore,
    redis: Option<RedisStore>,
    /// How many texts each client may register (`--rate-limit-registrations`); `None`: no
    /// limit.
    registrations: Option<RateLimiter>,
}

/// What became of a registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registered {
    /// The text is kept (or was already).
    Kept,
    /// Automatic persisted queries are off.
    Off,
    /// The client registered its share of texts this hour: the text ran, but is not kept.
    OverLimit,
}

/// What a request asked for.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// The text it sent; empty when it sent none.
    pub query: &'a str,
    /// `documentId`: the trusted document it names, if any.
    pub document_id: Option<&'a str>,
    /// `extensions.persistedQuery`, as sent.
    pub persisted_query: Option<&'a async_graphql::Value>,
}

/// What a request runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The text it sent.
    AsSent,
    /// The text it sent, to be registered under this hash once the request passed its check.
    Register(String),
    /// A stored or trusted text, in place of the (absent) one it sent.
    Stored(Arc<str>),
}

/// Why a request runs nothing. Each has its `extensions.code`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Apollo's and urql's cue to send the text: the message is what urql matches.
    #[error("PersistedQueryNotFound")]
    NotFound,
    /// Automatic persisted queries are off: Apollo's and urql's cue to stop hashing.
    #[error("PersistedQueryNotSupported")]
    NotSupported,
    /// No trusted document has the id (a `documentId`, or `sha256:` and a hash sent without
    /// text while only trusted documents run); holds the id.
    #[error("no trusted document has the id `{0}`")]
    NotInList(String),
    /// Only trusted documents run (`--require-trusted-documents`) and the text sent is none
    /// of them.
    #[error(
        "this server runs only trusted documents: send the `documentId` of a document in its manifest"
    )]
    NotInSafelist,
    /// The text sent is not the one whose SHA-256 is `sha256Hash`.
    #[error("`extensions.persistedQuery.sha256Hash` is not the SHA-256 of the query")]
    HashMismatch,
    /// The request is not well formed (both `query` and `documentId`, or a bad
    /// `extensions.persistedQuery`); holds what is wrong.
    #[error("{0}")]
    Malformed(&'static str),
    /// The text to register is larger than a registered document may be.
    #[error("the document is {bytes} bytes; documents of more than {max} bytes are not registered")]
    TooLarge {
        /// The text's size, in bytes.
        bytes: usize,
        /// The largest text registered, in bytes (`--max-body-bytes`).
        max: usize,
    },
}

impl Refused {
    /// The `extensions.code` of the refusal.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound => "PERSISTED_QUERY_NOT_FOUND",
            Self::NotSupported => "PERSISTED_QUERY_NOT_SUPPORTED",
            Self::NotInList(_) => "PERSISTED_QUERY_NOT_IN_LIST",
            Self::NotInSafelist => "QUERY_NOT_IN_SAFELIST",
            Self::HashMismatch | Self::Malformed(_) | Self::TooLarge { .. } => "BAD_REQUEST",
        }
    }
}

impl PersistedDocuments {
    /// `trusted`: the manifest, if any; `require_trusted`: nothing else runs; `memory_bytes`:
    /// the automatic persisted queries kept in memory (0: the protocol is off); `redis`: the
    /// deployment's shared store; `max_document_bytes`: the longest text registered.
    pub fn new(
        trusted: Option<Manifest>,
        require_trusted: bool,
        memory_bytes: usize,
        redis: Option<RedisStore>,
        max_document_bytes: usize,
    ) -> Self {
        let automatic = (memory_bytes > 0).then(|| Automatic {
            memory: MemoryStore::new(memory_bytes),
            redis,
            registrations: None,
        });
        Self {
            trusted,
            require_trusted,
            automatic,
            max_document_bytes,
        }
    }

    /// Limits how many texts each client may register (`limiter`'s cost budget, one point a
    /// text).
    pub fn with_registration_limit(mut self, limiter: Option<RateLimiter>) -> Self {
        if let Some(automatic) = &mut self.automatic {
            automatic.registrations = limiter;
        }
        self
    }

    /// Whether `hash` names a text this server already keeps (registering it again stores
    /// nothing new).
    pub fn keeps(&self, hash: &str) -> bool {
        self.automatic
            .as_ref()
            .is_some_and(|a| a.memory.get(hash).is_some())
    }

    /// Whether only trusted documents run (`--require-trusted-documents`).
    pub fn require_trusted(&self) -> bool {
        self.require_trusted
    }

    /// The trusted documents, if a manifest was loaded.
    pub fn trusted(&self) -> Option<&Manifest> {
        self.trusted.as_ref()
    }

    /// What `asked` runs. Only automatic persisted queries call Redis (a miss there is a miss:
    /// the client sends the text, which runs).
    pub async fn resolve(&self, asked: Asked<'_>) -> Result<Resolved, Refused> {
        if let Some(id) = asked.document_id {
            if !asked.query.is_empty() {
                return Err(Refused::Malformed(
                    "send either `query` or `documentId`, not both",
                ));
            }
            let manifest = self.trusted.as_ref();
            return match manifest.and_then(|m| m.by_document_id(id)) {
                Some(trusted) => Ok(Resolved::Stored(Arc::clone(&trusted.text))),
                None => Err(Refused::NotInList(id.to_owned())),
            };
        }
        if let Some(extension) = asked.persisted_query {
            let hash = sha256_hash(extension)?;
            return self.automatic(asked.query, hash).await;
        }
        if self.require_trusted && !self.is_trusted(asked.query) {
            return Err(Refused::NotInSafelist);
        }
        Ok(Resolved::AsSent)
    }

    /// Registers `text` under `hash` (its SHA-256, checked by [`resolve`](Self::resolve)) for
    /// `client`, within its share of registrations: a text this server keeps already takes
    /// none.
    pub async fn register(&self, client: &ClientKey, hash: &str, text: &str) -> Registered {
        let Some(automatic) = &self.automatic else {
            return Registered::Off;
        };
        if automatic.memory.get(hash).is_some() {
            return Registered::Kept;
        }
        if let Some(limiter) = &automatic.registrations {
            let charge = Charge { cost: 1, writes: 0 };
            if limiter
                .check(&client.scoped("register"), charge)
                .await
                .refused
                .is_some()
            {
                metric::RATE_LIMITED
                    .counter(&[("limit", "registrations")])
                    .increment(1);
                return Registered::OverLimit;
            }
        }
        automatic.memory.insert(hash, Arc::from(text));
        if let Some(redis) = &automatic.redis {
            match redis.set(hash, text).await {
                Ok(redis::Stored::Added | redis::Stored::Renewed) => {}
                Ok(redis::Stored::TooLarge) => {
                    tracing::warn!(
                        bytes = text.len(),
                        "a persisted query is larger than --persisted-queries-redis-bytes allows; kept in this server only"
                    );
                }
                Err(error) => tracing::warn!(%error, "cannot register a persisted query in Redis"),
            }
        }
        Registered::Kept
    }

    /// Whether `text` is a trusted document's (the check of `--require-trusted-documents`
    /// on a subscription, whose WebSocket carries only text).
    pub fn is_trusted(&self, text: &str) -> bool {
        self.trusted
            .as_ref()
            .is_some_and(|m| m.by_hash(&sha256_hex(text)).is_some())
    }

    async fn automatic(&self, query: &str, hash: &str) -> Result<Resolved, Refused> {
        let trusted = self.trusted.as_ref().and_then(|m| m.by_hash(hash));
        if query.is_empty() {
            if let Some(trusted) = trusted {
                return Ok(Resolved::Stored(Arc::clone(&trusted.text)));
            }
            if self.require_trusted {
                return Err(Refused::NotInList(format!("sha256:{hash}")));
            }
            return self.stored(hash).await.map(Resolved::Stored);
        }
        if !sha256_hex(query).eq_ignore_ascii_case(hash) {
            return Err(Refused::HashMismatch);
        }
        if trusted.is_some() {
            return Ok(Resolved::AsSent);
        }
        if self.require_trusted {
            return Err(Refused::NotInSafelist);
        }
        if self.automatic.is_none() {
            return Err(Refused::NotSupported);
        }
        if query.len() > self.max_document_bytes {
            return Err(Refused::TooLarge {
                bytes: query.len(),
                max: self.max_document_bytes,
            });
        }
        Ok(Resolved::Register(hash.to_ascii_lowercase()))
    }

    /// The text registered under `hash`: this server's memory first, then Redis.
    async fn stored(&self, hash: &str) -> Result<Arc<str>, Refused> {
        let Some(automatic) = &self.automatic else {
            return Err(Refused::NotSupported);
        };
        let hash = hash.to_ascii_lowercase();
        if let Some(text) = automatic.memory.get(&hash) {
            return Ok(text);
        }
        let Some(redis) = &automatic.redis else {
            return Err(Refused::NotFound);
        };
        match redis.get(&hash).await {
            // Another server registered it; the text is checked against its hash like a sent one.
            Ok(Some(text)) if sha256_hex(&text) == hash => {
                let text: Arc<str> = Arc::from(text);
                automatic.memory.insert(&hash, Arc::clone(&text));
                Ok(text)
            }
            Ok(_) => Err(Refused::NotFound),
            Err(error) => {
                tracing::warn!(%error, "cannot read a persisted query from Redis");
                Err(Refused::NotFound)
            }
        }
    }
}

/// The hash of `extensions.persistedQuery`: version 1, 64 hex digits.
fn sha256_hash(extension: &async_graphql::Value) -> Result<&str, Refused> {
    let async_graphql::Value::Object(fields) = extension else {
        return Err(Refused::Malformed(
            "`extensions.persistedQuery` must be an object with `version` and `sha256Hash`",
        ));
    };
    let version = fields.get("version").and_then(|v| match v {
        async_graphql::Value::Number(n) => n.as_u64(),
        _ => None,
    });
    if version != Some(1) {
        return Err(Refused::Malformed(
            "`extensions.persistedQuery.version` must be 1",
        ));
    }
    match fields.get("sha256Hash") {
        Some(async_graphql::Value::String(hash))
            if hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            Ok(hash)
        }
        _ => Err(Refused::Malformed(
            "`extensions.persistedQuery.sha256Hash` must be 64 hexadecimal digits",
        )),
    }
}

#[cfg(test)]
mod tests;
