//! Verified purchases: where the shop's purchase proofs are verified, the key their orders are
//! hashed with, and the statement a shop publishes about how reviews are verified.

use clap::Args;

use super::{AuthMode, StoreKind};

/// The longest `--verification-statement`, in characters.
pub(super) const MAX_STATEMENT_CHARS: usize = 1_000;

/// How purchase proofs are verified (`addComment(input: { purchaseProof })`).
#[derive(Args, Clone, Debug)]
pub struct PurchaseArgs {
    /// The JWKS of the shop's backend that signs purchase proofs (`https://…` or
    /// `file:PATH`, as `--auth-jwks-url`; `dynapage token --purchase` signs with
    /// `file:.dynapage/jwks.json`). Unset: no comment can be verified.
    #[arg(long, env = "DYNAPAGE_PURCHASE_JWKS_URL")]
    pub purchase_jwks_url: Option<String>,
    /// The `iss` every purchase proof must carry (`dynapage-local-shop` for `dynapage token
    /// --purchase`).
    #[arg(long, env = "DYNAPAGE_PURCHASE_ISSUER")]
    pub purchase_issuer: Option<String>,
    /// The secret (at least 32 bytes) that order ids are hashed with before they are stored:
    /// keep it as long as the comments, like a cursor secret. Required with
    /// `--purchase-jwks-url` on DynamoDB; on the embedded store, unset means a public
    /// development key (with a warning).
    #[arg(long, env = "DYNAPAGE_PURCHASE_ORDER_KEY", hide_env_values = true)]
    pub purchase_order_key: Option<String>,
    /// How the shop verifies reviews, in its own words (the EU Omnibus directive asks a shop
    /// that publishes reviews to say whether and how they are verified): shown on `/demo` and
    /// as `Query.verificationStatement`. At most 1,000 characters.
    #[arg(long, env = "DYNAPAGE_VERIFICATION_STATEMENT")]
    pub verification_statement: Option<String>,
}

/// The development key of `--purchase-order-key` on the embedded store: public, so hashes made
/// with it protect nothing.
const DEVELOPMENT_KEY: &str = "dynapage-development-purchase-order-key-not-secret";

impl PurchaseArgs {
    /// The verifier of a server on `store` with `auth`, its keys fetched once
    /// ([`crate::auth::purchase::PurchaseVerifier::fetch_keys`]), or `None` when no JWKS is set; a missing or
    /// contradictory setting fails naming its flag.
    pub async fn verifier(
        &self,
        store: StoreKind,
        auth: &crate::auth::Auth,
    ) -> anyhow::Result<Option<std::sync::Arc<crate::auth::purchase::PurchaseVerifier>>> {
        use crate::auth::{JwksSource, KeyCache, purchase::PurchaseVerifier};
        let Some(url) = self.purchase_jwks_url.as_deref().filter(|u| !u.is_empty()) else {
            return Ok(None);
        };
        if matches!(auth, crate::auth::Auth::Off) {
            anyhow::bail!(
                "--purchase-jwks-url needs --auth {:?}: a proof names its buyer, who must be signed in",
                AuthMode::Jwt
            );
        }
        let source = JwksSource::parse(url).map_err(|e| {
            anyhow::anyhow!("--purchase-jwks-url / DYNAPAGE_PURCHASE_JWKS_URL: {e}")
        })?;
        let issuer = self
            .purchase_issuer
            .clone()
            .filter(|i| !i.is_empty())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--purchase-jwks-url needs --purchase-issuer / DYNAPAGE_PURCHASE_ISSUER"
                )
            })?;
        let secret = match (self.purchase_order_key.as_deref(), store) {
            (Some(key), _) => key.to_owned(),
            (None, StoreKind::Memory) => {
                tracing::warn!(
                    "no --purchase-order-key / DYNAPAGE_PURCHASE_ORDER_KEY set: order ids are \
                     hashed with a public development key. Set a secret in production"
                );
                DEVELOPMENT_KEY.to_owned()
            }
            (None, StoreKind::Dynamodb) => anyhow::bail!(
                "--purchase-jwks-url needs --purchase-order-key / DYNAPAGE_PURCHASE_ORDER_KEY with \
                 --store dynamodb: the secret order ids are hashed with, at least 32 bytes"
            ),
        };
        let order_key = crate::domain::OrderKey::new(secret.as_bytes())
            .map_err(|_| anyhow::anyhow!("--purchase-order-key must be at least 32 bytes"))?;
        let keys = KeyCache::new(source)
            .map_err(|e| anyhow::anyhow!("cannot build the purchase JWKS client: {e}"))?;
        let verifier = PurchaseVerifier::new(issuer, keys, order_key);
        verifier.fetch_keys().await;
        Ok(Some(std::sync::Arc::new(verifier)))
    }

    /// The shop's verification statement, cleaned; refused when it is longer than
    /// [`MAX_STATEMENT_CHARS`]; `None` when unset or blank.
    pub fn statement(&self) -> anyhow::Result<Option<String>> {
        let Some(text) = &self.verification_statement else {
            return Ok(None);
        };
        let text = crate::domain::text::clean(text);
        if text.chars().count() > MAX_STATEMENT_CHARS {
            anyhow::bail!(
                "--verification-statement (DYNAPAGE_VERIFICATION_STATEMENT) must be at most {MAX_STATEMENT_CHARS} characters"
            );
        }
        Ok(crate::domain::text::has_visible(&text).then_some(text))
    }
}
