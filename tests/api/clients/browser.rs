//! The GraphiQL page in a real browser with every external host blocked: headless Chromium
//! loads `/?autorun`, GraphiQL renders with a tab per example, its run button sends the first
//! example to `/graphql`, and the result pane shows the answer. Plus a scan of the page and its
//! files for anything they would load from another origin.
//!
//! Chromium is required (`scripts/test` installs the Debian package `chromium` when root); set
//! `CHROMIUM` to use another binary. Without one the test fails rather than skip silently.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::TestApp;
use crate::helpers::browser::{
    OFFLINE_FLAGS, assert_nothing_from_another_origin, attribute_values, chromium, local_files,
};

/// The operation names of the example tabs, in order.
const TABS: [&str; 10] = [
    "FirstPage",
    "NextPage",
    "PreviousPage",
    "PageJump",
    "RatingsFilter",
    "TotalCount",
    "PageCursors",
    "Containing",
    "AddComment",
    "CommentEvents",
];

/// Runs headless Chromium, unable to resolve any host but 127.0.0.1, and returns its stdout.
async fn headless(args: &[&str]) -> String {
    let profile = tempfile::tempdir().expect("a fresh profile directory");
    let browser = chromium();
    let child = tokio::process::Command::new(&browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .args(OFFLINE_FLAGS)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {} (set CHROMIUM to a Chromium binary): {e}",
                browser.display()
            )
        });
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("Chromium finishes within 60 s")
        .expect("Chromium's output");
    assert!(
        output.status.success(),
        "Chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The text of `<pre id="autorun-result">` in a dumped DOM, and its `data-status`.
fn autorun_result(dom: &str) -> (String, String) {
    let start = dom
        .find("<pre id=\"autorun-result\"")
        .unwrap_or_else(|| panic!("no autorun element: playground.js did not run\n{dom}"));
    let rest = &dom[start..];
    let tag_end = rest.find('>').expect("end of tag");
    let status = rest[..tag_end]
        .split("data-status=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_default()
        .to_owned();
    let text = &rest[tag_end + 1..rest.find("</pre>").expect("</pre>")];
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    (status, text)
}

#[tokio::test]
async fn graphiql_renders_offline_and_runs_the_first_example_from_its_ui() {
    let app = TestApp::embedded(50).await;
    let url = format!("{}/?autorun", app.address);
    // A loaded two-core machine can leave the example's request unanswered when Chromium's
    // budget ends ("running"): load the page again, up to three times, before judging it.
    let mut dom = String::new();
    for _ in 0..3 {
        dom = headless(&["--virtual-time-budget=30000", "--dump-dom", &url]).await;
        if autorun_result(&dom).0 != "running" {
            break;
        }
    }

    for tab in TABS {
        assert!(
            dom.contains(&format!("graphiql-tab-button\">{tab}<")),
            "a tab named {tab}"
        );
    }
    let (status, text) = autorun_result(&dom);
    assert_eq!(status, "done", "the result pane showed an answer: {text}");
    let result: Value = serde_json::from_str(&text).expect("the result pane holds JSON");
    let comments = &result["data"]["product"]["comments"];
    assert_eq!(comments["totalCount"], 50, "{result:#}");
    assert_eq!(comments["edges"].as_array().map(Vec::len), Some(5));
}

#[tokio::test]
async fn the_page_and_its_files_load_nothing_from_another_origin() {
    let app = TestApp::embedded(0).await;
    let response = app.client.get(&app.address).send().await.expect("sent");
    let policy = response
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        policy.contains("default-src 'none'")
            && policy.contains("script-src 'self'")
            && policy.contains("connect-src 'self'"),
        "the browser is told to load from this server only: {policy:?}"
    );
    let html = response.text().await.expect("the page");

    let mut references = attribute_values(&html, "src");
    references.extend(attribute_values(&html, "href"));
    assert_eq!(
        references.len(),
        7,
        "five scripts and two style sheets: {references:?}"
    );
    let mut files = vec![("/".to_owned(), html.clone())];
    files.extend(local_files(&app, &references).await);
    assert_nothing_from_another_origin(&files);
}
