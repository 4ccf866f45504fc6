//! Redis key names (DESIGN §3): the only place that spells them.
//!
//! Every key starts with the configured prefix, and every key of one product carries the
//! product's SKU as a hash tag (`{sku}`), so a product's live sets, its staged rebuild sets and
//! the sets one `key_at` script reads all hash to the same Redis Cluster slot. SKUs cannot
//! contain `{`, `}` or glob characters (`Sku::parse`), so a tag is never ambiguous.

use crate::domain::{Rating, Sku};

/// Builds and parses the key names under one prefix.
#[derive(Clone, Debug)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
        }
    }

    /// `<prefix>comments:{<sku>}`: every comment of the product.
    pub(super) fn product(&self, sku: &Sku) -> String {
        format!("{}comments:{{{}}}", self.prefix, sku)
    }

    /// `<prefix>comments:{<sku>}:r<rating>`: the product's comments with one rating.
    pub(super) fn rating(&self, sku: &Sku, rating: Rating) -> String {
        format!("{}:r{}", self.product(sku), rating.get())
    }

    /// The product key of rebuild `run`: `<prefix>comments:{<sku>}:rebuild:<run>`.
    pub(super) fn staged_product(&self, run: &str, sku: &Sku) -> String {
        format!("{}:rebuild:{}", self.product(sku), run)
    }

    /// A rating key of rebuild `run`: `<prefix>comments:{<sku>}:rebuild:<run>:r<rating>`.
    pub(super) fn staged_rating(&self, run: &str, sku: &Sku, rating: Rating) -> String {
        format!("{}:r{}", self.staged_product(run, sku), rating.get())
    }

    /// `<prefix>sync:<table>:<shardId>`: the last stream sequence number the sync worker
    /// applied from one shard of `table`'s stream.
    pub(super) fn sync_checkpoint(&self, table: &str, shard: &str) -> String {
        format!("{}sync:{}:{}", self.prefix, table, shard)
    }

    /// The `SCAN MATCH` pattern that finds the product keys (and, unavoidably, their rating and
    /// staging keys, which [`Keys::sku_of_product_key`] then sets aside).
    pub(super) fn product_pattern(&self) -> String {
        format!("{}comments:{{*}}", glob_escape(&self.prefix))
    }

    /// The SKU of a product key, `None` for any other key (rating sets, staging, foreign keys).
    pub(super) fn sku_of_product_key(&self, key: &str) -> Option<Sku> {
        let tagged = key.strip_prefix(&self.prefix)?.strip_prefix("comments:{")?;
        let sku = tagged.strip_suffix('}')?;
        Sku::parse(sku).ok()
    }
}

/// Escapes the glob characters of `SCAN MATCH`, so a prefix such as `test[1]:` matches itself.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sku(s: &str) -> Sku {
        Sku::parse(s).expect("valid sku")
    }

    #[test]
    fn keys_share_the_product_hash_tag() {
        let keys = Keys::new("p:");
        let r3 = Rating::new(3).expect("valid rating");
        assert_eq!(keys.product(&sku("A-1")), "p:comments:{A-1}");
        assert_eq!(keys.rating(&sku("A-1"), r3), "p:comments:{A-1}:r3");
        assert_eq!(
            keys.staged_product("run7", &sku("A-1")),
            "p:comments:{A-1}:rebuild:run7"
        );
        assert_eq!(
            keys.staged_rating("run7", &sku("A-1"), r3),
            "p:comments:{A-1}:rebuild:run7:r3"
        );
        assert_eq!(
            keys.sync_checkpoint("comments", "shardId-0001"),
            "p:sync:comments:shardId-0001"
        );
    }

    #[test]
    fn only_product_keys_name_a_product() {
        let keys = Keys::new("p:");
        assert_eq!(
            keys.sku_of_product_key("p:comments:{A-1}"),
            Some(sku("A-1"))
        );
        assert_eq!(keys.sku_of_product_key("p:comments:{A-1}:r3"), None);
        assert_eq!(keys.sku_of_product_key("p:comments:{A-1}:rebuild:x"), None);
        assert_eq!(keys.sku_of_product_key("q:comments:{A-1}"), None);
        assert_eq!(keys.sku_of_product_key("p:comments:{}"), None);
    }

    #[test]
    fn the_scan_pattern_escapes_glob_characters_of_the_prefix() {
        assert_eq!(
            Keys::new("t[1]*:").product_pattern(),
            "t\\[1\\]\\*:comments:{*}"
        );
    }
}
