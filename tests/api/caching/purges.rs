//! CDN purges and tags under load, against a purge recorder (a real HTTP server on a free port
//! that answers every request 200 and notes each `xkey-purge`): a vote toggled over and over
//! on one product costs two purges, not one per toggle, while another product's change is
//! purged at once (without the window it was one purge per toggle); and a response that read more products than the tags header can name is
//! not given to shared caches, while a small one is tagged as ever.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::raw_http::{Raw, graphql_path};
use crate::helpers::{DEMO_SKU, TestApp, newest_ids};

/// The purges received: their tags and when they came.
pub(crate) type Purges = Arc<Mutex<Vec<(Instant, String)>>>;

/// Listens on a free port and records every request's `xkey-purge` header (keep-alive
/// connections included); answers 200 with an empty body.
pub(crate) async fn purge_recorder() -> (String, Purges) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the recorder");
    let url = format!("http://{}/", listener.local_addr().expect("an address"));
    let purges = Purges::default();
    let seen = purges.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
                        buffer.drain(..end + 4);
                        let tags = head.lines().find_map(|line| {
                            let (name, value) = line.split_once(':')?;
                            name.eq_ignore_ascii_case("xkey-purge")
                                .then(|| value.trim().to_owned())
                        });
                        if let Some(tags) = tags {
                            seen.lock().expect("purges").push((Instant::now(), tags));
                        }
                        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                        if socket.write_all(ok).await.is_err() {
                            return;
                        }
                    }
                    match socket.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (url, purges)
}

/// When each purge naming `tag` came.
pub(crate) fn purges_of(purges: &Purges, tag: &str) -> Vec<Instant> {
    purges
        .lock()
        .expect("purges")
        .iter()
        .filter(|(_, tags)| tags.split(' ').any(|t| t == tag))
        .map(|(at, _)| *at)
        .collect()
}

const MARK: &str = "mutation($id: ID!, $helpful: Boolean!) { markHelpful(input: { commentId: $id, helpful: $helpful }) { comment { helpfulCount } } }";

#[tokio::test]
async fn a_vote_toggled_in_a_burst_is_purged_at_once_and_once_more_after_its_window() {
    let (url, purges) = purge_recorder().await;
    let app = TestApp::spawn(&[
        "--demo-comments",
        "20",
        "--purge-url",
        &url,
        "--purge-format",
        "varnish",
    ])
    .await;
    let tag = format!("sku-{DEMO_SKU}");
    let comment = newest_ids(&app, 1).await.remove(0);
    // Past the window of any purge the seeding made.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let before = purges_of(&purges, &tag).len();

    // A toggle every 100 ms for 1.6 s: each is applied to the index on its own (the index's
    // feed would fold toggles sent back to back into one batch, and so into one purge).
    let started = Instant::now();
    let mut last_toggle = started;
    for toggle in 0..16 {
        let data = app
            .data(MARK, json!({ "id": comment, "helpful": toggle % 2 == 0 }))
            .await;
        assert!(data["markHelpful"]["comment"]["helpfulCount"].is_number());
        last_toggle = Instant::now();
        if toggle == 7 {
            app.add_comment(None, "BYSTANDER", "changed meanwhile", 4)
                .await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let toggled_for = last_toggle - started;
    // The trailing purge comes at most a window after the first.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let voted = purges_of(&purges, &tag)[before..].to_vec();
    let windows = toggled_for.as_millis().div_ceil(1_000) as usize;
    assert!(
        voted.len() >= 2 && voted.len() <= 1 + windows,
        "{} purges for 16 toggles in {toggled_for:?}",
        voted.len()
    );
    assert!(
        voted[0] - started < Duration::from_millis(900),
        "the first toggle is purged at once: {:?}",
        voted[0] - started
    );
    let last = *voted.last().expect("a purge");
    assert!(last >= last_toggle, "the last toggle is purged too");
    assert!(
        voted
            .windows(2)
            .all(|w| w[1] - w[0] >= Duration::from_millis(950)),
        "one purge a window: {voted:?}"
    );
    let bystander = purges_of(&purges, "sku-BYSTANDER");
    assert_eq!(bystander.len(), 1, "the other product's change, at once");
    assert!(
        bystander[0] < last,
        "not held up by the voted product's window"
    );

    // A normal reader is served the last state.
    let count = app
        .data(
            "query($id: ID!) { node(id: $id) { ... on Comment { helpfulCount } } }",
            json!({ "id": comment }),
        )
        .await;
    assert_eq!(
        count["node"]["helpfulCount"], 0,
        "twenty toggles end unvoted"
    );
    app.stop().await.expect("clean stop");
}

/// A SKU of 60 characters (its tag, `sku-` and a space: 65 bytes of the header).
fn long_sku(i: usize) -> String {
    format!("P{i:0>59}")
}

const NODES: &str = "query($a: [ID!]!, $b: [ID!]!) { a: nodes(ids: $a) { ... on Comment { id product { sku } } } b: nodes(ids: $b) { ... on Comment { id } } }";

async fn get_nodes(app: &TestApp, a: &[String], b: &[String]) -> Raw {
    let path = graphql_path(NODES, &json!({ "a": a, "b": b }));
    app.raw_request("GET", &path, &[], "").await
}

#[tokio::test]
async fn a_response_reading_more_products_than_the_tags_header_holds_is_kept_from_shared_caches() {
    let app = TestApp::spawn(&["--demo-comments", "0", "--response-cache-bytes", "8388608"]).await;
    let mut ids = Vec::new();
    for i in 0..130 {
        ids.push(app.add_comment(None, &long_sku(i), "b", 4).await);
    }
    // Three times: the answer computed, computed again and kept verified, then a hit.
    for attempt in 0..3 {
        let many = get_nodes(&app, &ids[..65], &ids[65..]).await;
        assert_eq!(many.status, 200);
        let body: Value = many.json();
        assert!(body.get("errors").is_none(), "{body}");
        assert_eq!(body["data"]["a"].as_array().map(Vec::len), Some(65));
        assert_eq!(
            many.header("cache-control").as_deref(),
            Some("private, max-age=5"),
            "attempt {attempt}: 130 products do not fit the tags header"
        );
        assert!(many.header("surrogate-key").is_none());
    }
    // A normal batch is public and tagged.
    for _ in 0..3 {
        let few = get_nodes(&app, &ids[..2], &ids[2..3]).await;
        assert_eq!(few.status, 200);
        assert!(
            few.header("cache-control")
                .is_some_and(|c| c.starts_with("public"))
        );
        let tags = few.header("surrogate-key").expect("tags");
        assert_eq!(tags.split(' ').count(), 3, "{tags}");
        assert!(tags.len() < dynapage::http::MAX_TAGS_BYTES);
    }
    app.stop().await.expect("clean stop");
}
