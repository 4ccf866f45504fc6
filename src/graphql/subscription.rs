//! `Subscription.commentEvents`: a product's comment changes as this server's index applies
//! them (`crate::live`), filtered by rating, optionally resumed from a cursor.
//!
//! A rating filter sees a change by where the comment was and is: an edit that moves a comment
//! into the filter arrives as ADDED, out of it as DELETED, within it as UPDATED.
//!
//! Resuming (`after:`) subscribes to the live feed first, then replays from the store every
//! comment newer than the cursor, oldest first, in cursor pages; live ADDED events for comments
//! the replay already gave are dropped (by id), so nothing falls in the gap between the two and
//! nothing is given twice. Edits and deletions are replayed from the hub's recent changes from
//! the cursor comment's `createdAt` on (the client was there then); a client that resumes from
//! further back than the hub remembers first gets an `EVENTS_MISSED` error on the stream, which
//! tells it to refetch its page, and then the live events. A replay is bounded and paid for
//! before it reads (`replay`).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_graphql::{Context, Enum, ID, SimpleObject, Subscription};
use futures::Stream;
use futures::stream::{BoxStream, StreamExt};
use tokio::sync::broadcast::error::RecvError;

pub mod cohort;
mod replay;

use self::cohort::{Delivered, Member, SharedRun, Ticket};
use self::replay::{Resumed, resumed};
use super::connection::{edge_of, rating_set};
use super::error::{ApiError, ErrorCode};
use super::global_id::GlobalId;
use super::types::CommentEdge;
use super::{ApiState, Budget, state};
use crate::domain::{self, ChangeEvent, Sku};
use crate::live::LiveChange;
use crate::pagination::CursorScope;
use crate::telemetry::metric;

/// Comments one resumed subscription replays at most; a client further behind refetches.
pub(super) const MAX_REPLAY: usize = 1_000;

/// What happened to a comment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Enum)]
pub enum CommentEventKind {
    /// A comment entered the connection: written, or edited into the rating filter.
    Added,
    /// A comment in the connection was edited and stays in it.
    Updated,
    /// A comment left the connection: deleted, or edited out of the rating filter.
    Deleted,
}

/// One change to a product's comments, as a subscriber's connection sees it.
#[derive(Clone, Debug, SimpleObject)]
pub(super) struct CommentEvent {
    /// What happened: ADDED, UPDATED or DELETED, as this subscription's filter sees it.
    pub kind: CommentEventKind,
    /// The comment with its cursor in this connection (ADDED, UPDATED).
    pub edge: Option<CommentEdge>,
    /// Global id of the removed comment (DELETED).
    pub deleted_comment_id: Option<ID>,
    /// The connection's count after this change, from the index; null when the index could
    /// not be asked, and on edits and deletions replayed to a resumed subscription.
    pub total_count: Option<i32>,
}

/// Subscriptions open on this server, against `--max-subscriptions`.
#[derive(Debug, Default)]
pub struct OpenSubscriptions(AtomicUsize);

/// One open subscription, counted until dropped.
struct Slot(Arc<ApiState>);

impl Slot {
    fn take(state: &Arc<ApiState>) -> Result<Self, ApiError> {
        let open = &state.open_subscriptions.0;
        let max = state.max_subscriptions;
        if open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .is_err()
        {
            return Err(ApiError::Live {
                code: ErrorCode::TooManySubscriptions,
                message: format!(
                    "this server holds its maximum of {max} subscriptions; retry later or on another server"
                ),
            });
        }
        metric::SUBSCRIPTIONS_OPEN.gauge(&[]).increment(1.0);
        Ok(Self(state.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open_subscriptions.0.fetch_sub(1, Ordering::AcqRel);
        metric::SUBSCRIPTIONS_OPEN.gauge(&[]).decrement(1.0);
    }
}

/// The root of every subscription.
#[derive(Debug, Default)]
pub struct SubscriptionRoot;

/// Live events.
#[Subscription(name = "Subscription")]
impl SubscriptionRoot {
    /// Changes to a product's comments (optionally only some ratings), as they reach this
    /// server's index. With `after` (a cursor this connection issued), first replays every
    /// comment newer than it, oldest first (at most 1,000, one point each from the client's
    /// query-cost budget), and the edits and deletions since that comment was written, then
    /// goes live; no comment is added twice. An `EVENTS_MISSED` error means the server does
    /// not hold every edit and deletion since the cursor (too far back, or from before it
    /// started) or that more than 1,000 comments are newer (nothing is replayed): refetch the
    /// page. A subscriber more than `--subscription-buffer` changes behind is closed with
    /// `SLOW_SUBSCRIBER`. It must be the operation's only root field, and select no
    /// connection (`comments`, `pageCursors`, `ratingSummary`): query those over HTTP.
    async fn comment_events(
        &self,
        ctx: &Context<'_>,
        #[graphql(desc = "The product's SKU.")] sku: String,
        #[graphql(
            desc = "Only comments with one of these ratings (1-5, no repeats). Omit for all."
        )]
        ratings: Option<Vec<i32>>,
        #[graphql(
            desc = "`true`: only verified purchases (`Comment.verifiedPurchase`), with `totalCount` theirs. `false` or omitted: all comments."
        )]
        verified: Option<bool>,
        #[graphql(
            desc = "Resume after this cursor (an edge's `cursor`, from this product and rating filter)."
        )]
        after: Option<String>,
    ) -> async_graphql::Result<BoxStream<'static, async_graphql::Result<CommentEvent>>> {
        let state = state(ctx)?.clone();
        let fail = |e: ApiError| e.into_graphql(None);
        let sku = Sku::parse(&sku).map_err(|e| fail(e.into()))?;
        let ratings = rating_set(ratings.as_deref()).map_err(|e| fail(e.into()))?;
        let scope = CursorScope {
            sku: match verified {
                Some(true) => domain::verified_list(&sku),
                _ => sku,
            },
            ratings,
            order: domain::CommentOrder::Newest,
        };
        let after = after
            .map(|cursor| resume_after(&state, &scope, &cursor))
            .transpose()?;
        if let Some(shared) = ctx.data_opt::<Arc<SharedRun>>() {
            return Ok(shared_events(state, scope, shared.clone()).boxed());
        }
        let budget = ctx.data_opt::<Arc<Budget>>().cloned();
        let member = ctx.data_opt::<Arc<Member>>().cloned();
        let slot = Slot::take(&state).map_err(fail)?;
        // Subscribed before the replay reads the store: nothing falls between the two.
        let live = match &member {
            Some(member) => {
                member.join();
                None
            }
            None => Some(state.hub.subscribe()),
        };

        Ok(async_stream::stream! {
            let mut replayed: HashSet<domain::CommentId> = HashSet::new();
            if let Some(after) = after {
                let mut outcome = Resumed::Live;
                let budget = budget.as_deref();
                for await event in resumed(&state, budget, &scope, after, &mut replayed, &mut outcome) {
                    yield event;
                }
                if outcome == Resumed::Refused {
                    return;
                }
            }
            match (member, live) {
                (Some(member), _) => member.hand_over(Ticket::new(slot, replayed)),
                (None, Some(live)) => {
                    let _slot = slot;
                    for await event in live_events(&state, &scope, live, replayed, None) {
                        yield event;
                    }
                }
                (None, None) => {}
            }
        }
        .boxed())
    }
}

pub(super) type EventResult = async_graphql::Result<CommentEvent>;

/// The comment a subscription's `after` cursor names, to replay what is newer. A numbered
/// page's cursor names no comment to resume after, and is refused like a cursor of another
/// connection.
fn resume_after(
    state: &ApiState,
    scope: &CursorScope,
    cursor: &str,
) -> async_graphql::Result<domain::SortKey> {
    state
        .codec
        .open(scope, cursor)
        .ok()
        .and_then(|at| match at {
            crate::pagination::CursorAt::Position(at) => Some(at.key),
            crate::pagination::CursorAt::Offset { .. } => None,
        })
        .ok_or_else(|| {
            ApiError::from(crate::pagination::PaginationError::BadCursor { argument: "after" })
                .into_graphql(None)
        })
}

/// A cohort's one execution: live at once from the receiver the cohort subscribed, noting the
/// change behind each event it yields.
fn shared_events(
    state: Arc<ApiState>,
    scope: CursorScope,
    shared: Arc<SharedRun>,
) -> impl Stream<Item = EventResult> {
    async_stream::stream! {
        let Some(live) = shared.take_live() else {
            return;
        };
        for await event in live_events(&state, &scope, live, HashSet::new(), Some(&shared)) {
            yield event;
        }
    }
}

/// The live events of `scope` from the hub's broadcast, skipping additions a replay already
/// gave (`replayed`); ends with `SLOW_SUBSCRIBER` when the subscriber falls a whole ring behind.
/// A cohort's run (`shared`) notes the change behind each event, and counts one execution per
/// event: its members' deliveries are counted where they are sent.
fn live_events<'a>(
    state: &'a Arc<ApiState>,
    scope: &'a CursorScope,
    mut live: tokio::sync::broadcast::Receiver<Arc<LiveChange>>,
    mut replayed: HashSet<domain::CommentId>,
    shared: Option<&'a SharedRun>,
) -> impl Stream<Item = EventResult> + 'a {
    // Once, not per change: a verified list's product is parsed from its name.
    let product = product_of(scope);
    async_stream::stream! {
        loop {
            match live.recv().await {
                Ok(change) => {
                    if *change.sku() != product {
                        continue;
                    }
                    let Some(event) = event_for(state, scope, &change) else {
                        continue;
                    };
                    if event.kind == CommentEventKind::Added && replayed.remove(&change.id()) {
                        continue;
                    }
                    metric::SUBSCRIPTION_EXECUTIONS.counter(&[]).increment(1);
                    metric::SUBSCRIPTION_DELIVERY_LAG.histogram(&[])
                        .record(crate::clock::now_ms().saturating_sub(change.applied_ms) as f64 / 1000.0);
                    match shared {
                        Some(shared) => shared.note(Delivered {
                            seq: change.seq,
                            comment: change.id(),
                            added: event.kind == CommentEventKind::Added,
                        }),
                        None => metric::SUBSCRIPTION_EVENTS.counter(&[]).increment(1),
                    }
                    yield Ok(event);
                }
                Err(RecvError::Lagged(missed_changes)) => {
                    metric::SUBSCRIPTIONS_DROPPED_SLOW.counter(&[]).increment(1);
                    tracing::info!(sku = scope.sku.as_str(), missed_changes, "slow subscriber closed");
                    yield Err(ApiError::Live {
                        code: ErrorCode::SlowSubscriber,
                        message: format!("this subscription fell {missed_changes} changes behind and was closed: resubscribe with `after:` set to the newest cursor you hold"),
                    }.into_graphql(None));
                    return;
                }
                Err(RecvError::Closed) => return,
            }
        }
    }
}

/// The product whose changes a subscription with `scope` hears: its list's, or, for a verified
/// list ([`domain::verified_list`]), its product's.
pub(super) fn product_of(scope: &CursorScope) -> domain::Sku {
    domain::verified_product(scope.sku.as_str()).unwrap_or_else(|| scope.sku.clone())
}

/// What a subscriber with `scope` sees of `change`, if anything.
pub(super) fn event_for(
    state: &ApiState,
    scope: &CursorScope,
    change: &LiveChange,
) -> Option<CommentEvent> {
    let ratings = scope.ratings;
    // A verified list hears only verified comments (a comment's flag never changes), and
    // counts theirs.
    let verified_only = domain::is_verified_list(scope.sku.as_str());
    if verified_only && !change.change.entry().verified {
        return None;
    }
    let counts = match verified_only {
        true => change.verified_counts,
        false => change.rating_counts,
    };
    // In the subscribed list before and after: public (publishing is an addition, hiding a
    // deletion: `ChangeEvent::was_public`) and of a subscribed rating.
    let event = &change.change;
    let (was_in, is_in) = match event {
        ChangeEvent::Upsert { old, new } => (
            event.was_public()
                && ratings.contains(old.as_ref().map_or(new.rating, |old| old.rating)),
            event.is_public() && ratings.contains(new.rating),
        ),
        ChangeEvent::Remove { old, .. } => {
            (event.was_public() && ratings.contains(old.rating), false)
        }
    };
    let kind = match (was_in, is_in) {
        (false, true) => CommentEventKind::Added,
        (true, true) => CommentEventKind::Updated,
        (true, false) => CommentEventKind::Deleted,
        (false, false) => return None,
    };
    let total_count = counts.map(|counts| {
        let n: u64 = ratings.iter().map(|r| counts[r.index()]).sum();
        i32::try_from(n).unwrap_or(i32::MAX)
    });
    let id = change.id();
    match kind {
        CommentEventKind::Deleted => Some(CommentEvent {
            kind,
            edge: None,
            deleted_comment_id: Some(ID(GlobalId::Comment(id).encode())),
            total_count,
        }),
        // The comment is gone again (a deletion follows), or could not be read.
        _ => change.comment.clone().map(|comment| CommentEvent {
            kind,
            edge: Some(edge_of(state, scope, comment)),
            deleted_comment_id: None,
            total_count,
        }),
    }
}
