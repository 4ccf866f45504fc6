//! Forgetting one thing of a person's ([`Forget`]) inside the writer's group transaction: the
//! vote or report row and the comment it changes, written together or not at all.

use rusqlite::Transaction;

use super::ops::{Effect, Reply};
use super::{report_rows, rows};
use crate::domain::Forget;
use crate::store::StoreError;

/// See [`crate::store::CommentStore::forget`].
pub(super) fn forget(
    tx: &Transaction<'_>,
    what: &Forget,
) -> rusqlite::Result<Result<(Reply, Effect), StoreError>> {
    let Some(id) = what.comment() else {
        // A reporter's report rows are all this store keeps of them.
        return Ok(Ok((Reply::Forgot(false), Effect::None)));
    };
    let existed = match what {
        Forget::Vote { comment, voter } => rows::has_vote(tx, *comment, *voter)?,
        Forget::Report { comment, reporter } => report_rows::get(tx, *comment, reporter)?.is_some(),
        Forget::Author { .. } | Forget::Reporter { .. } => false,
    };
    let old = match rows::get(tx, id)? {
        None => None,
        Some(Ok(old)) => Some(old),
        Some(Err(damaged)) => return Ok(Err(StoreError::Internal(damaged.into()))),
    };
    let new = match old.as_ref().map(|old| what.next(old, existed)).transpose() {
        Ok(new) => new.flatten(),
        Err(ceiling) => return Ok(Err(ceiling.into())),
    };
    if existed {
        match what {
            Forget::Vote { comment, voter } => rows::set_vote(tx, *comment, *voter, false, 0)?,
            Forget::Report { comment, reporter } => report_rows::remove(tx, *comment, reporter)?,
            Forget::Author { .. } | Forget::Reporter { .. } => {}
        }
    }
    if let Some(new) = &new {
        rows::put(tx, new)?;
    }
    let changed = existed || new.is_some();
    let effect = if changed {
        Effect::Forget(what.clone())
    } else {
        Effect::None
    };
    Ok(Ok((Reply::Forgot(changed), effect)))
}
