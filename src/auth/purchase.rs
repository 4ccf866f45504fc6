//! Purchase proofs: a short JWT the shop's backend signs for a buyer and a product (the link in
//! a "review your purchase" e-mail), which `addComment(input: { purchaseProof })` turns into a
//! verified comment.
//!
//! A proof is verified like a bearer token ([`super::decode_claims`]: the shop's own key set,
//! `--purchase-jwks-url`; only asymmetric algorithms; `exp`, `nbf`; the issuer
//! `--purchase-issuer`), and then: `purpose` is `"review"` (a login token of the same issuer is
//! no proof), `sub` is the viewer's (a proof is not transferable), `sku` is the comment's
//! product, and `order` is an order id, which is kept only as a keyed hash
//! ([`OrderHash`]). The store then refuses a second comment on the same order and product.

use serde_json::{Map, Value};

use super::{KeyCache, TokenError, decode_claims};
use crate::domain::{OrderHash, OrderKey, Sku};

/// The `purpose` claim every proof carries.
pub const PURPOSE: &str = "review";
/// The longest `order` claim accepted, in bytes.
pub const MAX_ORDER_BYTES: usize = 256;

/// Why a purchase proof was refused: each message says which check failed, for the client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The server verifies no proofs (no `--purchase-jwks-url`).
    #[error("this server verifies no purchases (`--purchase-jwks-url` is not set)")]
    Disabled,
    /// A proof needs a signed-in author (`--auth jwt`): its `sub` is compared with theirs.
    #[error("a purchase proof needs a signed-in author (a bearer token)")]
    Anonymous,
    /// The JWT itself failed (signature, key, algorithm, issuer, expiry, a missing claim).
    #[error("{0}")]
    Token(TokenError),
    /// `purpose` is absent or not `review`.
    #[error("the proof's `purpose` claim must be \"review\"")]
    Purpose,
    /// The proof is another person's.
    #[error("the proof's `sub` is not the signed-in author's")]
    Subject,
    /// The proof is for another product.
    #[error("the proof's `sku` is not the comment's product")]
    Product,
    /// `order` is absent, empty, too long or not a string.
    #[error("the proof's `order` claim must be a string of 1 to 256 bytes")]
    Order,
}

/// Verifies purchase proofs against the shop's key set.
#[derive(Debug)]
pub struct PurchaseVerifier {
    issuer: String,
    keys: KeyCache,
    order_key: OrderKey,
}

impl PurchaseVerifier {
    /// A verifier of proofs from `issuer`, signed with a key of `keys`, whose orders are hashed
    /// with `order_key`.
    pub fn new(issuer: String, keys: KeyCache, order_key: OrderKey) -> Self {
        Self {
            issuer,
            keys,
            order_key,
        }
    }

    /// Fetches the JWKS once at start-up. As for bearer tokens, a failure is logged, not fatal:
    /// proofs are refused until a fetch succeeds (each unknown key retries it).
    pub(crate) async fn fetch_keys(&self) {
        match self.keys.refresh().await {
            Ok(0) => tracing::error!(
                "the purchase JWKS holds no usable signing key: every purchase proof will be refused"
            ),
            Ok(_) => {}
            Err(error) => {
                tracing::error!(error = %error, "cannot fetch the purchase JWKS (--purchase-jwks-url): proofs are refused until it can be fetched")
            }
        }
    }

    /// The order hash `proof` proves for `sub` buying `sku`, or why it proves nothing.
    pub async fn verify(&self, proof: &str, sub: &str, sku: &Sku) -> Result<OrderHash, ProofError> {
        let claims = decode_claims(&self.keys, proof.trim(), |validation| {
            validation.set_issuer(&[&self.issuer]);
            validation.set_required_spec_claims(&["exp", "iss", "sub"]);
            // The audience of a proof is its `purpose`, checked below.
            validation.validate_aud = false;
        })
        .await
        .map_err(ProofError::Token)?;
        check(&claims, sub, sku)?;
        let order = text(&claims, "order")
            .filter(|o| !o.is_empty() && o.len() <= MAX_ORDER_BYTES)
            .ok_or(ProofError::Order)?;
        Ok(OrderHash::of(&self.order_key, order, sku))
    }
}

fn text<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    claims.get(name).and_then(Value::as_str)
}

/// The checks past the signature: purpose, subject, product.
fn check(claims: &Map<String, Value>, sub: &str, sku: &Sku) -> Result<(), ProofError> {
    if text(claims, "purpose") != Some(PURPOSE) {
        return Err(ProofError::Purpose);
    }
    if text(claims, "sub") != Some(sub) {
        return Err(ProofError::Subject);
    }
    if text(claims, "sku") != Some(sku.as_str()) {
        return Err(ProofError::Product);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn purpose_subject_and_product_must_each_match() {
        let sku = Sku::parse("SHOE").expect("sku");
        let good = serde_json::json!({"purpose": "review", "sub": "ann", "sku": "SHOE"});
        assert_eq!(check(&claims(good.clone()), "ann", &sku), Ok(()));
        let mut login = good.clone();
        login["purpose"] = Value::Null;
        assert_eq!(check(&claims(login), "ann", &sku), Err(ProofError::Purpose));
        assert_eq!(
            check(&claims(good.clone()), "bob", &sku),
            Err(ProofError::Subject)
        );
        let other = Sku::parse("HAT").expect("sku");
        assert_eq!(
            check(&claims(good), "ann", &other),
            Err(ProofError::Product)
        );
    }
}
