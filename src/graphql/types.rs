//! The object types of the schema below the connection: `Node`, `Comment`, edges and page
//! info, and the `Product` type (whose fields, `comments` among them, are in `product.rs`).

use async_graphql::{ComplexObject, Context, ID, Interface, Object, SimpleObject};

use super::global_id::GlobalId;
use super::moderation::{CommentStatus, ModerationReason};
use super::scalars::DateTime;
use crate::domain::{self, EntryId, LogEntry, Sku};

/// An object with a globally unique id, refetchable through `node(id:)` (Relay).
#[derive(Interface)]
#[graphql(field(
    name = "id",
    ty = "ID",
    desc = "Globally unique, opaque id of the object."
))]
pub(super) enum Node {
    Product(Product),
    Comment(Comment),
    ModerationEntry(ModerationEntry),
    Report(Report),
}

/// A product. It exists as soon as it is named: a product without comments has an empty
/// connection and a `totalCount` of 0. Its fields are resolved in `product.rs`, above the
/// connection (which holds comments, whose `product` field names this type).
#[derive(Clone, Debug)]
pub(super) struct Product {
    pub sku: Sku,
}

/// A comment on a product.
#[derive(Clone, Debug)]
pub(super) struct Comment(pub domain::Comment);

/// A comment on a product.
#[Object]
impl Comment {
    /// Globally unique, opaque id of the comment.
    async fn id(&self) -> ID {
        ID(GlobalId::Comment(self.0.id).encode())
    }

    /// Who wrote the comment.
    async fn author(&self) -> &str {
        &self.0.author
    }

    /// The comment's text.
    async fn body(&self) -> &str {
        &self.0.body
    }

    /// Star rating, 1 to 5.
    async fn rating(&self) -> i32 {
        i32::from(self.0.rating.get())
    }

    /// When the comment was written (UTC, millisecond precision). Comments are ordered by it,
    /// newest first unless `orderBy` says otherwise; equal times are ordered by id.
    async fn created_at(&self) -> DateTime {
        DateTime(self.0.created_at())
    }

    /// When the comment was last edited, if ever.
    async fn updated_at(&self) -> Option<DateTime> {
        self.0.updated_at().map(DateTime)
    }

    /// Whether the author proved they bought the product (a purchase proof the shop signed,
    /// given to `addComment`): a verified purchase. Set when the comment is written, never by a
    /// client field, and kept by its edits.
    async fn verified_purchase(&self) -> bool {
        self.0.is_verified()
    }

    /// How many people marked this comment helpful.
    async fn helpful_count(&self) -> i32 {
        i32::try_from(self.0.helpful_count).unwrap_or(i32::MAX)
    }

    /// Whether the viewer marked it helpful; false without a viewer.
    // Under `--auth off` the viewer is the client's address. A page's comments are looked up in
    // one batched read, a comment alone reads its one vote (`helpful` says what it costs).
    async fn viewer_found_helpful(
        &self,
        ctx: &async_graphql::Context<'_>,
    ) -> async_graphql::Result<bool> {
        // Boxed: the read's future (a DynamoDB `BatchGetItem` among its states) is kilobytes,
        // and unboxed it sizes the future of every field of `Comment`, which async-graphql
        // boxes for each field it resolves; boxed, a page of 20 that never asks this field
        // runs 2.5 % fewer instructions (BENCHMARKS.md, "Cost of the abuse checks").
        Box::pin(super::helpful::viewer_found_helpful(ctx, &self.0)).await
    }

    /// Whether the viewer may edit this comment: its author or a moderator when the server
    /// verifies tokens, anyone when it does not. Show or hide an edit button with it.
    async fn viewer_can_update(&self, ctx: &async_graphql::Context<'_>) -> bool {
        super::viewer::may_change(ctx, &self.0)
    }

    /// Whether the viewer may delete this comment (the same rule as `viewerCanUpdate`).
    async fn viewer_can_delete(&self, ctx: &async_graphql::Context<'_>) -> bool {
        super::viewer::may_change(ctx, &self.0)
    }

    /// The shop's public answer, if any.
    async fn reply(&self, ctx: &async_graphql::Context<'_>) -> Option<super::moderation::Reply> {
        let shop = ctx
            .data_opt::<std::sync::Arc<super::ApiState>>()
            .map_or("The shop", |state| state.shop_name.as_str());
        self.0
            .reply
            .as_ref()
            .map(|reply| super::moderation::Reply::of(reply, shop))
    }

    /// Its status, the reason and note of the last decision, and when it was made: for the
    /// comment's author and moderators; null for anyone else.
    async fn moderation(
        &self,
        ctx: &async_graphql::Context<'_>,
    ) -> Option<super::moderation::Moderation> {
        super::moderation::sees_moderation(ctx, &self.0)
            .then(|| super::moderation::Moderation::from(&self.0.moderation))
    }

    /// How many reports are open on the comment (a moderator's decision closes them):
    /// moderators only, null for anyone else.
    async fn report_count(&self, ctx: &async_graphql::Context<'_>) -> Option<i32> {
        super::moderation::is_moderator(ctx)
            .then(|| i32::try_from(self.0.report_count()).unwrap_or(i32::MAX))
    }

    /// The reports open on the comment, oldest first (at most 50: a moderator's decision
    /// closes them all): moderators only, null for anyone else. Read with the request's other
    /// reports (a queue page's in one batched store read), each priced as an item.
    async fn open_reports(
        &self,
        ctx: &async_graphql::Context<'_>,
    ) -> async_graphql::Result<Option<Vec<Report>>> {
        if !super::moderation::is_moderator(ctx) {
            return Ok(None);
        }
        if self.0.reporters.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let keys: Vec<(domain::CommentId, String)> = self
            .0
            .reporters
            .iter()
            .map(|reporter| (self.0.id, reporter.clone()))
            .collect();
        let (state, meta) = (super::state(ctx)?, super::meta(ctx));
        let reserved = super::reserve_items(meta, state, keys.len() as u64)?;
        let found = super::batch::reports(ctx, &keys).await;
        if let Some(meta) = meta {
            meta.settle_items(reserved, keys.len() as u64);
        }
        let mut found = found?;
        Ok(Some(
            keys.iter()
                .filter_map(|key| found.remove(key))
                .map(Report::from)
                .collect(),
        ))
    }

    /// The product the comment is about.
    async fn product(&self) -> Product {
        Product {
            sku: self.0.sku.clone(),
        }
    }
}

/// How a product's comments are rated: what a storefront shows beside its pager and rating
/// filter.
#[derive(Clone, Debug, SimpleObject)]
pub(super) struct RatingSummary {
    /// How many comments the product has.
    pub total: i32,
    /// The mean rating, from the counts; null when there are no comments.
    pub average: Option<f64>,
    /// How many comments have each rating, from 5 stars down to 1 (all five, zeros included).
    pub counts: Vec<RatingCount>,
    /// How many of them are verified purchases (`Comment.verifiedPurchase`): the count beside
    /// a "verified only" filter (`verified: true`), from the index like `total`.
    pub verified_count: i32,
}

impl RatingSummary {
    /// Whether a selection of a summary (`look`) reads a verified count, which costs the
    /// index a count of the product's verified list too.
    pub(super) fn wants_verified(look: &async_graphql::Lookahead<'_>) -> bool {
        look.field("verifiedCount").exists() || look.field("counts").field("verifiedCount").exists()
    }

    /// The summary of the counts of ratings 1 to 5 (`[ones, …, fives]`), and of the verified
    /// purchases among them when they were read (zeros otherwise: read only when selected,
    /// [`RatingSummary::wants_verified`]).
    pub(super) fn from_counts(counts: [u64; 5], verified: Option<[u64; 5]>) -> Self {
        let verified = verified.unwrap_or_default();
        let count = |n: u64| i32::try_from(n).unwrap_or(i32::MAX);
        let total: u64 = counts.iter().sum();
        let stars: u64 = counts
            .iter()
            .zip(1..)
            .map(|(count, stars)| count * stars)
            .sum();
        Self {
            total: i32::try_from(total).unwrap_or(i32::MAX),
            average: (total > 0).then(|| stars as f64 / total as f64),
            counts: (1..=5)
                .rev()
                .zip(counts.iter().rev().zip(verified.iter().rev()))
                .map(|(rating, (all, verified))| RatingCount {
                    rating,
                    count: count(*all),
                    verified_count: count(*verified),
                })
                .collect(),
            verified_count: count(verified.iter().sum()),
        }
    }
}

/// The number of comments with one rating.
#[derive(Clone, Debug, SimpleObject)]
pub(super) struct RatingCount {
    /// Star rating, 1 to 5.
    pub rating: i32,
    /// Comments with that rating.
    pub count: i32,
    /// Verified purchases with that rating.
    pub verified_count: i32,
}

/// A comment and its position in the connection.
#[derive(Clone, Debug, SimpleObject)]
pub(super) struct CommentEdge {
    /// Opaque position of this comment; pass it as `after` or `before` to page from here.
    /// Valid only for the same product and rating filter.
    pub cursor: String,
    /// The comment.
    pub node: Comment,
}

/// Where the page sits in the whole list.
#[derive(Clone, Debug, SimpleObject)]
pub(super) struct PageInfo {
    /// Whether any comment comes after the page's last edge in the connection's order (older,
    /// newest first), in the whole list.
    pub has_next_page: bool,
    /// Whether any comment comes before the page's first edge in the connection's order
    /// (newer, newest first), in the whole list.
    pub has_previous_page: bool,
    /// The first edge's cursor; null when the page is empty.
    pub start_cursor: Option<String>,
    /// The last edge's cursor; null when the page is empty.
    pub end_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_counts_from_five_stars_down_and_averages_the_stars() {
        let summary = RatingSummary::from_counts([1, 0, 0, 1, 2], None);
        assert_eq!(summary.total, 4);
        assert_eq!(summary.average, Some((1.0 + 4.0 + 10.0) / 4.0));
        let counts: Vec<(i32, i32)> = summary.counts.iter().map(|c| (c.rating, c.count)).collect();
        assert_eq!(counts, [(5, 2), (4, 1), (3, 0), (2, 0), (1, 1)]);
        assert_eq!(RatingSummary::from_counts([0; 5], None).average, None);
    }
}

/// One moderation decision or reply, as the log keeps it: never edited, kept when its comment
/// is deleted.
#[derive(Clone, Debug, SimpleObject)]
#[graphql(complex)]
pub(super) struct ModerationEntry {
    /// The product of the comment.
    pub sku: String,
    /// Who acted: the moderator's or merchant's token subject.
    pub actor: String,
    /// What they did: `PUBLISH`, `HIDE`, `REJECT`, `REPLY` or `REMOVE_REPLY`; for a decision
    /// that closed reports, a second entry `UPHOLD_REPORTS` or `DISMISS_REPORTS` (its note
    /// counts them); `HIDE_ON_REPORTS` when `--report-hide-threshold` readers hid the comment
    /// (the actor is then `dynapage:report-hide-threshold`).
    pub action: String,
    /// The comment's status before.
    pub previous_status: Option<CommentStatus>,
    /// The comment's status after.
    pub status: Option<CommentStatus>,
    /// The decision's reason (hide and reject).
    pub reason: Option<ModerationReason>,
    /// The note to the author (a decision), or the reply's text.
    pub note: Option<String>,
    /// When.
    pub at: DateTime,
    #[graphql(skip)]
    pub entry_id: EntryId,
    #[graphql(skip)]
    pub comment_id: domain::CommentId,
}

#[ComplexObject]
impl ModerationEntry {
    /// Globally unique, opaque id of the entry.
    pub(super) async fn id(&self) -> ID {
        ID(GlobalId::ModerationEntry(self.entry_id).encode())
    }

    /// The comment, as it now is; null once it is deleted (its entries stay).
    async fn comment(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Comment>> {
        let found = super::batch::comments(ctx, &[self.comment_id]).await?;
        Ok(found.get(&self.comment_id).cloned().map(Comment))
    }
}

impl From<LogEntry> for ModerationEntry {
    fn from(entry: LogEntry) -> Self {
        Self {
            entry_id: entry.id,
            sku: entry.sku.to_string(),
            actor: entry.actor,
            action: entry.action.as_str().to_owned(),
            previous_status: Some(entry.previous.into()),
            status: Some(entry.status.into()),
            reason: entry.reason.map(Into::into),
            note: entry.note,
            at: super::moderation::at(entry.at_ms),
            comment_id: entry.comment,
        }
    }
}

/// A reader's report of a comment: seen by its reader and moderators only.
#[derive(Clone, Debug, SimpleObject)]
#[graphql(complex)]
pub(super) struct Report {
    /// Why.
    pub reason: super::moderation::ReportReason,
    /// What the reader added.
    pub details: Option<String>,
    /// Where it stands: `OPEN` until a moderator decides on the comment.
    pub status: super::moderation::ReportStatus,
    /// When it was filed.
    pub created_at: DateTime,
    /// When a decision closed it; null while it is open.
    pub decided_at: Option<DateTime>,
    #[graphql(skip)]
    pub comment_id: domain::CommentId,
    #[graphql(skip)]
    pub reporter: String,
}

#[ComplexObject]
impl Report {
    /// Globally unique, opaque id of the report.
    pub(super) async fn id(&self) -> ID {
        ID(GlobalId::Report(self.comment_id, self.reporter.clone()).encode())
    }

    /// The comment reported, as it now is, if the viewer may see it: null once it is deleted,
    /// or hidden (to anyone but its author and moderators).
    async fn comment(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Comment>> {
        let found = super::batch::comments(ctx, &[self.comment_id]).await?;
        Ok(found
            .get(&self.comment_id)
            .filter(|c| super::moderation::may_see(ctx, c))
            .cloned()
            .map(Comment))
    }
}

impl From<domain::Report> for Report {
    fn from(report: domain::Report) -> Self {
        Self {
            reason: report.reason.into(),
            details: report.details,
            status: report.status.into(),
            created_at: super::moderation::at(report.created_at_ms),
            decided_at: report.decided_at_ms.map(super::moderation::at),
            comment_id: report.comment,
            reporter: report.reporter,
        }
    }
}
