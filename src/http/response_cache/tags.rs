//! The CDN tags of a response (`--cache-tag-header`): one `sku-<SKU>` per product it read
//! (named by `crate::purge::tag`), so a purge of a product's tag drops every page that shows
//! it, and a bound on their length.
//!
//! **The bound.** CDNs cap the header: Fastly reads at most 16,384 bytes of `Surrogate-Key`,
//! Cloudflare 16 KB of `Cache-Tag` in all, and Varnish refuses a backend response with any
//! header line over `http_resp_hdr_len` (8 KiB by default: the fetch fails and the client gets
//! 503). The smallest, Varnish's, less room for the header's name: [`MAX_TAGS_BYTES`]. A
//! response that read more products than fit (a `nodes(ids:)` of a few hundred products) is
//! not given to shared caches at all: it is `private` (its client's browser may keep it). Why
//! not a catch-all tag instead: every purge of every product would then have to purge it too,
//! one more tag on every purge request for responses that are rare, and an untagged `public`
//! response could not be purged at all, stale for `max-age`.

use axum::http::{HeaderName, HeaderValue};

use crate::domain::Sku;
use crate::purge::{tag, tag_len};

/// The longest tags header value sent: Varnish's default `http_resp_hdr_len` (8,192 bytes for
/// the whole line) less the longest name it may be sent under and its separator.
pub const MAX_TAGS_BYTES: usize = 8_192 - 64;

/// A response's tags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Tags {
    /// It read no product.
    None,
    /// The header's value.
    Named(HeaderValue),
    /// It read more products than [`MAX_TAGS_BYTES`] can name: it is not for shared caches.
    TooMany,
}

impl Tags {
    /// The tags of `products`: space-separated (Varnish xkey, Fastly `Surrogate-Key`),
    /// comma-separated under Cloudflare's `Cache-Tag` (`header`).
    pub(super) fn of(products: &[Sku], header: &HeaderName) -> Self {
        if products.is_empty() {
            return Self::None;
        }
        let separator = if is_cache_tag(header) { "," } else { " " };
        let tags: Vec<String> = products.iter().map(tag).collect();
        let value = tags.join(separator);
        if value.len() > MAX_TAGS_BYTES {
            return Self::TooMany;
        }
        HeaderValue::from_str(&value).map_or(Self::TooMany, Self::Named)
    }

    /// Whether the tags of `products` fit the header ([`Tags::of`] would not be `TooMany`),
    /// counted without building them: every response asks.
    pub(super) fn fit_for(products: &[Sku]) -> bool {
        let tags: usize = products.iter().map(tag_len).sum();
        tags + products.len().saturating_sub(1) <= MAX_TAGS_BYTES
    }

    /// The header's value, if any.
    pub(super) fn value(&self) -> Option<&HeaderValue> {
        match self {
            Self::Named(value) => Some(value),
            Self::None | Self::TooMany => None,
        }
    }

    /// Whether a shared cache may keep the response (it could be purged).
    pub(super) fn fit(&self) -> bool {
        *self != Self::TooMany
    }
}

/// Cloudflare's `Cache-Tag` is comma-separated; the others space-separated.
fn is_cache_tag(header: &HeaderName) -> bool {
    header.as_str().eq_ignore_ascii_case("cache-tag")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sku(s: &str) -> Sku {
        Sku::parse(s).expect("a SKU")
    }

    #[test]
    fn tags_name_each_product_in_the_cdns_separator() {
        let products = [sku("A-1"), sku("B.2")];
        let surrogate = HeaderName::from_static("surrogate-key");
        let cloudflare = HeaderName::from_static("cache-tag");
        let named = |tags: Tags| tags.value().cloned().expect("tags");
        assert_eq!(named(Tags::of(&products, &surrogate)), "sku-A-1 sku-B.2");
        assert_eq!(named(Tags::of(&products, &cloudflare)), "sku-A-1,sku-B.2");
        assert_eq!(Tags::of(&[], &surrogate), Tags::None);
        assert!(Tags::of(&[], &surrogate).fit());
    }

    #[test]
    fn more_products_than_the_header_holds_are_too_many() {
        let surrogate = HeaderName::from_static("surrogate-key");
        let long = |i: usize| sku(&format!("{i:0>60}"));
        // 64 + 1 bytes a tag: 125 fit in 8,128 bytes, 126 do not.
        let fits: Vec<Sku> = (0..125).map(long).collect();
        let tags = Tags::of(&fits, &surrogate);
        assert!(tags.fit());
        assert!(tags.value().expect("named").len() <= MAX_TAGS_BYTES);
        let over: Vec<Sku> = (0..126).map(long).collect();
        assert_eq!(Tags::of(&over, &surrogate), Tags::TooMany);
        assert!(Tags::fit_for(&fits) && !Tags::fit_for(&over));
        assert!(!Tags::TooMany.fit());
    }
}
