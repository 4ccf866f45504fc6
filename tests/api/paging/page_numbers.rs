//! Numbered pages: `pageCursors`, `startOffset` and `containing:`, checked against the list a
//! cursor walk reads. Every page a pager links is fetched both ways it offers (its page cursor
//! and its offset) and must hold exactly the comments its number says, under both numberings, with
//! and without a rating filter; then comments are added, and pages numbered from the oldest
//! keep their content while pages numbered from the newest shift.

use serde_json::{Value, json};

use crate::helpers::{DEMO_SKU, TestApp, edge_ids as ids, error_codes, eventually};

const COMMENTS: usize = 95;
const SIZE: usize = 10;

const QUERY: &str = r#"
query Pager($sku: String!, $ratings: [Int!], $first: Int, $last: Int, $offset: Int, $after: String,
            $before: String, $containing: ID, $numbering: PageNumbering = FROM_NEWEST, $size: Int,
            $around: Int = 5, $pager: PageNumbering = FROM_NEWEST) {
  comments(sku: $sku, ratings: $ratings, first: $first, last: $last, offset: $offset, after: $after,
           before: $before, containing: $containing, numbering: $numbering) {
    edges { cursor node { id rating } }
    pageInfo { hasNextPage hasPreviousPage }
    startOffset
    pageCursors(size: $size, around: $around, numbering: $pager) {
      pageCount
      first { ...Link } last { ...Link } previous { ...Link } next { ...Link } around { ...Link }
    }
  }
}
fragment Link on PageCursor { page cursor offset isCurrent }"#;

/// The connection `QUERY` answers for `args` (with `sku` set to the demo product).
async fn connection(app: &TestApp, args: Value) -> Value {
    let mut variables = json!({ "sku": DEMO_SKU });
    for (k, v) in args.as_object().expect("an object").clone() {
        variables[k] = v;
    }
    app.data(QUERY, variables).await["comments"].clone()
}

/// Every comment of the demo product with a rating in `ratings` (all when `null`), newest
/// first, by walking with cursors.
async fn whole_list(app: &TestApp, ratings: &Value) -> Vec<String> {
    let nodes = crate::helpers::walk_nodes(app, DEMO_SKU, ratings).await;
    nodes
        .iter()
        .map(|node| node["id"].as_str().expect("an id").to_owned())
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Numbering {
    FromNewest,
    FromOldest,
}

impl Numbering {
    fn name(self) -> &'static str {
        match self {
            Numbering::FromNewest => "FROM_NEWEST",
            Numbering::FromOldest => "FROM_OLDEST",
        }
    }

    /// The ids page `page` holds, from the whole list (newest first), in list order.
    fn page(self, list: &[String], size: usize, page: usize) -> &[String] {
        let n = list.len();
        let (from, to) = match self {
            Numbering::FromNewest => ((page - 1) * size, page * size),
            Numbering::FromOldest => (n.saturating_sub(page * size), n - (page - 1) * size),
        };
        &list[from.min(n)..to.min(n)]
    }

    /// The arguments that fetch a page from a `PageCursor`, its cursor way and its offset way.
    fn fetches(self, link: &Value, size: usize) -> [Value; 2] {
        let (size_arg, cursor_arg) = match self {
            Numbering::FromNewest => ("first", "after"),
            Numbering::FromOldest => ("last", "before"),
        };
        [
            json!({ size_arg: size, cursor_arg: link["cursor"] }),
            json!({ size_arg: size, "offset": link["offset"] }),
        ]
    }
}

/// Checks one pager: its count and links, and that every linked page, fetched by cursor and by
/// offset, holds what its number says.
async fn check_pager(
    app: &TestApp,
    list: &[String],
    ratings: &Value,
    numbering: Numbering,
    size: usize,
    current: Option<usize>,
    pager: &Value,
) {
    let count = list.len().div_ceil(size).max(1);
    let what = format!("{numbering:?}, size {size}, ratings {ratings}, current {current:?}");
    assert_eq!(pager["pageCount"], count, "{what}: {pager:#}");
    assert_eq!(pager["first"]["page"], 1, "{what}");
    assert_eq!(pager["first"]["cursor"], Value::Null, "{what}");
    assert_eq!(pager["last"]["page"], count, "{what}");
    let page_of = |link: &Value| link["page"].as_u64().map(|p| p as usize);
    assert_eq!(
        page_of(&pager["previous"]),
        current.filter(|&c| c > 1).map(|c| c - 1),
        "{what}"
    );
    assert_eq!(
        page_of(&pager["next"]),
        current.filter(|&c| c < count).map(|c| c + 1),
        "{what}"
    );
    let around: Vec<usize> = pager["around"]
        .as_array()
        .expect("around")
        .iter()
        .filter_map(page_of)
        .collect();
    assert_eq!(around.len(), 5.min(count), "{what}: around {around:?}");
    assert!(around.windows(2).all(|w| w[1] == w[0] + 1), "{around:?}");
    if let Some(c) = current {
        assert!(around.contains(&c), "{what}: around {around:?}");
        // Centred unless near an end.
        let start = around[0];
        assert!(start == c.saturating_sub(2).max(1) || start + around.len() - 1 == count);
    }

    // A page cursor starts a page from its numbering's end; as the other bound it is refused.
    if count > 1 {
        let misplaced = match numbering {
            Numbering::FromNewest => json!({ "last": size, "after": pager["last"]["cursor"] }),
            Numbering::FromOldest => json!({ "first": size, "before": pager["last"]["cursor"] }),
        };
        let mut variables = json!({ "sku": DEMO_SKU, "ratings": ratings });
        for (k, v) in misplaced.as_object().expect("an object") {
            variables[k] = v.clone();
        }
        let refused = app.graphql(QUERY, variables).await;
        assert_eq!(error_codes(&refused), ["BAD_CURSOR"], "{what}: {refused:#}");
    }

    let mut links = vec![pager["first"].clone(), pager["last"].clone()];
    links.extend(pager["around"].as_array().expect("around").iter().cloned());
    for link in links.iter().chain([&pager["previous"], &pager["next"]]) {
        if link.is_null() {
            continue;
        }
        let page = page_of(link).expect("a page number");
        assert_eq!(link["isCurrent"], current == Some(page), "{what}: {link}");
        assert_eq!(link["offset"], (page - 1) * size, "{what}: {link}");
        assert_eq!(link["cursor"].is_null(), page == 1, "{what}: {link}");
        for mut args in numbering.fetches(link, size) {
            args["ratings"] = ratings.clone();
            let fetched = connection(app, args.clone()).await;
            assert_eq!(
                ids(&fetched),
                numbering.page(list, size, page),
                "{what}: page {page} fetched with {args}"
            );
        }
    }
}

#[tokio::test]
async fn page_cursors_link_every_page_by_cursor_and_by_offset_under_both_numberings() {
    let app = TestApp::embedded(COMMENTS as u64).await;
    for ratings in [Value::Null, json!([1, 5])] {
        let list = whole_list(&app, &ratings).await;
        assert!(list.len() > 2 * SIZE, "enough comments for three pages");
        for numbering in [Numbering::FromNewest, Numbering::FromOldest] {
            let count = list.len().div_ceil(SIZE);
            for page in [1, 2, 3, count / 2, count - 1, count] {
                let [_, by_offset] =
                    numbering.fetches(&json!({ "offset": (page - 1) * SIZE }), SIZE);
                let mut args = by_offset;
                args["ratings"] = ratings.clone();
                args["pager"] = json!(numbering.name());
                let shown = connection(&app, args).await;
                let expected = numbering.page(&list, SIZE, page);
                assert_eq!(ids(&shown), expected, "{numbering:?} page {page}");
                let start = list.iter().position(|id| *id == expected[0]);
                assert_eq!(
                    shown["startOffset"],
                    json!(start),
                    "{numbering:?} page {page}"
                );
                check_pager(
                    &app,
                    &list,
                    &ratings,
                    numbering,
                    SIZE,
                    Some(page),
                    &shown["pageCursors"],
                )
                .await;
            }
        }
    }
}

#[tokio::test]
async fn size_defaults_to_the_connection_s_page_size_and_can_differ_from_it() {
    let app = TestApp::embedded(COMMENTS as u64).await;
    let list = whole_list(&app, &Value::Null).await;
    // A page of 7 from offset 40: the 41st comment is on page 6 of 7s, page 5 of 10s, page 2 of 25s.
    for (size, current) in [(Value::Null, 6), (json!(10), 5), (json!(25), 2)] {
        let shown = connection(&app, json!({ "first": 7, "offset": 40, "size": size })).await;
        let pager = &shown["pageCursors"];
        let size = size.as_u64().unwrap_or(7) as usize;
        check_pager(
            &app,
            &list,
            &Value::Null,
            Numbering::FromNewest,
            size,
            Some(current),
            pager,
        )
        .await;
    }
    // `last` sets the page size too.
    let shown = connection(&app, json!({ "last": 4 })).await;
    assert_eq!(shown["pageCursors"]["pageCount"], COMMENTS.div_ceil(4));
}

#[tokio::test]
async fn an_empty_product_has_one_current_empty_page_and_a_page_past_the_end_has_none() {
    let app = TestApp::embedded(COMMENTS as u64).await;
    let empty = app
        .data(
            QUERY,
            json!({ "sku": "NOBODY_REVIEWED_THIS", "first": 10, "pager": "FROM_OLDEST" }),
        )
        .await;
    let page_one = json!({ "page": 1, "cursor": null, "offset": 0, "isCurrent": true });
    assert_eq!(
        empty["comments"]["pageCursors"],
        json!({ "pageCount": 1, "first": page_one, "last": page_one, "previous": null, "next": null, "around": [page_one] })
    );
    assert_eq!(empty["comments"]["startOffset"], Value::Null);

    let list = whole_list(&app, &Value::Null).await;
    let past = connection(&app, json!({ "first": 10, "offset": 500 })).await;
    assert!(ids(&past).is_empty());
    assert_eq!(past["startOffset"], Value::Null);
    check_pager(
        &app,
        &list,
        &Value::Null,
        Numbering::FromNewest,
        SIZE,
        None,
        &past["pageCursors"],
    )
    .await;
}

#[tokio::test]
async fn containing_serves_the_aligned_page_that_holds_the_newest_the_oldest_and_a_middle_comment()
{
    let app = TestApp::embedded(COMMENTS as u64).await;
    for ratings in [Value::Null, json!([2, 3, 4])] {
        let list = whole_list(&app, &ratings).await;
        let n = list.len();
        for numbering in [Numbering::FromNewest, Numbering::FromOldest] {
            for at in [0, n / 2, n - 1, 2 * SIZE, 2 * SIZE - 1] {
                for size_arg in ["first", "last"] {
                    let shown = connection(
                        &app,
                        json!({ "ratings": ratings, "containing": list[at], size_arg: SIZE,
                                "numbering": numbering.name(), "pager": numbering.name() }),
                    )
                    .await;
                    let page = match numbering {
                        Numbering::FromNewest => at / SIZE + 1,
                        Numbering::FromOldest => (n - 1 - at) / SIZE + 1,
                    };
                    let expected = numbering.page(&list, SIZE, page);
                    let what = format!("{numbering:?} {size_arg} containing #{at} of {n}");
                    assert_eq!(ids(&shown), expected, "{what}");
                    assert!(expected.contains(&list[at]), "{what}");
                    let info = &shown["pageInfo"];
                    assert_eq!(info["hasPreviousPage"], list[0] != expected[0], "{what}");
                    assert_eq!(
                        info["hasNextPage"],
                        list[n - 1] != *expected.last().expect("a comment"),
                        "{what}"
                    );
                    let pager = &shown["pageCursors"];
                    let current: Vec<&Value> = pager["around"]
                        .as_array()
                        .expect("around")
                        .iter()
                        .filter(|l| l["isCurrent"] == true)
                        .collect();
                    assert_eq!(current.len(), 1, "{what}");
                    assert_eq!(current[0]["page"], page, "{what}: its page number");
                }
            }
        }
    }
}

#[tokio::test]
async fn containing_a_comment_outside_the_connection_is_not_found() {
    let app = TestApp::embedded(COMMENTS as u64).await;
    let list = whole_list(&app, &Value::Null).await;
    let first = connection(&app, json!({ "first": 1 })).await;
    let rating = first["edges"][0]["node"]["rating"]
        .as_i64()
        .expect("rating");
    let other_ratings: Vec<i64> = (1..=5).filter(|r| *r != rating).collect();
    let elsewhere = app.add_comment(None, "ELSEWHERE", "b", 3).await;
    let deleted = app.deleted_comment_id().await;
    let cases = [
        (
            json!({ "containing": elsewhere, "first": 10 }),
            "another product",
        ),
        (
            json!({ "containing": list[0], "first": 10, "ratings": other_ratings }),
            "filtered out",
        ),
        (json!({ "containing": deleted, "first": 10 }), "deleted"),
    ];
    for (args, what) in cases {
        let mut variables = json!({ "sku": DEMO_SKU });
        for (k, v) in args.as_object().expect("object") {
            variables[k] = v.clone();
        }
        let response = app.graphql(QUERY, variables).await;
        assert_eq!(
            error_codes(&response),
            ["NOT_FOUND"],
            "{what}: {response:#}"
        );
        assert_eq!(response["data"]["comments"], Value::Null, "{what}");
    }
}

#[tokio::test]
async fn bad_pager_and_containing_arguments_are_refused_with_codes() {
    let app = TestApp::embedded(COMMENTS as u64).await;
    let list = whole_list(&app, &Value::Null).await;
    let product_id = app
        .data(
            &format!("{{ product(sku: \"{DEMO_SKU}\") {{ id }} }}"),
            json!({}),
        )
        .await["product"]["id"]
        .clone();
    let cursor = app
        .data(
            "query($sku: String!) { comments(sku: $sku, first: 1) { edges { cursor } } }",
            json!({ "sku": DEMO_SKU }),
        )
        .await["comments"]["edges"][0]["cursor"]
        .clone();
    let cases = [
        (json!({ "size": 0 }), "BAD_USER_INPUT"),
        (json!({ "size": 101 }), "PAGE_SIZE_EXCEEDED"),
        (json!({ "around": 26 }), "BAD_USER_INPUT"),
        (json!({ "around": -1 }), "BAD_USER_INPUT"),
        (
            json!({ "containing": list[3], "offset": 10, "first": 5 }),
            "BAD_USER_INPUT",
        ),
        (
            json!({ "containing": list[3], "after": cursor }),
            "BAD_USER_INPUT",
        ),
        (
            json!({ "containing": list[3], "first": 5, "last": 5 }),
            "BAD_USER_INPUT",
        ),
        (json!({ "containing": product_id }), "BAD_USER_INPUT"),
        (json!({ "containing": "not an id" }), "BAD_USER_INPUT"),
        (
            json!({ "containing": list[3], "first": 101 }),
            "PAGE_SIZE_EXCEEDED",
        ),
    ];
    for (args, code) in cases {
        let mut variables = json!({ "sku": DEMO_SKU });
        for (k, v) in args.as_object().expect("object") {
            variables[k] = v.clone();
        }
        let response = app.graphql(QUERY, variables).await;
        assert_eq!(error_codes(&response), [code], "{args}: {response:#}");
        let message = response["errors"][0]["message"]
            .as_str()
            .unwrap_or_default();
        assert!(!message.is_empty(), "{args}: a message says what to fix");
    }
}

#[tokio::test]
async fn page_cursors_and_start_offset_share_the_page_s_one_index_call_at_any_depth() {
    let app = TestApp::embedded(1_000).await;
    let cost = |response: &Value| response["extensions"]["cost"]["indexCalls"].clone();
    // A `first` page's bound comes in the same call; a deep `last` page asks for its bound
    // first (its first edge is not known until it is read).
    for (args, page_calls) in [
        (json!({ "first": 20 }), 0),
        (json!({ "first": 20, "offset": 900 }), 0),
        (json!({ "first": 20, "offset": 900, "ratings": [1, 2] }), 0),
        (
            json!({ "last": 20, "offset": 700, "pager": "FROM_OLDEST" }),
            1,
        ),
    ] {
        let mut variables = json!({ "sku": DEMO_SKU });
        for (k, v) in args.as_object().expect("object") {
            variables[k] = v.clone();
        }
        let response = app.graphql(QUERY, variables).await;
        assert!(response.get("errors").is_none(), "{response:#}");
        assert_eq!(cost(&response), page_calls + 1, "{args}: {response:#}");
    }
    // Two pagers under aliases, with other arguments: both share the page's one call (a
    // pager needs only the total and the first edge's rank).
    let response = app
        .graphql(
            "query($sku: String!) { comments(sku: $sku, first: 20, offset: 900) { startOffset a: pageCursors(size: 20) { pageCount } b: pageCursors(size: 50) { pageCount } } }",
            json!({ "sku": DEMO_SKU }),
        )
        .await;
    assert_eq!(cost(&response), 1, "{response:#}");
    assert_eq!(response["data"]["comments"]["startOffset"], 900);
    assert_eq!(response["data"]["comments"]["a"]["pageCount"], 50);
    assert_eq!(response["data"]["comments"]["b"]["pageCount"], 20);

    // `containing`: the comment from the store, one index call, then the page.
    let list = whole_list(&app, &Value::Null).await;
    let response = app
        .graphql(
            "query($sku: String!, $id: ID!) { comments(sku: $sku, first: 20, containing: $id) { edges { node { id } } } }",
            json!({ "sku": DEMO_SKU, "id": list[777] }),
        )
        .await;
    let cost = &response["extensions"]["cost"];
    assert_eq!(cost["indexCalls"], 1, "{response:#}");
    assert_eq!(cost["storeQueries"], 2, "{response:#}");
}

#[tokio::test]
async fn pages_numbered_from_the_oldest_keep_their_content_when_comments_arrive_and_from_the_newest_shift()
 {
    let app = TestApp::embedded(COMMENTS as u64).await;
    let before = whole_list(&app, &Value::Null).await;
    let pages_of = |numbering: Numbering, list: &[String]| -> Vec<Vec<String>> {
        let count = list.len().div_ceil(SIZE);
        (1..=count)
            .map(|p| numbering.page(list, SIZE, p).to_vec())
            .collect()
    };
    // The pages as the API serves them, with the cursor each pager link names.
    let served = |numbering: Numbering| {
        let app = &app;
        async move {
            let mut pages = Vec::new();
            let mut page = 1;
            loop {
                let [_, by_offset] =
                    numbering.fetches(&json!({ "offset": (page - 1) * SIZE }), SIZE);
                let mut args = by_offset;
                args["pager"] = json!(numbering.name());
                let shown = connection(app, args).await;
                let count = shown["pageCursors"]["pageCount"].as_u64().expect("count") as usize;
                let cursor = shown["pageCursors"]["around"]
                    .as_array()
                    .expect("around")
                    .iter()
                    .find(|l| l["isCurrent"] == true)
                    .map(|l| l["cursor"].clone());
                pages.push((ids(&shown), cursor));
                if page == count {
                    return pages;
                }
                page += 1;
            }
        }
    };
    let oldest_before = served(Numbering::FromOldest).await;
    let newest_before = served(Numbering::FromNewest).await;
    assert_eq!(
        oldest_before
            .iter()
            .map(|p| p.0.clone())
            .collect::<Vec<_>>(),
        pages_of(Numbering::FromOldest, &before)
    );

    let added = 13;
    for i in 0..added {
        app.add_comment(None, DEMO_SKU, &format!("new comment {i}"), 4)
            .await;
    }
    eventually("the index holds the new comments", || async {
        let count = app
            .data(
                "query($sku: String!) { comments(sku: $sku) { totalCount } }",
                json!({ "sku": DEMO_SKU }),
            )
            .await["comments"]["totalCount"]
            .as_u64();
        (count == Some((COMMENTS + added) as u64)).then_some(())
    })
    .await;
    let after = whole_list(&app, &Value::Null).await;
    assert_eq!(after.len(), COMMENTS + added);
    assert_eq!(
        after[added..],
        before[..],
        "the new comments are the newest"
    );

    // From the oldest: every page that was full holds the same comments under the same number
    // and the same cursor; the newest page filled up and a new one appeared.
    let oldest_after = served(Numbering::FromOldest).await;
    let full = COMMENTS / SIZE;
    assert_eq!(oldest_after[..full], oldest_before[..full]);
    assert_eq!(oldest_after.len(), (COMMENTS + added).div_ceil(SIZE));
    assert_eq!(
        oldest_after[full].0.len(),
        SIZE,
        "the partial page filled up"
    );

    // From the newest: every page moved by 13 comments; page 1 holds only new ones.
    let newest_after = served(Numbering::FromNewest).await;
    assert_eq!(newest_after[0].0, after[..SIZE]);
    for (page, (ids_after, _)) in newest_after.iter().enumerate().skip(2) {
        let shifted = &before[page * SIZE - added..(page * SIZE - added + ids_after.len())];
        assert_eq!(ids_after, shifted, "page {} shifted by {added}", page + 1);
        if let Some((ids_before, _)) = newest_before.get(page) {
            assert_ne!(ids_after, ids_before, "page {} changed", page + 1);
        }
    }
    assert_eq!(newest_after.len(), newest_before.len() + 1);
}

#[tokio::test]
async fn dynamodb_local_with_redis_serves_the_same_pagers_and_containing_pages_as_the_embedded_server()
 {
    let (_backends, dynamo) = crate::support::backends::Backends::serving_demo(250).await;
    let embedded = TestApp::embedded_like_dynamodb(250).await;

    let list = whole_list(&embedded, &Value::Null).await;
    assert_eq!(whole_list(&dynamo, &Value::Null).await, list);
    let mut cases = Vec::new();
    for pager in ["FROM_NEWEST", "FROM_OLDEST"] {
        for (size_arg, offset) in [("first", 0), ("first", 120), ("last", 30), ("last", 240)] {
            for ratings in [Value::Null, json!([3, 5])] {
                cases.push(
                    json!({ size_arg: 10, "offset": offset, "ratings": ratings, "pager": pager }),
                );
            }
        }
        for at in [0, 125, 249] {
            cases.push(
                json!({ "first": 10, "containing": list[at], "numbering": pager, "pager": pager }),
            );
        }
    }
    for args in cases {
        let (a, b) = (
            connection(&dynamo, args.clone()).await,
            connection(&embedded, args.clone()).await,
        );
        if args["ratings"].is_null() {
            assert!(!ids(&a).is_empty(), "{args}");
        }
        assert_eq!(a, b, "{args}");
    }
}

#[tokio::test]
async fn containing_finds_a_comment_the_index_does_not_hold_yet() {
    use dynapage::domain::{Comment, CommentId, Rating, Sku};
    use dynapage::graphql::GlobalId;
    use dynapage::store::CommentStore;

    let backends =
        crate::support::backends::Backends::on(&crate::support::redis_server::shared_url()).await;
    crate::helpers::seed_demo(&backends.store, 250).await;
    let reindexed = backends.run("reindex", &[]).await;
    assert_eq!(crate::helpers::process::exit_code(&reindexed), Some(0));
    // No `--sync`: what is written from now on stays out of the index, as during a stream lag.
    let app = backends.serve(&[]).await;
    let list = whole_list(&app, &Value::Null).await;
    let Ok(GlobalId::Comment(middle)) = GlobalId::decode(&list[125]) else {
        panic!("a comment id");
    };
    let middle = backends.store.get_many(&[middle]).await.expect("read")[0]
        .clone()
        .expect("the comment");
    // Thirty comments tied with the middle one, written straight to the table.
    let mut rng = crate::support::data::Rng::new(99);
    let unindexed: Vec<Comment> = (0..30)
        .map(|i| Comment {
            purchase: None,
            id: CommentId::from_parts(middle.created_at_ms, rng.next()),
            sku: Sku::parse(DEMO_SKU).expect("sku"),
            author: "late".into(),
            author_sub: None,
            body: format!("not indexed yet {i}"),
            rating: Rating::ALL[i % 5],
            created_at_ms: middle.created_at_ms,
            updated_at_ms: None,
            version: 1,
            helpful_count: 0,
            moderation: Default::default(),
            reply: None,
            reporters: Vec::new(),
        })
        .collect();
    backends.store.put_batch(&unindexed).await.expect("written");

    for comment in &unindexed {
        let id = GlobalId::Comment(comment.id).encode();
        for numbering in [Numbering::FromNewest, Numbering::FromOldest] {
            let shown = connection(
                &app,
                json!({ "first": SIZE, "containing": id, "numbering": numbering.name() }),
            )
            .await;
            let shown_ids = ids(&shown);
            assert!(
                shown_ids.contains(&id),
                "{numbering:?}: the page holds the comment"
            );
            assert_eq!(shown_ids.len(), SIZE, "{numbering:?}: a full page");
            assert_eq!(shown["pageInfo"]["hasNextPage"], true);
            assert_eq!(shown["pageInfo"]["hasPreviousPage"], true);
        }
    }
}
