//! What verifying a bearer token costs the server (`dynapage::auth`), per request, once the
//! provider's keys are cached: RS256 (2048-bit), ES256 and EdDSA tokens of a realistic size,
//! the first time a token is seen (header, key lookup, signature, `iss`/`aud`/`exp`/`nbf`, the
//! viewer's claims) and when it was verified within the last minute (a map lookup). Keys are
//! made here, as the tests make them. See BENCHMARKS.md.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dynapage::auth::{JwksSource, JwtSettings, JwtVerifier, KeyCache};
use jsonwebtoken::jwk::JwkSet;
use serde_json::json;

// The keys and claims of the auth tests; the bench runs no JWKS server (it reads a file).
#[allow(dead_code)]
#[path = "../tests/api/support/jwks.rs"]
mod jwks;

fn verifying(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let keys = [
        ("RS256", jwks::TestKey::rsa("rsa")),
        ("ES256", jwks::TestKey::ec("ec")),
        ("EdDSA", jwks::TestKey::ed("ed")),
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("jwks.json");
    let set = JwkSet {
        keys: keys.iter().map(|(_, k)| k.jwk.clone()).collect(),
    };
    std::fs::write(&path, serde_json::to_vec(&set).expect("JSON")).expect("write JWKS");
    let verifier = JwtVerifier::new(
        JwtSettings {
            issuer: jwks::ISSUER.into(),
            audience: jwks::AUDIENCE.into(),
            name_claim: "name".into(),
            roles_claim: "roles".into(),
            moderator_role: "moderator".into(),
            merchant_role: "merchant".into(),
            privacy_role: "privacy".into(),
        },
        KeyCache::new(JwksSource::File(path)).expect("a key cache"),
    );
    runtime
        .block_on(verifier.keys().refresh())
        .expect("the JWKS file is read");
    let mut group = c.benchmark_group("verify_token");
    for (alg, key) in &keys {
        // About what a provider issues: a dozen claims, a name, two roles.
        let token = key.sign(&jwks::claims(
            "auth0|5f7c8ec7c33c6c004bbafe82",
            json!({
                "name": "Ann Example",
                "roles": ["customer", "reviewer"],
                "scope": "openid profile comments:write",
                "azp": "spa-client-1",
            }),
        ));
        runtime
            .block_on(verifier.verify(&token))
            .expect("the token verifies");
        group.bench_function(format!("{alg}/first_sight"), |b| {
            b.iter(|| runtime.block_on(verifier.verify_uncached(black_box(&token))))
        });
        group.bench_function(format!("{alg}/seen_before"), |b| {
            b.iter(|| runtime.block_on(verifier.verify(black_box(&token))))
        });
    }
    group.finish();
}

criterion_group!(benches, verifying);
criterion_main!(benches);
