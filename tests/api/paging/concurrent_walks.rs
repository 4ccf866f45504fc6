//! Cursor walks under concurrent writes, on DynamoDB Local: while a writer adds comments at
//! random places in the list (old timestamps, ties included), deletes others, and a moderator
//! hides others and publishes them again, a client walks the product forward and backward,
//! unfiltered and through a rating filter. Every comment that stays published from the walk's
//! start to its end is seen exactly once, in order; nothing is seen twice. (Comments added,
//! deleted, hidden or published during the walk may or may not be seen, as a cursor walk
//! promises no more.) The same holds for `MOST_HELPFUL` walks while votes arrive, for every
//! comment whose count does not change during the walk.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dynapage::domain::{
    Access, Comment, CommentId, ModerationDecision, ModerationReason, Rating, Sku, Verdict, Voter,
};
use dynapage::graphql::GlobalId;
use dynapage::store::CommentStore;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::helpers::{PAGE_QUERY, Page, TestApp};
use crate::support::data::{self, BASE_MILLIS, Rng};
use crate::support::dynamodb_local;

const SKU: &str = "WALKED_WHILE_WRITTEN";
const COMMENTS: usize = 400;
const SPREAD: u64 = 150;
const PAGE: i64 = 15;

/// The comment ids of a page. Every comment here has an id whose time part is its
/// `createdAt`, so id order is the list's order, ties included.
fn ids(page: &Page) -> Vec<CommentId> {
    page.ids
        .iter()
        .map(|id| match GlobalId::decode(id) {
            Ok(GlobalId::Comment(id)) => id,
            _ => panic!("{id} is a comment id"),
        })
        .collect()
}

/// Paces a walk and the task that changes the list beside it: each page the walk asks for
/// allows the changer one more change, and each page after the first waits until a change
/// landed since the page before it was asked for. So every walk runs beside changes however
/// the machine shares its time between the two, and the changes number about the pages. (Left
/// to itself, the voter below voted on 27 and 38 comments over its four walks in two runs here,
/// close to the 20 votes the test then asked for; CI on another machine failed the test once,
/// with a message cut from its log.)
#[derive(Default)]
struct Pace {
    allowed: AtomicU64,
    made: AtomicU64,
}

impl Pace {
    /// A page is asked for: one more change is allowed. Returns the changes made so far.
    fn page(&self) -> u64 {
        self.allowed.fetch_add(1, Ordering::AcqRel);
        self.made.load(Ordering::Acquire)
    }

    /// Waits until more than `made` changes were made (at most 30 s: the changer failed).
    async fn change_since(&self, made: u64) {
        let waited = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while self.made.load(Ordering::Acquire) <= made {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
        })
        .await;
        assert!(waited.is_ok(), "no change landed between two pages in 30 s");
    }

    /// For the changer: waits until it may make another change; `false` once `stop` fires.
    async fn may_change(&self, stop: &CancellationToken) -> bool {
        while self.made.load(Ordering::Acquire) >= self.allowed.load(Ordering::Acquire) {
            if stop.is_cancelled() {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        !stop.is_cancelled()
    }

    /// For the changer: one change made.
    fn changed(&self) {
        self.made.fetch_add(1, Ordering::AcqRel);
    }
}

/// Walks the whole list `query` pages through, forward (`first`/`after`) or backward
/// (`last`/`before`), at `pace`, and returns every comment seen, from the list's first to its
/// last.
async fn walk(
    app: &TestApp,
    query: &str,
    sku: &str,
    ratings: &Value,
    forward: bool,
    pace: &Pace,
) -> Vec<CommentId> {
    let (size, bound) = if forward {
        ("first", "after")
    } else {
        ("last", "before")
    };
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..1_000 {
        let made = pace.page();
        let vars = json!({ "sku": sku, size: PAGE, bound: cursor, "ratings": ratings });
        let data = app.data(query, vars).await;
        let p = Page::from_connection(&data["comments"]);
        let mut keys = ids(&p);
        let more = if forward {
            cursor = json!(p.end_cursor);
            p.has_next_page
        } else {
            cursor = json!(p.start_cursor);
            keys.reverse();
            p.has_previous_page
        };
        seen.extend(keys);
        if !more {
            if !forward {
                seen.reverse();
            }
            return seen;
        }
        pace.change_since(made).await;
    }
    panic!("the walk does not end");
}

#[tokio::test]
async fn a_cursor_walk_under_concurrent_writes_sees_every_lasting_comment_once_in_order() {
    let store = dynamodb_local::dynamo_store().await;
    let sku = Sku::parse(SKU).expect("sku");
    let mut rng = Rng::new(2026);
    let initial = data::comments(&mut rng, &sku, COMMENTS, SPREAD);
    assert!(data::has_ties(&initial));
    store.put_batch(&initial).await.expect("seeded");
    let app = TestApp::on_dynamodb(store.table(), &[]).await;

    // The writer: adds a comment somewhere in the list's time range, deletes an initial one,
    // hides another and publishes one hidden before, and so on, at the walks' pace, until the
    // walks are done.
    let deleted: Arc<Mutex<HashSet<CommentId>>> = Arc::default();
    let pace = Arc::new(Pace::default());
    let stop = CancellationToken::new();
    let writer = {
        let (store, sku, deleted, stop) =
            (store.clone(), sku.clone(), deleted.clone(), stop.clone());
        let pace = pace.clone();
        let mut victims: Vec<CommentId> = initial.iter().map(|c| c.id).collect();
        tokio::spawn(async move {
            let mut rng = Rng::new(7);
            let mut writes = 0u64;
            let mut hidden: Vec<CommentId> = Vec::new();
            let hiding = Verdict::new(ModerationDecision::Hide, Some(ModerationReason::Spam), None)
                .expect("a verdict");
            let publishing =
                Verdict::new(ModerationDecision::Publish, None, None).expect("a verdict");
            while !victims.is_empty() && pace.may_change(&stop).await {
                let millis = BASE_MILLIS + rng.below(SPREAD);
                let comment = Comment {
                    purchase: None,
                    id: CommentId::from_parts(millis, rng.next()),
                    sku: sku.clone(),
                    author: "writer".into(),
                    author_sub: None,
                    body: format!("added during the walk {writes}"),
                    rating: Rating::ALL[rng.below(5) as usize],
                    created_at_ms: millis,
                    updated_at_ms: None,
                    version: 1,
                    helpful_count: 0,
                    moderation: Default::default(),
                    reply: None,
                    reporters: Vec::new(),
                };
                store.create(&comment).await.expect("created");
                let victim = victims.swap_remove(rng.below(victims.len() as u64) as usize);
                // Recorded before the deletion starts, so a comment the walk misses because it
                // was being deleted is never counted as lasting.
                deleted.lock().expect("lock").insert(victim);
                store.delete(victim, &Access::Any).await.expect("deleted");
                // A moderator hides another, and publishes again one hidden before: both
                // leave and re-enter the list mid-walk (recorded first, like deletions).
                if !victims.is_empty() {
                    let hide = victims.swap_remove(rng.below(victims.len() as u64) as usize);
                    deleted.lock().expect("lock").insert(hide);
                    store
                        .moderate(hide, &hiding, "auth0|moderator", BASE_MILLIS)
                        .await
                        .expect("hidden");
                    if let Some(back) = hidden.pop() {
                        store
                            .moderate(back, &publishing, "auth0|moderator", BASE_MILLIS)
                            .await
                            .expect("published");
                    }
                    hidden.insert(0, hide);
                }
                writes += 2;
                pace.changed();
            }
        })
    };

    for ratings in [Value::Null, json!([2, 4])] {
        for forward in [true, false] {
            let seen = walk(&app, PAGE_QUERY, SKU, &ratings, forward, &pace).await;
            let what = format!("ratings {ratings}, forward {forward}");
            let unique: HashSet<&CommentId> = seen.iter().collect();
            assert_eq!(unique.len(), seen.len(), "{what}: a comment seen twice");
            // Newest first: strictly descending.
            assert!(seen.windows(2).all(|w| w[0] > w[1]), "{what}: out of order");
            let deleted = deleted.lock().expect("lock").clone();
            let lasting: BTreeSet<CommentId> = initial
                .iter()
                .filter(|c| ratings.is_null() || [2, 4].contains(&c.rating.get()))
                .map(|c| c.id)
                .filter(|id| !deleted.contains(id))
                .collect();
            let missing: Vec<&CommentId> =
                lasting.iter().filter(|id| !unique.contains(id)).collect();
            assert!(
                missing.is_empty(),
                "{what}: lasting comments not seen: {missing:?}"
            );
        }
    }
    stop.cancel();
    // Every page after a walk's first waited for a change (`Pace`): the walks ran beside writes.
    writer.await.expect("the writer");
}

const HELPFUL_SKU: &str = "WALKED_WHILE_VOTED";

const HELPFUL_PAGE_QUERY: &str = r#"
query Page($sku: String!, $ratings: [Int!], $first: Int, $after: String, $last: Int, $before: String) {
  comments(sku: $sku, orderBy: MOST_HELPFUL, ratings: $ratings, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { id rating createdAt helpfulCount } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// `MOST_HELPFUL` walks while votes arrive (and are taken back) on DynamoDB Local and Redis:
/// every comment whose count does not change during a walk is seen exactly once, and those
/// comments come in the order of their (unchanged) counts, newest first among equal counts. A
/// comment whose count changes may be seen twice or not at all (README, "Orders").
#[tokio::test]
async fn a_most_helpful_walk_while_votes_arrive_sees_every_unchanged_comment_once_in_order() {
    let store = dynamodb_local::dynamo_store().await;
    let sku = Sku::parse(HELPFUL_SKU).expect("sku");
    let mut rng = Rng::new(2027);
    let mut initial = data::comments(&mut rng, &sku, 300, 100);
    for comment in &mut initial {
        // Few counts, so that ties on a count are long and cross pages.
        comment.helpful_count = rng.below(4);
        comment.version = 1;
    }
    store.put_batch(&initial).await.expect("seeded");
    let app = TestApp::on_dynamodb(store.table(), &[]).await;

    // The voter: votes for a random comment (or takes a vote back), recording it as changed
    // before the vote is sent, at the walks' pace (a vote a page: about 56 votes, so about 250
    // of the 300 comments, and 100 of the 120 or so a `[2, 4]` filter holds, keep their count
    // through all four walks), until the walks are done.
    let changed: Arc<Mutex<HashSet<CommentId>>> = Arc::default();
    let pace = Arc::new(Pace::default());
    let stop = CancellationToken::new();
    let voter = {
        let (store, changed, stop) = (store.clone(), changed.clone(), stop.clone());
        let pace = pace.clone();
        let ids: Vec<CommentId> = initial.iter().map(|c| c.id).collect();
        tokio::spawn(async move {
            let mut rng = Rng::new(11);
            let voters: Vec<Voter> = (0..4)
                .map(|i| Voter::signed_in(&format!("walk-voter-{i}")))
                .collect();
            while pace.may_change(&stop).await {
                let id = ids[rng.below(ids.len() as u64) as usize];
                let voter = &voters[rng.below(voters.len() as u64) as usize];
                changed.lock().expect("lock").insert(id);
                let helpful = rng.below(3) > 0;
                store
                    .mark_helpful(id, voter, helpful, BASE_MILLIS)
                    .await
                    .expect("voted");
                pace.changed();
            }
        })
    };

    let place = |c: &Comment| (c.helpful_count, c.created_at_ms, c.id);
    for ratings in [Value::Null, json!([2, 4])] {
        for forward in [true, false] {
            let seen = walk(
                &app,
                HELPFUL_PAGE_QUERY,
                HELPFUL_SKU,
                &ratings,
                forward,
                &pace,
            )
            .await;
            let what = format!("ratings {ratings}, forward {forward}");
            let changed = changed.lock().expect("lock").clone();
            let unchanged: Vec<&Comment> = initial
                .iter()
                .filter(|c| ratings.is_null() || [2, 4].contains(&c.rating.get()))
                .filter(|c| !changed.contains(&c.id))
                .collect();
            assert!(
                unchanged.len() > 50,
                "{what}: enough comments kept their count ({} of {} were voted on)",
                changed.len(),
                initial.len()
            );
            let mut expected: Vec<&Comment> = unchanged.clone();
            expected.sort_by_key(|c| std::cmp::Reverse(place(c)));
            let keep: HashSet<CommentId> = unchanged.iter().map(|c| c.id).collect();
            let got: Vec<CommentId> = seen.into_iter().filter(|id| keep.contains(id)).collect();
            let expected: Vec<CommentId> = expected.iter().map(|c| c.id).collect();
            assert_eq!(
                got, expected,
                "{what}: the unchanged comments, once each, in order"
            );
        }
    }
    stop.cancel();
    // Every page after a walk's first waited for a vote (`Pace`): the walks ran beside votes.
    voter.await.expect("the voter");
}
