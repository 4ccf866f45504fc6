//! The keyed hash that stands for a verified purchase's order (`super::purchase`): what a
//! verified comment keeps of its proof, instead of the order id.

use aws_lc_rs::hmac;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::ids::Sku;
use super::invalid::InvalidInput;

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
