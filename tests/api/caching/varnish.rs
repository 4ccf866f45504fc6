//! Varnish (Debian's `varnish` with vmod xkey from `varnish-modules`) in front of the server,
//! with the repository's VCL (`deploy/varnish/default.vcl`): a repeated GET is a hit, a write
//! purges its product's pages by their `Surrogate-Key` (sent by whatever applied it to the
//! index, here the embedded server), another product's pages stay cached, and a request with
//! `Authorization` is neither served from the cache nor stored in it. On DynamoDB Local and
//! Redis, a comment written straight into the table reaches the index through `serve --sync`,
//! which purges its product.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use dynapage::store::CommentStore;

use crate::caching::response_cache::page_path;
use crate::helpers::process::free_port;
use crate::helpers::raw_http::{self, Raw};
use crate::helpers::{DEMO_SKU, TestApp};
use crate::support::backends::Backends;
use crate::support::data::generated;
use crate::support::redis_server::shared_url;

const OTHER_SKU: &str = "OTHER_PRODUCT";

/// A `varnishd -F` of its own (working directory in a temp dir), killed on drop.
struct Varnish {
    child: Child,
    authority: String,
    _dir: tempfile::TempDir,
}

impl Drop for Varnish {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Varnish {
    /// Starts Varnish on `port` with the repository's VCL, its backend set to `backend`.
    async fn start(port: u16, backend: &str) -> Self {
        let (host, backend_port) = backend.rsplit_once(':').expect("host:port");
        let vcl = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/deploy/varnish/default.vcl"
        ))
        .expect("the repository's VCL");
        let vcl = vcl
            .replace(".host = \"127.0.0.1\";", &format!(".host = \"{host}\";"))
            .replace(".port = \"8080\";", &format!(".port = \"{backend_port}\";"));
        let dir = tempfile::tempdir().expect("a temp dir");
        let vcl_path = dir.path().join("default.vcl");
        std::fs::write(&vcl_path, vcl).expect("write the VCL");
        let child = Command::new("varnishd")
            .arg("-F")
            .args(["-j", "none"])
            .arg("-n")
            .arg(dir.path().join("work"))
            .args(["-a", &format!("127.0.0.1:{port}")])
            .arg("-f")
            .arg(&vcl_path)
            .args(["-s", "malloc,32m", "-T", "none"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("varnishd (Debian's varnish; scripts/test installs it)");
        let varnish = Self {
            child,
            authority: format!("127.0.0.1:{port}"),
            _dir: dir,
        };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(&varnish.authority)
                .await
                .is_ok()
            {
                return varnish;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("varnishd did not listen within 10 s");
    }

    async fn get(&self, sku: &str, headers: &[(&str, &str)]) -> Raw {
        raw_http::request(&self.authority, "GET", &page_path(sku), headers, "").await
    }
}

fn first_body(page: &Raw) -> String {
    page.json()["data"]["comments"]["edges"][0]["node"]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn varnish_keeps_anonymous_pages_until_a_write_purges_their_product() {
    let port = free_port();
    let purge_url = format!("http://127.0.0.1:{port}/");
    let app = TestApp::spawn(&[
        "--demo-comments",
        "20",
        "--response-cache-bytes",
        "1048576",
        "--cache-max-age",
        "3600",
        "--purge-url",
        &purge_url,
        "--purge-format",
        "varnish",
    ])
    .await;
    let varnish = Varnish::start(port, app.address.trim_start_matches("http://")).await;
    app.add_comment(None, OTHER_SKU, "other's first", 4).await;
    // That comment's purge is sent apart from the write and may land after its page is kept
    // (on a loaded machine, well after): wait until a page stays kept across half a second.
    for sku in [DEMO_SKU, OTHER_SKU] {
        crate::helpers::eventually("a page Varnish keeps", || async {
            let first = varnish.get(sku, &[]).await;
            assert_eq!(first.status, 200);
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            let second = varnish.get(sku, &[]).await;
            assert!(
                second.header("xkey").is_none(),
                "the VCL's own header stays inside"
            );
            let hit = second.header("x-cache").as_deref() == Some("HIT");
            (hit && second.body == first.body).then_some(())
        })
        .await;
    }

    app.add_comment(None, DEMO_SKU, "purged in", 4).await;
    let fresh = crate::helpers::eventually("the purge reaches Varnish", || async {
        let page = varnish.get(DEMO_SKU, &[]).await;
        (first_body(&page) == "purged in").then_some(page)
    })
    .await;
    assert_eq!(fresh.header("x-cache").as_deref(), Some("MISS"));
    let other = varnish.get(OTHER_SKU, &[]).await;
    assert_eq!(
        other.header("x-cache").as_deref(),
        Some("HIT"),
        "not purged"
    );

    for _ in 0..2 {
        let signed = varnish
            .get(DEMO_SKU, &[("Authorization", "Bearer someone")])
            .await;
        assert_eq!(
            signed.header("x-cache").as_deref(),
            Some("MISS"),
            "never from the cache"
        );
        assert!(
            signed
                .header("cache-control")
                .unwrap_or_default()
                .starts_with("private")
        );
        assert!(signed.json()["extensions"]["cost"].is_object());
    }
    let anonymous = varnish.get(DEMO_SKU, &[]).await;
    assert_eq!(anonymous.header("x-cache").as_deref(), Some("HIT"));
    assert!(
        anonymous.json().get("extensions").is_none(),
        "nothing of the viewer's stored"
    );
    drop(varnish);
    app.stop().await.expect("clean stop");
}

fn total(page: &Raw) -> i64 {
    page.json()["data"]["comments"]["totalCount"]
        .as_i64()
        .expect("a totalCount")
}

#[tokio::test]
async fn on_dynamodb_and_redis_a_write_straight_into_the_table_purges_through_serve_sync() {
    let backends = Backends::on(&shared_url()).await;
    let port = free_port();
    let purge_url = format!("http://127.0.0.1:{port}/");
    let app = backends
        .serve_syncing(&[
            "--cache-max-age",
            "3600",
            "--response-cache-bytes",
            "1048576",
            "--purge-url",
            &purge_url,
        ])
        .await;
    let varnish = Varnish::start(port, app.address.trim_start_matches("http://")).await;
    for sku in ["STRAIGHT", "BYSTANDER"] {
        let comment = generated(sku, 7, 1).remove(0);
        backends
            .store
            .create(&comment)
            .await
            .expect("a direct write");
    }
    crate::helpers::eventually("the stream applies both", || async {
        let counts = [
            total(
                &varnish
                    .get("STRAIGHT", &[("Authorization", "Bearer x")])
                    .await,
            ),
            total(
                &varnish
                    .get("BYSTANDER", &[("Authorization", "Bearer x")])
                    .await,
            ),
        ];
        (counts == [1, 1]).then_some(())
    })
    .await;
    // The purges of those first writes may land after a page is kept: wait until it stays.
    for sku in ["STRAIGHT", "BYSTANDER"] {
        crate::helpers::eventually("a page Varnish keeps", || async {
            assert_eq!(total(&varnish.get(sku, &[]).await), 1);
            let again = varnish.get(sku, &[]).await;
            (again.header("x-cache").as_deref() == Some("HIT")).then_some(())
        })
        .await;
    }

    let comment = generated("STRAIGHT", 8, 1).remove(0);
    backends
        .store
        .create(&comment)
        .await
        .expect("a direct write");
    let fresh = crate::helpers::eventually("the stream's purge reaches Varnish", || async {
        let page = varnish.get("STRAIGHT", &[]).await;
        (total(&page) == 2).then_some(page)
    })
    .await;
    assert_eq!(fresh.header("x-cache").as_deref(), Some("MISS"));
    let bystander = varnish.get("BYSTANDER", &[]).await;
    assert_eq!(
        bystander.header("x-cache").as_deref(),
        Some("HIT"),
        "not purged"
    );
    drop(varnish);
    app.stop().await.expect("clean stop");
}

/// Varnish asks the server for gzip (its `http_gzip_support`) and keeps that coding: the
/// server sends the entry's kept gzip bytes with their own strong `ETag`, Varnish serves them
/// to clients that take gzip and unzips them for those that do not, and both revalidate.
#[tokio::test]
async fn through_varnish_the_kept_gzip_body_serves_every_client_and_revalidates() {
    let port = free_port();
    let app = TestApp::spawn(&[
        "--demo-comments",
        "150",
        "--response-cache-bytes",
        "8388608",
        "--cache-max-age",
        "3600",
    ])
    .await;
    // Kept verified on the server first, so the copy Varnish keeps has its ETag.
    for _ in 0..2 {
        app.raw_request("GET", &page_path(DEMO_SKU), &[], "").await;
    }
    let varnish = Varnish::start(port, app.address.trim_start_matches("http://")).await;
    let gzip = [("Accept-Encoding", "gzip")];
    let zipped = crate::helpers::eventually("a copy Varnish keeps", || async {
        let page = varnish.get(DEMO_SKU, &gzip).await;
        (page.header("x-cache").as_deref() == Some("HIT")).then_some(page)
    })
    .await;
    let plain = varnish.get(DEMO_SKU, &[]).await;
    assert_eq!(plain.status, 200);
    assert!(
        plain.header("content-encoding").is_none(),
        "unzipped by Varnish"
    );
    assert_eq!(plain.json()["data"], zipped.json()["data"]);
    for (headers, page) in [(&gzip[..], &zipped), (&[][..], &plain)] {
        let etag = page.header("etag").expect("an ETag");
        let mut revalidate = headers.to_vec();
        revalidate.push(("If-None-Match", etag.as_str()));
        let again = varnish.get(DEMO_SKU, &revalidate).await;
        assert_eq!(again.status, 304, "{etag}");
    }
    drop(varnish);
    app.stop().await.expect("clean stop");
}
