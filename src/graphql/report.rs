//! Reports: `Mutation.reportComment`, the `Report` node, and a reader's own reports
//! (`Viewer.reports`), newest first, as a Relay connection with an exact `totalCount`
//! (`domain::Report`). A moderator sees a comment's open reports as `Comment.reportCount` and
//! the comment in the `REPORTED` queue; their decision closes the reports (`moderate`).

use async_graphql::{Context, ID, InputObject, SimpleObject};

use super::error::ApiError;
use super::global_id::GlobalId;
use super::keyed::{Keyed, KeyedArgs, KeyedSource, resolve};
use super::moderation::{ReportReason, signed_in};
use super::state;
use super::types::{PageInfo, Report};
use crate::clock::now_ms;
use crate::domain::{self, CommentId, EntryId, Order, ReportDraft};
use crate::store::{CommentStore, ReportQuery, StoreError};

/// A report of a comment.
#[derive(Debug, InputObject)]
pub(super) struct ReportCommentInput {
    /// The comment's global id.
    pub comment_id: ID,
    /// Why.
    pub reason: ReportReason,
    /// What to add, at most 1,000 characters.
    pub details: Option<String>,
    /// Echoed back in the payload (Relay).
    pub client_mutation_id: Option<String>,
}

/// The report filed (or the one filed before, for a second report of the same comment).
#[derive(Debug, SimpleObject)]
pub(super) struct ReportCommentPayload {
    /// The report.
    pub report: Report,
    /// The `clientMutationId` of the input.
    pub client_mutation_id: Option<String>,
}

/// `Mutation.reportComment`.
pub(super) async fn report_comment(
    ctx: &Context<'_>,
    input: ReportCommentInput,
) -> async_graphql::Result<ReportCommentPayload> {
    let state = state(ctx)?;
    let meta = super::meta(ctx);
    let fail = |e: ApiError| e.into_graphql(meta);
    let reporter = signed_in(ctx, state, "reports need a signed-in reader").map_err(fail)?;
    let id = GlobalId::comment_argument(&input.comment_id).map_err(|e| fail(e.into()))?;
    let draft = ReportDraft::new(input.reason.into(), input.details.as_deref())
        .map_err(|e| fail(e.into()))?;
    let report = state
        .engine
        .store()
        .report(
            id,
            &reporter.sub,
            &draft,
            state.report_hide_threshold,
            now_ms(),
        )
        .await
        .map_err(|e| fail(e.into()))?;
    tracing::info!(
        sku = report.sku.as_str(),
        comment_id = %id,
        reason = report.reason.as_str(),
        status = report.status.as_str(),
        "comment reported"
    );
    Ok(ReportCommentPayload {
        report: report.into(),
        client_mutation_id: input.client_mutation_id,
    })
}

/// A report and its cursor.
#[derive(Debug, SimpleObject)]
pub(super) struct ReportEdge {
    /// Where this report is in the reader's list, for `after` and `before`.
    pub cursor: String,
    /// The report.
    pub node: Report,
}

/// A page of a reader's reports, newest first.
#[derive(Debug, SimpleObject)]
pub(super) struct ReportConnection {
    /// How many reports the reader has filed; exact.
    pub total_count: Option<i64>,
    /// The page's reports with their cursors.
    pub edges: Vec<ReportEdge>,
    /// Where the page sits in the whole list.
    pub page_info: PageInfo,
}

/// What a report cursor is sealed for: the reader whose list it belongs to, so one reader's
/// cursor is `BAD_CURSOR` in another's list, and no other cursor opens as one.
fn aad(reporter: &str) -> Vec<u8> {
    let mut aad = b"dynapage/reports\0".to_vec();
    aad.extend_from_slice(reporter.as_bytes());
    aad
}

/// One reader's reports as a keyed list.
struct ReportSource<'a, S> {
    store: &'a S,
    reporter: &'a str,
}

impl<S: CommentStore> KeyedSource for ReportSource<'_, S> {
    type Item = domain::Report;

    async fn read(
        &self,
        order: Order,
        after: Option<EntryId>,
        limit: usize,
    ) -> Result<(Vec<domain::Report>, Option<EntryId>), StoreError> {
        let query = ReportQuery {
            reporter: self.reporter.to_owned(),
            order,
            after,
            limit,
        };
        let page = self.store.reports(&query).await?;
        Ok((page.reports, page.last_evaluated))
    }
}

impl Keyed for domain::Report {
    fn key(&self) -> EntryId {
        self.id
    }
}

/// `Viewer.reports`: the reports `reporter` filed, newest first.
pub(super) async fn viewer_reports(
    ctx: &Context<'_>,
    reporter: &str,
    first: Option<i32>,
    after: Option<String>,
    last: Option<i32>,
    before: Option<String>,
) -> async_graphql::Result<ReportConnection> {
    let store = state(ctx)?.engine.store();
    let args = KeyedArgs {
        first,
        after,
        last,
        before,
        aad: aad(reporter),
    };
    let source = ReportSource { store, reporter };
    let page = resolve(ctx, &source, args, || store.report_count(reporter)).await?;
    Ok(ReportConnection {
        total_count: page.total_count,
        edges: page
            .edges
            .into_iter()
            .map(|(cursor, report)| ReportEdge {
                cursor,
                node: report.into(),
            })
            .collect(),
        page_info: page.page_info,
    })
}

/// The reports `ids` name, for `node` and `nodes`: each only for its reader or a moderator
/// (to anyone else a report is nothing), each priced as an item.
pub(super) async fn reports(
    ctx: &Context<'_>,
    ids: &[GlobalId],
) -> async_graphql::Result<std::collections::HashMap<(CommentId, String), domain::Report>> {
    let state = state(ctx)?;
    let who = signed_in(ctx, state, "reports").ok();
    let wanted: Vec<(CommentId, String)> = ids
        .iter()
        .filter_map(|id| match id {
            GlobalId::Report(comment, reporter)
                if who.is_some_and(|v| v.moderator || v.sub == *reporter) =>
            {
                Some((*comment, reporter.clone()))
            }
            _ => None,
        })
        .collect();
    if wanted.is_empty() {
        return Ok(std::collections::HashMap::new());
    }
    let meta = super::meta(ctx);
    let reserved = super::reserve_items(meta, state, wanted.len() as u64)?;
    let found = super::batch::reports(ctx, &wanted).await;
    if let Some(meta) = meta {
        meta.settle_items(reserved, wanted.len() as u64);
    }
    found
}
