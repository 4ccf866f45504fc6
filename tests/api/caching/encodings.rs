//! A kept answer is compressed once per coding, not once per hit (issue 42, item 2): the real
//! binary (its own process, so its `/metrics` count only these requests) answers forty gzip
//! hits of one large entry with one run of the gzip encoder, every coding's bytes decode to
//! the same JSON as the identity body, each coding has its own strong `ETag` and revalidates
//! with it, and the responses vary with `Accept-Encoding` as the compression layer's do.

use std::time::Duration;

use serde_json::json;

use crate::caching::headers::Raw;
use crate::caching::response_cache::raw;
use crate::helpers::{DEMO_SKU, dynapage_command};

const LARGE: &str = "query($sku: String!) { comments(sku: $sku, first: 100) { edges { cursor node { id author body rating createdAt } } } }";
const SMALL: &str =
    "query($sku: String!) { comments(sku: $sku, first: 1) { edges { node { id } } } }";

/// `dynapage serve` as a child process on a free port, killed on drop.
struct Server {
    _child: tokio::process::Child,
    authority: String,
}

impl Server {
    async fn start(args: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let authority = format!("127.0.0.1:{port}");
        let child = dynapage_command("serve")
            .args(["--listen", &authority])
            .args(["--rate-limit-cost", "0", "--rate-limit-writes", "0"])
            .args(args)
            .spawn()
            .expect("the dynapage binary runs");
        let client = reqwest::Client::new();
        for _ in 0..600 {
            let healthy = client
                .get(format!("http://{authority}/healthz"))
                .send()
                .await;
            if healthy.is_ok_and(|r| r.status().is_success()) {
                return Self {
                    _child: child,
                    authority,
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("serve did not become healthy");
    }

    async fn get(&self, query: &str, headers: &[(&str, &str)]) -> Raw {
        let variables = json!({ "sku": DEMO_SKU }).to_string();
        let url = reqwest::Url::parse_with_params(
            &format!("http://{}/graphql", self.authority),
            &[("query", query), ("variables", &variables)],
        )
        .expect("a URL");
        let path = format!("{}?{}", url.path(), url.query().unwrap_or_default());
        raw(&self.authority, "GET", &path, headers, "").await
    }

    /// The counter `name{labels}` in `/metrics` (0 when absent).
    async fn counter(&self, series: &str) -> u64 {
        let text = reqwest::get(format!("http://{}/metrics", self.authority))
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or(0)
    }
}

fn encodings(coding: &str) -> String {
    format!("dynapage_response_cache_encodings_total{{coding=\"{coding}\"}} ")
}

fn varies_with_accept_encoding(page: &Raw) -> bool {
    page.header("vary").is_some_and(|vary| {
        vary.split(',')
            .any(|v| v.trim().eq_ignore_ascii_case("accept-encoding"))
    })
}

#[tokio::test]
async fn forty_gzip_hits_of_one_entry_run_the_encoder_once_and_every_coding_decodes_alike() {
    let server = Server::start(&[
        "--demo-comments",
        "150",
        "--response-cache-bytes",
        "8388608",
    ])
    .await;
    // Computed, then computed again and kept verified: as identity, so no encoder ran yet.
    server.get(LARGE, &[]).await;
    let identity = server.get(LARGE, &[]).await;
    let etag = identity.header("etag").expect("an ETag once verified");
    assert!(identity.header("content-encoding").is_none());
    assert!(varies_with_accept_encoding(&identity));
    let plain = identity.json();
    assert!(identity.body.len() > 10_000, "a large answer");
    assert_eq!(server.counter(&encodings("gzip")).await, 0);

    let gzip = [("Accept-Encoding", "gzip")];
    let first = server.get(LARGE, &gzip).await;
    for _ in 0..39 {
        let hit = server.get(LARGE, &gzip).await;
        assert_eq!(hit.status, 200);
        assert_eq!(hit.header("content-encoding").as_deref(), Some("gzip"));
        assert_eq!(hit.body, first.body, "the kept bytes");
        assert_eq!(hit.json(), plain, "decoded once, the same JSON");
    }
    assert_eq!(
        server.counter(&encodings("gzip")).await,
        1,
        "one encoding for forty hits"
    );
    assert!(first.body.len() < identity.body.len() / 3);

    let mut etags = vec![etag.clone()];
    for coding in ["gzip", "br", "zstd"] {
        let asked = [("Accept-Encoding", coding)];
        let page = server.get(LARGE, &asked).await;
        assert_eq!(page.header("content-encoding").as_deref(), Some(coding));
        assert_eq!(page.json(), plain, "{coding} decodes to the same JSON");
        assert!(varies_with_accept_encoding(&page));
        let coded = page.header("etag").expect("an ETag");
        assert_eq!(coded, format!("{}-{coding}\"", etag.trim_end_matches('"')));
        assert!(!etags.contains(&coded), "its own validator");
        etags.push(coded.clone());
        let revalidated = server
            .get(
                LARGE,
                &[("Accept-Encoding", coding), ("If-None-Match", &coded)],
            )
            .await;
        assert_eq!(revalidated.status, 304, "{coding} revalidates");
        assert_eq!(revalidated.header("etag"), Some(coded.clone()));
        assert!(varies_with_accept_encoding(&revalidated));
        // Another coding's validator names other bytes: the body comes.
        let other = server
            .get(
                LARGE,
                &[("Accept-Encoding", coding), ("If-None-Match", &etag)],
            )
            .await;
        assert_eq!(other.status, 200);
        assert_eq!(server.counter(&encodings(coding)).await, 1, "{coding}");
    }

    // A small answer goes out as it is, as the layer leaves it.
    for _ in 0..3 {
        let small = server.get(SMALL, &gzip).await;
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
    let server =
        Server::start(&["--demo-comments", "40", "--response-cache-bytes", "8388608"]).await;
    let demo = |headers: Vec<(&'static str, String)>| {
        let authority = server.authority.clone();
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            raw(&authority, "GET", "/demo", &headers, "").await
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
