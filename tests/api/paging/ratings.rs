//! The ratings filter on real backends (issue: "one connection over several DynamoDB
//! partitions"): for every one of the 31 rating subsets of a 10,000-comment product on DynamoDB
//! Local + Redis, forward and backward walks and offset pages equal the filtered list; an
//! offset page reads at most (ratings) × (n + 1) items and makes one index call; cursors stay
//! within 64 characters.

use dynapage::domain::{
    ChangeEvent, Comment, CommentOrder, IndexEntry, Listing, Position, Rating, RatingSet, Sku,
    SortKey,
};
use dynapage::generate::CommentGenerator;
use dynapage::index::PageIndex;
use dynapage::index::redis::RedisIndex;
use dynapage::pagination::{
    ConnectionArgs, CursorCodec, CursorScope, Engine, PagePlan, PagingSettings, Want,
};
use dynapage::redis::RedisConfig;
use dynapage::store::dynamo::DynamoStore;
use futures::StreamExt;
use serde_json::json;

use crate::support::{dynamodb_local, redis_server};

const COMMENTS: usize = 10_000;
const PAGE: i32 = 100;

struct Fixture {
    engine: Engine<DynamoStore, RedisIndex>,
    codec: CursorCodec,
    sku: Sku,
    /// The whole product, newest first.
    newest_first: Vec<Comment>,
    /// The Redis key prefix of the index.
    prefix: String,
}

async fn fixture(sku: &str, count: usize) -> Fixture {
    let store = dynamodb_local::dynamo_store().await;
    let sku = Sku::parse(sku).expect("sku");
    let comments: Vec<Comment> = CommentGenerator::new(sku.clone(), 5, 1_767_225_600_000)
        .take(count)
        .collect();
    for chunk in comments.chunks(2_000) {
        dynapage::cli::seed::put_retrying(&store, chunk)
            .await
            .expect("seeded");
    }
    let prefix = redis_server::unique_prefix();
    let index = RedisIndex::connect(RedisConfig::new(&redis_server::shared_url(), &prefix))
        .await
        .expect("index");
    let events: Vec<ChangeEvent> = comments
        .iter()
        .map(|c| ChangeEvent::Upsert {
            old: None,
            new: IndexEntry::from(c),
        })
        .collect();
    for chunk in events.chunks(2_000) {
        index.apply(chunk).await.expect("indexed");
    }
    let mut newest_first = comments;
    newest_first.sort_by_key(|c| std::cmp::Reverse(c.sort_key()));
    Fixture {
        engine: Engine::new(store, index, PagingSettings::default()),
        codec: CursorCodec::development(),
        sku,
        newest_first,
        prefix,
    }
}

fn subsets() -> Vec<RatingSet> {
    (1u8..32)
        .map(|mask| {
            RatingSet::from_ratings(
                Rating::ALL
                    .into_iter()
                    .filter(|r| mask & (1 << r.index()) != 0),
            )
        })
        .collect()
}

impl Fixture {
    fn filtered(&self, ratings: RatingSet) -> Vec<SortKey> {
        self.newest_first
            .iter()
            .filter(|c| ratings.contains(c.rating))
            .map(Comment::sort_key)
            .collect()
    }

    async fn page(
        &self,
        ratings: RatingSet,
        args: ConnectionArgs,
    ) -> (Vec<SortKey>, dynapage::pagination::Page) {
        let scope = CursorScope {
            sku: self.sku.clone(),
            ratings,
            order: CommentOrder::Newest,
        };
        let plan = PagePlan::new(&args, self.engine.settings(), &self.codec, &scope)
            .expect("valid arguments");
        let page = self
            .engine
            .page(&self.sku, Listing::flat(ratings), &plan, Want::ALL)
            .await
            .expect("a page");
        (page.items.iter().map(Comment::sort_key).collect(), page)
    }

    fn cursor(&self, ratings: RatingSet, key: &SortKey) -> String {
        self.codec.seal(
            &CursorScope {
                sku: self.sku.clone(),
                ratings,
                order: CommentOrder::Newest,
            },
            &Position::flat(*key),
        )
    }

    /// Walks forward and backward and jumps with offsets; panics on the first difference.
    async fn check_subset(&self, ratings: RatingSet) {
        let expected = self.filtered(ratings);
        let partitions = if ratings.is_all() {
            1
        } else {
            ratings.iter().count() as u64
        };

        let mut walked = Vec::new();
        let mut after = None;
        loop {
            let args = ConnectionArgs {
                first: Some(PAGE),
                after: after.clone(),
                ..Default::default()
            };
            let (keys, page) = self.page(ratings, args).await;
            walked.extend_from_slice(&keys);
            assert_eq!(page.has_previous_page, Some(after.is_some()), "{ratings:?}");
            if page.has_next_page != Some(true) {
                break;
            }
            let last = keys.last().expect("a full page");
            let cursor = self.cursor(ratings, last);
            assert!(
                cursor.len() <= 64,
                "a filtered cursor is {} characters",
                cursor.len()
            );
            after = Some(cursor);
        }
        assert!(
            walked == expected,
            "{ratings:?}: forward walk differs ({} vs {} comments)",
            walked.len(),
            expected.len()
        );

        let mut walked_back = Vec::new();
        let mut before = None;
        loop {
            let args = ConnectionArgs {
                last: Some(PAGE),
                before: before.clone(),
                ..Default::default()
            };
            let (keys, page) = self.page(ratings, args).await;
            walked_back.splice(0..0, keys.iter().copied());
            if page.has_previous_page != Some(true) {
                break;
            }
            before = Some(self.cursor(ratings, keys.first().expect("a full page")));
        }
        assert!(
            walked_back == expected,
            "{ratings:?}: backward walk differs"
        );

        let len = expected.len();
        for offset in [
            0,
            1,
            99,
            100,
            101,
            777,
            len / 2,
            len.saturating_sub(1),
            len,
            len + 5,
        ] {
            let args = ConnectionArgs {
                first: Some(20),
                offset: Some(offset as i32),
                ..Default::default()
            };
            let (keys, page) = self.page(ratings, args).await;
            let start = offset.min(len);
            assert!(
                keys[..] == expected[start..(start + 20).min(len)],
                "{ratings:?}: first 20 at offset {offset}"
            );
            if offset > 100 {
                assert_eq!(page.stats.index_calls, 1, "one index call");
                assert!(
                    page.stats.items_read <= partitions * 21,
                    "{ratings:?} offset {offset}: read {}",
                    page.stats.items_read
                );
            }
            let args = ConnectionArgs {
                last: Some(20),
                offset: Some(offset as i32),
                ..Default::default()
            };
            let (keys, _) = self.page(ratings, args).await;
            let end = len - offset.min(len);
            assert!(
                keys[..] == expected[end.saturating_sub(20)..end],
                "{ratings:?}: last 20 at offset {offset}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rating_subset_walks_and_jumps_like_the_filtered_list() {
    let fixture = fixture("RATINGS_10K", COMMENTS).await;
    futures::stream::iter(subsets())
        .for_each_concurrent(4, |ratings| fixture.check_subset(ratings))
        .await;
}

#[tokio::test]
async fn ratings_3_and_5_walk_through_graphql_like_filtering_the_full_list() {
    let fixture = fixture("RATINGS_API", 800).await;
    let store = fixture.engine.store();
    // The server reads the index the fixture filled (same Redis, same prefix).
    let prefix = fixture.prefix.clone();
    let app = crate::helpers::TestApp::on_dynamodb(
        store.table(),
        &[
            "--index",
            "redis",
            "--redis-url",
            &redis_server::shared_url(),
            "--redis-prefix",
            &prefix,
        ],
    )
    .await;
    let wanted = RatingSet::parse(&[3, 5]).expect("ratings");
    let expected_ids: Vec<String> = fixture
        .newest_first
        .iter()
        .filter(|c| wanted.contains(c.rating))
        .map(|c| dynapage::graphql::GlobalId::Comment(c.id).encode())
        .collect();

    let mut forward = Vec::new();
    let mut after = serde_json::Value::Null;
    loop {
        let page = app
            .page(
                "RATINGS_API",
                json!({ "ratings": [5, 3], "first": 45, "after": after }),
            )
            .await;
        forward.extend(page.ids);
        if !page.has_next_page {
            break;
        }
        after = json!(page.end_cursor);
    }
    assert_eq!(forward, expected_ids);

    let mut backward = Vec::new();
    let mut before = serde_json::Value::Null;
    loop {
        let page = app
            .page(
                "RATINGS_API",
                json!({ "ratings": [3, 5], "last": 45, "before": before }),
            )
            .await;
        backward.splice(0..0, page.ids);
        if !page.has_previous_page {
            break;
        }
        before = json!(page.start_cursor);
    }
    assert_eq!(backward, expected_ids);

    let total = app
        .data(
            "{ comments(sku: \"RATINGS_API\", ratings: [3, 5]) { totalCount } }",
            json!({}),
        )
        .await;
    assert_eq!(total["comments"]["totalCount"], expected_ids.len());
    let deep = app
        .page(
            "RATINGS_API",
            json!({ "ratings": [3, 5], "first": 10, "offset": 300 }),
        )
        .await;
    assert_eq!(deep.ids, expected_ids[300..310]);
}

const SUMMARY: &str = r#"query($sku: String!) {
  product(sku: $sku) {
    sku
    ratingSummary { total average counts { rating count } }
    comments(first: 1) { totalCount }
  }
}"#;

#[tokio::test]
async fn the_rating_summary_counts_what_each_rating_filter_counts() {
    let app = crate::helpers::TestApp::embedded(1_234).await;
    let sku = crate::helpers::DEMO_SKU;
    let data = app.data(SUMMARY, json!({ "sku": sku })).await;
    let summary = &data["product"]["ratingSummary"];
    assert_eq!(summary["total"], data["product"]["comments"]["totalCount"]);
    assert_eq!(summary["total"], 1_234);
    let mut stars = 0;
    for (i, entry) in summary["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .enumerate()
    {
        let rating = 5 - i as i64;
        assert_eq!(entry["rating"], rating, "from 5 stars down: {summary:#}");
        let filtered = app
            .data(
                "query($sku: String!, $r: [Int!]) { comments(sku: $sku, ratings: $r, first: 1) { totalCount } }",
                json!({ "sku": sku, "r": [rating] }),
            )
            .await;
        assert_eq!(
            entry["count"], filtered["comments"]["totalCount"],
            "rating {rating}"
        );
        stars += rating * entry["count"].as_i64().expect("a count");
    }
    let average = summary["average"].as_f64().expect("an average");
    assert!((average - stars as f64 / 1_234.0).abs() < 1e-9, "{average}");

    let empty = app.data(SUMMARY, json!({ "sku": "NO_COMMENTS" })).await;
    assert_eq!(
        empty["product"]["ratingSummary"],
        json!({ "total": 0, "average": null, "counts": [
            { "rating": 5, "count": 0 }, { "rating": 4, "count": 0 }, { "rating": 3, "count": 0 },
            { "rating": 2, "count": 0 }, { "rating": 1, "count": 0 }
        ] })
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn without_its_index_the_rating_summary_is_null_and_the_product_still_answers() {
    let (app, _redis) = crate::helpers::TestApp::without_its_index(10, &[]).await;
    let response = app
        .graphql(SUMMARY, json!({ "sku": crate::helpers::DEMO_SKU }))
        .await;
    assert_eq!(response["data"]["product"]["sku"], crate::helpers::DEMO_SKU);
    assert_eq!(
        response["data"]["product"]["ratingSummary"],
        serde_json::Value::Null
    );
    let codes = crate::helpers::error_codes(&response);
    assert!(
        codes.iter().all(|c| c == "INDEX_UNAVAILABLE") && !codes.is_empty(),
        "{response:#}"
    );
    app.stop().await.expect("clean stop");
}
