//! The hostile-request suite (issue 42): generated documents in every shape the parser, the
//! checks and the pricing walk take apart, sent over every transport to the real binary in a
//! process of its own, so that an abort is seen as one (a stack overflow aborts the whole
//! process: in an in-process server it would take the test runner down instead). It is built to
//! find the next crash rather than replay the last: each batch draws its inputs from a seeded
//! generator, at sizes around every bound (just under, at, just over, far over).
//!
//! After each batch the process must be alive, its resident memory within a bound, and a normal
//! client served the page it always gets; every request must be answered within its timeout.
//! An input that aborts, hangs or pins memory fails the suite.
//!
//! The binary is `DYNAPAGE_HOSTILE_BINARY` when set (CI sets the release build's), else the
//! test build's own.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::DEMO_SKU;
use crate::helpers::process::{ServerProcess, rss_mib};
use crate::helpers::websocket::{Socket, errors_of, open_socket};

/// The resident memory the server may reach during the suite, in MiB: its demo data and
/// caches take well under a hundred; what an attack pins comes on top.
const RSS_BOUND_MIB: f64 = 400.0;

/// Every answer comes within this, or the request hangs the server.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

/// The normal client's page: the same query, the same answer, before and after every batch.
const PAGE: &str = r#"query Page($sku: String!) { comments(sku: $sku, first: 3) { totalCount edges { node { id rating } } pageInfo { hasNextPage } } }"#;

/// The server under attack: the binary's process, a client that waits at most
/// [`ANSWER_WITHIN`], what a normal client sees.
struct Target {
    server: ServerProcess,
    client: reqwest::Client,
    page: Value,
}

impl Target {
    /// `dynapage serve` on a free port with the demo product, rate limits off (so every attack
    /// is done, not refused for its budget: the server must survive the work itself) and
    /// everything else as a user gets it.
    async fn start() -> Self {
        let binary = std::env::var("DYNAPAGE_HOSTILE_BINARY")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_dynapage").to_owned());
        let mut serve = tokio::process::Command::new(binary);
        serve
            .arg("serve")
            .env("RUST_LOG", "error")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true);
        let server = ServerProcess::start_from(
            serve,
            &[
                "--demo-comments",
                "2000",
                "--rate-limit-cost",
                "0",
                "--rate-limit-writes",
                "0",
                "--rate-limit-subscriptions",
                "0",
            ],
        )
        .await;
        let mut target = Self {
            server,
            client: reqwest::Client::builder()
                .timeout(ANSWER_WITHIN)
                .build()
                .expect("a client"),
            page: Value::Null,
        };
        target.page = target.normal_page().await.expect("the normal page");
        target
    }

    async fn normal_page(&self) -> Result<Value, reqwest::Error> {
        let body = json!({ "query": PAGE, "variables": { "sku": DEMO_SKU } });
        let response = self.client.post(self.url()).json(&body).send().await?;
        response.json().await
    }

    fn url(&self) -> String {
        self.server.url("/graphql")
    }

    fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// The checks after a batch: alive, within its memory bound, serving the normal page as
    /// before.
    async fn still_serves(&mut self, batch: &str) {
        if let Some(status) = self.server.child.try_wait().expect("a status") {
            panic!("the server died during the batch `{batch}`: {status}");
        }
        let rss = rss_mib(self.pid());
        assert!(
            rss < RSS_BOUND_MIB,
            "the server holds {rss:.0} MiB after the batch `{batch}`"
        );
        let page = self.normal_page().await.unwrap_or_else(|e| {
            panic!("a normal client was not served after the batch `{batch}`: {e}")
        });
        assert_eq!(page, self.page, "the normal page changed after `{batch}`");
    }

    /// POSTs `body` (raw bytes, as JSON) and returns the status and body, failing on a hang.
    async fn post_raw(&self, body: Vec<u8>, accept: &str) -> (u16, Vec<u8>) {
        let sent = self
            .client
            .post(self.url())
            .header("content-type", "application/json")
            .header("accept", accept)
            .body(body)
            .send()
            .await;
        let response = sent.unwrap_or_else(|e| self.no_answer(&e));
        let status = response.status().as_u16();
        (status, response.bytes().await.expect("a body").to_vec())
    }

    /// Fails the suite on a request that got no answer, saying whether the server died.
    fn no_answer(&self, error: &reqwest::Error) -> ! {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()));
        // The child is not reaped yet: a dead server is a zombie (state Z).
        let dead = stat.map_or(true, |s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        });
        if dead {
            panic!("the server died on this request: {error}");
        }
        panic!("the server did not answer within {ANSWER_WITHIN:?}: {error}");
    }

    /// GETs `/graphql` with `query` (and `variables`) in the URL.
    async fn get(&self, query: &str, variables: &Value) -> (u16, Vec<u8>) {
        let variables = variables.to_string();
        let url = reqwest::Url::parse_with_params(
            &self.url(),
            &[("query", query), ("variables", variables.as_str())],
        )
        .expect("a URL");
        let response = self.client.get(url).send().await;
        let response = response.unwrap_or_else(|e| self.no_answer(&e));
        let status = response.status().as_u16();
        (status, response.bytes().await.expect("a body").to_vec())
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.server.child.start_kill();
    }
}

/// An answer the suite accepts: one of the statuses a refusal or an answer may have, and, when
/// it is a GraphQL body, every error with a code.
fn assert_answered(status: u16, body: &[u8], what: &str) {
    assert!(
        matches!(status, 200 | 400 | 405 | 406 | 413 | 415 | 429 | 431),
        "status {status} for {what}: {}",
        String::from_utf8_lossy(&body[..body.len().min(300)])
    );
    if body.is_empty() {
        return; // hyper's own 431 has no body
    }
    let Ok(json) = serde_json::from_slice::<Value>(body) else {
        panic!("a body that is not JSON for {what}: {status}");
    };
    for error in json["errors"].as_array().into_iter().flatten() {
        assert!(
            error["extensions"]["code"].is_string(),
            "an error without a code for {what}: {error}"
        );
    }
}

/// A small deterministic generator (xorshift), so a failure names a seed that replays it.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The sizes drawn around the bound of bracket nesting: under, at, over, far over.
const DEPTHS: [usize; 8] = [1, 63, 126, 127, 128, 129, 1_500, 20_000];

/// A value nested `depth` deep, in the way `kind` nests.
fn nested_value(kind: usize, depth: usize) -> String {
    let (open, close) = match kind {
        0 => ("[", "]"),
        1 => ("{a: ", "}"),
        2 => ("[{a: ", "}]"),
        _ => ("{a: [", "]}"),
    };
    format!("{}1{}", open.repeat(depth), close.repeat(depth))
}

/// A document with a value nested `depth` deep in position `at`.
fn deep_document(at: usize, value: &str, depth: usize) -> String {
    match at {
        0 => format!("{{ __typename(a: {value}) }}"),
        1 => format!("query($v: [Int] = {value}) {{ __typename }}"),
        2 => format!("{{ __typename @include(if: {value}) }}"),
        3 => format!(
            "{{ comments(sku: \"{DEMO_SKU}\", ratings: {value}, first: 1) {{ totalCount }} }}"
        ),
        4 => format!("{{ ...F }} fragment F on Query {{ __typename(a: {value}) }}"),
        5 => format!("subscription {{ commentEvents(sku: {value}) {{ kind }} }}"),
        6 => format!("{}__typename{}", "{ a ".repeat(depth), " }".repeat(depth)),
        _ => format!(
            "{}__typename{}",
            "{ ... on Query ".repeat(depth),
            " }".repeat(depth)
        ),
    }
}

/// Documents wide rather than deep: arguments, aliases, directives, operations, variables,
/// fragments, comments and strings by the thousand.
fn wide_document(kind: usize, count: usize) -> String {
    let many = |f: &dyn Fn(usize) -> String| (0..count).map(f).collect::<Vec<_>>().join(" ");
    match kind {
        0 => format!("{{ __typename({}) }}", many(&|i| format!("a{i}: {i}"))),
        1 => format!("{{ {} }}", many(&|i| format!("a{i}: __typename"))),
        2 => format!(
            "{{ __typename {} }}",
            many(&|_| "@skip(if: false)".to_owned())
        ),
        3 => many(&|i| format!("query Q{i} {{ __typename }}")),
        4 => format!(
            "query({}) {{ __typename }}",
            many(&|i| format!("$v{i}: Int"))
        ),
        5 => format!(
            "{{ ...F0 }} {}",
            many(&|i| format!("fragment F{i} on Query {{ ...F{} }}", i + 1))
        ),
        6 => format!("# {}\n{{ __typename }}", "x".repeat(count * 10)),
        7 => format!("{{ __typename(a: \"{}\") }}", "\\u0041".repeat(count)),
        8 => format!("{{ __typename(a: \"\"\"{}\"\"\") }}", "\"".repeat(count)),
        _ => format!("{{ {} }}", many(&|_| "__typename".to_owned())),
    }
}

/// Text no document should hold, in the places text goes.
fn odd_unicode(draw: &mut Draw) -> String {
    let pieces = [
        "\u{FEFF}",
        "\u{202E}",
        "\u{0000}",
        "\u{0085}",
        "\u{2028}",
        "\u{E0001}",
        "e\u{0301}\u{0301}\u{0301}",
        "🧑‍🤝‍🧑",
        "\u{FFFD}",
        "𝔡𝔶𝔫",
    ];
    let mut text = String::new();
    for _ in 0..draw.below(2_000) + 1 {
        text.push_str(pieces[draw.below(pieces.len())]);
    }
    match draw.below(4) {
        0 => format!("{{ __typename(a: \"{}\") }}", text.replace('\0', "")),
        1 => format!("{text}{{ __typename }}"),
        2 => format!("{{ {text} }}"),
        _ => format!("{{ comments(sku: \"{text}\") {{ totalCount }} }}"),
    }
}

/// Raw bodies that are not the JSON of a GraphQL request, or barely are.
fn odd_body(draw: &mut Draw) -> Vec<u8> {
    match draw.below(6) {
        0 => b"{\"query\": \"\\ud800\"}".to_vec(),
        1 => {
            let mut body = b"{\"query\": \"{ __typename }\", \"x\": \"".to_vec();
            body.extend([0xff, 0xfe, 0xc0, 0x80]);
            body.extend(b"\"}");
            body
        }
        2 => format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
        3 => json!({ "query": "query($v: [[[Int]]]) { __typename }", "variables": { "v": deep_json(200) } })
            .to_string()
            .into_bytes(),
        4 => json!({ "query": "query($ids: [ID!]!) { nodes(ids: $ids) { id } }", "variables": { "ids": vec!["x"; 8_000] } })
            .to_string()
            .into_bytes(),
        _ => json!({ "query": "{ __typename }", "extensions": deep_json(127), "operationName": "x".repeat(30_000) })
            .to_string()
            .into_bytes(),
    }
}

/// A JSON value nested `depth` deep (serde_json refuses past 128 itself).
fn deep_json(depth: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..depth {
        value = json!([value]);
    }
    value
}

/// POSTs `query` under a media type drawn from both; the answer's JSON.
async fn post(target: &Target, draw: &mut Draw, query: &str, what: &str) -> Value {
    let accept = *draw.pick(&["application/json", "application/graphql-response+json"]);
    let body = json!({ "query": query }).to_string().into_bytes();
    let (status, answer) = target.post_raw(body, accept).await;
    assert_answered(status, &answer, what);
    serde_json::from_slice(&answer).unwrap_or(Value::Null)
}

/// What the answers of a batch were, so the suite can show it reached both sides of each
/// bound: refused for nesting, and run.
#[derive(Debug, Default)]
struct Tally {
    too_deep: usize,
    ran: usize,
}

impl Tally {
    fn count(&mut self, answer: &Value) {
        let message = answer["errors"][0]["message"].as_str().unwrap_or_default();
        if message.contains("nests brackets") {
            self.too_deep += 1;
        }
        if answer.get("data").is_some_and(|d| !d.is_null()) {
            self.ran += 1;
        }
    }
}

#[tokio::test]
async fn generated_hostile_documents_never_abort_hang_or_pin_the_server() {
    let mut target = Target::start().await;
    let mut draw = Draw(0x9E37_79B9_7F4A_7C15);
    let mut tally = Tally::default();

    for depth in DEPTHS {
        for kind in 0..4 {
            let value = nested_value(kind, depth);
            for at in 0..8 {
                let document = deep_document(at, &value, depth);
                if document.len() > 60 * 1024 {
                    continue;
                }
                let what = format!("depth {depth}, kind {kind}, at {at}");
                tally.count(&post(&target, &mut draw, &document, &what).await);
                if document.len() < 12 * 1024 {
                    let (status, body) = target.get(&document, &json!({})).await;
                    assert_answered(status, &body, &format!("GET {what}"));
                }
            }
        }
        target.still_serves(&format!("nesting {depth} deep")).await;
    }

    for count in [10, 1_000, 5_000] {
        for kind in 0..10 {
            let document = wide_document(kind, count);
            if document.len() > 60 * 1024 {
                continue;
            }
            let what = format!("wide {kind} × {count}");
            tally.count(&post(&target, &mut draw, &document, &what).await);
        }
        target.still_serves(&format!("{count} wide")).await;
    }

    for round in 0..40 {
        let document = odd_unicode(&mut draw);
        let what = format!("unicode round {round}");
        tally.count(&post(&target, &mut draw, &document, &what).await);
        let body = odd_body(&mut draw);
        let (status, answer) = target.post_raw(body, "application/json").await;
        assert_answered(status, &answer, &format!("odd body round {round}"));
    }
    target.still_serves("odd unicode and bodies").await;

    // Many at once: the same generators, from eight clients in parallel.
    let attacks = (0..64).map(|n| {
        let mut draw = Draw(0xD1B5_4A32_D192_ED03 ^ n);
        let (depth, kind, at) = (*draw.pick(&DEPTHS), draw.below(4), draw.below(8));
        let document = deep_document(at, &nested_value(kind, depth), depth);
        let wide = wide_document(draw.below(10), 2_000);
        (document, wide)
    });
    let target_ref = &target;
    futures::stream::iter(attacks)
        .for_each_concurrent(8, |(document, wide)| async move {
            let mut draw = Draw(7);
            for text in [document, wide] {
                if text.len() <= 60 * 1024 {
                    post(target_ref, &mut draw, &text, "in parallel").await;
                }
            }
        })
        .await;
    target.still_serves("in parallel").await;
    // Both sides of the bounds were reached: refused for their nesting, and run.
    assert!(tally.too_deep > 50 && tally.ran > 30, "{tally:?}");

    let status = target.server.terminate(Duration::from_secs(15)).await;
    assert!(status.success(), "a clean exit after the suite: {status:?}");
}

/// A `graphql-transport-ws` socket to `target`, `connection_init` acknowledged.
async fn socket(target: &Target) -> Socket {
    let mut socket = open_socket(&target.server.address, "graphql-transport-ws").await;
    let init = json!({ "type": "connection_init", "payload": {} }).to_string();
    socket.send(Message::Text(init.into())).await.expect("sent");
    assert_eq!(next(&mut socket).await["type"], "connection_ack");
    socket
}

/// The next protocol message within [`ANSWER_WITHIN`].
async fn next(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(ANSWER_WITHIN, socket.next())
            .await
            .expect("an answer in time")
            .expect("the socket is open")
            .expect("a message");
        match message {
            Message::Text(text) => return serde_json::from_str(&text).expect("JSON"),
            Message::Close(frame) => {
                return json!({ "type": "close", "frame": format!("{frame:?}") });
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn hostile_subscribe_messages_are_refused_each_with_a_code_and_the_socket_lives() {
    let mut target = Target::start().await;
    let mut socket = socket(&target).await;
    let mut draw = Draw(0xA076_1D64_78BD_642F);
    let mut sent = 0;
    for depth in DEPTHS {
        for kind in 0..4 {
            let at = draw.below(8);
            let document = deep_document(at, &nested_value(kind, depth), depth);
            if document.len() > 15 * 1024 {
                continue;
            }
            sent += 1;
            let id = format!("s{sent}");
            let subscribe =
                json!({ "id": id, "type": "subscribe", "payload": { "query": document } });
            socket
                .send(Message::Text(subscribe.to_string().into()))
                .await
                .expect("sent");
            let answer = loop {
                let message = next(&mut socket).await;
                if message["id"] == id.as_str() && message["type"] != "complete" {
                    break message;
                }
                assert_ne!(message["type"], "close", "the socket was closed: {message}");
            };
            for error in errors_of(&answer).as_array().into_iter().flatten() {
                assert!(error["extensions"]["code"].is_string(), "{error}");
            }
        }
        target
            .still_serves(&format!("subscribe {depth} deep"))
            .await;
    }
    assert!(sent > 20, "{sent} messages sent");
}

/// Issue 42, item 1: the 3 kB request that aborted the process, over each transport, is refused
/// with a code and charged the failure price, and the server lives on.
#[tokio::test]
async fn a_list_value_nested_1500_deep_is_refused_on_every_transport_and_pays_its_failure() {
    let mut target = Target::start().await;
    let attack = deep_document(0, &nested_value(0, 1_500), 1_500);
    assert!(attack.len() < 3_100, "a 3 kB request: {}", attack.len());

    let body = json!({ "query": attack }).to_string().into_bytes();
    let bytes = body.len();
    let (status, answer) = target.post_raw(body, "application/json").await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&answer).expect("JSON");
    let error = &answer["errors"][0];
    assert_eq!(error["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("more than 128 deep")),
        "{error}"
    );
    // The failure floor: 10 points per KiB begun (the document's, at least 10).
    let floor = (attack.len().div_ceil(1024) * 10) as u64;
    assert_eq!(
        answer["extensions"]["cost"]["requestedQueryCost"], floor,
        "{answer}"
    );
    assert!(bytes > attack.len());

    let (status, answer) = target
        .post_raw(
            json!({ "query": attack }).to_string().into_bytes(),
            "application/graphql-response+json",
        )
        .await;
    assert_eq!(status, 400, "refused before execution");
    assert_answered(status, &answer, "graphql-response+json");

    let (status, answer) = target.get(&attack, &json!({})).await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_slice(&answer).expect("JSON");
    assert_eq!(
        answer["errors"][0]["extensions"]["code"],
        "GRAPHQL_VALIDATION_FAILED"
    );

    let mut socket = socket(&target).await;
    let subscription = deep_document(5, &nested_value(1, 1_500), 1_500);
    let subscribe =
        json!({ "id": "deep", "type": "subscribe", "payload": { "query": subscription } });
    socket
        .send(Message::Text(subscribe.to_string().into()))
        .await
        .expect("sent");
    let refused = next(&mut socket).await;
    assert_eq!(
        errors_of(&refused)[0]["extensions"]["code"],
        "GRAPHQL_VALIDATION_FAILED",
        "{refused}"
    );
    target.still_serves("the 3 kB request").await;
}

/// Issue 42, item 9: request heads that never end, each longer than the cap, from many
/// connections of one address: each is answered 431 and closed once past the cap, and the
/// server's memory does not keep what they sent (400 kB heads on 200 connections pinned 103 MB).
#[tokio::test]
async fn long_unfinished_request_heads_are_refused_431_and_pin_no_memory() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut target = Target::start().await;
    let before = rss_mib(target.pid());
    let peer = target.server.authority().to_owned();
    let head = format!(
        "GET /graphql?query={} HTTP/1.1\r\nhost: x\r\n",
        "a".repeat(64 * 1024)
    );
    let connections = (0..200).map(|_| {
        let (peer, head) = (peer.clone(), head.clone());
        async move {
            let mut stream = tokio::net::TcpStream::connect(peer)
                .await
                .expect("connected");
            // The head is sent, never finished: no blank line.
            let _ = stream.write_all(head.as_bytes()).await;
            let mut answer = Vec::new();
            let read = tokio::time::timeout(ANSWER_WITHIN, stream.read_to_end(&mut answer)).await;
            (read.is_ok(), String::from_utf8_lossy(&answer).into_owned())
        }
    });
    let answers: Vec<(bool, String)> = futures::future::join_all(connections).await;
    for (closed, answer) in &answers {
        assert!(closed, "a connection past the cap is closed at once");
        assert!(
            answer.starts_with("HTTP/1.1 431"),
            "431 Request Header Fields Too Large: {answer:.80}"
        );
    }
    let after = rss_mib(target.pid());
    assert!(
        after - before < 40.0,
        "200 heads of 64 KiB left the server {:.0} MiB larger ({before:.0} -> {after:.0})",
        after - before
    );
    // A head within the cap (a GET query of a few kB) is served.
    let long_enough = format!(
        "{{ comments(sku: \"{DEMO_SKU}\", first: 1) {{ totalCount }} {} }}",
        "__typename ".repeat(1_000)
    );
    let (status, body) = target.get(&long_enough, &json!({})).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    target.still_serves("long heads").await;
}
