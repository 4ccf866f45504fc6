//! Compressed bodies: gzip, brotli and zstd, as `Accept-Encoding` prefers, by tower-http's
//! compression layer, and a guard in front of it for clients that accept no encoding at all.
//! The response cache encodes its kept answers itself, once per coding (`coding`), and marks
//! them [`Negotiated`]: the layer leaves those alone.
//!
//! Why the guard exists: tower-http 0.7 answers a request whose `Accept-Encoding` rules out
//! every encoding it has, identity included (`identity;q=0`), by running the handler and then
//! only turning the status into 406. The client got a full GraphQL body, the query ran and was
//! charged, and the response kept the handler's `Cache-Control: public`. The guard refuses such
//! a request before anything runs, with a GraphQL error carrying a code, and `no-store`.

use std::future::{Ready, ready};
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::TryFutureExt;
use futures::future::{Either, MapOk};
use tower::{Layer, Service};
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};

pub use self::coding::{Coding, preferred};
use super::REQUEST_ID;
use super::transport::{self, MediaType, Refusal};

mod coding;

/// Bodies smaller than this go out uncompressed: below about a kilobyte the encoding's header
/// and the CPU cost outweigh the bytes saved.
pub const COMPRESS_ABOVE_BYTES: u64 = 1024;

/// The encodings the layer offers besides identity.
const CODINGS: [&str; 3] = ["gzip", "br", "zstd"];

/// gzip, brotli (tower-http's default quality, 4) and zstd for bodies of at least
/// [`COMPRESS_ABOVE_BYTES`]; it adds `Vary: Accept-Encoding` to what it compresses. Images and
/// event streams are left alone, as tower-http's default does; a WebSocket upgrade has no body,
/// and its frames never pass through here. Responses marked [`Negotiated`] are left alone too:
/// they are in the coding the request asked for already (the layer skips a response with
/// `Content-Encoding` by itself, but not a kept answer sent as identity, which it would
/// otherwise compress again whenever its own choice differed).
pub(super) fn layer() -> CompressionLayer<impl Predicate> {
    let predicate = SizeAbove::new(COMPRESS_ABOVE_BYTES)
        .and(NotForContentType::GRPC)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE)
        .and(NotNegotiated);
    CompressionLayer::new()
        .gzip(true)
        .br(true)
        .zstd(true)
        .compress_when(predicate)
}

/// The mark of a response whose body is already in the coding its request negotiated (the
/// response cache's answers), with its `Vary` and validators set for that coding.
#[derive(Clone, Copy, Debug)]
pub(super) struct Negotiated;

/// The layer's predicate that passes over [`Negotiated`] responses.
#[derive(Clone, Copy, Debug)]
struct NotNegotiated;

impl Predicate for NotNegotiated {
    fn should_compress<B>(&self, response: &axum::http::Response<B>) -> bool
    where
        B: axum::body::HttpBody,
    {
        response.extensions().get::<Negotiated>().is_none()
    }
}

/// The guard, in front of the layer: a plain service wrapper rather than
/// `axum::middleware::from_fn`, which boxes each request's future and clones the router for it
/// (about 6,000 instructions a request under callgrind, for a check that almost never refuses).
#[derive(Clone, Copy, Debug)]
pub(super) struct GuardLayer;

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard(inner)
    }
}

/// See [`GuardLayer`].
#[derive(Clone, Debug)]
pub(super) struct Guard<S>(S);

impl<S> Service<Request> for Guard<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, MapOk<S::Future, WeakenFn>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if acceptable(request.headers()) {
            Either::Right(self.0.call(request).map_ok(weaken_encoded as WeakenFn))
        } else {
            Either::Left(ready(Ok(refuse(&request))))
        }
    }
}

type WeakenFn = fn(Response) -> Response;

/// A strong `ETag` names one sequence of bytes (RFC 9110 §8.8.1); the layer compresses a
/// body without touching its validator, so a page sent as gzip and as identity would carry
/// the same strong `ETag` for two bodies (the storefront's pages). So when the layer has
/// encoded a response (it has `Content-Encoding` and is not [`Negotiated`]), its strong `ETag`
/// becomes weak, `W/"…"`, as nginx does: the two bodies are still the same page, which is
/// what a weak validator says, and `If-None-Match` compares weakly.
fn weaken_encoded(mut response: Response) -> Response {
    let encoded = response.headers().contains_key(header::CONTENT_ENCODING)
        && response.extensions().get::<Negotiated>().is_none();
    if !encoded {
        return response;
    }
    if let Some(etag) = response.headers().get(header::ETAG) {
        if etag.as_bytes().starts_with(b"\"") {
            let mut weak = b"W/".to_vec();
            weak.extend_from_slice(etag.as_bytes());
            if let Ok(weak) = HeaderValue::from_bytes(&weak) {
                response.headers_mut().insert(header::ETAG, weak);
            }
        }
    }
    response
}

/// The answer to a request that accepts no encoding the server has: 406 and a GraphQL error.
fn refuse(request: &Request) -> Response {
    let media = transport::negotiate(request.headers()).unwrap_or(MediaType::Json);
    let request_id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let refusal = Refusal {
        status: StatusCode::NOT_ACCEPTABLE,
        code: "BAD_REQUEST",
        message: "the server sends bodies as they are (identity), gzip, br or zstd; the \
                  Accept-Encoding header allows none of them"
            .into(),
    };
    transport::refusal(media, &refusal, request_id)
}

/// Whether `Accept-Encoding` allows identity or one of [`CODINGS`] (RFC 9110 §12.5.3): a
/// coding is acceptable when listed with a weight above 0, or covered by a `*` above 0 and
/// not listed; identity also when neither it nor `*` is listed.
fn acceptable(headers: &HeaderMap) -> bool {
    let mut listed: Vec<(String, bool)> = Vec::new();
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else {
            return true; // not ours to judge: the layer sends identity
        };
        for entry in value.split(',').filter(|e| !e.trim().is_empty()) {
            let mut parts = entry.split(';');
            let coding = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let weight = parts
                .filter_map(|p| p.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .map_or(1.0, |(_, q)| q.trim().parse::<f32>().unwrap_or(1.0));
            listed.push((coding, weight > 0.0));
        }
    }
    let weight = |coding: &str| listed.iter().find(|(c, _)| c == coding).map(|(_, ok)| *ok);
    let any = weight("*");
    let identity = weight("identity").or(any).unwrap_or(true);
    identity || CODINGS.iter().any(|c| weight(c).or(any).unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(value: Option<&str>) -> bool {
        let mut headers = HeaderMap::new();
        if let Some(value) = value {
            headers.insert(header::ACCEPT_ENCODING, value.parse().expect("a value"));
        }
        acceptable(&headers)
    }

    #[test]
    fn only_a_header_ruling_out_everything_we_send_is_refused() {
        assert!(accepts(None));
        assert!(accepts(Some("gzip, deflate, br")));
        assert!(accepts(Some("identity;q=0, zstd")));
        assert!(accepts(Some("deflate")), "identity is implied");
        assert!(accepts(Some("*;q=0, identity")));
        assert!(!accepts(Some("identity;q=0")));
        assert!(!accepts(Some("*;q=0")));
        assert!(!accepts(Some("deflate, identity;q=0")));
        assert!(!accepts(Some("gzip;q=0, br;q=0, zstd;q=0, identity;q=0")));
    }
}
