//! The API as the server's own pages ask it, in process ([`InProcessApi`]): the routes a caller
//! adds to [`router`](super::router) (the storefront at `/demo`) are given this handle, so they
//! draw a page from the same answer `GET /graphql` would give, paid from the same client's
//! budget, without this module knowing the pages that use it.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName};
use axum::response::Response;

use super::AppState;
use super::graphql::{self, Peer};

/// The API's handlers' shared state, lent to the pages routed beside them. Cloning shares it.
#[derive(Clone)]
pub struct InProcessApi(Arc<AppState>);

impl std::fmt::Debug for InProcessApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessApi").finish_non_exhaustive()
    }
}

impl InProcessApi {
    pub(super) fn new(app: Arc<AppState>) -> Self {
        Self(app)
    }

    /// Runs `request` as the same query sent over `GET /graphql` by the page's client would run
    /// (`graphql::on_behalf_of` says what that holds it to); only the headers in `forwarded`
    /// reach the request. Answers in `application/json`.
    pub async fn on_behalf_of(
        &self,
        peer: Peer,
        headers: &HeaderMap,
        forwarded: &HeaderMap,
        request: async_graphql::Request,
    ) -> Response {
        graphql::on_behalf_of(&self.0, peer, headers, forwarded, request).await
    }

    /// The most items one page of a connection may ask for (`--max-page-size`).
    pub fn max_page_size(&self) -> usize {
        self.0.api.engine.settings().max_page_size
    }

    /// The header the API's answers name their CDN tags in (`--cache-tag-header`).
    pub fn tag_header(&self) -> &HeaderName {
        &self.0.options.response_cache.tag_header
    }
}
