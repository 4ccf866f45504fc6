//! Verified purchases: the keyed hash that stands for an order, and the list of a product's
//! verified comments.
//!
//! A comment is verified when `addComment` came with a purchase proof the shop signed for its
//! author, its product and an order (`crate::auth::purchase`). The order id is never stored:
//! only [`OrderHash`], a keyed hash of the order and the product, which the store keeps unique
//! (one verified comment per order and product) and which nobody without the shop's key can
//! turn back into an order.
//!
//! A product's verified comments are a list of their own, the product's *verified twin*
//! ([`verified_list`]): the index keeps it like a product's list (by rating, by helpful votes,
//! with counts), the stores read it from their own partitions (four sparse GSIs in DynamoDB), so
//! a verified-only page, count or deep jump reads only verified comments.

use aws_lc_rs::hmac;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::ids::Sku;
use super::invalid::InvalidInput;

/// What starts the index name of a product's verified twin: `!` (no SKU has it) and `+`.
const MARK: &str = "!+";

/// The list of `sku`'s verified comments, as the index and the stores name it.
pub fn verified_list(sku: &Sku) -> Sku {
    Sku::list_name(format!("{MARK}{sku}"))
}

/// The product whose verified twin `list` names ([`verified_list`]); `None` for any other
/// list.
pub fn verified_product(list: &str) -> Option<Sku> {
    Sku::parse(list.strip_prefix(MARK)?).ok()
}

/// The shop's secret for [`OrderHash`]es (`--purchase-order-key`): without it an order id
/// cannot be recognised in the store, with it the same order always gives the same hash.
#[derive(Clone)]
pub struct OrderKey(hmac::Key);

impl std::fmt::Debug for OrderKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OrderKey(..)")
    }
}

impl OrderKey {
    /// The shortest secret accepted, in bytes.
    pub const MIN_LEN: usize = 32;

    /// A key from the shop's secret; refused when it is shorter than [`OrderKey::MIN_LEN`].
    pub fn new(secret: &[u8]) -> Result<Self, InvalidInput> {
        if secret.len() < Self::MIN_LEN {
            return Err(InvalidInput::new(
                "purchaseOrderKey",
                "must be at least 32 bytes",
            ));
        }
        Ok(Self(hmac::Key::new(hmac::HMAC_SHA256, secret)))
    }
}

/// A keyed hash of one order and one product (HMAC-SHA-256, base64url): what a verified comment
/// keeps of its purchase, and what makes a second comment on the same order and product refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OrderHash(String);

impl OrderHash {
    /// The length of every hash's text.
    pub const LEN: usize = 43;

    /// The hash of `order` on `sku` under `key`. The two are joined with a NUL, which neither
    /// holds, so no other pair gives the same input.
    pub fn of(key: &OrderKey, order: &str, sku: &Sku) -> Self {
        let mut context = hmac::Context::with_key(&key.0);
        context.update(order.as_bytes());
        context.update(&[0]);
        context.update(sku.as_str().as_bytes());
        Self(URL_SAFE_NO_PAD.encode(context.sign().as_ref()))
    }

    /// A hash read back from a store: 43 characters of base64url.
    pub fn parse(text: &str) -> Result<Self, InvalidInput> {
        let ok = text.len() == Self::LEN
            && URL_SAFE_NO_PAD
                .decode(text)
                .is_ok_and(|bytes| bytes.len() == 32);
        if !ok {
            return Err(InvalidInput::new(
                "purchase",
                "must be 43 characters of base64url",
            ));
        }
        Ok(Self(text.to_owned()))
    }

    /// The hash as stored.
    pub fn as_str(&self) -> &str {
        &self.0
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
