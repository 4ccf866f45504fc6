//! `Mutation.markHelpful`: its input, its payload and the one store write. Who the voter is,
//! and how `viewerFoundHelpful` reads votes, is `super::helpful`'s; the answer's comment knows
//! the viewer's vote without reading it.

use async_graphql::{Context, ID, InputObject, SimpleObject};

use super::error::ApiError;
use super::global_id::GlobalId;
use super::helpful::voter;
use super::state;
use super::types::Comment;
use super::viewer::writer;
use crate::clock::now_ms;
use crate::store::CommentStore;

/// A helpful vote, or its withdrawal.
#[derive(Debug, InputObject)]
pub(super) struct MarkHelpfulInput {
    /// The comment's global id.
    pub comment_id: ID,
    /// `true` marks the comment helpful (again: still one vote); `false` takes the viewer's
    /// vote back (nothing happens without one).
    #[graphql(default = true)]
    pub helpful: bool,
    /// Echoed back in the payload (Relay).
    pub client_mutation_id: Option<String>,
}

/// The comment with its new count.
#[derive(Debug, SimpleObject)]
pub(super) struct MarkHelpfulPayload {
    /// The comment as it now is: `helpfulCount` counts the vote, `viewerFoundHelpful` is the
    /// input's `helpful`.
    pub comment: Comment,
    /// The `clientMutationId` of the input.
    pub client_mutation_id: Option<String>,
}

/// `Mutation.markHelpful`: one vote per voter and comment, in one atomic store write.
pub(super) async fn mark_helpful(
    ctx: &Context<'_>,
    input: MarkHelpfulInput,
) -> async_graphql::Result<MarkHelpfulPayload> {
    let state = state(ctx)?;
    let meta = super::meta(ctx);
    let fail = |e: ApiError| e.into_graphql(meta);
    writer(ctx, state).map_err(fail)?;
    let voter = voter(ctx, state).ok_or_else(|| {
        fail(ApiError::Unauthenticated(
            "voting needs a signed-in user".into(),
        ))
    })?;
    let id = GlobalId::comment_argument(&input.comment_id).map_err(|e| fail(e.into()))?;
    let voted = state
        .engine
        .store()
        .mark_helpful(id, &voter, input.helpful, now_ms())
        .await
        .map_err(|e| fail(e.into()))?;
    tracing::info!(
        sku = voted.comment.sku.as_str(),
        comment_id = %id,
        helpful = input.helpful,
        changed = voted.changed,
        helpful_count = voted.comment.helpful_count,
        "helpful vote"
    );
    if let Some(meta) = meta {
        meta.votes.know(id, input.helpful);
    }
    Ok(MarkHelpfulPayload {
        comment: Comment(voted.comment),
        client_mutation_id: input.client_mutation_id,
    })
}
