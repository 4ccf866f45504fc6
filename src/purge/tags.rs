//! The names a CDN purges pages by: one tag per product, `sku-<SKU>`. Cacheable responses carry
//! the tags of the products they read in `--cache-tag-header` (`http::response_cache`), and a
//! purge names the same tags for the products a batch changed, so the two must agree: both take
//! them from here.

use crate::domain::Sku;

/// The tag a CDN purges `sku`'s pages by.
pub fn tag(sku: &Sku) -> String {
    format!("sku-{sku}")
}

/// The length of [`tag`]`(sku)`, counted without building it (every cacheable response asks
/// whether its tags fit the header).
pub fn tag_len(sku: &Sku) -> usize {
    "sku-".len() + sku.as_str().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tags_length_is_counted_as_it_is_spelled() {
        let sku = Sku::parse("DAFT_PUNK_TSHIRT").expect("a SKU");
        assert_eq!(tag(&sku), "sku-DAFT_PUNK_TSHIRT");
        assert_eq!(tag_len(&sku), tag(&sku).len());
    }
}
