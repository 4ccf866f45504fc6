//! The request body limit (`--max-body-bytes`), answered as GraphQL: a body over it gets
//! `413` with a GraphQL error (`PAYLOAD_TOO_LARGE`, the limit in its message) in the media
//! type the request's `Accept` negotiates, whether its `Content-Length` says so at once (the
//! body is then never read) or a chunked body grows past the limit while it is read
//! (`transport::post_request` turns that into the same refusal).
//!
//! Why not tower-http's `RequestBodyLimitLayer`: it answers a `Content-Length` over the limit
//! itself, `413 text/plain` "length limit exceeded", which a GraphQL client cannot read as a
//! GraphQL error (it is not JSON), and carries no code. Like it, this layer bounds
//! every body any route reads (`http_body_util::Limited`), not only the ones `/graphql` reads.
//! It sits inside the CORS layer, so a browser's page may read the refusal too.

use std::future::{Ready, ready};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::response::Response;
use futures::future::Either;
use tower::{Layer, Service};

use super::REQUEST_ID;
use super::transport::{self, MediaType};

/// Refuses bodies over `max_bytes` (see the module's comment).
#[derive(Clone, Copy, Debug)]
pub(super) struct BodyLimitLayer {
    pub(super) max_bytes: usize,
}

impl<S> Layer<S> for BodyLimitLayer {
    type Service = BodyLimit<S>;

    fn layer(&self, inner: S) -> BodyLimit<S> {
        BodyLimit {
            inner,
            max_bytes: self.max_bytes,
        }
    }
}

/// See [`BodyLimitLayer`].
#[derive(Clone, Debug)]
pub(super) struct BodyLimit<S> {
    inner: S,
    max_bytes: usize,
}

impl<S> Service<Request> for BodyLimit<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|length| length > self.max_bytes as u64) {
            return Either::Left(ready(Ok(refuse(&request, self.max_bytes))));
        }
        let max_bytes = self.max_bytes;
        let request = request.map(|body| Body::new(http_body_util::Limited::new(body, max_bytes)));
        Either::Right(self.inner.call(request))
    }
}

/// The `413` of a body declared larger than `max_bytes`, before any of it is read.
fn refuse(request: &Request, max_bytes: usize) -> Response {
    let media = transport::negotiate(request.headers()).unwrap_or(MediaType::Json);
    let request_id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    transport::refusal(media, &transport::too_large(max_bytes), request_id)
}
