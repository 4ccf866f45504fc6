//! A local identity provider for laptops: `dynapage token` signs tokens with an Ed25519 key it
//! keeps in a directory (`.dynapage/` by default) and publishes that key's JWKS beside it, which
//! the server reads with `--auth-jwks-url file:.dynapage/jwks.json`. For development only: the
//! key is a file anyone with the directory can sign with.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair};
use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use sha2::{Digest, Sha256};

/// The `iss` of local tokens.
pub const ISSUER: &str = "dynapage-local";
/// The `iss` of local purchase proofs (`dynapage token --purchase`): the shop's backend in
/// development, another issuer than the one of sign-in tokens.
pub const PURCHASE_ISSUER: &str = "dynapage-local-shop";
/// The `aud` of local tokens.
pub const AUDIENCE: &str = "dynapage";
/// The private key's file name in the key directory.
pub const KEY_FILE: &str = "token-key.pem";
/// The public JWKS's file name in the key directory.
pub const JWKS_FILE: &str = "jwks.json";

/// The local signing key.
#[derive(Debug)]
pub struct LocalIssuer {
    key: EncodingKey,
    kid: String,
    dir: PathBuf,
}

/// What a local token says.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LocalClaims {
    /// The token's `sub`: the author's stable id.
    pub sub: String,
    /// The `name` claim, the author's display name; left out when `None`.
    pub name: Option<String>,
    /// The `roles` claim (e.g. `moderator`); may be empty.
    pub roles: Vec<String>,
}

impl LocalIssuer {
    /// The key in `dir`, made (with its JWKS) on first use.
    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        let key_path = dir.join(KEY_FILE);
        let pem = match std::fs::read_to_string(&key_path) {
            Ok(pem) => pem,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_key(&key_path)?,
            Err(e) => return Err(e).with_context(|| format!("reading {}", key_path.display())),
        };
        let key = EncodingKey::from_ed_pem(pem.as_bytes())
            .with_context(|| format!("{} is not an Ed25519 private key", key_path.display()))?;
        let mut jwk =
            Jwk::from_encoding_key(&key, Algorithm::EdDSA).context("deriving the public key")?;
        let kid = key_id(&jwk)?;
        jwk.common.key_id = Some(kid.clone());
        jwk.common.public_key_use = Some(PublicKeyUse::Signature);
        jwk.common.key_algorithm = Some(KeyAlgorithm::EdDSA);
        let jwks = serde_json::to_string_pretty(&JwkSet { keys: vec![jwk] })?;
        let jwks_path = dir.join(JWKS_FILE);
        if std::fs::read_to_string(&jwks_path).ok().as_deref() != Some(jwks.as_str()) {
            std::fs::write(&jwks_path, jwks)
                .with_context(|| format!("writing {}", jwks_path.display()))?;
        }
        Ok(Self {
            key,
            kid,
            dir: dir.to_owned(),
        })
    }

    /// The JWKS file the server reads.
    pub fn jwks_path(&self) -> PathBuf {
        self.dir.join(JWKS_FILE)
    }

    /// A token for `claims`, valid from now for `ttl`.
    pub fn sign(&self, claims: &LocalClaims, ttl: Duration) -> anyhow::Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        let mut body = serde_json::json!({
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": claims.sub,
            "iat": now,
            "nbf": now,
            "exp": now + ttl.as_secs(),
            "roles": claims.roles,
        });
        if let Some(name) = &claims.name {
            body["name"] = name.as_str().into();
        }
        Ok(jsonwebtoken::encode(&header, &body, &self.key)?)
    }
}

impl LocalIssuer {
    /// A purchase proof (`crate::auth::purchase`) for `sub` having bought `sku` in `order`,
    /// valid from now for `ttl`.
    pub fn sign_purchase(
        &self,
        sub: &str,
        sku: &str,
        order: &str,
        ttl: Duration,
    ) -> anyhow::Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        let body = serde_json::json!({
            "iss": PURCHASE_ISSUER,
            "sub": sub,
            "sku": sku,
            "order": order,
            "purpose": crate::auth::purchase::PURPOSE,
            "iat": now,
            "nbf": now,
            "exp": now + ttl.as_secs(),
        });
        Ok(jsonwebtoken::encode(&header, &body, &self.key)?)
    }
}

/// Makes a new key at `path` (only its owner may read it) and returns its PEM.
fn create_key(path: &Path) -> anyhow::Result<String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let pair = Ed25519KeyPair::generate().context("generating an Ed25519 key")?;
    // jsonwebtoken reads PKCS#8 v1 (the key alone); v2 would add the public key.
    let der = pair.to_pkcs8v1().context("encoding the key")?;
    let pem = pem("PRIVATE KEY", der.as_ref());
    write_private(path, &pem).with_context(|| format!("writing {}", path.display()))?;
    tracing::info!(path = %path.display(), public_key = ?pair.public_key(), "made a local token key");
    Ok(pem)
}

/// `der` as a PEM document labelled `label` (base64 in lines of 64).
pub fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        // Base64 is ASCII, so every chunk is a string.
        pem.extend(line.iter().map(|&b| char::from(b)));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

#[cfg(unix)]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(text.as_bytes())
}

#[cfg(not(unix))]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

/// A stable id for a key: the start of the SHA-256 of its public JWK.
fn key_id(jwk: &Jwk) -> anyhow::Result<String> {
    let digest = Sha256::digest(serde_json::to_vec(&jwk.algorithm)?);
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..12]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{JwksSource, JwtSettings, JwtVerifier, KeyCache, Viewer};

    #[tokio::test]
    async fn a_local_token_verifies_against_the_jwks_written_beside_its_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        let issuer = LocalIssuer::open(dir.path()).expect("a new key");
        let again = LocalIssuer::open(dir.path()).expect("the same key");
        assert_eq!(issuer.kid, again.kid, "the key is made once");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .expect("the key file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "only its owner reads the key");
        }
        let token = again
            .sign(
                &LocalClaims {
                    sub: "alice".into(),
                    name: Some("Alice".into()),
                    roles: vec!["moderator".into()],
                },
                Duration::from_secs(60),
            )
            .expect("a token");
        let verifier = JwtVerifier::new(
            JwtSettings {
                issuer: ISSUER.into(),
                audience: AUDIENCE.into(),
                name_claim: "name".into(),
                roles_claim: "roles".into(),
                moderator_role: "moderator".into(),
                merchant_role: "merchant".into(),
                privacy_role: "privacy".into(),
            },
            KeyCache::new(JwksSource::File(issuer.jwks_path())).expect("a key cache"),
        );
        assert_eq!(
            verifier.verify(&token).await,
            Ok(Viewer {
                sub: "alice".into(),
                name: Some("Alice".into()),
                moderator: true,
                merchant: false,
                privacy: false
            })
        );
    }
}
