//! The connection algorithm (`docs/api/connections.md`).
//!
//! A page is read in the plan's order from its start cursor, at most `skip + take + 1` items per
//! partition, stopping at the window's end. The one extra item answers "is there more beyond
//! the page" without a count; reading past the window's end by one item answers the same
//! question for windows, so the only extra store read is the boundary query on the near side
//! ("is there anything before the page"), run concurrently with the main read and only when a
//! client selected the flag and nothing else already answers it.
//!
//! Large offsets ask the index for the sort key at rank `offset - 1` beyond the cursor and read
//! the page from the store after it: the cost of page 5,000 is the cost of page 1 plus one index
//! call. A rating filter reads each rating partition concurrently and merges them by sort key;
//! since sort keys are unique across partitions, one key is enough to resume every partition.
//! An order by rating (`domain::Listing` with a grouping) reads its ratings' partitions one
//! after another instead; its positions carry their group, so one position resumes the read.

mod connection;
mod read;
mod view;

use std::ops::Bound;

use futures::future::OptionFuture;

use self::read::{Partitions, Read};
use super::PaginationError;
use super::args::{PagePlan, PagingSettings};

pub use self::connection::{
    Connection, ConnectionRequest, IndexSelection, PageTarget, Prefetched, containing_layout,
};
use crate::domain::{
    Comment, Listing, Numbering, PageLayout, PageLinks, Position, RatingSet, Sku, SortKey,
};
use crate::index::PageIndex;
use crate::store::{CommentStore, StoreError};

/// Which parts of the connection the client selected; the rest is not computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    /// The page's comments (`edges`, `nodes` or anything read from them).
    pub edges: bool,
    /// `pageInfo { hasNextPage }`.
    pub has_next_page: bool,
    /// `pageInfo { hasPreviousPage }`.
    pub has_previous_page: bool,
}

impl Want {
    /// Everything: the comments and both flags.
    pub const ALL: Want = Want {
        edges: true,
        has_next_page: true,
        has_previous_page: true,
    };
}

/// What a page cost, for logs, metrics and the `cost` response extension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageStats {
    /// Comments the store returned, including those read past the page to answer its flags.
    pub items_read: u64,
    /// Queries sent to the comment store.
    pub store_queries: u64,
    /// Calls made to the page index.
    pub index_calls: u64,
}

impl std::ops::AddAssign for PageStats {
    fn add_assign(&mut self, other: Self) {
        self.items_read += other.items_read;
        self.store_queries += other.store_queries;
        self.index_calls += other.index_calls;
    }
}

/// One page of a connection, in its list's own order (`PagePlan::forward`). Flags are `None` when
/// not requested.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// The page's comments; empty when the edges were not requested.
    pub items: Vec<Comment>,
    /// Whether the list goes on beyond the page's last comment.
    pub has_next_page: Option<bool>,
    /// Whether the list goes on before the page's first comment.
    pub has_previous_page: Option<bool>,
    /// What serving the page cost.
    pub stats: PageStats,
}

/// The pagination engine over a store and an index.
#[derive(Clone, Debug)]
pub struct Engine<S, I> {
    store: S,
    index: I,
    settings: PagingSettings,
}

impl<S: CommentStore, I: PageIndex> Engine<S, I> {
    /// An engine that reads `store` and `index` under `settings`.
    pub fn new(store: S, index: I, settings: PagingSettings) -> Self {
        Self {
            store,
            index,
            settings,
        }
    }

    /// The comment store the engine reads.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The page index the engine asks for counts and offsets.
    pub fn index(&self) -> &I {
        &self.index
    }

    /// The limits the engine applies to every connection.
    pub fn settings(&self) -> &PagingSettings {
        &self.settings
    }

    /// The number of `sku`'s comments with a rating in `ratings`, from the index.
    pub async fn total_count(&self, sku: &Sku, ratings: RatingSet) -> Result<u64, PaginationError> {
        Ok(self.index.count(sku, ratings).await?)
    }

    /// How many of `sku`'s comments have each rating, `[ones, …, fives]`, from the index (one
    /// round trip where the index has them together).
    pub async fn rating_counts(&self, sku: &Sku) -> Result<[u64; 5], PaginationError> {
        Ok(self.index.rating_counts(sku).await?)
    }

    /// [`Engine::rating_counts`] of each of `skus`, in their order, in one index round trip.
    pub async fn rating_counts_many(&self, skus: &[Sku]) -> Result<Vec<[u64; 5]>, PaginationError> {
        Ok(self.index.rating_counts_many(skus).await?)
    }

    /// How many of `sku`'s comments with a rating in `ratings` are strictly newer than `after`
    /// (whether or not `after`'s comment still exists), from the index in one call and without
    /// reading the store: a resumed subscription asks it before replaying, so a client too far
    /// behind is told so without the store reading what would then be thrown away.
    pub async fn count_newer(
        &self,
        sku: &Sku,
        ratings: RatingSet,
        after: SortKey,
    ) -> Result<u64, PaginationError> {
        let layout = PageLayout {
            size: 1,
            numbering: Numbering::FromNewest,
            links: PageLinks::None,
        };
        let positions = self
            .index
            .positions(
                sku,
                Listing::flat(ratings),
                Some(Position::flat(after)),
                layout,
            )
            .await?;
        Ok(positions.anchor.map_or(positions.total, |rank| rank.newer))
    }

    /// Serves one page of `listing`, the list of some of `sku`'s comments.
    pub async fn page(
        &self,
        sku: &Sku,
        listing: Listing,
        plan: &PagePlan,
        want: Want,
    ) -> Result<Page, PaginationError> {
        self.page_with(sku, listing, plan, want, None).await
    }

    /// Whether `plan`'s offset is skipped through the index (else it is read from the store):
    /// past the threshold, and always for a page cursor's.
    pub(super) fn skips_by_index(&self, plan: &PagePlan) -> bool {
        plan.skip > self.settings.offset_index_threshold || plan.skip_through_index
    }

    /// [`Self::page`], with the deep offset's bound already asked of the index when `bound` is
    /// `Some` (the position at rank `skip - 1` from the plan's start, or `None` past the end).
    pub(super) async fn page_with(
        &self,
        sku: &Sku,
        listing: Listing,
        plan: &PagePlan,
        want: Want,
        bound: Option<Option<Position>>,
    ) -> Result<Page, PaginationError> {
        if !(want.edges || want.has_next_page || want.has_previous_page) {
            return Ok(Page::default());
        }
        let partitions = Partitions::of(sku, listing);
        let sides = Sides::of(plan, want);
        let mut plan = within_window(plan);
        let mut stats = PageStats::default();
        let mut skipped_by_index = false;
        if self.skips_by_index(&plan) {
            let order = plan.order;
            let found = match bound {
                Some(found) => found,
                None => {
                    stats.index_calls += 1;
                    self.index
                        .key_at(sku, listing, order, plan.start, plan.skip - 1)
                        .await?
                }
            };
            match found {
                Some(key) if plan.stop.is_none_or(|stop| order.precedes(&key, &stop)) => {
                    plan.start = Some(key);
                    plan.skip = 0;
                    skipped_by_index = true;
                }
                _ => {
                    return self
                        .empty_past_window(&partitions, &plan, sides, stats)
                        .await;
                }
            }
        }
        self.read_page(&partitions, &plan, skipped_by_index, sides, stats)
            .await
            .map(|page| Page {
                items: if want.edges { page.items } else { Vec::new() },
                ..page
            })
    }

    /// Reads the page `plan` describes (any offset the index answered is already in its start)
    /// and answers the flags `sides` asks for.
    async fn read_page(
        &self,
        partitions: &Partitions,
        plan: &PagePlan,
        skipped_by_index: bool,
        sides: Sides,
        mut stats: PageStats,
    ) -> Result<Page, PaginationError> {
        let order = plan.order;
        // Ask the near-side question now, concurrently, when only a store read can answer it.
        let boundary_now =
            sides.before && !skipped_by_index && plan.skip == 0 && plan.keep_last.is_none();
        let boundary = plan
            .start
            .filter(|_| boundary_now)
            .map(|start| self.exists(partitions, order.reverse(), Bound::Included(start)));
        let limit = usize::try_from(plan.skip)
            .unwrap_or(usize::MAX)
            .saturating_add(plan.take)
            .saturating_add(1);
        let from = plan.start.map_or(Bound::Unbounded, Bound::Excluded);
        let (read, boundary) = futures::join!(
            self.read(partitions, order, from, plan.stop, limit),
            OptionFuture::from(boundary)
        );
        let read = read?;
        stats += read.stats;
        let Cut {
            mut items,
            beyond,
            cut_ahead,
        } = Cut::of(read, plan);

        let before = if skipped_by_index || cut_ahead {
            Some(true)
        } else if !sides.before {
            None
        } else if let Some(start) = plan.start {
            let (exists, cost) = match boundary {
                Some(answer) => answer?,
                None => {
                    self.exists(partitions, order.reverse(), Bound::Included(start))
                        .await?
                }
            };
            stats += cost;
            Some(exists)
        } else {
            Some(false)
        };
        let beyond = sides.beyond.then_some(beyond);

        let before = before.filter(|_| sides.before);
        let (has_next_page, has_previous_page) = if order == plan.forward {
            (beyond, before)
        } else {
            items.reverse();
            (before, beyond)
        };
        Ok(Page {
            items,
            has_next_page,
            has_previous_page,
            stats,
        })
    }

    /// The page when the offset reaches past the window's end: empty, positioned at the end.
    async fn empty_past_window(
        &self,
        partitions: &Partitions,
        plan: &PagePlan,
        sides: Sides,
        mut stats: PageStats,
    ) -> Result<Page, PaginationError> {
        let (want_beyond, want_before) = (sides.beyond, sides.before);
        let before = OptionFuture::from(want_before.then(|| {
            let from = plan.stop.map_or(Bound::Unbounded, Bound::Excluded);
            self.exists(partitions, plan.order.reverse(), from)
        }));
        let beyond = OptionFuture::from(
            plan.stop
                .filter(|_| want_beyond)
                .map(|stop| self.exists(partitions, plan.order, Bound::Included(stop))),
        );
        let (before, beyond) = futures::join!(before, beyond);
        let mut flag = |answer: Option<Result<(bool, PageStats), StoreError>>,
                        wanted: bool|
         -> Result<Option<bool>, StoreError> {
            match answer {
                Some(result) => {
                    let (exists, cost) = result?;
                    stats += cost;
                    Ok(Some(exists))
                }
                None => Ok(wanted.then_some(false)),
            }
        };
        let before = flag(before, want_before)?;
        let beyond = flag(beyond, want_beyond)?;
        let (has_next_page, has_previous_page) = if plan.order == plan.forward {
            (beyond, before)
        } else {
            (before, beyond)
        };
        Ok(Page {
            items: Vec::new(),
            has_next_page,
            has_previous_page,
            stats,
        })
    }
}

/// The flags a client asked for, in read order: "beyond" is past the page's last item,
/// "before" ahead of its first.
#[derive(Clone, Copy, Debug)]
struct Sides {
    beyond: bool,
    before: bool,
}

impl Sides {
    fn of(plan: &PagePlan, want: Want) -> Self {
        let (beyond, before) = if plan.order == plan.forward {
            (want.has_next_page, want.has_previous_page)
        } else {
            (want.has_previous_page, want.has_next_page)
        };
        Self { beyond, before }
    }
}

/// `plan`, or for an empty window (e.g. `before` at or above `after`) an empty page where
/// reading starts.
fn within_window(plan: &PagePlan) -> PagePlan {
    let crossed = matches!((plan.start, plan.stop), (Some(start), Some(stop)) if !plan.order.precedes(&start, &stop));
    if crossed {
        PagePlan {
            stop: None,
            skip: 0,
            take: 0,
            keep_last: None,
            ..plan.clone()
        }
    } else {
        plan.clone()
    }
}

/// A read cut to the page: the offset skipped, `take` kept, and of those the last `keep_last`.
struct Cut {
    /// The page, in read order.
    items: Vec<Comment>,
    /// Something lies past the page's last item (within the window or past its end).
    beyond: bool,
    /// Items of the read were skipped or dropped ahead of the page's first item.
    cut_ahead: bool,
}

impl Cut {
    fn of(read: Read, plan: &PagePlan) -> Self {
        let skipped = read
            .items
            .len()
            .min(usize::try_from(plan.skip).unwrap_or(usize::MAX));
        let beyond = read.items.len() > skipped + plan.take || read.crossed_stop;
        let mut items: Vec<Comment> = read
            .items
            .into_iter()
            .skip(skipped)
            .take(plan.take)
            .collect();
        let dropped = plan
            .keep_last
            .map_or(0, |keep| items.len().saturating_sub(keep));
        items.drain(..dropped);
        Self {
            items,
            beyond,
            cut_ahead: skipped > 0 || dropped > 0,
        }
    }
}
