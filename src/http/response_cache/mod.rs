//! The response cache: a repeat of a query costs one index read instead of store queries.
//!
//! Every product has a version that each change applied to the index replaces
//! (`PageIndex::product_versions`). An answer is kept with the versions of the products it
//! read, and served again only when one index read shows them unchanged, so a cached answer is
//! never staler than the index. Only anonymous (no `Authorization`), error-free queries are
//! kept: their answer is the same for every client (so not one that asks
//! `viewerFoundHelpful` under `--auth off`, whose voter is the client's address). A helpful
//! vote is a write of its comment like an edit: it changes the product's version, so no
//! kept answer shows an old `helpfulCount`. The key is a hash of the document,
//! operation name, variables and media type (`entry::key`); the body is kept uncompressed and
//! the compression layer encodes it per client, so one entry serves every `Accept-Encoding`.
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
//! hit, and the `ETag` is strong: the same bytes for the same key and versions); the cost of
//! the answer served is in the `Dynapage-Cost` header instead. A hit or a `304` reads no store
//! item and makes one index call; a hit takes one point from the client's budget and a `304`
//! none (`failures::charge_cached`), and both show the budget in the `RateLimit` fields.
//! A miss runs and pays like any request, so a client that varies its variables to evict
//! others' entries pays for each entry it makes; an entry is bounded by an eighth of the cache.

mod ask;
mod entry;
mod store;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub(super) use self::ask::{Asker, from_cache};
pub use self::entry::tag;
use self::entry::{Entry, Key};
use self::store::Store;
use super::HttpOptions;
use super::caching::Cacheability;
use super::transport::MediaType;
use crate::domain::Sku;
use crate::index::{AnyIndex, PageIndex};
use crate::pagination::PageStats;

/// The cost of the answer served, when it is not in the body (`Dynapage-Cost`).
pub const COST: HeaderName = HeaderName::from_static("dynapage-cost");

/// The cache's settings (`serve --response-cache-bytes`, `--cache-tag-header`).
#[derive(Clone, Debug)]
pub struct ResponseCacheOptions {
    /// The bound on what it holds, keys included; 0 turns it off.
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
pub struct ResponseCache {
    store: Store,
    index: AnyIndex,
    /// Cloudflare's `Cache-Tag` is comma-separated; the others space-separated.
    commas: bool,
}

/// What the cache says of a request before it runs.
pub(super) enum Lookup {
    /// Not for the cache (a mutation, a viewer's request): run it as ever.
    Bypass,
    /// Answered from the cache: a hit, or `304 Not Modified`.
    Answer(Response),
    /// Run it, then [`ResponseCache::keep`] the answer.
    Run(Pending),
}

/// A request the cache will keep the answer of.
pub(super) struct Pending {
    key: Key,
    /// The products of the entry it replaces and their versions, read before it ran.
    before: Option<(Vec<Sku>, Vec<u64>)>,
}

fn count(outcome: &'static str) {
    metrics::counter!("dynapage_response_cache_total", "outcome" => outcome).increment(1);
}

impl ResponseCache {
    /// A cache over `index`'s versions; `None` when `options` turn it off.
    pub fn new(options: &ResponseCacheOptions, index: AnyIndex) -> Option<Self> {
        (options.max_bytes > 0).then(|| Self {
            store: Store::new(options.max_bytes),
            index,
            commas: is_cache_tag(&options.tag_header),
        })
    }

    /// Looks `request` up: a hit is answered (`304` when `If-None-Match` names its `ETag`),
    /// anything else is run. `bypass`: a mutation, or a response that is one client's own
    /// (`viewerFoundHelpful` under `--auth off`, which depends on the client's address).
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
        let Some(entry) = self.store.get(&key) else {
            count("miss");
            return Lookup::Run(Pending { key, before: None });
        };
        let now = match self.index.product_versions(&entry.products).await {
            Ok(now) => now,
            Err(error) => {
                tracing::warn!(error = %error, "response cache could not read versions");
                count("bypass");
                return Lookup::Bypass;
            }
        };
        match (&entry.versions, &entry.etag) {
            (Some(held), Some(etag)) if *held == now => {
                count("hit");
                let not_modified = headers
                    .get(header::IF_NONE_MATCH)
                    .is_some_and(|h| entry::none_match(h, etag));
                Lookup::Answer(answer(&entry, not_modified))
            }
            (held, _) => {
                count(if held.is_some() { "stale" } else { "miss" });
                let before = Some((entry.products.clone(), now));
                Lookup::Run(Pending { key, before })
            }
        }
    }

    /// Keeps the body of an error-free answer to `pending`, which read `products`, and
    /// returns the HTTP response to send (with its `ETag` once verified).
    pub(super) fn keep(
        &self,
        pending: Pending,
        products: Vec<Sku>,
        media: MediaType,
        body: Bytes,
        read: PageStats,
    ) -> Response {
        let versions = pending
            .before
            .filter(|(before, _)| *before == products)
            .map(|(_, versions)| versions);
        let etag = versions.as_ref().map(|v| entry::etag(&pending.key, v));
        let tags = entry::tags(&products, self.commas);
        let entry = Entry {
            body,
            media,
            products,
            versions,
            etag,
            tags,
        };
        let mut response = respond(&entry, StatusCode::OK, true);
        response.headers_mut().insert(COST, cost_header(read));
        self.store.insert(pending.key, entry);
        metrics::gauge!("dynapage_response_cache_bytes").set(self.store.bytes() as f64);
        response
    }
}

/// The tags header's value for `products` under `header` (for responses not kept).
pub(super) fn tags(products: &[Sku], header: &HeaderName) -> Option<HeaderValue> {
    entry::tags(products, is_cache_tag(header))
}

/// Cloudflare's `Cache-Tag` is comma-separated; the others space-separated.
fn is_cache_tag(header: &HeaderName) -> bool {
    header.as_str().eq_ignore_ascii_case("cache-tag")
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
    cacheability.apply(http.headers_mut());
    let kept_tags = http.extensions_mut().remove::<Tags>();
    if !cacheability.shared() {
        return;
    }
    let names = match kept_tags {
        Some(kept) => kept.0,
        None => tags(products, &options.response_cache.tag_header),
    };
    let headers = http.headers_mut();
    headers.insert(header::CACHE_CONTROL, options.public_cache_control.clone());
    if let Some(names) = names {
        headers.insert(options.response_cache.tag_header.clone(), names);
    }
}

/// A hit: the kept body, or `304` with its validators and no body.
fn answer(entry: &Entry, not_modified: bool) -> Response {
    let hit = PageStats {
        index_calls: 1,
        ..PageStats::default()
    };
    let status = if not_modified {
        StatusCode::NOT_MODIFIED
    } else {
        StatusCode::OK
    };
    let mut response = respond(entry, status, !not_modified);
    response.headers_mut().insert(COST, cost_header(hit));
    response
}

/// The response for `entry`, its body only when `with_body`. The caching headers are added
/// by the handler (`caching`), as for every response.
fn respond(entry: &Entry, status: StatusCode, with_body: bool) -> Response {
    let mut response = if with_body {
        (status, entry.body.clone()).into_response()
    } else {
        status.into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, entry.media.content_type());
    if let Some(etag) = &entry.etag {
        headers.insert(header::ETAG, etag.clone());
    }
    response.extensions_mut().insert(Tags(entry.tags.clone()));
    response
}

/// The CDN tags of a cached response, for the handler to set on shared responses only.
#[derive(Clone, Debug)]
struct Tags(Option<HeaderValue>);

/// `Dynapage-Cost: items-read=…, store-queries=…, index-calls=…` (a structured-field
/// dictionary, RFC 8941).
fn cost_header(read: PageStats) -> HeaderValue {
    HeaderValue::from_str(&format!(
        "items-read={}, store-queries={}, index-calls={}",
        read.items_read, read.store_queries, read.index_calls
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("items-read=0"))
}
