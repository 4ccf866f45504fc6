//! The response cache: a repeat of a query costs one index read instead of store queries.
//!
//! Every product has a version that each change applied to the index replaces
//! (`PageIndex::product_versions`, with the epoch that tells a version number from the same
//! number counted again after a restart or a flush). An answer is kept with the versions of
//! the products it read, and served again only when one index read shows them unchanged, so a
//! cached answer is never staler than the index. Only anonymous (no `Authorization`),
//! error-free queries are kept: their answer is the same for every client (so not one that
//! asks `viewerFoundHelpful` under `--auth off`, whose voter is the client's address). A
//! helpful vote is a write of its comment like an edit: it changes the product's version, so
//! no kept answer shows an old `helpfulCount`. The key is a hash of the document, operation
//! name, variables and media type (`entry::key`).
//!
//! **Encoded once.** An entry keeps its body as computed and, made on first need, the body in
//! each coding a client asked for (gzip, br, zstd: `entry::Entry::in_coding`), counted in the
//! cache's bytes; a hit sends the kept bytes, marked `compression::Negotiated` so that the
//! compression layer does not encode them again. Each coding has its own strong `ETag`
//! (`Entry::etag_in` says why), and the response varies with `Accept-Encoding` exactly when
//! the layer would have made it vary (bodies of `COMPRESS_ABOVE_BYTES` or more).
//!
//! **The first answer is not trusted.** The products a query reads are known only once it has
//! run, so their versions cannot be read before it; read after, a change applied while it ran
//! would be counted in the versions but maybe not in the body, which would then be served
//! stale until the next change. So a first answer is kept *unverified* (no versions, no
//! `ETag`); the next request reads the versions of its products, runs, and keeps the answer
//! with those versions (read before it ran: at worst the body is newer than its versions,
//! which only costs one more run). From then on repeats are hits.
//!
//! **Cost.** A kept body carries no `extensions.cost` (it would differ between a run and a
//! hit, and the `ETag` is strong: the same bytes for the same key and versions). A hit or a
//! `304` reads no store item and makes one index call; a hit pays by the bytes it sends, as
//! sent (`failures::charge_cached`, `graphql::cached_answer_price`), a `304` nothing, and both
//! show the budget in the `RateLimit` fields. A miss runs and pays like any request, so a
//! client that varies its variables to evict others' entries pays for each entry it makes; an
//! entry is bounded by an eighth of the cache.
//!
//! **What a client can tell of others' requests.** `Dynapage-Cost` says what computing the
//! answer read (`items-read`, `store-queries`, `index-calls`), the same figures whether this
//! request computed it or a hit served it, so it does not tell whether someone else asked the
//! same query lately; nor does `If-None-Match: *` (`entry::none_match`). What a hit still
//! shows, and no header can hide, is its speed and its lower price in the client's own
//! `RateLimit` budget.
//!
//! **When the index does not answer** (Redis stalled or down), the version read gives up after
//! `versions::READ_TIMEOUT` and the cache is bypassed for a while (`versions`): cached pages
//! are then computed like any other, and nothing waits for Redis.

mod ask;
mod entry;
mod store;
mod tags;
mod versions;

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub(super) use self::ask::{Asker, from_cache};
use self::entry::{Entry, Key};
use self::store::Store;
pub use self::tags::MAX_TAGS_BYTES;
use self::tags::Tags;
use self::versions::Versions;
use super::HttpOptions;
use super::caching::Cacheability;
use super::compression::{self, COMPRESS_ABOVE_BYTES, Coding, Negotiated};
use super::transport::MediaType;
use crate::domain::Sku;
use crate::index::{AnyIndex, ProductVersion};
use crate::pagination::PageStats;
use crate::telemetry::metric;

/// What computing the answer served read, when it is not in the body (`Dynapage-Cost`).
pub const COST: HeaderName = HeaderName::from_static("dynapage-cost");

/// The cache's settings (`serve --response-cache-bytes`, `--cache-tag-header`).
#[derive(Clone, Debug)]
pub struct ResponseCacheOptions {
    /// The bound on what it holds, keys, encodings and maps included; 0 turns it off.
    pub max_bytes: usize,
    /// The header that names the products a response read, for CDN purges.
    pub tag_header: HeaderName,
}

impl Default for ResponseCacheOptions {
    fn default() -> Self {
        Self {
            max_bytes: 0,
            tag_header: HeaderName::from_static("surrogate-key"),
        }
    }
}

/// The cache of one server.
#[derive(Debug)]
pub(super) struct ResponseCache {
    store: Store,
    versions: Versions,
    tag_header: HeaderName,
}

/// What the cache says of a request before it runs.
pub(super) enum Lookup {
    /// Not for the cache (a mutation, a viewer's request, the index away): run it as ever.
    Bypass,
    /// Answered from the cache: a hit, or `304 Not Modified`.
    Answer(Hit),
    /// Run it, then [`ResponseCache::keep`] the answer.
    Run(Pending),
}

/// An answer from the cache.
pub(super) struct Hit {
    pub response: Response,
    /// The bytes of the body it sends, as sent; `None` for a `304`.
    pub sent: Option<usize>,
    /// Whether a shared cache may keep it (its tags fit the header: `tags`).
    pub tags_fit: bool,
}

/// A request the cache will keep the answer of.
pub(super) struct Pending {
    key: Key,
    /// The products of the entry it replaces and their versions, read before it ran.
    before: Option<(Vec<Sku>, Vec<ProductVersion>)>,
    /// The coding the request asks for (`compression::preferred`).
    asked: Coding,
}

fn count(outcome: &'static str) {
    metric::RESPONSE_CACHE
        .counter(&[("outcome", outcome)])
        .increment(1);
}

impl ResponseCache {
    /// A cache over `index`'s versions; `None` when `options` turn it off.
    pub(super) fn new(options: &ResponseCacheOptions, index: AnyIndex) -> Option<Self> {
        (options.max_bytes > 0).then(|| Self {
            store: Store::new(options.max_bytes),
            versions: Versions::new(index),
            tag_header: options.tag_header.clone(),
        })
    }

    /// Looks `request` up: a hit is answered (`304` when `If-None-Match` names its `ETag` in
    /// the coding `headers` ask for), anything else is run. `bypass`: a mutation, or a
    /// response that is one client's own (`viewerFoundHelpful` under `--auth off`, which
    /// depends on the client's address).
    pub(super) async fn lookup(
        &self,
        headers: &HeaderMap,
        request: &async_graphql::Request,
        media: MediaType,
        bypass: bool,
    ) -> Lookup {
        if bypass || headers.contains_key(header::AUTHORIZATION) {
            count("bypass");
            return Lookup::Bypass;
        }
        let key = entry::key(request, media);
        let asked = compression::preferred(headers).unwrap_or(Coding::Identity);
        let Some(entry) = self.store.get(&key) else {
            count("miss");
            let before = None;
            return Lookup::Run(Pending { key, before, asked });
        };
        let Some(now) = self.versions.read(&entry.products).await else {
            count("unavailable");
            return Lookup::Bypass;
        };
        match &entry.versions {
            Some(held) if *held == now && entry.etag.is_some() => {
                count("hit");
                Lookup::Answer(self.hit(&key, &entry, headers, asked).await)
            }
            held => {
                count(if held.is_some() { "stale" } else { "miss" });
                let before = Some((entry.products.clone(), now));
                Lookup::Run(Pending { key, before, asked })
            }
        }
    }

    /// The answer of a hit: `304` when `If-None-Match` names the `ETag` of the coding asked
    /// for, else the kept body in that coding.
    async fn hit(&self, key: &Key, entry: &Arc<Entry>, headers: &HeaderMap, asked: Coding) -> Hit {
        let coding = coding_for(asked, &entry.body);
        let not_modified = headers
            .get(header::IF_NONE_MATCH)
            .zip(entry.etag_in(coding))
            .is_some_and(|(asked, etag)| entry::none_match(asked, &etag));
        let tags_fit = entry.tags.fit();
        if not_modified {
            let response = respond(entry, coding, StatusCode::NOT_MODIFIED, None);
            return Hit {
                response,
                sent: None,
                tags_fit,
            };
        }
        let (body, coding) = self.in_coding(key, entry, coding).await;
        let sent = Some(body.len());
        let response = respond(entry, coding, StatusCode::OK, Some(body));
        Hit {
            response,
            sent,
            tags_fit,
        }
    }

    /// `entry`'s body in `coding` (or, if it could not be made, as it is) and the coding it is
    /// in, counting an encoding made now in the cache's bytes.
    async fn in_coding(&self, key: &Key, entry: &Arc<Entry>, coding: Coding) -> (Bytes, Coding) {
        let (body, coding, made) = entry.in_coding(coding).await;
        if made {
            self.store.grew(key, entry);
            metric::RESPONSE_CACHE_BYTES
                .gauge(&[])
                .set(self.store.bytes() as f64);
        }
        (body, coding)
    }

    /// Keeps the body of an error-free answer to `pending`, which read `products` (`read`
    /// says what that took), and returns the HTTP response to send in the coding the request
    /// asked for (with its `ETag` once verified).
    pub(super) async fn keep(
        &self,
        pending: Pending,
        products: Vec<Sku>,
        media: MediaType,
        body: Bytes,
        read: PageStats,
    ) -> Response {
        let key = pending.key;
        let versions = pending
            .before
            .filter(|(before, _)| *before == products)
            .map(|(_, versions)| versions);
        let etag = versions.as_ref().map(|v| entry::etag(&key, v));
        let tags = Tags::of(&products, &self.tag_header);
        let entry = Arc::new(Entry::new(
            &body, media, products, versions, etag, tags, read,
        ));
        if self.store.insert(key, entry.clone()) {
            metric::RESPONSE_CACHE_BYTES
                .gauge(&[])
                .set(self.store.bytes() as f64);
        }
        let coding = coding_for(pending.asked, &entry.body);
        let (body, coding) = self.in_coding(&key, &entry, coding).await;
        respond(&entry, coding, StatusCode::OK, Some(body))
    }
}

/// The coding a body goes out in for a request that `asked` for a coding: the one the
/// compression layer would pick, for bodies it would compress.
fn coding_for(asked: Coding, body: &Bytes) -> Coding {
    if (body.len() as u64) < COMPRESS_ABOVE_BYTES {
        return Coding::Identity;
    }
    asked
}

/// Whether a response that read `products` may be named in the tags header (`tags`): when
/// not, it is not for shared caches.
pub(super) fn tags_fit(products: &[Sku]) -> bool {
    Tags::fit_for(products)
}

/// Sets the caching headers (`caching`); a response a shared cache may keep gets this
/// server's `Cache-Control` (`--cache-max-age`, `--cache-stale-while-revalidate`) and names
/// the products it read in the tags header (`--cache-tag-header`), for CDN purges.
pub(super) fn caching_headers(
    options: &HttpOptions,
    cacheability: &Cacheability,
    http: &mut Response,
    products: &[Sku],
) {
    let tags = http
        .extensions_mut()
        .remove::<Tags>()
        .unwrap_or_else(|| Tags::of(products, &options.response_cache.tag_header));
    let cacheability = Cacheability {
        tags_fit: cacheability.tags_fit && tags.fit(),
        ..*cacheability
    };
    cacheability.apply(http.headers_mut());
    if !cacheability.shared() {
        return;
    }
    let headers = http.headers_mut();
    headers.insert(header::CACHE_CONTROL, options.public_cache_control.clone());
    if let Some(names) = tags.value() {
        headers.insert(options.response_cache.tag_header.clone(), names.clone());
    }
}

/// The response for `entry` in `coding`: `body` (already in that coding), or none for a
/// `304`, with its validators and `Dynapage-Cost`. The caching headers are added by the
/// handler (`caching`), as for every response.
fn respond(entry: &Entry, coding: Coding, status: StatusCode, body: Option<Bytes>) -> Response {
    let mut response = match body {
        Some(body) => (status, body).into_response(),
        None => status.into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, entry.media.content_type());
    if let Some(etag) = entry.etag_in(coding) {
        headers.insert(header::ETAG, etag);
    }
    if (entry.body.len() as u64) >= COMPRESS_ABOVE_BYTES {
        headers.append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if status == StatusCode::OK {
        if let Some(encoding) = coding.header() {
            headers.insert(header::CONTENT_ENCODING, encoding);
        }
    }
    headers.insert(COST, cost_header(entry.computed));
    let extensions = response.extensions_mut();
    extensions.insert(Negotiated);
    extensions.insert(entry.tags.clone());
    response
}

/// `Dynapage-Cost: items-read=…, store-queries=…, index-calls=…` (a structured-field
/// dictionary, RFC 8941).
fn cost_header(read: PageStats) -> HeaderValue {
    HeaderValue::from_str(&format!(
        "items-read={}, store-queries={}, index-calls={}",
        read.items_read, read.store_queries, read.index_calls
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("items-read=0"))
}
