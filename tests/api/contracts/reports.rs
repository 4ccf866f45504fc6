//! The reports part of the `CommentStore` contract, run against every backend (the embedded
//! store, the durable one on SQLite, DynamoDB Local): a reader reports a comment once (a
//! second report answers the first and writes nothing), never their own nor one the public
//! cannot see; a report is one write at the comment's next version that puts it in the
//! `REPORTED` queues; a decision closes every open report in the same write (upheld or
//! dismissed, logged) and takes the comment out of those queues; `--report-hide-threshold`
//! readers hide a comment pending review; a reader's reports page newest first with an exact
//! count; scans and imports carry them.

use std::num::NonZeroU32;
use std::ops::Bound;

use dynapage::domain::{
    Access, Comment, CommentId, CommentPatch, CommentStatus, LogAction, ModerationDecision,
    ModerationReason, Order, Queue, QueueList, Report, ReportDraft, ReportReason, ReportRefused,
    ReportStatus, Verdict,
};
use dynapage::store::memory::MemoryStore;
use dynapage::store::{CommentStore, LogQuery, Partition, ReportQuery, StoreError};

use crate::support::data::{BASE_MILLIS, dataset, read_all_from, sku};
use crate::support::dynamodb_local::dynamo_store;
use crate::support::sqlite::sqlite_store;

contract_suite! {
    backends: {
        memory => async { MemoryStore::new() },
        dynamodb => dynamo_store(),
        sqlite => sqlite_store(),
    },
    behaviours: [
        a_reader_reports_a_comment_once_and_it_enters_the_reported_queues,
        a_decision_closes_every_open_report_and_takes_the_comment_out_of_the_queues,
        enough_readers_hide_a_comment_pending_review,
        a_readers_reports_page_newest_first_and_oldest_first,
        scans_and_imports_carry_reports,
        an_edit_back_to_review_keeps_the_open_reports,
    ],
}

const NOW: u64 = BASE_MILLIS + 50_000;
const MODERATOR: &str = "auth0|moderator";

fn draft(reason: ReportReason) -> ReportDraft {
    ReportDraft::new(reason, Some("see the links")).expect("a draft")
}

async fn get<S: CommentStore>(store: &S, id: CommentId) -> Comment {
    store
        .get_many(&[id])
        .await
        .expect("get_many")
        .remove(0)
        .expect("the comment exists")
}

/// The ids in the `REPORTED` queue of the shop and of `sku_name`, each read whole.
async fn reported<S: CommentStore>(store: &S, sku_name: &str) -> [Vec<CommentId>; 2] {
    let mut out = [Vec::new(), Vec::new()];
    for (slot, product) in out.iter_mut().zip([None, Some(sku(sku_name))]) {
        let queue = Partition::Queue(QueueList::new(Queue::Reported, product));
        *slot = read_all_from(store, queue, Order::OldestFirst, Bound::Unbounded, 3)
            .await
            .iter()
            .map(|c| c.id)
            .collect();
    }
    out
}

async fn in_partition<S: CommentStore>(store: &S, partition: Partition, id: CommentId) -> bool {
    read_all_from(store, partition, Order::NewestFirst, Bound::Unbounded, 50)
        .await
        .iter()
        .any(|c| c.id == id)
}

async fn report<S: CommentStore>(
    store: &S,
    id: CommentId,
    reporter: &str,
    threshold: Option<NonZeroU32>,
    now: u64,
) -> Result<Report, StoreError> {
    store
        .report(id, reporter, &draft(ReportReason::Spam), threshold, now)
        .await
}

/// `sku_name`'s moderation log, oldest first (at most 10 entries).
async fn log_of<S: CommentStore>(store: &S, sku_name: &str) -> dynapage::store::LogPage {
    let query = LogQuery {
        sku: Some(sku(sku_name)),
        order: Order::OldestFirst,
        after: None,
        limit: 10,
    };
    store.moderation_log(&query).await.expect("the log")
}

fn verdict(decision: ModerationDecision) -> Verdict {
    Verdict::new(decision, Some(ModerationReason::Abusive), None).expect("a verdict")
}

/// The moderator's `decision` on comment `id` at `now`.
async fn decide<S: CommentStore>(
    store: &S,
    id: CommentId,
    decision: ModerationDecision,
    now: u64,
) -> Result<Comment, StoreError> {
    store.moderate(id, &verdict(decision), MODERATOR, now).await
}

pub async fn a_reader_reports_a_comment_once_and_it_enters_the_reported_queues<S: CommentStore>(
    store: S,
) {
    let mut comments = dataset("REP-ONE", 4);
    comments[0].author_sub = Some("auth0|ann".into());
    store.put_batch(&comments).await.expect("put");
    let target = comments[1].clone();
    let first = report(&store, target.id, "auth0|r1", None, NOW)
        .await
        .expect("a report");
    assert_eq!(
        (first.comment, first.reporter.as_str(), first.status),
        (target.id, "auth0|r1", ReportStatus::Open)
    );
    assert_eq!(
        (first.reason, first.details.as_deref()),
        (ReportReason::Spam, Some("see the links"))
    );
    let after = get(&store, target.id).await;
    assert_eq!(after.reporters, ["auth0|r1"]);
    assert_eq!(
        after.version,
        target.version + 1,
        "a report is the next version"
    );
    assert_eq!(after.updated_at_ms, target.updated_at_ms, "not an edit");
    assert!(after.is_public(), "a report alone hides nothing");

    let again = store
        .report(
            target.id,
            "auth0|r1",
            &draft(ReportReason::Fake),
            None,
            NOW + 5,
        )
        .await
        .expect("a second report");
    assert_eq!(again, first, "the first report answers, nothing written");
    assert_eq!(get(&store, target.id).await, after);

    report(&store, target.id, "auth0|r2", None, NOW + 6)
        .await
        .expect("another reader");
    assert_eq!(
        get(&store, target.id).await.reporters,
        ["auth0|r1", "auth0|r2"]
    );
    let own = report(&store, comments[0].id, "auth0|ann", None, NOW).await;
    assert!(
        matches!(own, Err(StoreError::Report(ReportRefused::Own(id))) if id == comments[0].id),
        "{own:?}"
    );
    let missing = report(&store, CommentId::new(NOW), "auth0|r1", None, NOW).await;
    assert!(
        matches!(missing, Err(StoreError::NotFound(_))),
        "{missing:?}"
    );

    assert_eq!(
        reported(&store, "REP-ONE").await,
        [vec![target.id], vec![target.id]]
    );
    assert!(
        in_partition(&store, Partition::Product(sku("REP-ONE")), target.id).await,
        "still public"
    );
    assert_eq!(store.report_count("auth0|r1").await.expect("count"), 1);
    assert_eq!(store.report_count("auth0|nobody").await.expect("count"), 0);
    let found = store
        .reports_of(&[
            (target.id, "auth0|r1".to_owned()),
            (target.id, "auth0|r3".to_owned()),
        ])
        .await
        .expect("reports_of");
    assert_eq!(found, [Some(first), None]);
}

pub async fn a_decision_closes_every_open_report_and_takes_the_comment_out_of_the_queues<
    S: CommentStore,
>(
    store: S,
) {
    let comments = dataset("REP-CLOSE", 3);
    store.put_batch(&comments).await.expect("put");
    let target = comments[2].id;
    for reader in ["auth0|r1", "auth0|r2"] {
        report(&store, target, reader, None, NOW)
            .await
            .expect("a report");
    }
    let kept = decide(&store, target, ModerationDecision::Publish, NOW + 10)
        .await
        .expect("publishing a reported comment keeps it");
    assert!(kept.is_public() && kept.reporters.is_empty());
    assert_eq!(get(&store, target).await, kept);
    assert_eq!(reported(&store, "REP-CLOSE").await, [vec![], vec![]]);
    let closed = store
        .reports_of(&[(target, "auth0|r1".into()), (target, "auth0|r2".into())])
        .await
        .expect("reports_of");
    for report in closed.iter().flatten() {
        assert_eq!(
            (report.status, report.decided_at_ms),
            (ReportStatus::Dismissed, Some(NOW + 10))
        );
    }
    assert_eq!(closed.iter().flatten().count(), 2);
    let log = log_of(&store, "REP-CLOSE").await;
    let actions: Vec<LogAction> = log.entries.iter().map(|e| e.action).collect();
    assert_eq!(actions, [LogAction::Publish, LogAction::DismissReports]);
    assert_eq!(log.entries[1].note.as_deref(), Some("2 reports dismissed"));

    // Published and reported no more: publishing it again is no decision.
    let refused = decide(&store, target, ModerationDecision::Publish, NOW + 11).await;
    assert!(
        matches!(refused, Err(StoreError::Decision(_))),
        "{refused:?}"
    );
    // A reader whose report was closed has reported it: the same report answers.
    let again = report(&store, target, "auth0|r1", None, NOW + 12)
        .await
        .expect("the closed report");
    assert_eq!(again.status, ReportStatus::Dismissed);
    let third = report(&store, target, "auth0|r3", None, NOW + 13)
        .await
        .expect("a new reader");
    let hidden = decide(&store, target, ModerationDecision::Hide, NOW + 20)
        .await
        .expect("hidden");
    assert_eq!(hidden.moderation.status, CommentStatus::Hidden);
    let after = store
        .reports_of(&[
            (target, third.reporter.clone()),
            (target, "auth0|r1".into()),
        ])
        .await
        .expect("reports_of");
    assert_eq!(
        after[0].as_ref().map(|r| r.status),
        Some(ReportStatus::Upheld)
    );
    assert_eq!(
        after[1].as_ref().map(|r| (r.status, r.decided_at_ms)),
        Some((ReportStatus::Dismissed, Some(NOW + 10))),
        "a closed report stays as it was closed"
    );
}

pub async fn enough_readers_hide_a_comment_pending_review<S: CommentStore>(store: S) {
    let comments = dataset("REP-HIDE", 2);
    store.put_batch(&comments).await.expect("put");
    let target = comments[0].id;
    let two = NonZeroU32::new(2);
    report(&store, target, "auth0|r1", two, NOW)
        .await
        .expect("one");
    assert!(
        get(&store, target).await.is_public(),
        "one reader is not two"
    );
    report(&store, target, "auth0|r2", two, NOW + 1)
        .await
        .expect("two");
    let hidden = get(&store, target).await;
    assert_eq!(hidden.moderation.status, CommentStatus::Hidden);
    assert_eq!(hidden.moderation.reason, Some(ModerationReason::Other));
    assert!(!in_partition(&store, Partition::Product(sku("REP-HIDE")), target).await);
    let hidden_queue = Partition::Queue(QueueList::new(Queue::Hidden, None));
    assert!(in_partition(&store, hidden_queue, target).await);
    assert_eq!(
        reported(&store, "REP-HIDE").await,
        [vec![target], vec![target]]
    );
    let late = report(&store, target, "auth0|r3", two, NOW + 2).await;
    assert!(
        matches!(late, Err(StoreError::Report(ReportRefused::NotPublic(_)))),
        "{late:?}"
    );
    let log = log_of(&store, "REP-HIDE").await;
    assert_eq!(log.entries.len(), 1);
    assert_eq!(log.entries[0].action, LogAction::HideOnReports);
    // A moderator confirms the hiding: the reports are upheld.
    let confirmed = decide(&store, target, ModerationDecision::Hide, NOW + 3)
        .await
        .expect("hiding a comment hidden on reports confirms it");
    assert!(confirmed.reporters.is_empty());
    assert_eq!(confirmed.moderation.reason, Some(ModerationReason::Abusive));
    let closed = store
        .reports_of(&[(target, "auth0|r1".into())])
        .await
        .expect("reports_of");
    assert_eq!(
        closed[0].as_ref().map(|r| r.status),
        Some(ReportStatus::Upheld)
    );
    assert_eq!(reported(&store, "REP-HIDE").await, [vec![], vec![]]);
}

pub async fn a_readers_reports_page_newest_first_and_oldest_first<S: CommentStore>(store: S) {
    let comments = dataset("REP-PAGE", 5);
    store.put_batch(&comments).await.expect("put");
    let mut filed = Vec::new();
    for (i, comment) in comments.iter().enumerate() {
        filed.push(
            report(&store, comment.id, "auth0|pager", None, NOW + i as u64)
                .await
                .expect("a report"),
        );
    }
    report(&store, comments[0].id, "auth0|other", None, NOW)
        .await
        .expect("another reader's");
    filed.sort_by_key(|r| r.id);
    for order in [Order::NewestFirst, Order::OldestFirst] {
        let mut want = filed.clone();
        if order == Order::NewestFirst {
            want.reverse();
        }
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = store
                .reports(&ReportQuery {
                    reporter: "auth0|pager".into(),
                    order,
                    after,
                    limit: 2,
                })
                .await
                .expect("a page");
            assert!(page.reports.len() <= 2);
            seen.extend(page.reports.iter().cloned());
            match page.last_evaluated {
                Some(last) => after = Some(last),
                None => break,
            }
        }
        assert_eq!(seen, want, "{order:?}");
    }
    assert_eq!(store.report_count("auth0|pager").await.expect("count"), 5);
}

pub async fn scans_and_imports_carry_reports<S: CommentStore>(store: S) {
    let comments = dataset("REP-SCAN", 2);
    store.put_batch(&comments).await.expect("put");
    let filed = report(&store, comments[1].id, "auth0|scan", None, NOW)
        .await
        .expect("a report");
    let mut scanned = Vec::new();
    let mut resume = None;
    loop {
        let page = store.scan(0, 1, resume).await.expect("scan");
        assert!(page.unranked.is_empty(), "misplaced: {:?}", page.unranked);
        scanned.extend(page.reports);
        if let Some(item) = page.items.iter().find(|c| c.id == comments[1].id) {
            assert_eq!(item.reporters, ["auth0|scan"]);
        }
        resume = page.resume;
        if resume.is_none() {
            break;
        }
    }
    assert_eq!(scanned, std::slice::from_ref(&filed));
    // An import writes reports as they are: a closed one over its open self, counted once.
    let closed = filed.closed(ReportStatus::Dismissed, NOW + 1);
    store
        .put_reports(std::slice::from_ref(&closed))
        .await
        .expect("put_reports");
    let found = store
        .reports_of(&[(closed.comment, closed.reporter.clone())])
        .await
        .expect("reports_of");
    assert_eq!(found, [Some(closed)]);
    assert_eq!(store.report_count("auth0|scan").await.expect("count"), 1);
}

pub async fn an_edit_back_to_review_keeps_the_open_reports<S: CommentStore>(store: S) {
    let comments = dataset("REP-EDIT", 2);
    store.put_batch(&comments).await.expect("put");
    let target = comments[0].id;
    report(&store, target, "auth0|r1", None, NOW)
        .await
        .expect("a report");
    // The DynamoDB edit that sends a comment back to review is not conditional on the version
    // it read: it must leave the reporters (and the REPORTED GSIs) alone.
    let reviewed = CommentPatch::new(Some("changed after the report"), None)
        .expect("a patch")
        .reviewed(true);
    let edited = store
        .update(target, &reviewed, NOW + 1, &Access::Any)
        .await
        .expect("edited");
    assert_eq!(edited.moderation.status, CommentStatus::Pending);
    assert_eq!(edited.reporters, ["auth0|r1"]);
    assert_eq!(get(&store, target).await, edited);
    assert_eq!(
        reported(&store, "REP-EDIT").await,
        [vec![target], vec![target]]
    );
    let pending = Partition::Queue(QueueList::new(Queue::Pending, None));
    assert!(in_partition(&store, pending, target).await);
    // Rejecting it upholds the report.
    let rejected = decide(&store, target, ModerationDecision::Reject, NOW + 2)
        .await
        .expect("rejected");
    assert!(rejected.reporters.is_empty());
    let closed = store
        .reports_of(&[(target, "auth0|r1".into())])
        .await
        .expect("reports_of");
    assert_eq!(
        closed[0].as_ref().map(|r| r.status),
        Some(ReportStatus::Upheld)
    );
}
