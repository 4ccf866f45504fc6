//! Asking the cache: the handler's step between admitting a request and running it. A hit is
//! answered here, charged by the bytes it sends (`failures::charge_cached`) and with the same
//! caching headers as any response.

use axum::http::HeaderMap;
use axum::response::Response;

use super::{Lookup, Pending};
use crate::http::AppState;
use crate::http::admission::failures;
use crate::http::admission::payer::Payer;
use crate::http::caching::Cacheability;
use crate::http::transport::MediaType;

/// Who asks the response cache, and how.
pub(in crate::http) struct Asker<'a> {
    over_get: bool,
    payer: Payer,
    request_id: &'a str,
    /// The hash of the automatic persisted query whose text the request sends.
    registration: Option<&'a str>,
}

impl<'a> Asker<'a> {
    pub(in crate::http) fn new(
        over_get: bool,
        payer: Payer,
        request_id: &'a str,
        registration: Option<&'a str>,
    ) -> Self {
        Self {
            over_get,
            payer,
            request_id,
            registration,
        }
    }
}

/// Asks the response cache (when on) for `request` (unless `bypass`: a mutation, or one
/// client's own answer): `Err` with the answer on a hit (charged
/// `failures::charge_cached` by the bytes it sends, or its 429), else the entry to keep the answer in (`None` when
/// the request is not for the cache). A hit of a request that sends an automatic persisted
/// query's text registers it: the text passed validation, and its answer was paid for when it
/// was kept; without this a client's retry answered from the cache would never register, and
/// every later request would cost it two round trips.
pub(in crate::http) async fn from_cache(
    app: &AppState,
    headers: &HeaderMap,
    request: &async_graphql::Request,
    media: MediaType,
    bypass: bool,
    asker: Asker<'_>,
) -> Result<Option<Pending>, Response> {
    let Some(cache) = &app.response_cache else {
        return Ok(None);
    };
    match cache.lookup(headers, request, media, bypass).await {
        Lookup::Bypass => Ok(None),
        Lookup::Run(pending) => Ok(Some(pending)),
        Lookup::Answer(hit) => {
            let (request_id, payer) = (asker.request_id, asker.payer);
            let throttle = failures::charge_cached(app, media, request_id, payer, hit.sent).await?;
            let cacheability = Cacheability {
                over_get: asker.over_get,
                error_free: true,
                authorization: false,
                tags_fit: hit.tags_fit,
                throttle,
            };
            let mut response = hit.response;
            super::caching_headers(&app.options, &cacheability, &mut response, &[]);
            if let Some(hash) = asker.registration {
                let budget = crate::http::admission::payer::budget(app, None, payer, 0);
                crate::http::admission::persisted::keep(app, &budget, hash, &request.query).await;
            }
            Err(response)
        }
    }
}
