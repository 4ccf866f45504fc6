//! Whose `X-Request-Id` a request keeps: only one set by a proxy the operator trusts
//! (`--trusted-proxies`); any other request gets a fresh one (a ULID, `UlidRequestId`).
//!
//! The id names a request in our logs and in the error a client is shown. Taken from anyone,
//! it lets a client write what it likes into our log lines (a forged id that matches another
//! client's request, or control characters that break a log line), so it is believed exactly
//! as far as `X-Forwarded-For` is: from a trusted proxy, which sets or passes it on for
//! tracing across its own logs. Even then it must look like an id: at most
//! [`MAX_REQUEST_ID_CHARS`] visible ASCII characters, no spaces.

use std::net::SocketAddr;

use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request};

use super::{REQUEST_ID, TrustedProxies};

/// The longest request id kept from a trusted proxy (a UUID is 36, a W3C trace id 32).
pub(super) const MAX_REQUEST_ID_CHARS: usize = 128;

/// `request` without its `X-Request-Id` unless it came from a trusted proxy and looks like an
/// id (the module's comment); the request-id layer then sets a fresh one.
pub(super) fn keep_only_trusted<B>(
    mut request: Request<B>,
    trusted: &TrustedProxies,
) -> Request<B> {
    let from_trusted = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .is_some_and(|ConnectInfo(peer)| trusted.contains(peer.ip()));
    let mut ids = request.headers().get_all(REQUEST_ID).iter();
    let kept = from_trusted
        && matches!((ids.next(), ids.next()), (Some(id), None) if looks_like_an_id(id));
    if !kept {
        request.headers_mut().remove(REQUEST_ID);
    }
    request
}

fn looks_like_an_id(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_REQUEST_ID_CHARS
        && bytes.iter().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(peer: &str, id: &str) -> Request<()> {
        let mut request = Request::builder()
            .header(REQUEST_ID, id)
            .body(())
            .expect("a request");
        let peer: SocketAddr = peer.parse().expect("an address");
        request.extensions_mut().insert(ConnectInfo(peer));
        request
    }

    fn kept(request: Request<()>, trusted: &TrustedProxies) -> Option<String> {
        keep_only_trusted(request, trusted)
            .headers()
            .get(REQUEST_ID)
            .map(|v| v.to_str().expect("ASCII").to_owned())
    }

    #[test]
    fn only_a_trusted_proxy_sets_the_request_id_and_only_an_id_like_one() {
        let trusted = TrustedProxies::parse(&["10.0.0.0/8".to_owned()]).expect("a network");
        assert_eq!(
            kept(request("10.1.2.3:5000", "trace-42"), &trusted),
            Some("trace-42".to_owned())
        );
        assert_eq!(
            kept(request("203.0.113.9:5000", "trace-42"), &trusted),
            None
        );
        assert_eq!(kept(request("10.1.2.3:5000", "two words"), &trusted), None);
        let long = "x".repeat(MAX_REQUEST_ID_CHARS + 1);
        assert_eq!(kept(request("10.1.2.3:5000", &long), &trusted), None);
        let no_peer = Request::builder()
            .header(REQUEST_ID, "trace-42")
            .body(())
            .expect("a request");
        assert_eq!(kept(no_peer, &trusted), None);
    }
}
