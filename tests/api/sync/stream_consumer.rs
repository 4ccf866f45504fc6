//! The stream consumer over a scripted stream (`support::stream_source`) and the embedded
//! index: what DynamoDB Local cannot produce (shard splits, expired iterators, trimmed records)
//! and the rules the consumer keeps through them (lineage order, checkpoints after the index
//! write, first start at the trim horizon). The DynamoDB Local tests are in `sync::commands`.
//!
//! The index refuses changes older than what it holds, so a replay would go unnoticed in its
//! final state: the tests read the recording index's log instead, which shows a skip, a
//! duplicate or a wrong order.

use std::time::{Duration, Instant};

use dynapage::domain::{ChangeEvent, IndexEntry};
use dynapage::index::PageIndex;
use dynapage::store::change_source::StartAt;
use dynapage::sync::{Checkpoints, StreamConsumer, StreamOptions, SyncError};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::counters::Counters;
use crate::support::data::{key, rating, sku};
use crate::support::recording_index::RecordingIndex;
use crate::support::stream_source::{Call, ScriptedSource};

/// Version `version` of comment `comment` of product `STREAMED`, with rating `stars`.
fn change(comment: u64, version: u64, stars: i64) -> ChangeEvent {
    ChangeEvent::Upsert {
        old: None,
        new: IndexEntry {
            verified: false,
            author: None,
            reported: false,
            sku: sku("STREAMED"),
            key: key(1_700_000_000_000 + comment, u128::from(comment)),
            rating: rating(stars),
            version,
            helpful: 0,
            published: true,
            status: dynapage::domain::CommentStatus::Published,
        },
    }
}

/// A running consumer.
struct Running {
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), SyncError>>,
}

fn start(source: &ScriptedSource, index: &RecordingIndex, checkpoints: &Checkpoints) -> Running {
    let options = StreamOptions {
        poll_interval: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
    };
    let consumer =
        StreamConsumer::from_source(source.clone(), index.clone(), checkpoints.clone(), options);
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(consumer.run(shutdown.clone()));
    Running { shutdown, task }
}

impl Running {
    async fn stop(self) {
        self.shutdown.cancel();
        let ended = tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("the consumer stops")
            .expect("the consumer did not panic");
        assert!(ended.is_ok(), "a stopped consumer ends well: {ended:?}");
    }
}

/// Waits until `done` holds, failing after 5 s.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not after 5 s");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Lets the consumer poll a while (each poll sleeps 5 ms when caught up).
async fn some_polls() {
    tokio::time::sleep(Duration::from_millis(60)).await;
}

#[tokio::test]
async fn a_child_shard_is_read_only_after_its_parent_is_finished() {
    let source = ScriptedSource::new(1);
    source.add_shard("parent", None);
    // The split: both children are listed while the parent is still open.
    source.add_shard("left", Some("parent"));
    source.add_shard("right", Some("parent"));
    source.push("parent", change(1, 1, 3));
    source.push("parent", change(1, 2, 4));
    source.push("left", change(1, 3, 5));
    source.push("right", change(2, 1, 2));
    let (index, checkpoints) = (RecordingIndex::new(), Checkpoints::in_memory());
    let running = start(&source, &index, &checkpoints);

    until("the parent's records are applied", || {
        index.applied().len() >= 2
    })
    .await;
    some_polls().await;
    assert!(
        source.calls_on("left").is_empty() && source.calls_on("right").is_empty(),
        "children wait while their parent is open: {:?}",
        source.calls()
    );

    source.close("parent");
    until("the children's records are applied", || {
        index.applied().len() == 4
    })
    .await;
    let applied = index.applied();
    assert_eq!(applied[..2], [change(1, 1, 3), change(1, 2, 4)]);
    assert!(applied[2..].contains(&change(1, 3, 5)) && applied[2..].contains(&change(2, 1, 2)));
    let calls = source.calls();
    let parent_drained = calls
        .iter()
        .position(|c| matches!(c, Call::Read { shard, last: true, .. } if shard == "parent"))
        .expect("the parent was drained");
    let first_child_call = calls
        .iter()
        .position(|c| matches!(c, Call::Iterator { shard, .. } if shard != "parent"))
        .expect("a child was read");
    assert!(parent_drained < first_child_call, "{calls:?}");
    let entries = index.entries(&sku("STREAMED")).await.expect("entries");
    let comment_1 = entries
        .iter()
        .find(|e| e.key == key(1_700_000_000_001, 1))
        .expect("comment 1 is indexed");
    assert_eq!(
        (comment_1.rating, comment_1.version),
        (rating(5), 3),
        "the child's state wins"
    );
    running.stop().await;
}

#[tokio::test]
async fn a_closed_shard_is_drained_then_dropped() {
    let source = ScriptedSource::new(2);
    source.add_shard("closed", None);
    source.add_shard("open", None);
    for comment in 1..=3 {
        source.push("closed", change(comment, 1, 4));
    }
    source.close("closed");
    let (index, checkpoints) = (RecordingIndex::new(), Checkpoints::in_memory());
    let running = start(&source, &index, &checkpoints);

    until("the closed shard is applied", || index.applied().len() == 3).await;
    source.push("open", change(9, 1, 1));
    until("the open shard is followed", || index.applied().len() == 4).await;
    some_polls().await;
    assert_eq!(
        source.calls_on("closed"),
        [
            Call::Iterator {
                shard: "closed".to_owned(),
                at: StartAt::TrimHorizon
            },
            Call::Read {
                shard: "closed".to_owned(),
                sequences: vec![1, 2],
                last: false
            },
            Call::Read {
                shard: "closed".to_owned(),
                sequences: vec![3],
                last: true
            },
        ],
        "read to its end once, then never again"
    );
    assert_eq!(
        index.applied(),
        [
            change(1, 1, 4),
            change(2, 1, 4),
            change(3, 1, 4),
            change(9, 1, 1)
        ]
    );
    assert_eq!(
        checkpoints.load("closed").await.expect("load"),
        Some("3".to_owned())
    );
    running.stop().await;
}

#[tokio::test]
async fn an_expired_iterator_is_renewed_after_the_checkpoint_skipping_and_repeating_nothing() {
    let counters = Counters::default();
    let _recorder = metrics::set_default_local_recorder(&counters);
    let source = ScriptedSource::new(2);
    source.add_shard("shard", None);
    let mut expected = Vec::new();
    for comment in 1..=4 {
        expected.push(change(comment, 1, 3));
        source.push("shard", change(comment, 1, 3));
    }
    let (index, checkpoints) = (RecordingIndex::new(), Checkpoints::in_memory());
    let running = start(&source, &index, &checkpoints);
    until("the first records are applied", || {
        index.applied().len() == 4
    })
    .await;

    source.expire_next_read();
    for comment in 5..=7 {
        expected.push(change(comment, 1, 3));
        source.push("shard", change(comment, 1, 3));
    }
    until("the later records are applied", || {
        index.applied().len() >= 7
    })
    .await;
    some_polls().await;
    assert_eq!(index.applied(), expected, "each record once, in order");
    assert_eq!(counters.get("dynapage_sync_iterators_expired_total"), 1);
    let calls = source.calls_on("shard");
    let expired = calls
        .iter()
        .position(|c| matches!(c, Call::Failed { .. }))
        .expect("the read failed");
    assert_eq!(
        calls[expired + 1],
        Call::Iterator {
            shard: "shard".to_owned(),
            at: StartAt::After("4".to_owned())
        },
        "renewed after the checkpoint: {calls:?}"
    );
    running.stop().await;
}

#[tokio::test]
async fn trimmed_records_are_reported_and_reading_resumes_from_the_trim_horizon() {
    let counters = Counters::default();
    let _recorder = metrics::set_default_local_recorder(&counters);
    let source = ScriptedSource::new(10);
    source.add_shard("shard", None);
    for comment in 1..=6 {
        source.push("shard", change(comment, 1, 2));
    }
    // An earlier run applied records 1 and 2; 3 and 4 were trimmed while it was stopped.
    let checkpoints = Checkpoints::in_memory();
    checkpoints.save("shard", "2").await.expect("save");
    source.trim("shard", 5);
    let index = RecordingIndex::new();
    let running = start(&source, &index, &checkpoints);

    until("the kept records are applied", || {
        index.applied().len() == 2
    })
    .await;
    assert_eq!(index.applied(), [change(5, 1, 2), change(6, 1, 2)]);
    assert_eq!(counters.get("dynapage_sync_trimmed_total"), 1);
    assert_eq!(
        source.calls_on("shard")[..2],
        [
            Call::Iterator {
                shard: "shard".to_owned(),
                at: StartAt::After("2".to_owned())
            },
            Call::Iterator {
                shard: "shard".to_owned(),
                at: StartAt::TrimHorizon
            },
        ]
    );

    // Consumption goes on; records trimmed under a live iterator are reported the same way.
    source.push("shard", change(7, 1, 2));
    until("a new record is applied", || index.applied().len() == 3).await;
    source.push("shard", change(8, 1, 2));
    source.push("shard", change(9, 1, 2));
    source.trim("shard", 9);
    until("the record after the new horizon is applied", || {
        index.applied().contains(&change(9, 1, 2))
    })
    .await;
    assert_eq!(counters.get("dynapage_sync_trimmed_total"), 2);
    assert!(!index.applied().contains(&change(8, 1, 2)), "8 was trimmed");
    assert_eq!(
        checkpoints.load("shard").await.expect("load"),
        Some("9".to_owned())
    );
    running.stop().await;
}

#[tokio::test]
async fn a_first_start_reads_every_shard_from_its_trim_horizon_not_from_latest() {
    let source = ScriptedSource::new(10);
    source.add_shard("old", None);
    source.add_shard("new", Some("old"));
    source.push("old", change(1, 1, 1));
    source.push("old", change(2, 1, 1));
    source.push("old", change(3, 1, 1));
    source.trim("old", 2);
    source.close("old");
    source.push("new", change(4, 1, 5));
    let (index, checkpoints) = (RecordingIndex::new(), Checkpoints::in_memory());
    let running = start(&source, &index, &checkpoints);

    until("what the stream kept is applied", || {
        index.applied().len() == 3
    })
    .await;
    assert_eq!(
        index.applied(),
        [change(2, 1, 1), change(3, 1, 1), change(4, 1, 5)],
        "every record written before the start and still kept"
    );
    for shard in ["old", "new"] {
        assert_eq!(
            source.calls_on(shard)[0],
            Call::Iterator {
                shard: shard.to_owned(),
                at: StartAt::TrimHorizon
            }
        );
    }
    running.stop().await;
}

#[tokio::test]
async fn a_checkpoint_advances_only_after_the_index_write_succeeded() {
    let source = ScriptedSource::new(10);
    source.add_shard("shard", None);
    for comment in 1..=3 {
        source.push("shard", change(comment, 1, 4));
    }
    let checkpoints = Checkpoints::in_memory();
    let index = RecordingIndex::new().watching(&checkpoints, "shard");
    index.fail_next(2);
    let running = start(&source, &index, &checkpoints);
    until("the batch is applied", || index.applied().len() == 3).await;

    index.fail_next(1);
    source.push("shard", change(4, 1, 4));
    until("the next batch is applied", || index.applied().len() == 4).await;
    let attempts = index.attempts();
    let attempts: Vec<(Option<&str>, bool, usize)> = attempts
        .iter()
        .map(|a| (a.checkpoint.as_deref(), a.failed, a.events.len()))
        .collect();
    assert_eq!(
        attempts,
        [
            (None, true, 3),
            (None, true, 3),
            (None, false, 3),
            (Some("3"), true, 1),
            (Some("3"), false, 1),
        ],
        "the checkpoint stays put while the index fails"
    );
    assert_eq!(
        checkpoints.load("shard").await.expect("load"),
        Some("4".to_owned())
    );
    running.stop().await;
}
