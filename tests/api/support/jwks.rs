//! An identity provider for the auth tests: signing keys made in the test (RSA and EC, with
//! aws-lc-rs, the crypto library the server itself uses), a JWKS served over HTTP on a free port
//! that the test can rotate or take down, and tokens signed with any of the keys.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use base64::Engine as _;
use dynapage::auth::local::pem;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

pub const ISSUER: &str = "https://id.shop.test/";
pub const AUDIENCE: &str = "comments-api";

/// A private key with its `kid` and public JWK.
#[derive(Clone)]
pub struct TestKey {
    pub kid: String,
    pub alg: Algorithm,
    pub encoding: EncodingKey,
    pub jwk: Jwk,
    /// The public key as a PEM document (what an attacker could use as an HMAC secret).
    pub public_pem: String,
}

impl TestKey {
    /// A new 2048-bit RSA key for RS256.
    pub fn rsa(kid: &str) -> Self {
        let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048)
            .expect("an RSA key");
        let der = pair.as_der().expect("PKCS#8");
        let encoding =
            EncodingKey::from_rsa_pem(pem("PRIVATE KEY", der.as_ref()).as_bytes()).expect("PEM");
        let public = aws_lc_rs::signature::KeyPair::public_key(&pair)
            .as_der()
            .expect("public DER");
        Self::finish(
            kid,
            Algorithm::RS256,
            encoding,
            pem("PUBLIC KEY", public.as_ref()),
        )
    }

    /// A new P-256 key for ES256.
    pub fn ec(kid: &str) -> Self {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("an EC key");
        let der = pair.to_pkcs8v1().expect("PKCS#8");
        let encoding = EncodingKey::from_ec_der(der.as_ref());
        let public = aws_lc_rs::signature::KeyPair::public_key(&pair)
            .as_der()
            .expect("public DER");
        Self::finish(
            kid,
            Algorithm::ES256,
            encoding,
            pem("PUBLIC KEY", public.as_ref()),
        )
    }

    /// A new Ed25519 key for EdDSA.
    pub fn ed(kid: &str) -> Self {
        let pair = aws_lc_rs::signature::Ed25519KeyPair::generate().expect("an Ed25519 key");
        let der = pair.to_pkcs8v1().expect("PKCS#8");
        let encoding = EncodingKey::from_ed_der(der.as_ref());
        let public = aws_lc_rs::signature::KeyPair::public_key(&pair)
            .as_der()
            .expect("public DER");
        Self::finish(
            kid,
            Algorithm::EdDSA,
            encoding,
            pem("PUBLIC KEY", public.as_ref()),
        )
    }

    fn finish(kid: &str, alg: Algorithm, encoding: EncodingKey, public_pem: String) -> Self {
        let mut jwk = Jwk::from_encoding_key(&encoding, alg).expect("a public JWK");
        jwk.common.key_id = Some(kid.to_owned());
        Self {
            kid: kid.to_owned(),
            alg,
            encoding,
            jwk,
            public_pem,
        }
    }

    /// A token with these claims, its header naming this key.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("signed")
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// Claims the test provider issues for `sub`, valid for an hour: override any with `extra`.
pub fn claims(sub: &str, extra: Value) -> Value {
    let mut claims = json!({
        "iss": ISSUER,
        "aud": [AUDIENCE, "other-api"],
        "sub": sub,
        "iat": now(),
        "nbf": now() - 1,
        "exp": now() + 3_600,
    });
    if let (Some(map), Value::Object(extra)) = (claims.as_object_mut(), extra) {
        map.extend(extra);
    }
    claims
}

/// Seconds since the epoch, shifted by `delta`.
pub fn at(delta: i64) -> u64 {
    now().saturating_add_signed(delta)
}

/// A token with `header` and `claims` as given, unsigned-looking: `header.claims.signature`
/// with each part base64url-encoded (for `alg: none` and HMAC forgeries).
pub fn forged(header: &Value, claims: &Value, signature: &[u8]) -> String {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    format!(
        "{}.{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes()),
        b64(signature)
    )
}

/// The JWKS endpoint of the test provider.
pub struct JwksServer {
    pub url: String,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct State {
    keys: Mutex<Vec<Jwk>>,
    down: AtomicBool,
    fetches: AtomicUsize,
}

impl JwksServer {
    /// Serves `keys` at `<url>`, a `/.well-known/jwks.json` on a free port.
    pub async fn start(keys: &[&TestKey]) -> Self {
        let state = Arc::new(State::default());
        let shared = state.clone();
        let app = axum::Router::new().route(
            "/.well-known/jwks.json",
            axum::routing::get(move || {
                let state = shared.clone();
                async move {
                    state.fetches.fetch_add(1, Ordering::SeqCst);
                    if state.down.load(Ordering::SeqCst) {
                        return StatusCode::SERVICE_UNAVAILABLE.into_response();
                    }
                    let keys = state.keys.lock().expect("keys").clone();
                    axum::Json(JwkSet { keys }).into_response()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let url = format!(
            "http://{}/.well-known/jwks.json",
            listener.local_addr().expect("address")
        );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let server = Self { url, state, task };
        server.publish(keys);
        server
    }

    /// Replaces the published keys.
    pub fn publish(&self, keys: &[&TestKey]) {
        *self.state.keys.lock().expect("keys") = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    /// Makes the endpoint answer 503 (`true`) or serve again.
    pub fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    /// How many times the JWKS was requested.
    pub fn fetches(&self) -> usize {
        self.state.fetches.load(Ordering::SeqCst)
    }

    /// `serve` flags that trust this provider.
    pub fn serve_args(&self) -> Vec<String> {
        [
            "--auth",
            "jwt",
            "--auth-jwks-url",
            &self.url,
            "--auth-issuer",
            ISSUER,
            "--auth-audience",
            AUDIENCE,
        ]
        .map(str::to_owned)
        .to_vec()
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
