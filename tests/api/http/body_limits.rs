//! What a client receives for a request over the server's size limits, as raw bytes: a body
//! over `--max-body-bytes` gets `413` and a GraphQL error (`PAYLOAD_TOO_LARGE`, the limit in
//! its message) in the media type its `Accept` negotiates, whether its `Content-Length` says
//! so (answered before the body is sent) or a chunked body grows past the limit; a browser's
//! page may read it (CORS); a WebSocket message over the socket's cap closes it with 1009 and
//! the cap in the reason.

use futures::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::TestApp;
use crate::helpers::raw_http::{self, Raw};
use crate::helpers::websocket::Client;

/// Writes `bytes` to `app` over a fresh connection and reads until the server closes it.
async fn exchange(app: &TestApp, bytes: &[u8]) -> Raw {
    let answer = raw_http::exchange(app.authority(), bytes);
    tokio::time::timeout(std::time::Duration::from_secs(10), answer)
        .await
        .expect("the server answers and closes within 10 s")
}

/// A POST's head, with `headers` after the method line.
fn head(headers: &str) -> String {
    format!(
        "POST /graphql HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n{headers}\r\n"
    )
}

/// The exact body of the refusal, with the request id the response names.
fn refusal(raw: &Raw, limit: usize) -> String {
    let request_id = raw.header("x-request-id").expect("a request id");
    format!(
        "{{\"errors\":[{{\"message\":\"the request body is larger than {limit} bytes, the most \
         this server accepts\",\"extensions\":{{\"code\":\"PAYLOAD_TOO_LARGE\",\"requestId\":\"{request_id}\"}}}}]}}"
    )
}

#[tokio::test]
async fn a_content_length_over_the_limit_gets_413_and_a_graphql_error_before_the_body_is_sent() {
    let app = TestApp::embedded(0).await;
    let cases = [
        ("", "application/json; charset=utf-8"),
        (
            "Accept: application/graphql-response+json\r\n",
            "application/graphql-response+json; charset=utf-8",
        ),
    ];
    for (accept, media_type) in cases {
        // Only the head: the server answers what it declares, without waiting for the body.
        let raw = exchange(
            &app,
            head(&format!("{accept}Content-Length: 65537\r\n")).as_bytes(),
        )
        .await;
        assert_eq!(raw.status, 413, "{raw:?}");
        assert_eq!(raw.header("content-type").as_deref(), Some(media_type));
        assert_eq!(raw.header("cache-control").as_deref(), Some("no-store"));
        let body = String::from_utf8(raw.body.clone()).expect("UTF-8");
        assert_eq!(body, refusal(&raw, 64 * 1024));
    }
    // At the limit, the body is read and run.
    let query = json!({ "query": "{ __typename }" }).to_string();
    let padded = format!("{query}{}", " ".repeat(64 * 1024 - query.len()));
    let mut request = head("Content-Length: 65536\r\nConnection: close\r\n").into_bytes();
    request.extend_from_slice(padded.as_bytes());
    let raw = exchange(&app, &request).await;
    assert_eq!(raw.status, 200, "{raw:?}");
    assert_eq!(raw.json()["data"]["__typename"], "Query");
}

#[tokio::test]
async fn a_chunked_body_growing_past_the_limit_gets_413_and_the_same_graphql_error() {
    let app = TestApp::spawn(&["--demo-comments", "0", "--max-body-bytes", "1024"]).await;
    let body = format!(
        "{{\"query\":\"{{ __typename }}\",\"x\":\"{}\"}}",
        "a".repeat(1100)
    );
    // One chunk past the limit, and no last chunk: the server stops reading at the limit.
    let mut request =
        head("Accept: application/graphql-response+json\r\nTransfer-Encoding: chunked\r\n")
            .into_bytes();
    request.extend_from_slice(format!("{:x}\r\n{body}\r\n", body.len()).as_bytes());
    let raw = exchange(&app, &request).await;
    assert_eq!(raw.status, 413, "{raw:?}");
    assert_eq!(
        raw.header("content-type").as_deref(),
        Some("application/graphql-response+json; charset=utf-8")
    );
    let text = String::from_utf8(raw.body.clone()).expect("UTF-8");
    assert_eq!(text, refusal(&raw, 1024));
}

#[tokio::test]
async fn a_browser_page_on_an_allowed_origin_may_read_the_413() {
    let shop = "https://shop.example.com";
    let app = TestApp::spawn(&["--demo-comments", "0", "--cors-origin", shop]).await;
    let raw = exchange(
        &app,
        head(&format!("Origin: {shop}\r\nContent-Length: 100000\r\n")).as_bytes(),
    )
    .await;
    assert_eq!(raw.status, 413, "{raw:?}");
    assert_eq!(
        raw.header("access-control-allow-origin").as_deref(),
        Some(shop)
    );
    assert_eq!(
        raw.json()["errors"][0]["extensions"]["code"],
        "PAYLOAD_TOO_LARGE"
    );
}

#[tokio::test]
async fn a_websocket_message_over_the_cap_closes_the_socket_with_1009_and_says_the_cap() {
    let app = TestApp::embedded(0).await;
    let mut client = Client::ready(&app).await;
    // A subscribe whose document is padded past 16 KiB with spaces: well-formed, too long.
    let query = format!(
        "subscription {{ commentEvents(sku: \"A\") {{ kind }} }}{}",
        " ".repeat(16 * 1024)
    );
    let subscribe = json!({ "id": "1", "type": "subscribe", "payload": { "query": query } });
    client
        .socket
        .send(Message::Text(subscribe.to_string().into()))
        .await
        .expect("sent");
    let close = client.next().await;
    assert_eq!(close["type"], "close", "{close}");
    assert_eq!(close["code"], 1009, "{close}");
    assert_eq!(
        close["reason"],
        "a message is larger than 16384 bytes, the most this server accepts"
    );
    // The server goes on: a new socket subscribes and hears an event as ever.
    let mut again = Client::ready(&app).await;
    again.subscribe("1", json!({ "sku": "A" })).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    app.add_comment(None, "A", "after the refusal", 5).await;
    assert_eq!(again.event().await["kind"], "ADDED");
}
