//! Pages and files compiled into the binary (the GraphiQL page at `/`, the storefront's at
//! `/demo`), and how they are served: a page is never cached and names its files with a
//! version, a hash of their bytes, so the files themselves can be cached for good. Which files
//! a page has, and what its Content-Security-Policy allows, belong to the page's module.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

/// An embedded file: `(name in its URL, content type, bytes)`.
pub type File = (&'static str, &'static str, &'static [u8]);

/// The content type of JavaScript files.
pub const JS: &str = "text/javascript; charset=utf-8";
/// The content type of style sheets.
pub const CSS: &str = "text/css; charset=utf-8";

/// A short hash of `files`, for their URLs (`?v=…`): a build with other files gets other URLs.
pub fn version(files: &[File]) -> String {
    let mut hash = Sha256::new();
    for (name, _, bytes) in files {
        hash.update(name.as_bytes());
        hash.update(bytes);
    }
    hash.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An HTML page under `policy`. Not cached, so a new version's file URLs are picked up at once.
pub fn page(html: &'static str, policy: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, policy),
        ],
        html,
    )
        .into_response()
}

/// The file of `files` called `name`, cacheable for good (its URL carries the version); 404
/// when there is none.
pub fn file(files: &[File], name: &str) -> Response {
    match files.iter().find(|(n, _, _)| *n == name) {
        Some((_, content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
            ],
            *bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_changes_with_any_byte_of_any_file() {
        let a: [File; 2] = [("a.js", JS, b"one"), ("b.css", CSS, b"two")];
        let b: [File; 2] = [("a.js", JS, b"one"), ("b.css", CSS, b"twO")];
        assert_eq!(version(&a), version(&a));
        assert_ne!(version(&a), version(&b));
        assert_eq!(version(&a).len(), 12);
    }
}
