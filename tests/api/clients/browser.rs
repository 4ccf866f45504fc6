//! The GraphiQL page in a real browser with every external host blocked: headless Chromium
//! loads `/?autorun`, GraphiQL renders with a tab per example, its run button sends the first
//! example to `/graphql`, and the result pane shows the answer. Plus a scan of the page and its
//! files for anything they would load from another origin.
//!
//! Chromium is required (`scripts/test` installs the Debian package `chromium` when root); set
//! `CHROMIUM` to use another binary. Without one the test fails rather than skip silently.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::TestApp;

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

/// Hosts pages commonly load GraphiQL, React or fonts from; none may appear in our files.
pub(crate) const CDNS: [&str; 7] = [
    "unpkg.com",
    "cdn.jsdelivr.net",
    "cdnjs.cloudflare.com",
    "esm.sh",
    "fonts.googleapis.com",
    "fonts.gstatic.com",
    "embed.graphql.com",
];

/// Flags that keep Chromium on this machine: no host resolves but 127.0.0.1, and none of its
/// own background traffic (component updates, sync, QUIC probes).
pub(crate) const OFFLINE_FLAGS: [&str; 6] = [
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

/// The Chromium binary to test with: `CHROMIUM`, else the first one on `PATH`; panics (the test
/// fails, it does not skip) when there is none.
pub(crate) fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "headless Chromium is required for the browser tests (GraphiQL, /demo): run scripts/test \
         (it installs the Debian package `chromium` when root), install it yourself, or set \
         CHROMIUM=/path/to/chrome"
    );
}

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
    let dom = headless(&["--virtual-time-budget=30000", "--dump-dom", &url]).await;

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

/// The values of `attribute="…"` in `html`.
pub(crate) fn attribute_values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let needle = format!(" {attribute}=\"");
    html.split(needle.as_str())
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

/// Whether a reference stays on this server (`/x`, `x`, `data:`), rather than naming an origin.
pub(crate) fn is_local(reference: &str) -> bool {
    let reference = reference.trim().trim_matches(['"', '\'']);
    !reference.starts_with("//") && !reference.contains("://")
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

/// The text of each file `references` names, fetched from `app`: each must be a path on this
/// server and answer 200. Returns `(reference, text)`.
pub(crate) async fn local_files(app: &TestApp, references: &[&str]) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for reference in references {
        assert!(
            reference.starts_with('/') && is_local(reference),
            "{reference}"
        );
        let response = app
            .client
            .get(format!("{}{reference}", app.address))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 200, "{reference}");
        files.push((
            (*reference).to_owned(),
            response.text().await.expect("text"),
        ));
    }
    files
}

/// Fails when a page's files name a CDN, or its style sheets import another one or load a
/// `url()` from another origin.
pub(crate) fn assert_nothing_from_another_origin(files: &[(String, String)]) {
    for (name, text) in files {
        for cdn in CDNS {
            assert!(!text.contains(cdn), "{name} mentions {cdn}");
        }
        if !name.contains(".css") {
            continue;
        }
        assert!(
            !text.contains("@import"),
            "{name} imports another style sheet"
        );
        for target in text.split("url(").skip(1) {
            let target = target.split(')').next().unwrap_or_default();
            assert!(
                is_local(target),
                "{name} loads {}",
                &target[..target.len().min(80)]
            );
        }
    }
}
