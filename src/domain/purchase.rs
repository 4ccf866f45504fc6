//! Verified purchases: the keyed hash that stands for an order, and the list of a product's
//! verified comments.
//!
//! A comment is verified when `addComment` came with a purchase proof the shop signed for its
//! author, its product and an order (`crate::auth::purchase`). The order id is never stored:
//! only an [`super::OrderHash`], a keyed hash of the order and the product, which the store
//! keeps unique (one verified comment per order and product) and which nobody without the
//! shop's key can turn back into an order.
//!
//! A product's verified comments are a list of their own, the product's *verified twin*
//! ([`verified_list`]): the index keeps it like a product's list (by rating, by helpful votes,
//! with counts), the stores read it from their own partitions (four sparse GSIs in DynamoDB), so
//! a verified-only page, count or deep jump reads only verified comments.

use super::comment::Comment;
use super::ids::Sku;

/// What starts the index name of a product's verified twin: `!` (no SKU has it) and `+`.
const MARK: &str = "!+";

/// The list of `sku`'s verified comments, as the index and the stores name it.
pub fn verified_list(sku: &Sku) -> Sku {
    Sku::list_name(format!("{MARK}{sku}"))
}

/// Whether `list` names a product's verified twin ([`verified_list`]): a test without the
/// parse (and allocation) of [`verified_product`], for paths run per change.
pub fn is_verified_list(list: &str) -> bool {
    list.starts_with(MARK)
}

/// The product whose verified twin `list` names ([`verified_list`]); `None` for any other
/// list.
pub fn verified_product(list: &str) -> Option<Sku> {
    Sku::parse(list.strip_prefix(MARK)?).ok()
}

impl Comment {
    /// Whether the comment is a verified purchase ([`Comment::purchase`]).
    pub fn is_verified(&self) -> bool {
        self.purchase.is_some()
    }

    /// Whether the product list the index keeps under `list` is one of this comment's: its
    /// product's, or its product's verified list ([`verified_list`]) if it is verified.
    /// (Whether it is published, and so a member now, is another question.)
    pub fn is_in_list(&self, list: &Sku) -> bool {
        self.sku == *list
            || (self.is_verified() && verified_product(list.as_str()).as_ref() == Some(&self.sku))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verified_twin_names_its_product_and_no_other_list() {
        let sku = Sku::parse("SHOE-1.b").expect("sku");
        let twin = verified_list(&sku);
        assert!(twin.is_reserved());
        assert_eq!(verified_product(twin.as_str()), Some(sku.clone()));
        assert_eq!(verified_product(sku.as_str()), None);
        assert_eq!(
            super::super::QueueList::from_index_name(twin.as_str()),
            None
        );
        assert_eq!(
            super::super::AuthorList::from_index_name(twin.as_str()),
            None
        );
        assert_eq!(verified_product("!+"), None);
        assert_eq!(verified_product("!+a#b"), None);
    }

    use super::super::{OrderHash, OrderKey};

    #[test]
    fn the_hash_depends_on_key_order_and_product_and_reads_back() {
        let key = OrderKey::new(&[7; 32]).expect("key");
        let other = OrderKey::new(&[8; 32]).expect("key");
        let (a, b) = (Sku::parse("A").expect("sku"), Sku::parse("B").expect("sku"));
        let hash = OrderHash::of(&key, "order-1", &a);
        assert_eq!(hash, OrderHash::of(&key, "order-1", &a), "stable");
        assert_ne!(hash, OrderHash::of(&key, "order-1", &b));
        assert_ne!(hash, OrderHash::of(&key, "order-2", &a));
        assert_ne!(hash, OrderHash::of(&other, "order-1", &a));
        assert_eq!(hash.as_str().len(), OrderHash::LEN);
        assert!(!hash.as_str().contains("order"));
        assert_eq!(OrderHash::parse(hash.as_str()), Ok(hash));
        assert!(OrderHash::parse("short").is_err());
        assert!(OrderKey::new(&[1; 31]).is_err());
    }
}
