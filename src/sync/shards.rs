//! Shard bookkeeping for the stream consumer: where each shard resumes, and which shards may
//! be read now (shard lineage). Pure, so the ordering rule is unit-tested without a stream.

use std::collections::{BTreeMap, BTreeSet};

use crate::telemetry::metric;

/// Where reading of a shard resumes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Position {
    /// The checkpoint has not been loaded yet.
    Unknown,
    /// Never read: from the oldest record still in the stream.
    Horizon,
    /// Just after this sequence number (the checkpoint).
    After(String),
}

#[derive(Debug)]
pub(super) struct ShardState {
    pub(super) parent: Option<String>,
    pub(super) position: Position,
    /// The iterator for the next `GetRecords`; `None` means get one from `position`.
    pub(super) iterator: Option<String>,
    /// Closed and read to its end (or gone from the stream): children may start.
    pub(super) finished: bool,
}

/// What one poll of one shard did.
#[derive(Debug, Default)]
pub(super) struct Polled {
    pub(super) records: usize,
    pub(super) finished: bool,
}

/// The shards to read now: unfinished ones whose parent is finished or no longer listed
/// (trimmed, or read by an earlier run). A child waits for its parent because one comment's
/// changes continue from the parent into the child: reading both at once could apply an old
/// image after a newer one.
pub(super) fn ready(shards: &BTreeMap<String, ShardState>) -> BTreeSet<String> {
    shards
        .iter()
        .filter(|(_, s)| !s.finished)
        .filter(|(_, s)| {
            s.parent
                .as_ref()
                .and_then(|p| shards.get(p))
                .is_none_or(|parent| parent.finished)
        })
        .map(|(id, _)| id.clone())
        .collect()
}

/// Marks `shard` finished: its children may start.
pub(super) fn finish(shard: &str, state: &mut ShardState) -> Polled {
    state.finished = true;
    state.iterator = None;
    tracing::info!(shard, "shard finished");
    Polled {
        records: 0,
        finished: true,
    }
}

/// The shard's position points before the oldest record the stream still keeps: records were
/// lost to the index. Reported (an error log with the shard and the lost position, and
/// `dynapage_sync_trimmed_total`), then reading goes on from the oldest record; only a reindex
/// repairs what was missed.
pub(super) fn trimmed(shard: &str, state: &mut ShardState) {
    tracing::error!(
        shard,
        checkpoint = ?state.position,
        "stream records were trimmed before they were applied; the index may have drifted: run `dynapage reindex`"
    );
    metric::SYNC_TRIMMED.counter(&[]).increment(1);
    metric::SYNC_ERRORS
        .counter(&[("stage", "trimmed")])
        .increment(1);
    state.position = Position::Horizon;
    state.iterator = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(parent: Option<&str>, finished: bool) -> ShardState {
        ShardState {
            parent: parent.map(str::to_owned),
            position: Position::Unknown,
            iterator: None,
            finished,
        }
    }

    #[test]
    fn a_child_shard_waits_until_its_parent_is_finished() {
        let mut shards = BTreeMap::from([
            ("root".to_owned(), shard(None, false)),
            ("child".to_owned(), shard(Some("root"), false)),
            ("grandchild".to_owned(), shard(Some("child"), false)),
            ("orphan".to_owned(), shard(Some("trimmed-away"), false)),
        ]);
        let names = |set: BTreeSet<String>| set.into_iter().collect::<Vec<_>>();
        assert_eq!(names(ready(&shards)), ["orphan", "root"]);
        if let Some(root) = shards.get_mut("root") {
            root.finished = true;
        }
        assert_eq!(names(ready(&shards)), ["child", "orphan"]);
        if let Some(child) = shards.get_mut("child") {
            child.finished = true;
        }
        assert_eq!(names(ready(&shards)), ["grandchild", "orphan"]);
    }
}
