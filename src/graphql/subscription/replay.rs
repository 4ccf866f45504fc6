//! What a subscription resumed `after:` a cursor hears before it goes live: the comments added
//! since the cursor, then the edits and deletions since.
//!
//! Each step is bounded before it reads. The index says how many comments are newer than the
//! cursor (`Engine::count_newer`, no store read): past [`MAX_REPLAY`] the client hears
//! `EVENTS_MISSED` and nothing is read, since it has to refetch its page anyway. Otherwise the
//! replay is paid for first, one point per comment it will read, from the client's cost budget
//! (the budget HTTP reads spend): a client that resumes again and again pays for every replay.
//! The comments are then read and given page by page ([`REPLAY_PAGE`]), so a resumed
//! subscription holds one page at a time, not its whole replay; only their ids are kept, to
//! drop the live ADDED events of comments the replay already gave. The edits and deletions come
//! from this server's hub, or, when it does not hold them all (it started since, or the client
//! was on another server), from the Redis change log ([`logged_since`]). The edits held
//! without their comments (the hub keeps none while nobody listens; the log never has them) are
//! read in one call, one point each.

use std::collections::HashSet;
use std::sync::Arc;

use futures::Stream;

use super::{CommentEvent, CommentEventKind, EventResult, MAX_REPLAY, event_for};
use crate::domain::{self, ChangeEvent, Order, Position, Sku, SortKey};
use crate::graphql::connection::edge_of;
use crate::graphql::error::{ApiError, ErrorCode};
use crate::graphql::{ApiState, Budget};
use crate::live::LiveChange;
use crate::pagination::{CursorScope, PagePlan, Want};

/// Comments read per replay page.
const REPLAY_PAGE: usize = 100;

/// How a resumed subscription's replay ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Resumed {
    /// Go live.
    Live,
    /// The budget refused the replay: the subscription ends with `RATE_LIMITED`.
    Refused,
}

/// What a subscription resumed `after` a cursor hears first: `EVENTS_MISSED` if neither the hub
/// nor the change log holds every edit and deletion since the cursor's comment was written, or if more
/// than [`MAX_REPLAY`] comments were added since; else the comments added since (their ids go
/// into `replayed`); then the edits and deletions. Sets `outcome`.
pub(super) fn resumed<'a>(
    state: &'a Arc<ApiState>,
    budget: Option<&'a Budget>,
    scope: &'a CursorScope,
    after: SortKey,
    replayed: &'a mut HashSet<domain::CommentId>,
    outcome: &'a mut Resumed,
) -> impl Stream<Item = EventResult> + 'a {
    async_stream::stream! {
        let logged = logged_since(state, &super::product_of(scope), after.millis()).await;
        if logged.is_none() {
            yield Err(missed(
                "neither this server nor the change log holds every edit and deletion made since that cursor: refetch the page",
            ));
        }
        // Unknown (the index is down): priced and bounded as the longest replay.
        let newer = state
            .engine
            .count_newer(&scope.sku, scope.ratings, after)
            .await
            .ok();
        if newer.is_some_and(|n| n > MAX_REPLAY as u64) {
            yield Err(missed(&format!(
                "more than {MAX_REPLAY} comments were added since that cursor: refetch the page"
            )));
        } else if newer != Some(0) {
            let price = newer.unwrap_or(MAX_REPLAY as u64);
            let spent = match budget {
                Some(budget) => budget.spend_more(price).await,
                None => Ok(()),
            };
            if let Err(message) = spent {
                *outcome = Resumed::Refused;
                yield Err(ApiError::Live { code: ErrorCode::RateLimited, message }.into_graphql(None));
                return;
            }
            let total = count(state, scope).await;
            for await event in replay(state, scope, after, total, replayed) {
                yield event;
            }
        }
        if let Some(changes) = logged {
            let changes = match with_comments(state, budget, changes).await {
                Ok(changes) => changes,
                Err(message) => {
                    *outcome = Resumed::Refused;
                    yield Err(ApiError::Live { code: ErrorCode::RateLimited, message }.into_graphql(None));
                    return;
                }
            };
            for change in changes {
                if let Some(event) = event_for(state, scope, &change) {
                    if event.kind != CommentEventKind::Added {
                        yield Ok(event);
                    }
                }
            }
        }
        *outcome = Resumed::Live;
    }
}

/// The comments newer than `after`, oldest first, read from the store and given page by page;
/// ends with `EVENTS_MISSED` if more than [`MAX_REPLAY`] turn up (the index was behind).
fn replay<'a>(
    state: &'a ApiState,
    scope: &'a CursorScope,
    after: SortKey,
    total: Option<i32>,
    replayed: &'a mut HashSet<domain::CommentId>,
) -> impl Stream<Item = EventResult> + 'a {
    async_stream::stream! {
        let mut start = after;
        loop {
            let plan = PagePlan {
                order: Order::OldestFirst,
                forward: Order::NewestFirst,
                start: Some(Position::flat(start)),
                stop: None,
                skip: 0,
                skip_through_index: false,
                take: REPLAY_PAGE,
                keep_last: None,
            };
            // Read oldest first: "previous" is what lies beyond the page.
            let want = Want { edges: true, has_next_page: false, has_previous_page: true };
            let page = match state.engine.page(&scope.sku, scope.listing(), &plan, want).await {
                Ok(page) => page,
                Err(error) => {
                    yield Err(ApiError::from(error).into_graphql(None));
                    return;
                }
            };
            let more = page.has_previous_page == Some(true);
            // Pages come newest first; the replay goes oldest first.
            let Some(newest) = page.items.first().map(domain::Comment::sort_key) else {
                return;
            };
            for comment in page.items.into_iter().rev() {
                if replayed.len() == MAX_REPLAY {
                    yield Err(missed(&format!(
                        "more than {MAX_REPLAY} comments were added since that cursor: refetch the page"
                    )));
                    return;
                }
                replayed.insert(comment.id);
                yield Ok(added(state, scope, comment, total));
            }
            if !more {
                return;
            }
            start = newest;
        }
    }
}

/// The changes to `sku` applied since `since_ms`, oldest first: from this server's hub if it
/// holds every one (no Redis call), else from the Redis change log, which any server can read
/// and which holds about `--change-log-max-len` changes (a server started since the cursor, or
/// another one behind the load balancer); `None` when neither holds them all. Changes from the
/// log come without their comments and counts, as the hub's do while nobody listens.
async fn logged_since(state: &ApiState, sku: &Sku, since_ms: u64) -> Option<Vec<Arc<LiveChange>>> {
    if let Ok(held) = state.hub.since(sku, since_ms) {
        return Some(held);
    }
    let log = state.change_log.as_ref()?;
    match log.since(sku, since_ms).await {
        Ok(logged) => logged.map(|logged| {
            logged
                .into_iter()
                .map(|logged| {
                    Arc::new(LiveChange {
                        change: logged.change,
                        comment: None,
                        rating_counts: None,
                        verified_counts: None,
                        applied_ms: logged.appended_ms,
                        // Not from this hub's broadcast: replayed, never compared with a
                        // cohort's place.
                        seq: 0,
                    })
                })
                .collect()
        }),
        Err(error) => {
            tracing::warn!(%error, sku = sku.as_str(), "resuming a subscription: cannot read the change log");
            None
        }
    }
}

/// `changes` with the comments of their upserts, read from the store where the hub did not
/// keep them (it keeps none while nobody is subscribed), one point each from `budget` (`Err`:
/// the refusal); an upsert whose comment is gone stays without one (its deletion follows).
async fn with_comments(
    state: &ApiState,
    budget: Option<&Budget>,
    changes: Vec<Arc<LiveChange>>,
) -> Result<Vec<Arc<LiveChange>>, String> {
    use crate::store::CommentStore;
    let missing: Vec<domain::CommentId> = changes
        .iter()
        .filter(|c| c.comment.is_none() && matches!(c.change, ChangeEvent::Upsert { .. }))
        .map(|c| c.id())
        .collect();
    if missing.is_empty() {
        return Ok(changes);
    }
    if let Some(budget) = budget {
        budget.spend_more(missing.len() as u64).await?;
    }
    let Ok(found) = state.engine.store().get_many(&missing).await else {
        return Ok(changes);
    };
    let found: std::collections::HashMap<domain::CommentId, domain::Comment> =
        found.into_iter().flatten().map(|c| (c.id, c)).collect();
    Ok(changes
        .into_iter()
        .map(|change| match found.get(&change.id()) {
            Some(comment) if change.comment.is_none() => Arc::new(LiveChange {
                comment: Some(comment.clone()),
                ..LiveChange::clone(&change)
            }),
            _ => change,
        })
        .collect())
}

fn missed(message: &str) -> async_graphql::Error {
    ApiError::Live {
        code: ErrorCode::EventsMissed,
        message: message.to_owned(),
    }
    .into_graphql(None)
}

async fn count(state: &ApiState, scope: &CursorScope) -> Option<i32> {
    state
        .engine
        .total_count(&scope.sku, scope.ratings)
        .await
        .ok()
        .map(|n| i32::try_from(n).unwrap_or(i32::MAX))
}

fn added(
    state: &ApiState,
    scope: &CursorScope,
    comment: domain::Comment,
    total_count: Option<i32>,
) -> CommentEvent {
    CommentEvent {
        kind: CommentEventKind::Added,
        edge: Some(edge_of(state, scope, comment)),
        deleted_comment_id: None,
        total_count,
    }
}
