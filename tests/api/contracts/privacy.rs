//! A person's data, run against every backend (the embedded store, the durable one on SQLite,
//! DynamoDB Local): `votes_by` pages a voter's votes in comment-id order through a per-voter
//! index; `forget` removes a vote (the count one lower, in any status), a report (the reporter
//! out of the open ones) or an authorship, each once; `privacy::erase` removes everything of
//! one person and nothing of anyone else, is idempotent, and its dry run writes nothing;
//! `privacy::export` writes all of it as one JSON document.

use std::ops::Bound;

use dynapage::domain::{
    AuthorList, Comment, CommentId, ErasureMode, ErasureReceipt, FORMER_CUSTOMER, Forget,
    ModerationDecision, ModerationReason, Order, Queue, QueueList, ReportDraft, ReportReason,
    Verdict, Voter,
};
use dynapage::privacy::{self, Erasure, voter_of};
use dynapage::store::memory::MemoryStore;
use dynapage::store::{CommentStore, Partition, ReportQuery, VoteQuery};

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
        a_voters_votes_page_in_comment_order,
        forgetting_each_thing_changes_its_comment_once,
        erasing_a_person_removes_all_of_theirs_and_nothing_else,
        anonymizing_keeps_the_comments_under_former_customer,
        a_dry_run_counts_and_writes_nothing,
        an_export_holds_everything_of_the_person,
    ],
}

const NOW: u64 = BASE_MILLIS + 90_000;
const EVE: &str = "auth0|eve";
const BOB: &str = "auth0|bob";

async fn get<S: CommentStore>(store: &S, id: CommentId) -> Option<Comment> {
    store.get_many(&[id]).await.expect("get_many").remove(0)
}

/// Every comment `voter_sub` voted on, read `limit` at a time.
async fn votes_of<S: CommentStore>(store: &S, voter_sub: &str, limit: usize) -> Vec<CommentId> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let query = VoteQuery {
            voter: voter_of(voter_sub),
            after,
            limit,
        };
        let page = store.votes_by(&query).await.expect("votes_by");
        assert!(page.comments.len() <= limit);
        all.extend(&page.comments);
        after = page.comments.last().copied();
        if page.last_evaluated.is_none() || after.is_none() {
            return all;
        }
    }
}

async fn authored<S: CommentStore>(store: &S, sub: &str) -> Vec<CommentId> {
    let list = Partition::Author(AuthorList::new(sub, None));
    read_all_from(store, list, Order::OldestFirst, Bound::Unbounded, 7)
        .await
        .iter()
        .map(|c| c.id)
        .collect()
}

async fn reports_of<S: CommentStore>(store: &S, sub: &str) -> usize {
    let query = ReportQuery {
        reporter: sub.to_owned(),
        order: Order::OldestFirst,
        after: None,
        limit: 100,
    };
    store.reports(&query).await.expect("reports").reports.len()
}

async fn vote<S: CommentStore>(store: &S, id: CommentId, sub: &str) {
    let voted = store
        .mark_helpful(id, &Voter::signed_in(sub), true, NOW)
        .await
        .expect("a vote");
    assert!(voted.changed);
}

async fn report<S: CommentStore>(store: &S, id: CommentId, sub: &str) {
    let draft = ReportDraft::new(ReportReason::Spam, None).expect("a draft");
    store
        .report(id, sub, &draft, None, NOW)
        .await
        .expect("a report");
}

async fn hide<S: CommentStore>(store: &S, id: CommentId) {
    let verdict = Verdict::new(ModerationDecision::Hide, Some(ModerationReason::Spam), None)
        .expect("a verdict");
    store
        .moderate(id, &verdict, "auth0|mod", NOW)
        .await
        .expect("a decision");
}

/// Eve's and Bob's world on `sku_name`: eve wrote comments 0 to 2 (2 is hidden), bob 3 and 4;
/// the rest are nobody's. Eve voted on 3, 5 and 6 (6 is hidden since) and reported 4 and 7;
/// bob voted on 0 and 5 and reported 7.
async fn world<S: CommentStore>(store: &S, sku_name: &str) -> Vec<Comment> {
    let mut comments = dataset(sku_name, 9);
    for (i, comment) in comments.iter_mut().enumerate() {
        comment.author_sub = match i {
            0..=2 => Some(EVE.into()),
            3 | 4 => Some(BOB.into()),
            _ => None,
        };
    }
    store.put_batch(&comments).await.expect("put");
    let id = |i: usize| comments[i].id;
    for i in [3, 5, 6] {
        vote(store, id(i), EVE).await;
    }
    for i in [0, 5] {
        vote(store, id(i), BOB).await;
    }
    report(store, id(4), EVE).await;
    report(store, id(7), EVE).await;
    report(store, id(7), BOB).await;
    hide(store, id(2)).await;
    hide(store, id(6)).await;
    let mut now = Vec::new();
    for comment in &comments {
        now.push(get(store, comment.id).await.expect("there"));
    }
    now
}

pub async fn a_voters_votes_page_in_comment_order<S: CommentStore>(store: S) {
    let comments = dataset("PRIV-VOTES", 7);
    store.put_batch(&comments).await.expect("put");
    for comment in comments.iter().rev().take(5) {
        vote(&store, comment.id, EVE).await;
    }
    vote(&store, comments[0].id, BOB).await;
    let mut expected: Vec<CommentId> = comments.iter().rev().take(5).map(|c| c.id).collect();
    expected.sort();
    for limit in [1, 2, 5, 100] {
        assert_eq!(
            votes_of(&store, EVE, limit).await,
            expected,
            "limit {limit}"
        );
    }
    assert_eq!(votes_of(&store, BOB, 2).await, vec![comments[0].id]);
    assert!(votes_of(&store, "auth0|nobody", 3).await.is_empty());
}

pub async fn forgetting_each_thing_changes_its_comment_once<S: CommentStore>(store: S) {
    let before = world(&store, "PRIV-FORGET").await;
    // A vote on a hidden comment: the count goes down all the same.
    let vote = Forget::Vote {
        comment: before[6].id,
        voter: voter_of(EVE),
    };
    assert!(store.forget(&vote).await.expect("forget"));
    let after = get(&store, before[6].id).await.expect("there");
    assert_eq!(after.helpful_count, before[6].helpful_count - 1);
    assert_eq!(after.version, before[6].version + 1);
    assert!(!store.forget(&vote).await.expect("again"), "once");
    assert_eq!(get(&store, before[6].id).await.expect("there"), after);

    let report = Forget::Report {
        comment: before[7].id,
        reporter: EVE.into(),
    };
    assert!(store.forget(&report).await.expect("forget"));
    let after = get(&store, before[7].id).await.expect("there");
    assert_eq!(after.reporters, vec![BOB.to_owned()]);
    assert!(!store.forget(&report).await.expect("again"));
    assert_eq!(store.report_count(BOB).await.expect("count"), 1);

    let author = Forget::Author {
        comment: before[3].id,
        sub: EVE.into(),
    };
    assert!(!store.forget(&author).await.expect("not hers"), "bob's");
    assert_eq!(get(&store, before[3].id).await.expect("there"), before[3]);
}

pub async fn erasing_a_person_removes_all_of_theirs_and_nothing_else<S: CommentStore>(store: S) {
    let before = world(&store, "PRIV-ERASE").await;
    let erasure = Erasure {
        sub: EVE.into(),
        mode: ErasureMode::Delete,
        dry_run: false,
    };
    let receipt = privacy::erase(&store, &erasure, |_| {})
        .await
        .expect("erase");
    assert_eq!(
        receipt,
        ErasureReceipt {
            comments_deleted: 3,
            comments_anonymized: 0,
            votes_removed: 3,
            reports_removed: 2,
        }
    );
    for (i, comment) in before[..3].iter().enumerate() {
        assert_eq!(get(&store, comment.id).await, None, "eve's comment {i}");
    }
    assert!(authored(&store, EVE).await.is_empty());
    assert!(votes_of(&store, EVE, 10).await.is_empty());
    assert_eq!(reports_of(&store, EVE).await, 0);
    assert_eq!(store.report_count(EVE).await.expect("count"), 0);
    for i in [3, 5, 6] {
        let now = get(&store, before[i].id).await.expect("there");
        assert_eq!(
            now.helpful_count,
            before[i].helpful_count - 1,
            "comment {i}"
        );
    }
    let four = get(&store, before[4].id).await.expect("there");
    assert!(four.reporters.is_empty(), "eve was its only reporter");
    let reported = Partition::Queue(QueueList::new(Queue::Reported, Some(sku("PRIV-ERASE"))));
    let queue: Vec<CommentId> =
        read_all_from(&store, reported, Order::OldestFirst, Bound::Unbounded, 5)
            .await
            .iter()
            .map(|c| c.id)
            .collect();
    assert_eq!(queue, vec![before[7].id], "only bob's report is open");
    // Bob's things are all there.
    assert_eq!(
        authored(&store, BOB).await,
        vec![before[3].id, before[4].id]
    );
    // (Bob's vote on eve's deleted comment went with it, or, in DynamoDB, stays as a leftover
    // vote item that nothing reads.)
    assert!(votes_of(&store, BOB, 10).await.contains(&before[5].id));
    assert_eq!(reports_of(&store, BOB).await, 1);
    assert_eq!(get(&store, before[8].id).await.as_ref(), Some(&before[8]));

    let again = privacy::erase(&store, &erasure, |_| {})
        .await
        .expect("again");
    assert_eq!(again, ErasureReceipt::default(), "nothing more to erase");
}

pub async fn anonymizing_keeps_the_comments_under_former_customer<S: CommentStore>(store: S) {
    let before = world(&store, "PRIV-ANON").await;
    let erasure = Erasure {
        sub: EVE.into(),
        mode: ErasureMode::Anonymize,
        dry_run: false,
    };
    let receipt = privacy::erase(&store, &erasure, |_| {})
        .await
        .expect("erase");
    assert_eq!(
        (receipt.comments_anonymized, receipt.comments_deleted),
        (3, 0)
    );
    for old in &before[..3] {
        let now = get(&store, old.id).await.expect("kept");
        assert_eq!(now.author, FORMER_CUSTOMER);
        assert_eq!(now.author_sub, None);
        assert_eq!((&now.body, now.rating), (&old.body, old.rating));
        assert_eq!(now.moderation.status, old.moderation.status);
        assert_eq!(now.helpful_count, old.helpful_count, "bob's vote stays");
    }
    assert!(authored(&store, EVE).await.is_empty());
    let again = privacy::erase(&store, &erasure, |_| {})
        .await
        .expect("again");
    assert_eq!(again, ErasureReceipt::default());
}

pub async fn a_dry_run_counts_and_writes_nothing<S: CommentStore>(store: S) {
    let before = world(&store, "PRIV-DRY").await;
    let erasure = Erasure {
        sub: EVE.into(),
        mode: ErasureMode::Delete,
        dry_run: true,
    };
    let receipt = privacy::erase(&store, &erasure, |_| {})
        .await
        .expect("dry run");
    assert_eq!(
        (
            receipt.comments_deleted,
            receipt.votes_removed,
            receipt.reports_removed
        ),
        (3, 3, 2)
    );
    for comment in &before {
        assert_eq!(get(&store, comment.id).await.as_ref(), Some(comment));
    }
}

pub async fn an_export_holds_everything_of_the_person<S: CommentStore>(store: S) {
    let before = world(&store, "PRIV-EXPORT").await;
    let mut out = Vec::new();
    let summary = privacy::export(&store, EVE, NOW, &mut out)
        .await
        .expect("export");
    assert_eq!(
        (summary.comments, summary.helpful_votes, summary.reports),
        (3, 3, 2)
    );
    let document: serde_json::Value = serde_json::from_slice(&out).expect("one JSON document");
    assert_eq!(document["format"], privacy::EXPORT_FORMAT);
    assert_eq!(document["subject"], EVE);
    let comments = document["comments"].as_array().expect("comments");
    let ids: Vec<&str> = comments
        .iter()
        .map(|c| c["id"].as_str().expect("id"))
        .collect();
    let mut expected: Vec<String> = before[..3].iter().map(|c| c.id.to_string()).collect();
    expected.sort();
    assert_eq!(ids, expected, "every status, oldest first");
    assert_eq!(comments[0]["body"], before[0].body.as_str());
    let hidden = comments
        .iter()
        .find(|c| c["id"] == before[2].id.to_string().as_str());
    assert_eq!(hidden.expect("the hidden one")["status"], "HIDDEN");
    assert_eq!(
        hidden.expect("the hidden one")["moderation"]["reason"],
        "SPAM"
    );
    assert_eq!(document["helpfulVotes"].as_array().expect("votes").len(), 3);
    let reports = document["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 2);
    assert_eq!(reports[0]["reason"], "SPAM");
    assert!(
        !String::from_utf8_lossy(&out).contains(BOB),
        "nothing of bob's"
    );
}
