//! Live comments as people and client teams see them: GraphiQL's CommentEvents tab, clicked and
//! run in headless Chromium (through playwright-core, `tests/clients/graphiql-events.mjs`), shows
//! the event of a comment written meanwhile; the README's Node clients (`graphql-ws`, Apollo,
//! urql: `tests/clients/direct-write.mjs`) receive a comment written straight into the DynamoDB
//! Local table, not through the API, which the server hears of from the table's stream
//! (`serve --sync`).

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use crate::helpers::TestApp;
use crate::helpers::browser::{OFFLINE_FLAGS, chromium};
use crate::helpers::node::clients_dir;
use crate::support::backends::Backends;
use crate::support::redis_server::shared_url;

#[tokio::test]
async fn graphiqls_comment_events_tab_clicked_in_chromium_shows_a_comment_written_meanwhile() {
    let app = TestApp::embedded(0).await;
    let mut args = vec!["--disable-gpu"];
    args.extend(OFFLINE_FLAGS);
    let body = "seen in GraphiQL";
    let config = json!({
        "chromium": chromium(),
        "args": args,
        "base": app.address,
        "tab": "CommentEvents",
        // The tab's default product.
        "post": {
            "query": "mutation($body: String!) { addComment(input: { sku: \"DAFT_PUNK_TSHIRT\", author: \"browser\", body: $body, rating: 5 }) { comment { id } } }",
            "variables": { "body": body },
        },
        "expect": body,
    });
    let (success, output) =
        crate::helpers::node::node("graphiql-events.mjs", &[&config.to_string()]).await;
    assert!(success, "graphiql-events.mjs failed:\n{output}");
    let report: Value = serde_json::from_str(output.trim())
        .unwrap_or_else(|e| panic!("graphiql-events.mjs printed no JSON ({e}):\n{output}"));
    assert_eq!(report["error"], Value::Null, "{report:#}");
    assert_eq!(
        report["pageErrors"],
        json!([]),
        "the page threw: {report:#}"
    );
    // The pane shows the subscription's event: the comment, as ADDED, with the new count.
    let pane: Value = serde_json::from_str(report["result"].as_str().expect("the pane's text"))
        .unwrap_or_else(|e| panic!("the result pane holds no JSON ({e}): {report:#}"));
    let event = &pane["data"]["commentEvents"];
    assert_eq!(event["kind"], "ADDED", "{pane:#}");
    assert_eq!(event["edge"]["node"]["body"], body, "{pane:#}");
    assert_eq!(event["totalCount"], 1, "{pane:#}");
    // Sent by the page over its WebSocket, from the tab's document.
    let frames = report["frames"].as_array().expect("frames");
    assert!(
        frames.iter().any(|f| f
            .as_str()
            .is_some_and(|f| f.contains("\"subscribe\"") && f.contains("CommentEvents"))),
        "{report:#}"
    );
    for request in report["requests"].as_array().expect("requests") {
        let request = request.as_str().expect("a URL");
        let local = ["http", "ws"]
            .map(|scheme| app.address.replacen("http", scheme, 1) + "/")
            .iter()
            .any(|origin| request.starts_with(origin.as_str()));
        assert!(local, "the browser asked another origin: {request}");
    }
}

#[tokio::test]
async fn graphql_ws_apollo_and_urql_receive_a_comment_written_straight_into_dynamodb() {
    use dynapage::domain::{Comment, CommentId, Rating, Sku};
    use dynapage::graphql::GlobalId;
    use dynapage::store::CommentStore;

    let backends = Backends::on(&shared_url()).await;
    let app = backends.serve_syncing(&[]).await;
    let (sku, body) = ("NODE_DIRECT", "written by another tool");
    let mut node = tokio::process::Command::new("node")
        .args([
            "direct-write.mjs",
            &format!("{}/graphql", app.address),
            sku,
            body,
        ])
        .current_dir(clients_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts (is Node.js installed?)");
    let mut stdout = tokio::io::BufReader::new(node.stdout.take().expect("stdout"));
    let mut seen = String::new();
    let subscribed = tokio::time::timeout(Duration::from_secs(30), async {
        let mut line = String::new();
        while stdout.read_line(&mut line).await.expect("node's output") > 0 {
            seen.push_str(&line);
            if line.trim() == "subscribed" {
                return true;
            }
            line.clear();
        }
        false
    })
    .await;
    assert_eq!(
        subscribed.ok(),
        Some(true),
        "the clients subscribe:\n{seen}"
    );
    // The stream consumer reads the stream from its start; let it reach the end first.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let now = dynapage::clock::now_ms();
    let comment = Comment {
        purchase: None,
        id: CommentId::new(now),
        sku: Sku::parse(sku).expect("sku"),
        author: "back office".into(),
        author_sub: None,
        body: body.into(),
        rating: Rating::ALL[3],
        created_at_ms: now,
        updated_at_ms: None,
        version: 1,
        helpful_count: 0,
        moderation: Default::default(),
        reply: None,
        reporters: Vec::new(),
    };
    backends.store.create(&comment).await.expect("written");
    let id = GlobalId::Comment(comment.id).encode();

    let mut rest = String::new();
    tokio::time::timeout(Duration::from_secs(30), stdout.read_to_string(&mut rest))
        .await
        .expect("node finishes")
        .expect("node's output");
    let status = node.wait().await.expect("node's status");
    let mut errors = String::new();
    if let Some(mut stderr) = node.stderr.take() {
        let _ = stderr.read_to_string(&mut errors).await;
    }
    let output = format!("{seen}{rest}{errors}");
    assert!(
        status.success() && output.contains("direct-write: 3 checks passed, 0 failed, 0 warnings"),
        "{output}"
    );
    for client in ["graphql-ws", "apollo", "urql"] {
        let line = format!("received {client} ADDED {id} {body}");
        assert!(output.contains(&line), "{line}:\n{output}");
    }
}
