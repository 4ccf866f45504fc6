//! Who the request writes as, for resolvers: the policy of `auth` applied to one request.

use async_graphql::Context;

use super::ApiState;
use super::error::ApiError;
use crate::auth::{Auth, Viewer};
use crate::domain::{Access, Comment};

/// The request's verified viewer (attached by the HTTP layer under `--auth jwt`).
pub(super) fn viewer<'a>(ctx: &Context<'a>) -> Option<&'a Viewer> {
    ctx.data_opt::<Viewer>()
}

/// Who may write under the server's policy: anyone under `--auth off`; under `--auth jwt`, only
/// a request with a verified token, and then for what its [`Viewer::access`] covers.
pub(super) fn writer<'a>(
    ctx: &Context<'a>,
    state: &ApiState,
) -> Result<(Access, Option<&'a Viewer>), ApiError> {
    match &state.auth {
        Auth::Off => Ok((Access::Any, None)),
        Auth::Jwt(_) => {
            let viewer = viewer(ctx).ok_or_else(|| {
                ApiError::Unauthenticated(
                    "writes need a signed-in user: send `Authorization: Bearer <token>` from the \
                     shop's identity provider"
                        .into(),
                )
            })?;
            Ok((viewer.access(), Some(viewer)))
        }
    }
}

/// Whether this request may edit and delete `comment` (`viewerCanUpdate`, `viewerCanDelete`).
pub(super) fn may_change(ctx: &Context<'_>, comment: &Comment) -> bool {
    let Some(state) = ctx.data_opt::<std::sync::Arc<ApiState>>() else {
        return false;
    };
    match writer(ctx, state) {
        Ok((access, _)) => access.allows(comment),
        Err(_) => false,
    }
}
