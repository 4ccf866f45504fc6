//! Helpful votes in the API: who the voter is, and `Comment.viewerFoundHelpful`
//! (`Mutation.markHelpful` is `super::mark_helpful`, which asks this module for the voter).
//!
//! **Who votes** ([`voter`]): under `--auth jwt`, the verified token's subject (voting needs a
//! token: `UNAUTHENTICATED` without one); under `--auth off`, the client's address as the rate
//! limiter sees it (through `--trusted-proxies`; an IPv6 client by its /64), attached by the
//! transport as [`ClientAddress`]. The store keeps a pseudonym of either
//! ([`crate::domain::VoterId`]). A signed-in voter may not mark their own comment helpful
//! (`FORBIDDEN`): a review's author vouching for it says nothing. Under `--auth off` comments
//! carry no author identity, so the rule cannot apply there.
//!
//! **What `viewerFoundHelpful` costs.** Without a voter (`--auth jwt` and no token) it is false
//! and reads nothing. Otherwise a page's comments are looked up together: the connection
//! registers its page ([`expect_votes`]) when its selection asks for the field, and the first
//! of the page's comments to resolve it reads the viewer's votes on the whole page in one
//! batched store read (DynamoDB: one `BatchGetItem` of the page's vote keys, at most 100 a
//! call), which the others await. Comments reached any other way (`node`, `nodes`) are read
//! together by the request's loader (`batch`: one batched read per tick); a subscription's
//! event, which has no loader, reads its comment's vote alone. The field is priced 1 per
//! comment (its complexity), which covers the item it may read, and `extensions.cost` counts
//! every key asked, found or not. `markHelpful`'s answer knows the viewer's vote without
//! reading it.
//!
//! Votes are the viewer's own: a response that asks `viewerFoundHelpful` under `--auth off`
//! depends on the client's address, so the transport treats it as a signed-in response
//! (never kept by the response cache or a shared cache; cohorts of subscribers are per voter).

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};

use async_graphql::Context;
use async_graphql::dataloader::Loader;

use super::batch::{BatchReads, RequestLoader};
use super::error::ApiError;
use super::viewer::viewer;
use super::{ApiState, RequestMeta, state};
use crate::auth::Auth;
use crate::domain::{self, CommentId, Voter, VoterId};
use crate::pagination::PageStats;
use crate::ratelimit::ClientKey;
use crate::store::CommentStore;

/// The field whose answer depends on the voter, as documents spell it.
pub const VIEWER_FOUND_HELPFUL: &str = "viewerFoundHelpful";

/// The address a request came from (the transport attaches it): the voter under `--auth off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// Who votes in this request: the token's subject under `--auth jwt` (`None` without a token),
/// the client's address under `--auth off` (`0.0.0.0` when the transport named none).
pub(super) fn voter(ctx: &Context<'_>, state: &ApiState) -> Option<Voter> {
    match &state.auth {
        Auth::Jwt(_) => viewer(ctx).map(|viewer| Voter::signed_in(&viewer.sub)),
        Auth::Off => {
            let address = ctx
                .data_opt::<ClientAddress>()
                .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.0);
            Some(Voter::anonymous(ClientKey::new(None, address).as_str()))
        }
    }
}

/// The viewer's votes this request knows or will read together.
#[derive(Debug, Default)]
pub(super) struct VoteLookups {
    /// Answers known without a read (`markHelpful`'s own vote).
    known: Mutex<HashMap<CommentId, bool>>,
    /// Each page's comments, read in one batch by whichever resolves first.
    pages: Mutex<HashMap<CommentId, Arc<PageVotes>>>,
}

#[derive(Debug)]
struct PageVotes {
    ids: Vec<CommentId>,
    voted: tokio::sync::OnceCell<Result<HashSet<CommentId>, async_graphql::Error>>,
}

impl VoteLookups {
    pub(super) fn know(&self, id: CommentId, helpful: bool) {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, helpful);
    }

    fn known(&self, id: CommentId) -> Option<bool> {
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.get(&id).copied()
    }

    fn page_of(&self, id: CommentId) -> Option<Arc<PageVotes>> {
        let pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
        pages.get(&id).cloned()
    }

    fn expect(&self, ids: Vec<CommentId>) {
        let page = Arc::new(PageVotes {
            ids,
            voted: tokio::sync::OnceCell::new(),
        });
        let mut pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
        for id in &page.ids {
            pages.entry(*id).or_insert_with(|| page.clone());
        }
    }
}

/// Registers a page of `items` for one batched read of the viewer's votes, when `look` (the
/// connection's selection) asks for `viewerFoundHelpful` and there is a voter.
pub(super) fn expect_votes(
    ctx: &Context<'_>,
    look: &async_graphql::Lookahead<'_>,
    items: &[domain::Comment],
) {
    let asked = look
        .field("edges")
        .field("node")
        .field(VIEWER_FOUND_HELPFUL)
        .exists()
        || look.field("nodes").field(VIEWER_FOUND_HELPFUL).exists();
    let (Some(meta), Ok(state)) = (super::meta(ctx), state(ctx)) else {
        return;
    };
    if asked && !items.is_empty() && voter(ctx, state).is_some() {
        meta.votes.expect(items.iter().map(|c| c.id).collect());
    }
}

/// `Comment.viewerFoundHelpful` (see the module documentation for what it reads).
pub(super) async fn viewer_found_helpful(
    ctx: &Context<'_>,
    comment: &domain::Comment,
) -> async_graphql::Result<bool> {
    let state = state(ctx)?;
    let Some(voter) = voter(ctx, state) else {
        return Ok(false);
    };
    let meta = super::meta(ctx);
    if let Some(meta) = meta {
        if let Some(known) = meta.votes.known(comment.id) {
            return Ok(known);
        }
        if let Some(page) = meta.votes.page_of(comment.id) {
            let voted = page
                .voted
                .get_or_init(|| read(state, Some(meta), voter.id, &page.ids))
                .await
                .clone()?;
            return Ok(voted.contains(&comment.id));
        }
    }
    if let Some(loader) = ctx.data_opt::<RequestLoader>() {
        let vote = VoteOf {
            voter: voter.id,
            comment: comment.id,
        };
        return Ok(loader.load_one(vote).await?.unwrap_or(false));
    }
    let voted = read(state, meta, voter.id, &[comment.id]).await?;
    Ok(voted.contains(&comment.id))
}

/// A voter's vote on a comment, as the request's loader reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VoteOf {
    voter: VoterId,
    comment: CommentId,
}

/// The votes asked in one tick of the request's loader, in one read per voter (a request has
/// one).
impl Loader<VoteOf> for BatchReads {
    type Value = bool;
    type Error = async_graphql::Error;

    async fn load(&self, keys: &[VoteOf]) -> Result<HashMap<VoteOf, bool>, Self::Error> {
        let mut by_voter: HashMap<VoterId, Vec<CommentId>> = HashMap::new();
        for key in keys {
            by_voter.entry(key.voter).or_default().push(key.comment);
        }
        let mut answers = HashMap::with_capacity(keys.len());
        for (voter, ids) in by_voter {
            let voted = read(&self.state, Some(&self.meta), voter, &ids).await?;
            answers.extend(ids.into_iter().map(|comment| {
                let vote = VoteOf { voter, comment };
                (vote, voted.contains(&comment))
            }));
        }
        Ok(answers)
    }
}

/// One batched read of `voter`'s votes on `ids`, reserved against `--max-items-per-request`
/// and counted in the request's cost (every key asked is an item read).
async fn read(
    state: &ApiState,
    meta: Option<&RequestMeta>,
    voter: VoterId,
    ids: &[CommentId],
) -> Result<HashSet<CommentId>, async_graphql::Error> {
    let items = ids.len() as u64;
    let reserved = super::reserve_items(meta, state, items)?;
    let read = state.engine.store().helpful_votes(voter, ids).await;
    if let Some(meta) = meta {
        meta.add_cost(PageStats {
            items_read: items,
            store_queries: items.div_ceil(100),
            index_calls: 0,
        });
        meta.settle_items(reserved, items);
    }
    let voted = read.map_err(|e| ApiError::from(e).into_graphql(meta))?;
    Ok(ids
        .iter()
        .zip(voted)
        .filter_map(|(id, voted)| voted.then_some(*id))
        .collect())
}
