//! A kept answer is compressed once per coding, not once per hit (issue 42, item 2): the real
//! binary (its own process, so its `/metrics` count only these requests) answers forty gzip
//! hits of one large entry with one run of the gzip encoder, every coding's bytes decode to
//! the same JSON as the identity body, each coding has its own strong `ETag` and revalidates
//! with it, and the responses vary with `Accept-Encoding` as the compression layer's do.

use serde_json::json;

use crate::helpers::process::ServerProcess;
use crate::helpers::raw_http::Raw;
use crate::helpers::{DEMO_SKU, RATE_LIMITS_OFF};

const LARGE: &str = "query($sku: String!) { comments(sku: $sku, first: 100) { edges { cursor node { id author body rating createdAt } } } }";
const SMALL: &str =
    "query($sku: String!) { comments(sku: $sku, first: 1) { edges { node { id } } } }";

/// `dynapage serve` as a process of its own (so its `/metrics` count only these requests), rate
/// limits off, with `args`.
async fn server(args: &[&str]) -> ServerProcess {
    ServerProcess::start(&[&RATE_LIMITS_OFF[..], args].concat()).await
}

/// A GET of `query` for the demo product, with `headers`.
async fn get(server: &ServerProcess, query: &str, headers: &[(&str, &str)]) -> Raw {
    server
        .raw_get(query, &json!({ "sku": DEMO_SKU }), headers)
        .await
}

/// How many times the response cache has encoded an entry in `coding`.
async fn encoded(server: &ServerProcess, coding: &str) -> f64 {
    let metrics = server.metrics().await;
    metrics.value(
        "dynapage_response_cache_encodings_total",
        &[("coding", coding)],
    )
}

fn varies_with_accept_encoding(page: &Raw) -> bool {
    page.header("vary").is_some_and(|vary| {
        vary.split(',')
            .any(|v| v.trim().eq_ignore_ascii_case("accept-encoding"))
    })
}

#[tokio::test]
async fn forty_gzip_hits_of_one_entry_run_the_encoder_once_and_every_coding_decodes_alike() {
    let server = server(&[
        "--demo-comments",
        "150",
        "--response-cache-bytes",
        "8388608",
    ])
    .await;
    // Computed, then computed again and kept verified: as identity, so no encoder ran yet.
    get(&server, LARGE, &[]).await;
    let identity = get(&server, LARGE, &[]).await;
    let etag = identity.header("etag").expect("an ETag once verified");
    assert!(identity.header("content-encoding").is_none());
    assert!(varies_with_accept_encoding(&identity));
    let plain = identity.json();
    assert!(identity.body.len() > 10_000, "a large answer");
    assert_eq!(encoded(&server, "gzip").await, 0.0);

    let gzip = [("Accept-Encoding", "gzip")];
    let first = get(&server, LARGE, &gzip).await;
    for _ in 0..39 {
        let hit = get(&server, LARGE, &gzip).await;
        assert_eq!(hit.status, 200);
        assert_eq!(hit.header("content-encoding").as_deref(), Some("gzip"));
        assert_eq!(hit.body, first.body, "the kept bytes");
        assert_eq!(hit.json(), plain, "decoded once, the same JSON");
    }
    assert_eq!(
        encoded(&server, "gzip").await,
        1.0,
        "one encoding for forty hits"
    );
    assert!(first.body.len() < identity.body.len() / 3);

    let mut etags = vec![etag.clone()];
    for coding in ["gzip", "br", "zstd"] {
        let asked = [("Accept-Encoding", coding)];
        let page = get(&server, LARGE, &asked).await;
        assert_eq!(page.header("content-encoding").as_deref(), Some(coding));
        assert_eq!(page.json(), plain, "{coding} decodes to the same JSON");
        assert!(varies_with_accept_encoding(&page));
        let coded = page.header("etag").expect("an ETag");
        assert_eq!(coded, format!("{}-{coding}\"", etag.trim_end_matches('"')));
        assert!(!etags.contains(&coded), "its own validator");
        etags.push(coded.clone());
        let revalidated = get(
            &server,
            LARGE,
            &[("Accept-Encoding", coding), ("If-None-Match", &coded)],
        )
        .await;
        assert_eq!(revalidated.status, 304, "{coding} revalidates");
        assert_eq!(revalidated.header("etag"), Some(coded.clone()));
        assert!(varies_with_accept_encoding(&revalidated));
        // Another coding's validator names other bytes: the body comes.
        let other = get(
            &server,
            LARGE,
            &[("Accept-Encoding", coding), ("If-None-Match", &etag)],
        )
        .await;
        assert_eq!(other.status, 200);
        assert_eq!(encoded(&server, coding).await, 1.0, "{coding}");
    }

    // A small answer goes out as it is, as the layer leaves it.
    for _ in 0..3 {
        let small = get(&server, SMALL, &gzip).await;
        assert_eq!(small.status, 200);
        assert!(small.header("content-encoding").is_none());
        assert!(!varies_with_accept_encoding(&small));
    }
}

/// The storefront page is drawn per view and compressed by the layer: a strong `ETag` would
/// name both the gzip and the plain page, so the compressed page's `ETag` is weak, and a
/// browser revalidating with it still gets its `304`.
#[tokio::test]
async fn a_page_the_layer_compresses_carries_a_weak_etag_that_still_revalidates() {
    let server = server(&["--demo-comments", "40", "--response-cache-bytes", "8388608"]).await;
    let demo = |headers: Vec<(&'static str, String)>| {
        let server = &server;
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            server.raw_request("GET", "/demo", &headers, "").await
        }
    };
    let mut page = demo(vec![("Accept-Encoding", "gzip".into())]).await;
    for _ in 0..3 {
        if page.header("etag").is_some() {
            break;
        }
        page = demo(vec![("Accept-Encoding", "gzip".into())]).await;
    }
    assert_eq!(page.header("content-encoding").as_deref(), Some("gzip"));
    let weak = page.header("etag").expect("an ETag");
    assert!(weak.starts_with("W/\""), "{weak}");
    let plain = demo(vec![]).await;
    let strong = plain.header("etag").expect("an ETag");
    assert!(
        strong.starts_with('"'),
        "the plain page's is strong: {strong}"
    );
    let revalidated = demo(vec![
        ("Accept-Encoding", "gzip".into()),
        ("If-None-Match", weak),
    ])
    .await;
    assert_eq!(revalidated.status, 304);
}
