//! The verifier's tests: claims, roles and what a token may name.

use super::*;
use serde_json::json;

fn verifier() -> JwtVerifier {
    JwtVerifier::new(
        JwtSettings {
            issuer: "https://id.example".into(),
            audience: "shop".into(),
            name_claim: "name".into(),
            roles_claim: "realm_access.roles".into(),
            moderator_role: "moderator".into(),
            merchant_role: "merchant".into(),
            privacy_role: "privacy".into(),
        },
        KeyCache::new(JwksSource::File("unused".into())).expect("a key cache"),
    )
}

fn claims(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("an object literal"),
    }
}

#[test]
fn the_viewer_takes_name_and_roles_from_the_claims_and_never_shows_the_sub() {
    let v = verifier();
    let alice = v
        .viewer(&claims(
            json!({"sub": "u1", "name": " Alice ", "realm_access": {"roles": ["moderator", "merchant"]}}),
        ))
        .expect("valid claims");
    assert_eq!(
        alice,
        Viewer {
            sub: "u1".into(),
            name: Some("Alice".into()),
            moderator: true,
            merchant: true,
            privacy: false
        }
    );
    let bob = v
        .viewer(&claims(
            json!({"sub": "u2", "name": "", "realm_access": {"roles": "reader editor"}}),
        ))
        .expect("valid claims");
    assert_eq!(
        (bob.name, bob.moderator, bob.merchant),
        (None, false, false)
    );
    for unusable in [json!(" \u{200B} "), json!(42), json!(null)] {
        let viewer = v
            .viewer(&claims(json!({"sub": "u4", "name": unusable})))
            .expect("valid claims");
        assert_eq!(viewer.name, None, "{unusable}");
    }
    let no_claim = v
        .viewer(&claims(json!({"sub": "u5"})))
        .expect("valid claims");
    assert_eq!(no_claim.name, None);
    let spoofing = v
        .viewer(&claims(json!({"sub": "u6", "name": "\u{202E}nimda"})))
        .expect("valid claims");
    assert_eq!(spoofing.name.as_deref(), Some("nimda"));
    assert_eq!(
        v.viewer(&claims(json!({"sub": ""}))),
        Err(TokenError::MissingClaim("sub".into()))
    );
    for bad in ["x".repeat(MAX_AUTHOR_SUB_BYTES + 1), "a\u{0}b".to_owned()] {
        assert_eq!(
            v.viewer(&claims(json!({ "sub": bad }))),
            Err(TokenError::BadSubject),
            "a subject no store could keep"
        );
    }
    assert!(
        v.viewer(&claims(json!({ "sub": "x".repeat(MAX_AUTHOR_SUB_BYTES) })))
            .is_ok()
    );
    let long = v
        .viewer(&claims(json!({"sub": "u3", "name": "x".repeat(500)})))
        .expect("valid claims");
    assert_eq!(long.name.map(|n| n.chars().count()), Some(MAX_AUTHOR_CHARS));
}

#[test]
fn a_claim_with_dots_in_its_name_wins_over_the_path() {
    let map = claims(
        json!({"https://shop.example/roles": ["moderator"], "https://shop": {"example/roles": []}}),
    );
    assert_eq!(
        claim(&map, "https://shop.example/roles"),
        Some(&json!(["moderator"]))
    );
}

#[test]
fn a_moderator_may_change_anything_an_author_only_their_own() {
    let author = Viewer {
        sub: "u1".into(),
        name: Some("A".into()),
        moderator: false,
        merchant: true,
        privacy: false,
    };
    assert_eq!(author.access(), Access::Author("u1".into()));
    let moderator = Viewer {
        moderator: true,
        ..author
    };
    assert_eq!(moderator.access(), Access::Any);
}

#[tokio::test]
async fn a_header_that_is_not_a_bearer_token_is_refused_before_any_key_is_looked_up() {
    let v = verifier();
    for header in ["Basic abc", "Bearer ", "token"] {
        assert_eq!(
            v.verify_header(header).await,
            Err(TokenError::NotBearer),
            "{header}"
        );
    }
    assert_eq!(
        v.verify_header("Bearer not.a.jwt").await,
        Err(TokenError::Malformed)
    );
    // {"alg":"none"}.{"sub":"x"}.
    assert_eq!(
        v.verify_header("Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
            .await,
        Err(TokenError::Algorithm)
    );
}
