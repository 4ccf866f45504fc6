//! A request's first steps over HTTP, before the concurrency limit ([`admit`]): the persisted
//! document it names, the bytes it pays for at least, and the request check, each refusal
//! answered and paid for here.

use axum::http::HeaderMap;
use axum::response::Response;

use super::{Origin, transport};
use crate::http::AppState;
use crate::http::admission::check::{Checked, check_request};
use crate::http::admission::payer::Payer;
use crate::http::admission::{failures, persisted};
use crate::http::transport::MediaType;

/// What [`admit`] lets through: the hash a sent text is registered under once it ran, what the
/// request check found, and who pays.
pub(super) struct Admitted {
    pub registration: Option<String>,
    pub checked: Checked,
    pub payer: Payer,
}

/// `execute`'s first steps, before the concurrency limit: the persisted document the request
/// names, the bytes it pays for at least, a long text its client cannot afford refused
/// unparsed, then the request check (a refusal pays the failure floor). `Err`: the answer of a
/// refused request. Its steps that wait are boxed, as `execute`'s are.
pub(super) async fn admit(
    app: &AppState,
    headers: &HeaderMap,
    request_id: &str,
    media: MediaType,
    request: &mut async_graphql::Request,
    at: Origin,
) -> Result<Admitted, Response> {
    let resolved = persisted::resolve(app, request, media, request_id);
    let registration = Box::pin(resolved).await?;
    // A request pays for its bytes on the wire, and for a persisted document's text when that
    // is longer and parsed again each time (a trusted document's parse is pinned, a short
    // text's kept).
    let stored = app.documents.parsed_each_time(&request.query);
    let bytes = if stored {
        at.size.max(request.query.len())
    } else {
        at.size
    };
    let payer = Payer {
        address: at.address,
        bytes,
    };
    let unaffordable = failures::refuse_unaffordable(app, headers, media, request_id, payer);
    if let Some(refusal) = Box::pin(unaffordable).await {
        return Err(refusal);
    }
    let transport = transport(at.over_get);
    match check_request(request, transport, &app.documents, &app.options) {
        Ok(checked) => Ok(Admitted {
            registration,
            checked,
            payer,
        }),
        Err(rejection) => {
            let charged =
                failures::charge_rejection(app, headers, media, &rejection, request_id, payer);
            Err(Box::pin(charged).await)
        }
    }
}
