//! What a comment shows of its moderation: who may decide (the moderator role), who may see a
//! comment that is not published (its author and moderators), and the GraphQL spelling of the
//! domain's statuses, decisions and reasons. The mutation is `moderate`.

use async_graphql::{Context, Enum, SimpleObject};

use super::error::ApiError;
use super::scalars::DateTime;
use super::viewer::viewer;
use crate::auth::{Auth, Viewer};
use crate::domain;
use crate::graphql::ApiState;

/// Where a comment stands. Only `PUBLISHED` comments are in lists, counts and summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Enum)]
#[graphql(remote = "crate::domain::CommentStatus")]
pub(super) enum CommentStatus {
    /// Waiting for a moderator (`--moderation pre`); seen by its author and moderators only.
    Pending,
    /// Public.
    Published,
    /// Taken down after publication; may be published again.
    Hidden,
    /// Refused before it was ever published.
    Rejected,
}

/// What a moderator decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Enum)]
#[graphql(remote = "crate::domain::ModerationDecision")]
pub(super) enum ModerationDecision {
    /// Make a pending, hidden or rejected comment public.
    Publish,
    /// Take a published comment down (needs a `reason`).
    Hide,
    /// Refuse a pending comment (needs a `reason`).
    Reject,
}

/// Why a comment was hidden or rejected: the statement of reasons its author is shown. None
/// is about the rating: a review is never removed for its stars.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Enum)]
#[graphql(remote = "crate::domain::ModerationReason")]
pub(super) enum ModerationReason {
    /// Advertising, link farms, bots.
    Spam,
    /// Not about the product.
    OffTopic,
    /// Insults, harassment, hate.
    Abusive,
    /// Someone's personal data.
    PersonalData,
    /// Unlawful content.
    Illegal,
    /// Written by someone with a stake (staff, a competitor, a paid reviewer).
    ConflictOfInterest,
    /// The same review again.
    Duplicate,
    /// Anything else (the note says what).
    Other,
}

/// Why a reader reports a comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Enum)]
#[graphql(remote = "crate::domain::ReportReason")]
pub(super) enum ReportReason {
    /// Advertising, link farms, bots.
    Spam,
    /// Not about the product.
    OffTopic,
    /// Insults, harassment, hate.
    Abusive,
    /// Someone's personal data.
    PersonalData,
    /// Unlawful content.
    Illegal,
    /// Not a genuine review (paid, invented, by a competitor).
    Fake,
    /// Anything else (`details` says what).
    Other,
}

/// Where a report stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Enum)]
#[graphql(remote = "crate::domain::ReportStatus")]
pub(super) enum ReportStatus {
    /// Waiting for a moderator's decision on the comment.
    Open,
    /// The comment was hidden or rejected.
    Upheld,
    /// The comment stays published.
    Dismissed,
}

/// A comment's moderation, shown to its author and to moderators.
#[derive(Clone, Debug, SimpleObject)]
pub(super) struct Moderation {
    /// Where the comment stands.
    pub status: CommentStatus,
    /// Why it was hidden or rejected, if it was.
    pub reason: Option<ModerationReason>,
    /// The moderator's note to the author, if any.
    pub note: Option<String>,
    /// When the last decision was made; null before any.
    pub decided_at: Option<DateTime>,
}

impl From<&domain::Moderation> for Moderation {
    fn from(moderation: &domain::Moderation) -> Self {
        Self {
            status: moderation.status.into(),
            reason: moderation.reason.map(Into::into),
            note: moderation.note.clone(),
            decided_at: moderation.decided_at_ms.map(at),
        }
    }
}

/// An instant in epoch milliseconds as the `DateTime` scalar.
pub(super) fn at(ms: u64) -> DateTime {
    DateTime(domain::millis_to_datetime(ms))
}

/// The shop's public answer to a comment.
#[derive(Clone, Debug, SimpleObject)]
pub(super) struct Reply {
    /// The answer.
    pub body: String,
    /// The shop's name (`--shop-name`): replies speak for the shop, not for a person.
    pub author: String,
    /// When the comment was first answered.
    pub created_at: DateTime,
    /// When the answer was last replaced, if it was.
    pub updated_at: Option<DateTime>,
}

impl Reply {
    /// The reply of a comment, signed with `shop`'s name.
    pub(super) fn of(reply: &domain::Reply, shop: &str) -> Self {
        Self {
            body: reply.body.clone(),
            author: shop.to_owned(),
            created_at: at(reply.created_at_ms),
            updated_at: reply.updated_at_ms.map(at),
        }
    }
}

/// The request's viewer if they may answer comments in the shop's name: a moderator or the
/// merchant role; `UNAUTHENTICATED` without a verified token, `FORBIDDEN` without either role.
pub(super) fn replier<'a>(ctx: &Context<'a>, state: &ApiState) -> Result<&'a Viewer, ApiError> {
    let viewer = signed_in(ctx, state, "replies need a signed-in moderator or merchant")?;
    if viewer.moderator || viewer.merchant {
        Ok(viewer)
    } else {
        Err(ApiError::Forbidden(
            "only moderators and merchants (--auth-moderator-role, --auth-merchant-role) may \
             answer comments in the shop's name"
                .into(),
        ))
    }
}

/// The product a moderator's read is limited to (`sku`, parsed as any SKU; `None`: the whole
/// shop), once the request is a moderator's ([`moderator`]): the preamble of the queues, the
/// log and the transparency report.
pub(super) fn moderated_scope(
    ctx: &Context<'_>,
    state: &ApiState,
    sku: Option<String>,
) -> Result<Option<crate::domain::Sku>, ApiError> {
    moderator(ctx, state)?;
    Ok(sku.map(|sku| crate::domain::Sku::parse(&sku)).transpose()?)
}

/// The request's viewer if they hold the moderator role: `UNAUTHENTICATED` without a verified
/// token (under `--auth off` everyone is anonymous), `FORBIDDEN` without the role.
pub(super) fn moderator<'a>(ctx: &Context<'a>, state: &ApiState) -> Result<&'a Viewer, ApiError> {
    let viewer = signed_in(ctx, state, "moderation needs a signed-in moderator")?;
    if viewer.moderator {
        Ok(viewer)
    } else {
        Err(ApiError::Forbidden(
            "only moderators (the --auth-moderator-role role) may moderate comments".into(),
        ))
    }
}

/// The request's verified viewer, or `UNAUTHENTICATED` saying `needs` (always under
/// `--auth off`, where nobody is signed in).
pub(super) fn signed_in<'a>(
    ctx: &Context<'a>,
    state: &ApiState,
    needs: &str,
) -> Result<&'a Viewer, ApiError> {
    let viewer = match &state.auth {
        Auth::Off => None,
        Auth::Jwt(_) => viewer(ctx),
    };
    viewer.ok_or_else(|| {
        ApiError::Unauthenticated(format!(
            "{needs}: send `Authorization: Bearer <token>` (the server must verify tokens, \
             --auth jwt)"
        ))
    })
}

/// Whether the request may see `comment`: anyone a published one; its author and moderators
/// any other (a verified token is needed for both).
pub(super) fn may_see(ctx: &Context<'_>, comment: &domain::Comment) -> bool {
    comment.is_public() || sees_moderation(ctx, comment)
}

/// Whether the request is a signed-in moderator's (never under `--auth off`).
pub(super) fn is_moderator(ctx: &Context<'_>) -> bool {
    let Some(state) = ctx.data_opt::<std::sync::Arc<ApiState>>() else {
        return false;
    };
    !matches!(state.auth, Auth::Off) && viewer(ctx).is_some_and(|viewer| viewer.moderator)
}

/// Whether the request may see `comment`'s moderation: its author or a moderator.
pub(super) fn sees_moderation(ctx: &Context<'_>, comment: &domain::Comment) -> bool {
    let Some(state) = ctx.data_opt::<std::sync::Arc<ApiState>>() else {
        return false;
    };
    if matches!(state.auth, Auth::Off) {
        return false;
    }
    viewer(ctx).is_some_and(|viewer| {
        viewer.moderator || comment.author_sub.as_deref() == Some(viewer.sub.as_str())
    })
}
