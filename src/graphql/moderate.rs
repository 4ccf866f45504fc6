//! `Mutation.moderateComment` and `Mutation.replyToComment`: their inputs, their payloads and
//! the one store write each. Who may decide or answer, and what the comment then shows, are
//! `moderation`'s.

use async_graphql::{Context, ID, InputObject, SimpleObject};

use super::error::ApiError;
use super::global_id::GlobalId;
use super::moderation::{ModerationDecision, ModerationReason, moderator, replier};
use super::state;
use super::types::Comment;
use crate::clock::now_ms;
use crate::domain::{Verdict, reply_text};
use crate::store::CommentStore;

/// A moderator's decision about a comment.
#[derive(Debug, InputObject)]
pub(super) struct ModerateCommentInput {
    /// The comment's global id.
    pub comment_id: ID,
    /// `PUBLISH` (a pending, hidden or rejected comment, or a reported published one: its
    /// reports are dismissed), `HIDE` (a published one, or one hidden on reports: its reports
    /// are upheld) or `REJECT` (a pending one).
    pub decision: ModerationDecision,
    /// Why: required to hide or reject.
    pub reason: Option<ModerationReason>,
    /// A note to the author (the statement of reasons), at most 4,000 characters.
    pub note: Option<String>,
    /// Echoed back in the payload (Relay).
    pub client_mutation_id: Option<String>,
}

/// The comment after the decision.
#[derive(Debug, SimpleObject)]
pub(super) struct ModerateCommentPayload {
    /// The comment as it now is.
    pub comment: Comment,
    /// The `clientMutationId` of the input.
    pub client_mutation_id: Option<String>,
}

/// `Mutation.moderateComment`.
pub(super) async fn moderate_comment(
    ctx: &Context<'_>,
    input: ModerateCommentInput,
) -> async_graphql::Result<ModerateCommentPayload> {
    let state = state(ctx)?;
    let meta = super::meta(ctx);
    let fail = |e: ApiError| e.into_graphql(meta);
    let moderator = moderator(ctx, state).map_err(fail)?;
    let id = GlobalId::comment(&input.comment_id).map_err(|e| fail(e.into()))?;
    let verdict = Verdict::new(
        input.decision.into(),
        input.reason.map(Into::into),
        input.note.as_deref(),
    )
    .map_err(|e| fail(e.into()))?;
    let comment = state
        .engine
        .store()
        .moderate(id, &verdict, moderator.sub.as_str(), now_ms())
        .await
        .map_err(|e| fail(e.into()))?;
    tracing::info!(
        sku = comment.sku.as_str(),
        comment_id = %comment.id,
        decision = verdict.decision.as_str(),
        status = comment.moderation.status.as_str(),
        moderator = moderator.sub.as_str(),
        "comment moderated"
    );
    Ok(ModerateCommentPayload {
        comment: Comment(comment),
        client_mutation_id: input.client_mutation_id,
    })
}

/// The shop's answer to a comment.
#[derive(Debug, InputObject)]
pub(super) struct ReplyToCommentInput {
    /// The comment's global id.
    pub comment_id: ID,
    /// The answer, 1 to 4,000 characters, replacing any earlier one; null removes the reply.
    pub body: Option<String>,
    /// Echoed back in the payload (Relay).
    pub client_mutation_id: Option<String>,
}

/// The comment with its reply.
#[derive(Debug, SimpleObject)]
pub(super) struct ReplyToCommentPayload {
    /// The comment as it now is.
    pub comment: Comment,
    /// The `clientMutationId` of the input.
    pub client_mutation_id: Option<String>,
}

/// `Mutation.replyToComment`.
pub(super) async fn reply_to_comment(
    ctx: &Context<'_>,
    input: ReplyToCommentInput,
) -> async_graphql::Result<ReplyToCommentPayload> {
    let state = state(ctx)?;
    let meta = super::meta(ctx);
    let fail = |e: ApiError| e.into_graphql(meta);
    let replier = replier(ctx, state).map_err(fail)?;
    let id = GlobalId::comment(&input.comment_id).map_err(|e| fail(e.into()))?;
    let body = input
        .body
        .as_deref()
        .map(reply_text)
        .transpose()
        .map_err(|e| fail(e.into()))?;
    let comment = state
        .engine
        .store()
        .reply(id, body.as_deref(), replier.sub.as_str(), now_ms())
        .await
        .map_err(|e| fail(e.into()))?;
    tracing::info!(
        sku = comment.sku.as_str(),
        comment_id = %comment.id,
        replied = comment.reply.is_some(),
        by = replier.sub.as_str(),
        "comment answered"
    );
    Ok(ReplyToCommentPayload {
        comment: Comment(comment),
        client_mutation_id: input.client_mutation_id,
    })
}
