//! `Query.viewer`: the signed-in viewer, and through it their own comments in every status,
//! newest first, across products (`Viewer.comments`), paged like a product's comments: exact
//! `totalCount`, `offset` jumps and `pageCursors` from the index (`domain::AuthorList`).

use async_graphql::{Context, Object};

use super::connection::{CommentConnection, ConnectionInput, resolve_connection};
use super::moderation::CommentStatus;
use super::page_cursors::PageNumbering;
use super::report::ReportConnection;
use super::viewer::viewer;
use crate::domain::{self, AuthorList};

/// `Query.viewer`.
#[derive(Debug, Default)]
pub(super) struct ViewerQuery;

#[Object]
impl ViewerQuery {
    /// The signed-in viewer: `null` without a verified token (and always under `--auth off`,
    /// where every viewer is anonymous). Never an error: a client asks it to learn whether it
    /// is signed in.
    async fn viewer(&self, ctx: &Context<'_>) -> Option<Viewer> {
        viewer(ctx).map(|viewer| Viewer {
            sub: viewer.sub.clone(),
        })
    }
}

/// The signed-in viewer (the `sub` of their token).
#[derive(Debug)]
pub(super) struct Viewer {
    sub: String,
}

/// The signed-in viewer, and what is theirs: their own comments in every status, and the
/// reports they filed.
#[Object]
impl Viewer {
    /// The comments this viewer wrote, in every status (pending, published, hidden,
    /// rejected: `moderation` says which, and why), across products, newest first (by
    /// `createdAt`, then id). Paged like `Product.comments`: exact `totalCount`, `offset` and
    /// `pageCursors` from the index. Only comments written while signed in are the viewer's
    /// (the token's `sub` is what a comment keeps of its author). A write changes the list at
    /// once in the store; its count follows with the index (within the stream delay on
    /// DynamoDB).
    #[expect(
        clippy::too_many_arguments,
        reason = "async-graphql takes each GraphQL argument as a resolver parameter"
    )]
    async fn comments(
        &self,
        ctx: &Context<'_>,
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
        #[graphql(desc = "Only the comments in this status; omit for every status.")]
        status: Option<CommentStatus>,
    ) -> async_graphql::Result<CommentConnection> {
        // One list per author in the index, each status in a rating's place.
        let list = AuthorList::new(self.sub.clone(), status.map(Into::into));
        let slots = status.map(|_| list.slots().iter().map(|r| i32::from(r.get())).collect());
        let input = ConnectionInput {
            verified: false,
            ratings: slots,
            first,
            after,
            last,
            before,
            offset,
            containing: None,
            numbering: PageNumbering::FromStart,
            order: domain::CommentOrder::Newest,
        };
        resolve_connection(ctx, list.index_name(), input).await
    }

    /// The reports this viewer filed, newest first, with what became of each (`OPEN` until a
    /// moderator decides on the comment). Paged by cursors (no `offset`), with an exact
    /// `totalCount`.
    async fn reports(
        &self,
        ctx: &Context<'_>,
        #[graphql(
            desc = "Return at most this many reports from the top of the window (the server's default page size without `first` or `last`)."
        )]
        first: Option<i32>,
        #[graphql(desc = "Start after this cursor.")] after: Option<String>,
        #[graphql(desc = "Return at most this many reports from the bottom of the window.")]
        last: Option<i32>,
        #[graphql(desc = "End before this cursor.")] before: Option<String>,
    ) -> async_graphql::Result<ReportConnection> {
        super::report::viewer_reports(ctx, &self.sub, first, after, last, before).await
    }
}
