//! The identity provider's signing keys (its JWKS), cached.
//!
//! Keys are fetched at start-up and kept. A token naming a key the cache does not hold makes
//! the cache fetch the JWKS again, at most once per [`MIN_REFETCH`] (a provider rotates by
//! publishing the new key before signing with it, so one fetch finds it; a flood of tokens with
//! made-up `kid`s costs at most one fetch per interval). Keys older than [`MAX_AGE`] are fetched
//! again on the next lookup, so a key the provider withdrew stops verifying; a fetch that finds
//! a key withdrawn also moves [`KeyCache::generation`] on, which makes every token verified
//! before it be verified again. When a fetch fails the cached keys keep working and unknown
//! ones fail closed.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use crate::error::BoxError;
use crate::telemetry::metric;

/// Fewest seconds between two fetches.
pub const MIN_REFETCH: Duration = Duration::from_secs(5);
/// Keys are fetched again after this long.
pub const MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// A fetch that takes longer fails.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A larger JWKS document is refused (a provider's holds a few keys of a few hundred bytes).
const MAX_JWKS_BYTES: usize = 1 << 20;

/// Where the JWKS is read from (`--auth-jwks-url`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JwksSource {
    /// An `https://` URL (the provider's `jwks_uri`), or an `http://` one on this machine.
    Url(String),
    /// A `file:` URL: a local file, read again on every fetch (`dynapage token`'s keys).
    File(PathBuf),
}

impl JwksSource {
    /// `https://…`, `http://…` on loopback only (a sidecar, a test), or `file:PATH`
    /// (`file:///abs/path` or `file:relative/path`).
    pub fn parse(value: &str) -> Result<Self, String> {
        if let Some(path) = value.strip_prefix("file://") {
            return Ok(Self::File(PathBuf::from(path)));
        }
        if let Some(path) = value.strip_prefix("file:") {
            return Ok(Self::File(PathBuf::from(path)));
        }
        if value.starts_with("https://") {
            return Ok(Self::Url(value.to_owned()));
        }
        if let Some(rest) = value.strip_prefix("http://") {
            if is_loopback(rest) {
                return Ok(Self::Url(value.to_owned()));
            }
            return Err(format!(
                "`{value}`: a JWKS over plain http:// is accepted only from this machine \
                 (localhost, 127.0.0.0/8, [::1]): anyone on the way could swap the keys and sign \
                 tokens of their own. Use the provider's https:// jwks_uri"
            ));
        }
        Err(format!(
            "`{value}` is neither an https:// URL nor a file: path"
        ))
    }
}

/// Whether the authority at the start of `rest` (what follows `http://`) is this machine.
fn is_loopback(rest: &str) -> bool {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// One verification key of the set.
#[derive(Clone)]
pub struct VerifyingKey {
    /// The public key a token's signature is checked with.
    pub key: DecodingKey,
    /// The `alg` the JWK pins, if it names one: a token must then use exactly it.
    pub algorithm: Option<Algorithm>,
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Cached {
    by_kid: HashMap<String, Arc<VerifyingKey>>,
    /// The set's only key, for tokens that name none (some providers publish one key, no kid).
    only: Option<Arc<VerifyingKey>>,
    fetched: Option<Instant>,
}

/// The cached key set.
#[derive(Debug)]
pub struct KeyCache {
    source: JwksSource,
    http: HttpClient,
    cached: RwLock<Cached>,
    /// One fetch at a time; holds when the last one started.
    fetching: tokio::sync::Mutex<Option<Instant>>,
    /// Counts the fetches that withdrew a key: what was verified before one may have been
    /// verified by a key the provider no longer vouches for ([`KeyCache::generation`]).
    withdrawals: AtomicU64,
}

impl KeyCache {
    /// A cache that fetches from `source`; fails only if no HTTPS client can be built.
    pub fn new(source: JwksSource) -> Result<Self, BoxError> {
        Ok(Self {
            source,
            http: http_client()?,
            cached: RwLock::default(),
            fetching: tokio::sync::Mutex::new(None),
            withdrawals: AtomicU64::new(0),
        })
    }

    /// Moves on whenever a fetch finds a key of the cache gone from the provider's set: a
    /// token verified under an older generation must be verified again (`verified` keeps the
    /// generation of each token it holds), so a withdrawn key stops working at once, not only
    /// for tokens never seen before.
    pub fn generation(&self) -> u64 {
        self.withdrawals.load(Ordering::Acquire)
    }

    /// Fetches the set now (at start-up); the number of usable keys it holds. On failure the
    /// cache is kept. It does not count against [`MIN_REFETCH`]: a key published just after
    /// start-up is still found at once.
    pub async fn refresh(&self) -> Result<usize, BoxError> {
        let _one_at_a_time = self.fetching.lock().await;
        self.fetch_into_cache().await
    }

    /// The key a token's `kid` names, fetching the set again if it is not cached (or stale)
    /// and no fetch started within [`MIN_REFETCH`].
    pub async fn find(&self, kid: Option<&str>) -> Option<Arc<VerifyingKey>> {
        let (found, fresh) = self.lookup(kid);
        if fresh && found.is_some() {
            return found;
        }
        if found.is_some() {
            // A stale key still verifies: the request that finds no fetch under way refreshes
            // the set (if one is due), the others go on with the key they have.
            if let Ok(mut last) = self.fetching.try_lock() {
                self.fetch_if_due(&mut last).await;
            }
            return self.lookup(kid).0.or(found);
        }
        let mut last = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        if let (Some(key), _) = self.lookup(kid) {
            return Some(key);
        }
        self.fetch_if_due(&mut last).await;
        self.lookup(kid).0
    }

    async fn fetch_if_due(&self, last: &mut Option<Instant>) {
        if last.is_some_and(|at| at.elapsed() < MIN_REFETCH) {
            return;
        }
        *last = Some(Instant::now());
        if let Err(error) = self.fetch_into_cache().await {
            metric::AUTH_JWKS_FETCH_FAILURES.counter(&[]).increment(1);
            tracing::warn!(error = %error, "fetching the JWKS failed; the cached keys stay in use");
        }
    }

    fn lookup(&self, kid: Option<&str>) -> (Option<Arc<VerifyingKey>>, bool) {
        let cached = self.cached.read().unwrap_or_else(|p| p.into_inner());
        let fresh = cached.fetched.is_some_and(|at| at.elapsed() < MAX_AGE);
        let key = match kid {
            Some(kid) => cached.by_kid.get(kid).cloned(),
            None => cached.only.clone(),
        };
        (key, fresh)
    }

    async fn fetch_into_cache(&self) -> Result<usize, BoxError> {
        let text = match &self.source {
            JwksSource::Url(url) => get(&self.http, url).await?,
            JwksSource::File(path) => tokio::fs::read_to_string(path)
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?,
        };
        let keys = parse_jwks(&text)?;
        let count = keys.len();
        let only = match keys.as_slice() {
            [(_, key)] => Some(key.clone()),
            _ => None,
        };
        let by_kid = keys
            .into_iter()
            .filter_map(|(kid, key)| Some((kid?, key)))
            .collect();
        let fresh = Cached {
            by_kid,
            only,
            fetched: Some(Instant::now()),
        };
        let withdrawn = {
            let mut cached = self.cached.write().unwrap_or_else(|p| p.into_inner());
            // A key without a `kid` cannot be compared: its going, or its replacement, counts.
            let withdrawn = cached.only.is_some()
                || cached
                    .by_kid
                    .keys()
                    .any(|kid| !fresh.by_kid.contains_key(kid));
            *cached = fresh;
            withdrawn
        };
        if withdrawn {
            self.withdrawals.fetch_add(1, Ordering::AcqRel);
            tracing::info!(keys = count, "JWKS fetched; a key was withdrawn");
        } else {
            tracing::info!(keys = count, "JWKS fetched");
        }
        Ok(count)
    }
}

/// The client that fetches the JWKS: HTTPS checked against the system's roots.
///
/// hyper with a rustls configuration made here on aws-lc-rs, the crypto the AWS SDK and Redis
/// already use. (reqwest would need a process-wide rustls provider installed before any client
/// is built, or bring `ring` in beside aws-lc-rs, and then rustls cannot pick a default.)
type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

fn http_client() -> Result<HttpClient, BoxError> {
    Ok(Client::builder(TokioExecutor::new()).build(https_connector()?))
}

/// HTTPS checked against the system's roots (or plain HTTP), on aws-lc-rs; shared with the
/// CDN purges (`crate::purge`).
pub(crate) fn https_connector() -> Result<HttpsConnector<HttpConnector>, BoxError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for error in &native.errors {
        tracing::warn!(error = %error, "reading the system's CA certificates");
    }
    let (added, _ignored) = roots.add_parsable_certificates(native.certs);
    if added == 0 {
        tracing::warn!("no system CA certificate found: https:// cannot be fetched");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    Ok(connector)
}

/// GETs `url`: the body of a 2xx answer, at most [`MAX_JWKS_BYTES`].
async fn get(http: &HttpClient, url: &str) -> Result<String, BoxError> {
    let request = axum::http::Request::get(url)
        .header(axum::http::header::ACCEPT, "application/json")
        .body(Empty::new())?;
    let response = tokio::time::timeout(FETCH_TIMEOUT, async {
        let response = http.request(request).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(BoxError::from(format!("{url} answered {status}")));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await?
            .to_bytes();
        Ok(String::from_utf8(body.to_vec())?)
    })
    .await
    .map_err(|_| format!("{url} did not answer within {FETCH_TIMEOUT:?}"))??;
    Ok(response)
}

/// A key of the set and its `kid`, if it has one.
pub type KeyEntry = (Option<String>, Arc<VerifyingKey>);

/// The signing keys of a JWKS document, by `kid`. Keys this server would never accept are left
/// out: symmetric ones (`kty: oct`), encryption keys (`use: enc`), and kinds jsonwebtoken does
/// not read. A document that is not a JWKS is an error.
pub fn parse_jwks(text: &str) -> Result<Vec<KeyEntry>, BoxError> {
    let document: Value = serde_json::from_str(text).map_err(|e| format!("JWKS: {e}"))?;
    let keys = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("JWKS: no `keys` array")?;
    let mut out = Vec::with_capacity(keys.len());
    for value in keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value.clone()) else {
            tracing::debug!("JWKS: skipping a key jsonwebtoken cannot read");
            continue;
        };
        let signing = !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption));
        let asymmetric = matches!(
            jwk.algorithm,
            AlgorithmParameters::RSA(_)
                | AlgorithmParameters::EllipticCurve(_)
                | AlgorithmParameters::OctetKeyPair(_)
        );
        if !signing || !asymmetric {
            continue;
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        let algorithm = match jwk
            .common
            .key_algorithm
            .map(|a| a.to_string().parse::<Algorithm>())
        {
            None => None,
            Some(Ok(alg)) => Some(alg),
            // A key pinned to an algorithm jsonwebtoken has no verifier for is never usable.
            Some(Err(_)) => continue,
        };
        out.push((
            jwk.common.key_id.clone(),
            Arc::new(VerifyingKey { key, algorithm }),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_urls_or_file_paths() {
        assert_eq!(
            JwksSource::parse("https://id.example/.well-known/jwks.json"),
            Ok(JwksSource::Url(
                "https://id.example/.well-known/jwks.json".into()
            ))
        );
        assert_eq!(
            JwksSource::parse("file:.dynapage/jwks.json"),
            Ok(JwksSource::File(".dynapage/jwks.json".into()))
        );
        assert_eq!(
            JwksSource::parse("file:///etc/jwks.json"),
            Ok(JwksSource::File("/etc/jwks.json".into()))
        );
        assert!(JwksSource::parse("id.example/jwks.json").is_err());
    }

    #[test]
    fn plain_http_is_accepted_only_from_this_machine() {
        for local in [
            "http://127.0.0.1:8080/jwks.json",
            "http://localhost/jwks.json",
            "http://127.8.9.10/jwks",
            "http://[::1]:9000/jwks.json",
        ] {
            assert!(JwksSource::parse(local).is_ok(), "{local}");
        }
        for remote in [
            "http://id.example/.well-known/jwks.json",
            "http://10.0.0.7/jwks.json",
            "http://127.0.0.1@evil.example/jwks.json",
            "http://localhost.evil.example/jwks.json",
            "http://[::2]/jwks.json",
        ] {
            let error = JwksSource::parse(remote).expect_err(remote);
            assert!(error.contains("https://"), "{error}");
        }
    }

    #[test]
    fn symmetric_and_encryption_keys_are_left_out() {
        let jwks = r#"{"keys": [
            {"kty": "oct", "kid": "h", "k": "c2VjcmV0"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "enc", "use": "enc", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "sig", "alg": "EdDSA", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "weird", "kid": "w"}
        ]}"#;
        let keys = parse_jwks(jwks).expect("a JWKS");
        let kids: Vec<_> = keys.iter().map(|(kid, _)| kid.as_deref()).collect();
        assert_eq!(kids, [Some("sig")]);
        assert_eq!(keys[0].1.algorithm, Some(Algorithm::EdDSA));
        assert!(parse_jwks(r#"{"no": "keys"}"#).is_err());
    }
}
