//! A person's three lists read a page at a time, as both the export and the erasure read
//! them: their comments (their author's list, every status, oldest first; only their own, as
//! an index that lags may hold another's), the comments they voted on (by id), and their
//! reports (oldest first). Each page is at most [`PAGE`] items; `None` when the list is done.

use std::ops::Bound;

use super::{PAGE, voter_of};
use crate::domain::{AuthorList, Comment, CommentId, EntryId, Order, Position, Report, VoterId};
use crate::store::{CommentStore, KeyQuery, Partition, ReportQuery, StoreError, VoteQuery};

/// A person's comments, page by page.
pub(super) struct Comments {
    sub: String,
    partition: Partition,
    from: Option<Bound<Position>>,
}

impl Comments {
    pub(super) fn of(sub: &str) -> Self {
        Self {
            sub: sub.to_owned(),
            partition: Partition::Author(AuthorList::new(sub, None)),
            from: Some(Bound::Unbounded),
        }
    }

    pub(super) async fn next<S: CommentStore>(
        &mut self,
        store: &S,
    ) -> Result<Option<Vec<Comment>>, StoreError> {
        let Some(from) = self.from.take() else {
            return Ok(None);
        };
        let query = KeyQuery {
            partition: self.partition.clone(),
            order: Order::OldestFirst,
            from,
            limit: PAGE,
        };
        let page = store.query(&query).await?;
        self.from = match (page.items.last(), page.last_evaluated) {
            (_, None) => None,
            (Some(last), Some(_)) => Some(Bound::Excluded(self.partition.position_of(last))),
            // An empty page that stopped early (DynamoDB's size cut) goes on from its key.
            (None, Some(key)) => Some(Bound::Excluded(key)),
        };
        let sub = self.sub.as_str();
        Ok(Some(
            page.items
                .into_iter()
                .filter(|c| c.author_sub.as_deref() == Some(sub))
                .collect(),
        ))
    }
}

/// The comments a person voted on, page by page.
pub(super) struct Votes {
    pub(super) voter: VoterId,
    after: Option<Option<CommentId>>,
}

impl Votes {
    pub(super) fn of(sub: &str) -> Self {
        Self {
            voter: voter_of(sub),
            after: Some(None),
        }
    }

    pub(super) async fn next<S: CommentStore>(
        &mut self,
        store: &S,
    ) -> Result<Option<Vec<CommentId>>, StoreError> {
        let Some(after) = self.after.take() else {
            return Ok(None);
        };
        let query = VoteQuery {
            voter: self.voter,
            after,
            limit: PAGE,
        };
        let page = store.votes_by(&query).await?;
        // From where the store stopped, which an empty page that stopped early has too.
        self.after = page.last_evaluated.map(Some);
        Ok(Some(page.comments))
    }
}

/// A person's reports, page by page.
pub(super) struct Reports {
    reporter: String,
    after: Option<Option<EntryId>>,
}

impl Reports {
    pub(super) fn of(sub: &str) -> Self {
        Self {
            reporter: sub.to_owned(),
            after: Some(None),
        }
    }

    pub(super) async fn next<S: CommentStore>(
        &mut self,
        store: &S,
    ) -> Result<Option<Vec<Report>>, StoreError> {
        let Some(after) = self.after.take() else {
            return Ok(None);
        };
        let query = ReportQuery {
            reporter: self.reporter.clone(),
            order: Order::OldestFirst,
            after,
            limit: PAGE,
        };
        let page = store.reports(&query).await?;
        self.after = page.last_evaluated.map(Some);
        Ok(Some(page.reports))
    }
}
