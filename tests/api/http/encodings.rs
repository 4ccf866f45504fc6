//! The `Content-Encoding` a client receives for what its `Accept-Encoding` says, on the raw
//! bytes: the highest weight wins, and among equal weights br, then gzip, then zstd (clients
//! list zstd without always decoding it: `src/http/compression/coding.rs` says which), the same
//! for an answer computed and compressed by the compression layer and for one the response
//! cache keeps and encodes itself. Every body decodes to the same JSON.

use serde_json::{Value, json};

use crate::helpers::raw_http::Raw;
use crate::helpers::{DEMO_SKU, TestApp};

/// A page well above the compression threshold.
const PAGE: &str = "query($sku: String!) { product(sku: $sku) { comments(first: 40) { edges { cursor node { id author body rating createdAt } } } } }";

/// `Accept-Encoding` lines a request sends, and the coding it must get (`None`: identity).
const CASES: [(&[&str], Option<&str>); 11] = [
    // GraphQL Code Generator's loader (`@whatwg-node/node-fetch`), even on Node 20.
    (&["gzip, deflate, br, zstd"], Some("br")),
    // Browsers.
    (&["gzip, deflate, br"], Some("br")),
    (&["zstd;q=1, br;q=0.5"], Some("zstd")),
    (&["gzip;q=0.5, zstd;q=1.0, br;q=0.8"], Some("zstd")),
    (&["zstd, gzip"], Some("gzip")),
    (&["zstd"], Some("zstd")),
    (&["*"], Some("br")),
    (&["br;q=0, *"], Some("gzip")),
    (&["zstd", "br"], Some("br")),
    (&["deflate"], None),
    (&["identity, zstd;q=0.5"], None),
];

fn sku() -> Value {
    json!({ "sku": DEMO_SKU })
}

async fn page(app: &TestApp, accept_encoding: &[&str]) -> Raw {
    let headers: Vec<(&str, &str)> = accept_encoding
        .iter()
        .map(|value| ("Accept-Encoding", *value))
        .collect();
    let raw = app.raw_get(PAGE, &sku(), &headers).await;
    assert_eq!(raw.status, 200, "{accept_encoding:?}: {raw:?}");
    raw
}

#[tokio::test]
async fn a_computed_answer_is_br_then_gzip_then_zstd_among_equal_weights() {
    let app = TestApp::embedded(40).await;
    let plain = page(&app, &[]).await;
    assert!(plain.header("content-encoding").is_none());
    for (accept_encoding, coding) in CASES {
        let raw = page(&app, accept_encoding).await;
        assert_eq!(
            raw.header("content-encoding").as_deref(),
            coding,
            "Accept-Encoding: {accept_encoding:?}"
        );
        assert_eq!(raw.json(), plain.json(), "{accept_encoding:?}");
    }
}

#[tokio::test]
async fn a_kept_answer_goes_out_in_the_same_coding_as_a_computed_one() {
    let app = TestApp::spawn(&["--demo-comments", "40", "--response-cache-bytes", "8388608"]).await;
    let plain = page(&app, &[]).await;
    // Computed, then computed again and kept verified: hits from then on carry its ETag.
    let kept = page(&app, &[]).await;
    assert!(kept.header("etag").is_some(), "{kept:?}");
    for (accept_encoding, coding) in CASES {
        let hit = page(&app, accept_encoding).await;
        assert!(hit.header("etag").is_some(), "a hit: {hit:?}");
        assert_eq!(
            hit.header("content-encoding").as_deref(),
            coding,
            "Accept-Encoding: {accept_encoding:?}"
        );
        assert_eq!(hit.json(), plain.json(), "{accept_encoding:?}");
    }
}
