//! `Query.moderationLog` and the `ModerationEntry` node: the moderation log, newest first,
//! across the shop or for one product, as a Relay connection with an exact `totalCount`
//! (`domain::LogEntry`). Moderators only.
//!
//! The log is read from the store in entry-id order (a DynamoDB GSI, `store::dynamo::audit`):
//! a page is one read of `first` + 1 entries, and `hasNextPage`/`hasPreviousPage` are true to
//! the whole log in both directions (a `Limit 1` read past an edge where the page itself does
//! not tell). Cursors name an entry of one log, sealed as comment cursors are; used with
//! another log, or forged, `BAD_CURSOR`.

use async_graphql::{Context, Object, SimpleObject};

use super::error::ApiError;
use super::global_id::GlobalId;
use super::keyed::{Keyed, KeyedArgs, KeyedSource, resolve};
use super::moderation::{moderated_scope, moderator};
use super::state;
use super::types::{ModerationEntry, PageInfo};
use crate::domain::{EntryId, LogEntry, Order, Sku};
use crate::store::{CommentStore, LogQuery, StoreError};

/// An entry and its cursor.
#[derive(Debug, SimpleObject)]
pub(super) struct ModerationEntryEdge {
    /// Where this entry is in the log, for `after` and `before`.
    pub cursor: String,
    /// The entry.
    pub node: ModerationEntry,
}

/// A page of the moderation log, newest first.
#[derive(Debug, SimpleObject)]
pub(super) struct ModerationEntryConnection {
    /// How many entries the log (the shop's, or the product's) holds; exact.
    pub total_count: Option<i64>,
    /// The page's entries with their cursors.
    pub edges: Vec<ModerationEntryEdge>,
    /// Where the page sits in the whole log.
    pub page_info: PageInfo,
}

/// What a log cursor is sealed for: the log it belongs to (the shop's, or a product's), so a
/// cursor of one log is `BAD_CURSOR` in another, and no comment cursor opens as one. The
/// entry a cursor names exists (entries are never deleted), so it is there before (or after)
/// an empty page's window.
fn log_aad(sku: Option<&Sku>) -> Vec<u8> {
    let mut aad = b"dynapage/log\0".to_vec();
    aad.extend_from_slice(sku.map_or("", Sku::as_str).as_bytes());
    aad
}

/// `Query.moderationLog`.
#[derive(Debug, Default)]
pub(super) struct LogQueryRoot;

#[Object]
impl LogQueryRoot {
    /// Every moderation decision and reply, newest first, across the shop or for one product
    /// (moderators only: `UNAUTHENTICATED` without a token, `FORBIDDEN` without the role). The
    /// log is append-only: entries are never edited, and a deleted comment's entries stay.
    async fn moderation_log(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "Only this product's entries; omit for the whole shop.")] sku: Option<
            String,
        >,
        #[graphql(desc = "Return at most this many entries from the top of the window.")]
        first: Option<i32>,
        #[graphql(desc = "Start after this cursor.")] after: Option<String>,
        #[graphql(desc = "Return at most this many entries from the bottom of the window.")]
        last: Option<i32>,
        #[graphql(desc = "End before this cursor.")] before: Option<String>,
    ) -> async_graphql::Result<ModerationEntryConnection> {
        let state = state(ctx)?;
        let sku = moderated_scope(ctx, state, sku).map_err(|e| e.into_graphql(super::meta(ctx)))?;
        let store = state.engine.store();
        let source = LogSource {
            store,
            sku: sku.clone(),
        };
        let args = KeyedArgs {
            first,
            after,
            last,
            before,
            aad: log_aad(sku.as_ref()),
        };
        let page = resolve(ctx, &source, args, || {
            store.moderation_log_count(sku.as_ref())
        })
        .await?;
        Ok(ModerationEntryConnection {
            total_count: page.total_count,
            edges: page
                .edges
                .into_iter()
                .map(|(cursor, entry)| ModerationEntryEdge {
                    cursor,
                    node: entry.into(),
                })
                .collect(),
            page_info: page.page_info,
        })
    }
}

/// The shop's log, or a product's, as a keyed list.
struct LogSource<'a, S> {
    store: &'a S,
    sku: Option<Sku>,
}

impl<S: CommentStore> KeyedSource for LogSource<'_, S> {
    type Item = LogEntry;

    async fn read(
        &self,
        order: Order,
        after: Option<EntryId>,
        limit: usize,
    ) -> Result<(Vec<LogEntry>, Option<EntryId>), StoreError> {
        let query = LogQuery {
            sku: self.sku.clone(),
            order,
            after,
            limit,
        };
        let page = self.store.moderation_log(&query).await?;
        Ok((page.entries, page.last_evaluated))
    }
}

impl Keyed for LogEntry {
    fn key(&self) -> EntryId {
        self.id
    }
}

/// The log entries `ids` name, for `node` and `nodes`: read only for a moderator (to anyone
/// else an entry is nothing), each priced as an item.
pub(super) async fn entries(
    ctx: &Context<'_>,
    ids: &[GlobalId],
) -> async_graphql::Result<std::collections::HashMap<EntryId, LogEntry>> {
    let wanted: Vec<EntryId> = ids
        .iter()
        .filter_map(|id| match id {
            GlobalId::ModerationEntry(entry) => Some(*entry),
            _ => None,
        })
        .collect();
    let state = state(ctx)?;
    if wanted.is_empty() || moderator(ctx, state).is_err() {
        return Ok(std::collections::HashMap::new());
    }
    let meta = super::meta(ctx);
    let reserved = super::reserve_items(meta, state, wanted.len() as u64)?;
    let found = state.engine.store().log_entries(&wanted).await;
    if let Some(meta) = meta {
        meta.settle_items(reserved, wanted.len() as u64);
    }
    let found = found.map_err(|e| ApiError::from(e).into_graphql(meta))?;
    Ok(found.into_iter().flatten().map(|e| (e.id, e)).collect())
}
