//! Caching headers and compression, read as the raw bytes a client receives (no HTTP client
//! that would decode or merge anything): who may keep a response (`Cache-Control`), what it
//! varies with, the budget in `RateLimit` fields, and gzip, brotli and zstd bodies that decode
//! to the same JSON as the plain one.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{DEMO_SKU, TestApp};
use crate::support::jwks::{JwksServer, TestKey, claims};

const PAGE: &str = "query($sku: String!) { product(sku: $sku) { comments(first: 40) { edges { cursor node { id author body rating createdAt viewerCanUpdate viewerCanDelete } } } } }";

fn sku() -> Value {
    json!({ "sku": DEMO_SKU })
}

#[tokio::test]
async fn an_anonymous_get_is_public_and_varies_with_accept() {
    let app = TestApp::embedded(3).await;
    let raw = app.raw_get(PAGE, &sku(), &[]).await;
    assert_eq!(raw.status, 200, "{raw:?}");
    assert_eq!(
        raw.header("cache-control").as_deref(),
        Some("public, max-age=5, stale-while-revalidate=30")
    );
    assert!(raw.varies_with("accept"), "{raw:?}");
    assert!(
        raw.header("ratelimit").is_none(),
        "no budget, no fields: {raw:?}"
    );
}

#[tokio::test]
async fn a_signed_in_get_and_its_viewer_fields_are_never_public() {
    let key = TestKey::rsa("rsa-cache");
    let jwks = JwksServer::start(&[&key]).await;
    let app = TestApp::under_jwt(&jwks, 3, &[]).await;
    let bearer = format!("Bearer {}", key.sign(&claims("alice", json!({}))));

    // The attack: a CDN in front would keep Alice's page (with her `viewerCan*`) for Bob.
    let signed_in = app
        .raw_get(PAGE, &sku(), &[("Authorization", &bearer)])
        .await;
    assert_eq!(signed_in.status, 200, "{signed_in:?}");
    let control = signed_in.header("cache-control").expect("Cache-Control");
    assert!(control.starts_with("private"), "{control}");
    assert!(!control.contains("public"), "{control}");
    assert!(signed_in.varies_with("accept"));
    let edges = &signed_in.json()["data"]["product"]["comments"]["edges"];
    assert!(edges[0]["node"]["viewerCanUpdate"].is_boolean(), "{edges}");

    // A header the server does not even verify under `--auth off` still keeps it private.
    let open = TestApp::embedded(3).await;
    let raw = open
        .raw_get(PAGE, &sku(), &[("Authorization", "Bearer anything")])
        .await;
    assert_eq!(
        raw.header("cache-control").as_deref(),
        Some("private, max-age=5")
    );

    // A normal anonymous client is still served, publicly.
    let anonymous = app.raw_get(PAGE, &sku(), &[]).await;
    assert_eq!(
        anonymous.header("cache-control").as_deref(),
        Some("public, max-age=5, stale-while-revalidate=30")
    );
    assert!(anonymous.json()["data"]["product"].is_object());
}

#[tokio::test]
async fn the_budget_is_in_ratelimit_fields_and_out_of_shared_bodies() {
    let app = TestApp::cost_budgeted(3, 5000, &[]).await;
    let first = app.raw_get(PAGE, &sku(), &[]).await;
    assert_eq!(
        first.header("ratelimit-policy").as_deref(),
        Some("\"cost\";q=5000;w=5000")
    );
    // A CDN may keep an anonymous page, so it shows no one client's budget: that is in the
    // headers only.
    assert_eq!(
        first.header("cache-control").as_deref(),
        Some("public, max-age=5, stale-while-revalidate=30")
    );
    let cost = &first.json()["extensions"]["cost"];
    assert_eq!(cost["throttleStatus"], Value::Null, "{cost}");
    assert!(cost["requestedQueryCost"].as_u64() > Some(0), "{cost}");

    // With `throttleStatus` in the body, the response is the client's own.
    let mine = app
        .raw_get(PAGE, &sku(), &[("Authorization", "Bearer mine")])
        .await;
    assert_eq!(
        mine.header("cache-control").as_deref(),
        Some("private, max-age=5")
    );
    let status = &mine.json()["extensions"]["cost"]["throttleStatus"];
    assert_eq!(
        status["currentlyAvailable"].as_u64(),
        Some(mine.remaining()),
        "the header and the body say the same: {status}"
    );
    assert!(
        mine.remaining() < first.remaining(),
        "the budget goes down: {:?} then {:?}",
        first.header("ratelimit"),
        mine.header("ratelimit")
    );
    // A failed request shows the budget too, and is kept by no cache.
    let failed = app.raw_get("{ product(sku: ", &json!({}), &[]).await;
    assert_eq!(failed.header("cache-control").as_deref(), Some("no-store"));
    assert!(failed.remaining() <= mine.remaining(), "{failed:?}");
    let third = app.raw_get(PAGE, &sku(), &[]).await;
    assert_eq!(third.status, 200);
    assert!(
        third.remaining() < failed.remaining(),
        "{:?} then {:?} then {:?}",
        first.header("ratelimit"),
        mine.header("ratelimit"),
        third.header("ratelimit")
    );
}

#[tokio::test]
async fn a_large_page_is_compressed_as_asked_and_decodes_to_the_same_json() {
    let app = TestApp::embedded(40).await;
    let plain = app.raw_get(PAGE, &sku(), &[]).await;
    assert_eq!(plain.header("content-encoding"), None);
    assert!(
        plain.body.len() > 4096,
        "a large page: {} bytes",
        plain.body.len()
    );
    let expected = plain.json();
    for encoding in ["gzip", "br", "zstd"] {
        let raw = app
            .raw_get(PAGE, &sku(), &[("Accept-Encoding", encoding)])
            .await;
        assert_eq!(raw.status, 200);
        assert_eq!(raw.header("content-encoding").as_deref(), Some(encoding));
        assert!(raw.varies_with("accept-encoding"), "{encoding}: {raw:?}");
        assert!(raw.varies_with("accept"), "{encoding}: {raw:?}");
        assert!(
            raw.body.len() < plain.body.len() / 2,
            "{encoding}: {} of {} bytes",
            raw.body.len(),
            plain.body.len()
        );
        assert_eq!(raw.json(), expected, "{encoding}");
    }
    // The client's preference decides among several.
    let preferred = app
        .raw_get(
            PAGE,
            &sku(),
            &[("Accept-Encoding", "gzip;q=0.5, zstd;q=1.0, br;q=0.8")],
        )
        .await;
    assert_eq!(
        preferred.header("content-encoding").as_deref(),
        Some("zstd")
    );
}

#[tokio::test]
async fn a_small_response_is_not_compressed() {
    let app = TestApp::embedded(0).await;
    let raw = app
        .raw_get(
            "{ __typename }",
            &json!({}),
            &[("Accept-Encoding", "gzip, br, zstd")],
        )
        .await;
    assert_eq!(raw.status, 200);
    assert_eq!(raw.header("content-encoding"), None, "{raw:?}");
    assert_eq!(raw.json()["data"]["__typename"], "Query");
}

/// tower-http alone ran the query, charged it, and sent its full body `public` under a 406;
/// `http::compression`'s guard refuses first (see its comment).
#[tokio::test]
async fn a_client_refusing_every_encoding_gets_406_and_nothing_runs() {
    let app = TestApp::cost_budgeted(3, 5000, &[]).await;
    let before = app.raw_get(PAGE, &sku(), &[]).await.remaining();
    let refused = app
        .raw_get(PAGE, &sku(), &[("Accept-Encoding", "identity;q=0")])
        .await;
    assert_eq!(refused.status, 406, "{refused:?}");
    assert_eq!(refused.header("cache-control").as_deref(), Some("no-store"));
    assert_eq!(refused.header("content-encoding"), None);
    let body = refused.json();
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "BAD_REQUEST",
        "{body}"
    );
    assert!(body.get("data").is_none(), "nothing ran: {body}");
    // A normal client is served, and the refusal cost it nothing.
    let after = app
        .raw_get(PAGE, &sku(), &[("Accept-Encoding", "gzip")])
        .await;
    assert_eq!(after.status, 200);
    assert!(after.json()["data"]["product"].is_object());
    let cost = after.json()["extensions"]["cost"]["requestedQueryCost"]
        .as_u64()
        .expect("a cost");
    assert!(
        after.remaining() + cost >= before,
        "{before} then {after:?}"
    );
}

/// A WebSocket handshake asking for compression gets a plain 101: frames are never compressed
/// (no permessage-deflate; README says why), and the layer leaves the upgrade alone.
#[tokio::test]
async fn a_websocket_upgrade_is_not_compressed() {
    let app = TestApp::embedded(0).await;
    let authority = app.authority();
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .expect("connect");
    let request = format!(
        "GET /graphql HTTP/1.1\r\nHost: {authority}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: graphql-transport-ws\r\n\
         Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\
         Accept-Encoding: gzip, br, zstd\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.expect("a handshake");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).expect("ASCII").to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(!head.contains("content-encoding"), "{head}");
    assert!(!head.contains("sec-websocket-extensions"), "{head}");
    drop(stream);
    // A normal client is still served.
    let raw = app.raw_get("{ __typename }", &json!({}), &[]).await;
    assert_eq!(raw.status, 200);
}

#[tokio::test]
async fn under_a_cors_list_a_response_varies_with_origin_and_exposes_the_budget() {
    let app = TestApp::spawn(&[
        "--demo-comments",
        "0",
        "--cors-origin",
        "https://shop.example.com",
        "--rate-limit-cost",
        "100",
        "--rate-limit-writes",
        "0",
    ])
    .await;
    let raw = app
        .raw_get(
            "{ __typename }",
            &json!({}),
            &[("Origin", "https://shop.example.com")],
        )
        .await;
    assert_eq!(raw.status, 200);
    assert!(raw.varies_with("origin"), "{raw:?}");
    assert!(raw.varies_with("accept"), "{raw:?}");
    let exposed = raw
        .header("access-control-expose-headers")
        .expect("exposed headers")
        .to_ascii_lowercase();
    let exposed: Vec<&str> = exposed.split(',').map(str::trim).collect();
    for name in [
        "ratelimit",
        "ratelimit-policy",
        "retry-after",
        "x-request-id",
    ] {
        assert!(exposed.contains(&name), "{name} in {exposed:?}");
    }
}
