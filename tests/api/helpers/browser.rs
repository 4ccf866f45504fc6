//! Headless Chromium kept on this machine (no host resolves but 127.0.0.1), and the scan of a
//! page and its files for anything they would load from another origin.

use std::path::PathBuf;

use crate::helpers::Api;

/// Hosts pages commonly load GraphiQL, React or fonts from; none may appear in our files.
const CDNS: [&str; 7] = [
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
pub const OFFLINE_FLAGS: [&str; 6] = [
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

/// The Chromium binary to test with: `CHROMIUM`, else the first one on `PATH`; panics (the test
/// fails, it does not skip) when there is none.
pub fn chromium() -> PathBuf {
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

/// The values of `attribute="…"` in `html`.
pub fn attribute_values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let needle = format!(" {attribute}=\"");
    html.split(needle.as_str())
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

/// Whether a reference stays on this server (`/x`, `x`, `data:`), rather than naming an origin.
pub fn is_local(reference: &str) -> bool {
    let reference = reference.trim().trim_matches(['"', '\'']);
    !reference.starts_with("//") && !reference.contains("://")
}

/// The text of each file `references` names, fetched from `app`: each must be a path on this
/// server and answer 200. Returns `(reference, text)`.
pub async fn local_files(app: &Api, references: &[&str]) -> Vec<(String, String)> {
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
pub fn assert_nothing_from_another_origin(files: &[(String, String)]) {
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
