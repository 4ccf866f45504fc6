//! `Query.moderationQueue`: a moderator's queue of comments in one status that is not public,
//! across the shop or for one product, oldest first, paged like a product's comments (exact
//! `totalCount`, `offset` jumps and `pageCursors` from the index, `domain::QueueList`).

use async_graphql::{Context, Enum, Object};

use super::connection::{CommentConnection, ConnectionInput, resolve_connection};
use super::error::ApiError;
use super::moderation::moderated_scope;
use super::page_cursors::PageNumbering;
use super::state;
use crate::domain::{self, QueueList};

/// A moderator's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Enum)]
pub(super) enum ModerationQueue {
    /// Waiting for a first decision (`--moderation pre`, or an edit of a published comment
    /// there).
    Pending,
    /// With an open report, whatever their status (a decision closes the reports and takes
    /// the comment out).
    Reported,
    /// Taken down after publication.
    Hidden,
    /// Refused before publication.
    Rejected,
}

impl From<ModerationQueue> for domain::Queue {
    fn from(queue: ModerationQueue) -> Self {
        match queue {
            ModerationQueue::Pending => Self::Pending,
            ModerationQueue::Reported => Self::Reported,
            ModerationQueue::Hidden => Self::Hidden,
            ModerationQueue::Rejected => Self::Rejected,
        }
    }
}

/// `Query.moderationQueue`.
#[derive(Debug, Default)]
pub(super) struct QueueQuery;

#[Object]
impl QueueQuery {
    /// A moderator's queue (moderators only: `UNAUTHENTICATED` without a token, `FORBIDDEN`
    /// without the role): the comments in its status, across the shop or for one product,
    /// oldest first (by `createdAt`, then id). Paged like `Product.comments`: exact
    /// `totalCount`, `offset` and `pageCursors` from the index, so page 500 of a queue costs
    /// what page 1 does. A decision moves a comment out of the queue at once in the store; its
    /// count follows with the index (within the stream delay on DynamoDB).
    #[expect(
        clippy::too_many_arguments,
        reason = "async-graphql takes each GraphQL argument as a resolver parameter"
    )]
    async fn moderation_queue(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Which queue.")] queue: ModerationQueue,
        #[graphql(desc = "Only this product's comments; omit for the whole shop.")] sku: Option<
            String,
        >,
        #[graphql(
            desc = "Return at most this many comments from the top of the window (the server's default page size without `first` or `last`)."
        )]
        first: Option<i32>,
        #[graphql(desc = "Start after this cursor.")] after: Option<String>,
        #[graphql(desc = "Return at most this many comments from the bottom of the window.")]
        last: Option<i32>,
        #[graphql(desc = "End before this cursor.")] before: Option<String>,
        #[graphql(
            desc = "Skip this many comments first: from the top with `first`, from the bottom with `last`."
        )]
        offset: Option<i32>,
    ) -> async_graphql::Result<CommentConnection> {
        let meta = super::meta(ctx);
        let fail = |e: ApiError| e.into_graphql(meta);
        let sku = moderated_scope(ctx, state(ctx)?, sku).map_err(fail)?;
        let list = QueueList::new(queue.into(), sku);
        let input = ConnectionInput {
            verified: false,
            ratings: None,
            first,
            after,
            last,
            before,
            offset,
            containing: None,
            numbering: PageNumbering::FromStart,
            order: domain::CommentOrder::Oldest,
        };
        resolve_connection(ctx, list.index_name(), input).await
    }
}
