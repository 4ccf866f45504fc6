//! The engine against the oracle (`docs/contributing.md`): random datasets full of timestamp ties,
//! random argument mixes (cursors of live and deleted comments, windows, `first` + `last`, offsets
//! on both sides of the index threshold, rating filters, numbered pages' cursors), stores that
//! answer a few items at a time. Edges, flags and cursors must equal the specification's slicing of
//! a sorted `Vec`; the count of comments newer than a cursor (`Engine::count_newer`) must equal the
//! `Vec`'s.

use std::collections::BTreeSet;

use dynapage::domain::{
    Access, ChangeEvent, Comment, CommentId, CommentOrder, IndexEntry, Listing, Numbering, Order,
    Position, Rating, RatingSet, Sku, SortKey,
};
use dynapage::index::PageIndex;
use dynapage::index::memory::MemoryIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::pagination::oracle::{self, OracleArgs};
use dynapage::pagination::{
    ConnectionArgs, CursorAt, CursorCodec, CursorScope, Engine, PagePlan, PaginationError,
    PagingSettings, Want,
};
use dynapage::redis::RedisConfig;
use dynapage::store::CommentStore;
use dynapage::store::memory::MemoryStore;
use proptest::prelude::*;

/// One generated scenario.
#[derive(Clone, Debug)]
pub struct Case {
    /// `(millis offset, rating, id randomness)`; few distinct millis, so many ties.
    comments: Vec<(u64, i64, u64)>,
    /// How many of the comments are deleted again (their cursors stay usable).
    deleted: usize,
    first: Option<i32>,
    last: Option<i32>,
    after: Option<usize>,
    before: Option<usize>,
    offset: Option<i32>,
    ratings: Vec<i64>,
    threshold: u64,
    cap: Option<usize>,
    order: CommentOrder,
    /// A numbered page's cursor (`pageCursors`) of this offset in place of the cursor the page
    /// starts from, or, when the flag is set, misplaced as the other bound.
    page_cursor: Option<(u64, bool)>,
}

pub fn cases(max_comments: usize) -> impl Strategy<Value = Case> {
    (0..=max_comments).prop_flat_map(|n| {
        let distinct_millis = (n as u64 / 4).max(1);
        (
            prop::collection::vec((0..distinct_millis, 1i64..=5, any::<u64>()), n),
            0..=(n / 5),
            prop::option::weighted(0.7, 0i32..12),
            prop::option::weighted(0.4, 0i32..12),
            prop::option::weighted(0.4, any::<usize>()),
            prop::option::weighted(0.3, any::<usize>()),
            prop::option::weighted(0.4, 0i32..40),
            prop::sample::subsequence(vec![1i64, 2, 3, 4, 5], 1..=5),
            prop::sample::select(vec![0u64, 3, 100]),
            prop::option::weighted(0.5, 1usize..4),
            prop::sample::select(ORDERS.to_vec()),
            prop::option::weighted(0.3, (0u64..40, prop::bool::weighted(0.2))),
        )
            .prop_map(
                |(
                    comments,
                    deleted,
                    first,
                    last,
                    after,
                    before,
                    offset,
                    ratings,
                    threshold,
                    cap,
                    order,
                    page_cursor,
                )| Case {
                    comments,
                    deleted,
                    first,
                    last,
                    after,
                    before,
                    offset,
                    ratings,
                    threshold,
                    cap,
                    order,
                    page_cursor,
                },
            )
    })
}

const BASE_MILLIS: u64 = 1_700_000_000_000;

/// Every order a connection can list comments in.
const ORDERS: [CommentOrder; 5] = [
    CommentOrder::Newest,
    CommentOrder::Oldest,
    CommentOrder::HighestRated,
    CommentOrder::LowestRated,
    CommentOrder::MostHelpful,
];

fn build_comments(case: &Case, sku: &Sku) -> Vec<Comment> {
    case.comments
        .iter()
        .map(|(millis, rating, random)| {
            let millis = BASE_MILLIS + millis;
            Comment {
                purchase: None,
                id: CommentId::from_parts(millis, u128::from(*random)),
                sku: sku.clone(),
                author: "tester".into(),
                author_sub: None,
                body: format!("comment at {millis}"),
                rating: Rating::new(*rating).expect("generated ratings are valid"),
                created_at_ms: millis,
                updated_at_ms: None,
                version: 1,
                // A few counts, so that the list by helpful votes has ties on a count (and
                // across counts, ties on time).
                helpful_count: *random % 3,
                moderation: Default::default(),
                reply: None,
                reporters: Vec::new(),
            }
        })
        .collect()
}

/// Writes the case into `store` under `sku` and checks one page against the oracle.
pub async fn check_case<S: CommentStore, I: PageIndex>(
    store: S,
    index: I,
    sku: Sku,
    case: Case,
) -> Result<(), TestCaseError> {
    let mut comments = build_comments(&case, &sku);
    comments.sort_by_key(|c| c.id);
    comments.dedup_by_key(|c| c.id);
    store
        .put_batch(&comments)
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let deleted: Vec<Comment> = comments.iter().take(case.deleted).cloned().collect();
    for comment in &deleted {
        store
            .delete(comment.id, &Access::Any)
            .await
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    let live: Vec<&Comment> = comments.iter().skip(case.deleted).collect();
    let events: Vec<ChangeEvent> = live
        .iter()
        .map(|c| ChangeEvent::Upsert {
            old: None,
            new: IndexEntry::from(*c),
        })
        .collect();
    index
        .apply(&events)
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?;

    let ratings = RatingSet::parse(&case.ratings).expect("generated rating sets are valid");
    let newest_first: Vec<SortKey> = {
        let set: BTreeSet<SortKey> = live
            .iter()
            .filter(|c| ratings.contains(c.rating))
            .map(|c| c.sort_key())
            .collect();
        set.into_iter().rev().collect()
    };
    let listing = Listing {
        ratings,
        grouping: case.order.grouping(),
    };
    // Cursors point at any comment, live or deleted, of any rating: all are valid positions.
    let all_positions: Vec<Position> = comments.iter().map(|c| listing.position_of(c)).collect();
    let pick = |i: Option<usize>| {
        i.filter(|_| !all_positions.is_empty())
            .map(|i| all_positions[i % all_positions.len()])
    };
    let (mut after, mut before) = (pick(case.after), pick(case.before));
    // A page cursor replaces the cursor the page is read from (`after` unless only `last` is
    // given) and counts from that end; misplaced, it replaces the other one.
    let backward = case.first.is_none() && case.last.is_some();
    let reading = if backward {
        case.order.forward().reverse()
    } else {
        case.order.forward()
    };
    let numbering = match reading {
        Order::NewestFirst => Numbering::FromNewest,
        Order::OldestFirst => Numbering::FromOldest,
    };
    let page_cursor = case.page_cursor.map(|(offset, misplaced)| {
        if backward != misplaced {
            before = None;
            ("before", offset, misplaced)
        } else {
            after = None;
            ("after", offset, misplaced)
        }
    });

    let settings = PagingSettings {
        default_page_size: 5,
        max_page_size: 100,
        offset_index_threshold: case.threshold,
    };
    let codec = CursorCodec::development();
    let scope = CursorScope {
        sku: sku.clone(),
        ratings,
        order: case.order,
    };
    let mut args = ConnectionArgs {
        first: case.first,
        after: after.map(|k| codec.seal(&scope, &k)),
        last: case.last,
        before: before.map(|k| codec.seal(&scope, &k)),
        offset: case.offset,
    };
    let mut cursor_skip = 0;
    if let Some((argument, offset, misplaced)) = page_cursor {
        let sealed = codec.seal_offset(&scope, numbering, offset);
        prop_assert_eq!(
            codec.open(&scope, &sealed),
            Ok(CursorAt::Offset { numbering, offset })
        );
        match argument {
            "after" => args.after = Some(sealed),
            _ => args.before = Some(sealed),
        }
        cursor_skip = offset as usize;
        if misplaced {
            // The offset rule is checked before the cursors are opened.
            let offset_refused =
                case.offset.is_some() && case.first.is_some() == case.last.is_some();
            let plan = PagePlan::new(&args, &settings, &codec, &scope);
            prop_assert!(
                if offset_refused {
                    matches!(plan, Err(PaginationError::OffsetNeedsOneDirection))
                } else {
                    matches!(plan, Err(PaginationError::PageCursorMisplaced { argument: refused }) if refused == argument)
                },
                "{plan:?}"
            );
            return Ok(());
        }
    }
    let plan = PagePlan::new(&args, &settings, &codec, &scope);
    if case.offset.is_some() && case.first.is_some() == case.last.is_some() {
        prop_assert!(
            matches!(plan, Err(PaginationError::OffsetNeedsOneDirection)),
            "{plan:?}"
        );
        return Ok(());
    }
    let plan = plan.map_err(|e| TestCaseError::fail(e.to_string()))?;
    let engine = Engine::new(store, index, settings);
    let page = engine
        .page(&sku, listing, &plan, Want::ALL)
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?;

    // The order's list: descending positions, read from its own end.
    let descending = case.order.forward() == Order::NewestFirst;
    let mut list: Vec<Position> = live
        .iter()
        .filter(|c| ratings.contains(c.rating))
        .map(|c| listing.position_of(c))
        .collect();
    list.sort_unstable();
    if descending {
        list.reverse();
    }
    let expected = oracle::slice_in(
        &list,
        descending,
        &OracleArgs {
            first: case.first.map(|v| v as usize),
            after,
            last: case.last.map(|v| v as usize),
            before,
            offset: case.offset.unwrap_or(0) as usize + cursor_skip,
        },
        settings.default_page_size,
    );
    let got: Vec<Position> = page.items.iter().map(|c| listing.position_of(c)).collect();
    prop_assert_eq!(&got, &expected.keys, "edges");
    prop_assert_eq!(
        page.has_previous_page,
        Some(expected.has_previous_page),
        "hasPreviousPage"
    );
    prop_assert_eq!(
        page.has_next_page,
        Some(expected.has_next_page),
        "hasNextPage"
    );
    for key in &got {
        prop_assert_eq!(
            codec.open(&scope, &codec.seal(&scope, key)),
            Ok(CursorAt::Position(*key))
        );
    }
    // What a resumed subscription asks before replaying: the comments newer than a cursor,
    // whether its comment is live or deleted.
    if let Some(after) = after.map(|p| p.key) {
        let newer = engine
            .count_newer(&sku, ratings, after)
            .await
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let expected = newest_first.iter().filter(|k| **k > after).count() as u64;
        prop_assert_eq!(newer, expected, "count_newer");
    }
    // The extra item is all the engine may read beyond the page: per partition, at most the
    // direct-read offset plus n + 1, plus one item per boundary query.
    let partitions = if ratings.is_all() {
        1
    } else {
        ratings.iter().count() as u64
    };
    // A page cursor's offset, and any `offset` added to it, is skipped through the index.
    let direct_skip = match case.offset {
        Some(k) if (k as u64) <= case.threshold && cursor_skip == 0 => k as u64,
        _ => 0,
    };
    let n = case
        .first
        .or(case.last)
        .map_or(settings.default_page_size as u64, |v| v as u64);
    // A list by rating reads its groups one after another, only as far as the page needs: the
    // same items as one partition, plus at most one per group wholly past the window's end
    // (the bound `graphql::pricing` prices).
    // The list by helpful votes merges its partitions like a list by time.
    let most = if !case.order.grouping().by_rating() {
        partitions * (direct_skip + n + 1 + 2)
    } else {
        direct_skip + n + 2 + ratings.iter().count() as u64
    };
    prop_assert!(
        page.stats.items_read <= most,
        "read {} items",
        page.stats.items_read
    );
    Ok(())
}

fn run_memory(config: ProptestConfig, max_comments: usize) {
    proptest!(config, |(case in cases(max_comments))| {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let store = match case.cap {
            Some(cap) => MemoryStore::new().with_max_items_per_response(cap),
            None => MemoryStore::new(),
        };
        runtime.block_on(check_case(store, MemoryIndex::new(), Sku::parse("PRODUCT").expect("sku"), case))?;
    });
}

/// The same property on DynamoDB Local and a real Redis: one table, a fresh product per case.
#[test]
fn engine_matches_the_oracle_on_dynamodb_local_and_redis() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let store = runtime.block_on(crate::support::dynamodb_local::dynamo_store());
    let redis_url = crate::support::redis_server::shared_url();
    let counter = std::sync::atomic::AtomicU32::new(0);
    proptest!(ProptestConfig::with_cases(40), |(case in cases(120))| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sku = Sku::parse(&format!("CASE-{n}")).expect("sku");
        let index = runtime
            .block_on(RedisIndex::connect(RedisConfig::new(&redis_url, &crate::support::redis_server::unique_prefix())))
            .expect("redis index");
        runtime.block_on(check_case(store.clone(), index, sku, case))?;
    });
}

#[test]
fn engine_matches_the_oracle_on_the_embedded_store() {
    run_memory(ProptestConfig::with_cases(1_500), 300);
}

/// The same property on the durable embedded store (one data directory, a fresh product per
/// case): its reads come from memory, its writes went through SQLite first.
#[test]
fn engine_matches_the_oracle_on_the_durable_embedded_store() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store = runtime.block_on(crate::support::sqlite::sqlite_store());
    let counter = std::sync::atomic::AtomicU32::new(0);
    proptest!(ProptestConfig::with_cases(150), |(case in cases(120))| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sku = Sku::parse(&format!("CASE-{n}")).expect("sku");
        runtime.block_on(check_case(store.store.clone(), MemoryIndex::new(), sku, case))?;
    });
}

#[test]
fn engine_matches_the_oracle_on_tiny_lists_where_edges_cluster() {
    run_memory(ProptestConfig::with_cases(1_500), 8);
}
