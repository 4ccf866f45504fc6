//! Compressed bodies: br, gzip or zstd, as `Accept-Encoding` prefers, by tower-http's
//! compression layer, and a guard in front of it that decides the coding ([`preferred`]). The
//! response cache encodes its kept answers itself, once per coding (`coding`), and marks them
//! [`Negotiated`]: the layer leaves those alone.
//!
//! Why the guard decides: tower-http 0.7.1 breaks a tie between codings of equal weight by the
//! order of its private `Encoding` enum (`max_by_key((qvalue, encoding))`, zstd highest), with
//! no setting to change it, so `gzip, deflate, br, zstd` got zstd, which clients list without
//! always being able to decode it (`coding` says which and why br comes first). So the guard
//! picks the coding and hands the layer an `Accept-Encoding` that names only that coding: the
//! layer then has one choice, the same one the response cache makes for kept answers.
//!
//! Why the guard refuses: tower-http 0.7 answers a request whose `Accept-Encoding` rules out
//! every encoding it has, identity included (`identity;q=0`), by running the handler and then
//! only turning the status into 406. The client got a full GraphQL body, the query ran and was
//! charged, and the response kept the handler's `Cache-Control: public`. The guard refuses such
//! a request before anything runs, with a GraphQL error carrying a code, and `no-store`.

use std::future::{Ready, ready};
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::TryFutureExt;
use futures::future::{Either, MapOk};
use tower::{Layer, Service};
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};

pub(super) use self::coding::{Coding, preferred};
use super::REQUEST_ID;
use super::transport::{self, MediaType, Refusal};

mod coding;

/// Bodies smaller than this go out uncompressed: below about a kilobyte the encoding's header
/// and the CPU cost outweigh the bytes saved.
pub const COMPRESS_ABOVE_BYTES: u64 = 1024;

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

/// The guard, in front of the layer (the module's comment says what it does): a plain service
/// wrapper rather than
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

    fn call(&mut self, mut request: Request) -> Self::Future {
        let Some(coding) = preferred(request.headers()) else {
            return Either::Left(ready(Ok(refuse(&request))));
        };
        let headers = request.headers_mut();
        if headers.contains_key(header::ACCEPT_ENCODING) {
            // The one coding the layer may pick (the module's comment says why); `insert`
            // replaces every `Accept-Encoding` line the client sent.
            let only = HeaderValue::from_static(coding.token());
            headers.insert(header::ACCEPT_ENCODING, only);
        }
        Either::Right(self.0.call(request).map_ok(weaken_encoded as WeakenFn))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(value: Option<&str>) -> bool {
        let mut headers = axum::http::HeaderMap::new();
        if let Some(value) = value {
            headers.insert(header::ACCEPT_ENCODING, value.parse().expect("a value"));
        }
        preferred(&headers).is_some()
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
