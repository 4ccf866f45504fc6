//! Who is writing: bearer tokens from the shop's identity provider (OIDC / OAuth 2 access
//! tokens as JWTs), verified against the provider's published keys.
//!
//! Reads are public. Under `--auth jwt` a write needs a valid token: `addComment` takes the
//! author's name (never the `sub`: see [`Viewer::name`]) and `sub` from it, and only that `sub`, or a token whose roles claim holds the
//! moderator role, may edit or delete the comment ([`Viewer::access`]; the store enforces it in
//! the conditional write). A token that is present but invalid is refused on any request, so a
//! client learns at once that its token went bad.
//!
//! Verification is jsonwebtoken's, never ours: the signature against a key of the JWKS, `iss`,
//! `aud`, `exp` and `nbf` with a small leeway, and only asymmetric algorithms; `none` and HMAC
//! are refused (an HMAC "signed" with a provider's public key would otherwise verify). Keys are
//! cached ([`jwks`]), so verifying costs no network call.

pub mod jwks;
pub mod local;
pub mod purchase;
mod verified;

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use crate::domain::{Access, MAX_AUTHOR_CHARS, MAX_AUTHOR_SUB_BYTES};

pub use jwks::{JwksSource, KeyCache};

/// The algorithms a token may be signed with: asymmetric only.
pub const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Clock skew tolerated on `exp` and `nbf`.
pub const LEEWAY: Duration = Duration::from_secs(30);

/// The verified author of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Viewer {
    /// The token's `sub`: what a comment stores and ownership is checked against.
    pub sub: String,
    /// The name shown as the comment's author: the name claim, cleaned as a comment's text is
    /// (`domain::text`); `None` when the token has none with a visible character. It is never
    /// the `sub`: a provider's user id (`auth0|64f1…`) is not a name to publish, so a write
    /// that needs a name is refused instead (`addComment` says which claim is missing).
    pub name: Option<String>,
    /// Whether the roles claim holds the moderator role.
    pub moderator: bool,
    /// Whether the roles claim holds the merchant role (`--auth-merchant-role`): the shop's
    /// staff who answer comments publicly, without moderating them.
    pub merchant: bool,
    /// Whether the roles claim holds the privacy role (`--auth-privacy-role`): staff who may
    /// export and erase anyone's data.
    pub privacy: bool,
}

impl Viewer {
    /// Whether this viewer may export and erase `subject`'s data: their own always; anyone's
    /// as a moderator or with the privacy role.
    pub fn may_erase(&self, subject: &str) -> bool {
        self.sub == subject || self.moderator || self.privacy
    }

    /// What this viewer may change: everything for a moderator, else their own comments.
    pub fn access(&self) -> Access {
        if self.moderator {
            Access::Any
        } else {
            Access::Author(self.sub.clone())
        }
    }
}

/// How writes are authorised (`--auth`).
#[derive(Clone, Debug)]
pub enum Auth {
    /// Anyone may write anything; `addComment` takes the author's name from its input.
    Off,
    /// Writes need a bearer token this verifier accepts.
    Jwt(Arc<JwtVerifier>),
}

/// Why a token was refused. The message is for the client: it says what to fix without
/// echoing the token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The header is not `Bearer ` followed by a token.
    #[error("the Authorization header must be `Bearer <token>`")]
    NotBearer,
    /// The token does not decode as a JWT.
    #[error("the bearer token is not a well-formed JWT")]
    Malformed,
    /// The token's `alg` is not one of [`ALGORITHMS`], or does not match its key.
    #[error(
        "the token's algorithm is not accepted (only asymmetric ones: RS256, ES256, EdDSA and kin)"
    )]
    Algorithm,
    /// No key of the JWKS matches the token's `kid`.
    #[error("the token names no key (`kid`) of the identity provider's JWKS")]
    UnknownKey,
    /// The signature does not verify with the key the token names.
    #[error("the token's signature does not verify")]
    Signature,
    /// `exp` has passed, by more than [`LEEWAY`].
    #[error("the token has expired")]
    Expired,
    /// `nbf` is still ahead, by more than [`LEEWAY`].
    #[error("the token is not valid yet (`nbf`)")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("the token was issued by another issuer (`iss`)")]
    Issuer,
    /// `aud` does not hold the configured audience.
    #[error("the token is meant for another audience (`aud`)")]
    Audience,
    /// A required claim (`exp`, `iss`, `aud` or `sub`) is absent, or `sub` is empty; holds the
    /// claim's name.
    #[error("the token lacks the `{0}` claim")]
    MissingClaim(String),
    /// `sub` is longer than OpenID Connect allows (255 ASCII characters, Core 1.0 §2) or
    /// holds a control character: no store could keep it as a comment's author or a report's
    /// reader, so it is refused here, before anything is written under it.
    #[error("the token's `sub` must be 1 to 255 bytes without control characters")]
    BadSubject,
}

/// What a verifier checks.
#[derive(Clone, Debug)]
pub struct JwtSettings {
    /// The `iss` a token must carry (`--auth-issuer`).
    pub issuer: String,
    /// A value a token's `aud` must hold (`--auth-audience`).
    pub audience: String,
    /// The claim holding the author's display name (`addComment` is refused without it).
    pub name_claim: String,
    /// The claim holding the roles: an array of strings or one string. A dotted path (e.g.
    /// Keycloak's `realm_access.roles`) is followed when no claim has the whole name.
    pub roles_claim: String,
    /// The role in the roles claim that makes a viewer a moderator (`--auth-moderator-role`).
    pub moderator_role: String,
    /// The role that makes a viewer the shop's voice in replies (`--auth-merchant-role`).
    pub merchant_role: String,
    /// The role that may export and erase anyone's data (`--auth-privacy-role`).
    pub privacy_role: String,
}

/// Verifies bearer tokens against a cached JWKS.
#[derive(Debug)]
pub struct JwtVerifier {
    settings: JwtSettings,
    keys: KeyCache,
    verified: verified::VerifiedTokens,
}

impl JwtVerifier {
    /// A verifier that checks tokens as `settings` says, against the keys of `keys`.
    pub fn new(settings: JwtSettings, keys: KeyCache) -> Self {
        Self {
            settings,
            keys,
            verified: verified::VerifiedTokens::default(),
        }
    }

    /// The key cache, to fill at start-up.
    pub fn keys(&self) -> &KeyCache {
        &self.keys
    }

    /// The claim a token's author name is read from (`--auth-name-claim`).
    pub fn name_claim(&self) -> &str {
        &self.settings.name_claim
    }

    /// The viewer of an `Authorization` header's value.
    pub async fn verify_header(&self, header: &str) -> Result<Viewer, TokenError> {
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(TokenError::NotBearer)?;
        self.verify(token).await
    }

    /// The viewer a token speaks for, if it verifies; a token verified within the last minute,
    /// not expired since, and with no key withdrawn since, is not verified again (`verified`).
    pub async fn verify(&self, token: &str) -> Result<Viewer, TokenError> {
        let now = std::time::Instant::now();
        let generation = self.keys.generation();
        if let Some(viewer) = self.verified.get(token, now, generation) {
            return Ok(viewer);
        }
        let (viewer, expires_in) = self.verify_uncached(token).await?;
        self.verified
            .insert(token, &viewer, now, expires_in, generation);
        Ok(viewer)
    }

    /// The whole check, as for a token seen for the first time, and how long the token has
    /// left to live.
    pub async fn verify_uncached(&self, token: &str) -> Result<(Viewer, Duration), TokenError> {
        let claims = decode_claims(&self.keys, token, |validation| {
            validation.set_issuer(&[&self.settings.issuer]);
            validation.set_audience(&[&self.settings.audience]);
            validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        })
        .await?;
        // `exp` is required and checked above. The cache keeps the token until then, without
        // the leeway: it is verified again if it is used after `exp`.
        let exp = claims
            .get("exp")
            .and_then(Value::as_u64)
            .unwrap_or_default();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let expires_in = Duration::from_secs(exp.saturating_sub(now));
        Ok((self.viewer(&claims)?, expires_in))
    }

    fn viewer(&self, claims: &Map<String, Value>) -> Result<Viewer, TokenError> {
        let sub = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| TokenError::MissingClaim("sub".into()))?;
        if sub.len() > MAX_AUTHOR_SUB_BYTES || sub.chars().any(char::is_control) {
            return Err(TokenError::BadSubject);
        }
        // A comment's author is at most MAX_AUTHOR_CHARS long; a longer name is cut, not
        // refused.
        let name = claim(claims, &self.settings.name_claim)
            .and_then(Value::as_str)
            .map(crate::domain::text::clean)
            .filter(|n| crate::domain::text::has_visible(n))
            .map(|n| n.chars().take(MAX_AUTHOR_CHARS).collect());
        let has_role = |role: &str| match claim(claims, &self.settings.roles_claim) {
            Some(Value::Array(roles)) => roles.iter().any(|r| r.as_str() == Some(role)),
            Some(Value::String(roles)) => roles.split_whitespace().any(|r| r == role),
            _ => false,
        };
        let moderator = has_role(&self.settings.moderator_role);
        let merchant = has_role(&self.settings.merchant_role);
        let privacy = has_role(&self.settings.privacy_role);
        Ok(Viewer {
            sub: sub.to_owned(),
            name,
            moderator,
            merchant,
            privacy,
        })
    }
}

/// The claims of `token` once jsonwebtoken has verified it against a key of `keys` (the one
/// its `kid` names, with one of [`ALGORITHMS`], the key's own if it names one): the signature,
/// `exp` and `nbf` with [`LEEWAY`], and what `configure` adds (issuer, audience, required
/// claims). Shared by bearer tokens and purchase proofs (`purchase`).
pub(crate) async fn decode_claims(
    keys: &KeyCache,
    token: &str,
    configure: impl FnOnce(&mut Validation),
) -> Result<Map<String, Value>, TokenError> {
    // `decode_header` refuses `alg: none` and any name it does not know.
    let header = jsonwebtoken::decode_header(token).map_err(|_| header_error(token))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(TokenError::Algorithm);
    }
    let key = keys
        .find(header.kid.as_deref())
        .await
        .ok_or(TokenError::UnknownKey)?;
    if key.algorithm.is_some_and(|alg| alg != header.alg) {
        return Err(TokenError::Algorithm);
    }
    let mut validation = Validation::new(header.alg);
    validation.validate_nbf = true;
    validation.leeway = LEEWAY.as_secs();
    configure(&mut validation);
    jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
        .map(|data| data.claims)
        .map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::ImmatureSignature => TokenError::NotYetValid,
            ErrorKind::InvalidIssuer => TokenError::Issuer,
            ErrorKind::InvalidAudience => TokenError::Audience,
            ErrorKind::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim.clone()),
            ErrorKind::InvalidAlgorithm
            | ErrorKind::InvalidAlgorithmName
            | ErrorKind::InvalidKeyFormat => TokenError::Algorithm,
            ErrorKind::InvalidSignature => TokenError::Signature,
            _ => TokenError::Malformed,
        })
}

/// Why a token's header did not decode: an algorithm jsonwebtoken does not know (`none`, say)
/// gets its own message; the token is not verified any further either way.
fn header_error(token: &str) -> TokenError {
    use base64::Engine as _;
    let header = token.split('.').next().unwrap_or_default();
    let names_one = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|json| serde_json::from_slice::<Value>(&json).ok())
        .is_some_and(|header| header.get("alg").is_some_and(Value::is_string));
    if names_one {
        TokenError::Algorithm
    } else {
        TokenError::Malformed
    }
}

/// The claim `name`, or the value at its dotted path when no claim has the whole name (claim
/// names such as Auth0's `https://shop.example/roles` hold dots themselves).
fn claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(name) {
        return Some(value);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.as_object()?.get(part)?;
    }
    Some(value)
}

#[cfg(test)]
mod tests;
