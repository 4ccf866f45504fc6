//! What the cache holds for one request and how it is named: the key (a hash of everything
//! the answer depends on besides the data), the body, the products it read with their versions,
//! and the validators derived from them (`ETag`, the CDN tags).

use axum::body::Bytes;
use axum::http::HeaderValue;
use sha2::{Digest, Sha256};

use super::super::transport::MediaType;
use crate::domain::Sku;

/// A request's key: SHA-256 of its document, operation name, variables and media type. A hash,
/// so a key costs 32 bytes whatever the request's size, and two different requests never share
/// an entry (no poisoning by a crafted collision).
pub(super) type Key = [u8; 32];

/// The key of `request` answered in `media`. Each part is length-prefixed, so no two different
/// requests hash the same bytes.
pub(super) fn key(request: &async_graphql::Request, media: MediaType) -> Key {
    let mut hash = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_be_bytes());
        hash.update(bytes);
    };
    part(&[media as u8]);
    part(request.query.as_bytes());
    part(
        request
            .operation_name
            .as_deref()
            .unwrap_or_default()
            .as_bytes(),
    );
    // Variables serialize in the order they came: the same variables in another order are only
    // another key (a miss), never a wrong answer.
    part(&serde_json::to_vec(&request.variables).unwrap_or_default());
    hash.finalize().into()
}

/// One cached answer.
#[derive(Debug)]
pub(super) struct Entry {
    /// The body, uncompressed (the compression layer compresses it for each client).
    pub body: Bytes,
    pub media: MediaType,
    /// The products the answer read, sorted.
    pub products: Vec<Sku>,
    /// Their versions when the answer was computed; `None` when they were not read before it
    /// ran (its first run): such an entry is run again, never served (see `mod.rs`).
    pub versions: Option<Vec<u64>>,
    /// The strong validator: `None` until the versions are known.
    pub etag: Option<HeaderValue>,
    /// The CDN tags (`--cache-tag-header`), one per product; `None` when it read none.
    pub tags: Option<HeaderValue>,
}

impl Entry {
    /// The bytes it holds, for the cache's bound.
    pub(super) fn size(&self) -> usize {
        self.body.len()
            + self
                .products
                .iter()
                .map(|s| s.as_str().len() + 24)
                .sum::<usize>()
            + self.versions.as_ref().map_or(0, |v| v.len() * 8)
            + self.etag.as_ref().map_or(0, HeaderValue::len)
            + self.tags.as_ref().map_or(0, HeaderValue::len)
            + std::mem::size_of::<Key>()
    }

    #[cfg(test)]
    pub(super) fn for_tests(body: Vec<u8>) -> Self {
        Self {
            body: body.into(),
            media: MediaType::Json,
            products: Vec::new(),
            versions: None,
            etag: None,
            tags: None,
        }
    }
}

/// The strong `ETag` of the answer under `key` computed at `versions`: the same bytes for the
/// same key and versions, so a client's copy is current exactly when the versions are.
pub(super) fn etag(key: &Key, versions: &[u64]) -> HeaderValue {
    let mut hash = Sha256::new();
    hash.update(key);
    for version in versions {
        hash.update(version.to_be_bytes());
    }
    let digest = hash.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    HeaderValue::from_str(&format!("\"{hex}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

/// The tag a CDN purges `sku`'s pages by.
pub fn tag(sku: &Sku) -> String {
    format!("sku-{sku}")
}

/// The tags header's value for `products`: space-separated (Varnish xkey, Fastly
/// `Surrogate-Key`), comma-separated when `commas` (Cloudflare's `Cache-Tag`).
pub(super) fn tags(products: &[Sku], commas: bool) -> Option<HeaderValue> {
    if products.is_empty() {
        return None;
    }
    let tags: Vec<String> = products.iter().map(tag).collect();
    HeaderValue::from_str(&tags.join(if commas { "," } else { " " })).ok()
}

/// Whether `If-None-Match` (`header`) names `etag` or is `*` (RFC 9110 §13.1.2: the weak
/// comparison, so `W/"x"` matches `"x"`).
pub(super) fn none_match(header: &HeaderValue, etag: &HeaderValue) -> bool {
    let Ok(header) = header.to_str() else {
        return false;
    };
    let etag = etag.to_str().unwrap_or_default();
    header.split(',').map(str::trim).any(|candidate| {
        candidate == "*" || candidate.strip_prefix("W/").unwrap_or(candidate) == etag
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(query: &str, variables: serde_json::Value) -> async_graphql::Request {
        async_graphql::Request::new(query).variables(async_graphql::Variables::from_json(variables))
    }

    #[test]
    fn the_key_changes_with_every_part_of_the_request() {
        let base = key(&request("{a}", serde_json::json!({})), MediaType::Json);
        assert_eq!(
            base,
            key(&request("{a}", serde_json::json!({})), MediaType::Json)
        );
        assert_ne!(
            base,
            key(&request("{b}", serde_json::json!({})), MediaType::Json)
        );
        assert_ne!(
            base,
            key(
                &request("{a}", serde_json::json!({"x": 1})),
                MediaType::Json
            )
        );
        assert_ne!(
            base,
            key(
                &request("{a}", serde_json::json!({})),
                MediaType::GraphQlResponse
            )
        );
        let named = request("{a}", serde_json::json!({})).operation_name("A");
        assert_ne!(base, key(&named, MediaType::Json));
    }

    #[test]
    fn the_etag_follows_the_versions_and_if_none_match_compares_weakly() {
        let tag = etag(&[1; 32], &[3, 4]);
        assert_eq!(tag, etag(&[1; 32], &[3, 4]));
        assert_ne!(tag, etag(&[1; 32], &[3, 5]));
        let weak = HeaderValue::from_str(&format!("\"zz\", W/{}", tag.to_str().expect("ASCII")))
            .expect("a header");
        assert!(none_match(&weak, &tag));
        assert!(none_match(&HeaderValue::from_static("*"), &tag));
        assert!(!none_match(&HeaderValue::from_static("\"zz\""), &tag));
    }

    #[test]
    fn tags_name_each_product_in_the_cdns_separator() {
        let products = [
            Sku::parse("A-1").expect("a SKU"),
            Sku::parse("B.2").expect("a SKU"),
        ];
        assert_eq!(tags(&products, false).expect("tags"), "sku-A-1 sku-B.2");
        assert_eq!(tags(&products, true).expect("tags"), "sku-A-1,sku-B.2");
        assert!(tags(&[], false).is_none());
    }
}
