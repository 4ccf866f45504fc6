//! Every order is a first-class connection (`orderBy`): for each order, on the embedded server
//! and on DynamoDB Local with Redis, a cursor walk both ways, offsets on both sides of the index
//! threshold, `totalCount`, `startOffset`, `pageCursors` under both numberings and `containing`
//! must all agree with the list the order's rule makes of the product's comments (read newest
//! first, with ties on the timestamp), with and without a rating filter. A cursor of one order
//! is `BAD_CURSOR` in another.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{DEMO_SKU, TestApp, edge_ids as ids, error_codes};

/// Every order, by its GraphQL name.
const ORDERS: [&str; 5] = [
    "NEWEST",
    "OLDEST",
    "HIGHEST_RATED",
    "LOWEST_RATED",
    "MOST_HELPFUL",
];
const COMMENTS: u64 = 160;

const QUERY: &str = r#"
query Ordered($sku: String!, $order: CommentOrder!, $ratings: [Int!], $first: Int, $last: Int,
              $offset: Int, $after: String, $before: String, $containing: ID,
              $numbering: PageNumbering = FROM_START, $pager: PageNumbering = FROM_START) {
  comments(sku: $sku, orderBy: $order, ratings: $ratings, first: $first, last: $last,
           offset: $offset, after: $after, before: $before, containing: $containing,
           numbering: $numbering) {
    edges { cursor node { id } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    totalCount
    startOffset
    pageCursors(size: 10, around: 3, numbering: $pager) {
      pageCount
      first { ...Link } last { ...Link } previous { ...Link } next { ...Link } around { ...Link }
    }
  }
}
fragment Link on PageCursor { page cursor offset }"#;

/// One comment as the order rules need it.
#[derive(Clone, Debug)]
struct Row {
    id: String,
    rating: i64,
    helpful: i64,
}

/// The product's comments with a rating in `ratings`, newest first (the walk every other test
/// file checks).
async fn newest_first(app: &TestApp, ratings: &Value) -> Vec<Row> {
    let nodes = crate::helpers::walk_nodes(app, DEMO_SKU, ratings).await;
    nodes
        .iter()
        .map(|node| Row {
            id: node["id"].as_str().expect("an id").to_owned(),
            rating: node["rating"].as_i64().expect("a rating"),
            helpful: node["helpfulCount"].as_i64().expect("a count"),
        })
        .collect()
}

/// The list `order` makes of `newest` (newest first), by the order's rule as the schema states it.
fn expected(order: &str, newest: &[Row]) -> Vec<String> {
    let mut rows = newest.to_vec();
    match order {
        "NEWEST" => {}
        "OLDEST" => rows.reverse(),
        "HIGHEST_RATED" => rows.sort_by_key(|r| std::cmp::Reverse(r.rating)),
        "LOWEST_RATED" => rows.sort_by_key(|r| r.rating),
        "MOST_HELPFUL" => rows.sort_by_key(|r| std::cmp::Reverse(r.helpful)),
        other => panic!("no rule for {other}"),
    }
    rows.into_iter().map(|r| r.id).collect()
}

/// The connection `QUERY` answers in `order` for `args`.
async fn connection(app: &TestApp, order: &str, ratings: &Value, args: Value) -> Value {
    let mut variables = json!({ "sku": DEMO_SKU, "order": order, "ratings": ratings });
    for (k, v) in args.as_object().expect("an object").clone() {
        variables[k] = v;
    }
    let response = app.graphql(QUERY, variables.clone()).await;
    assert!(response.get("errors").is_none(), "{variables}: {response}");
    response["data"]["comments"].clone()
}

/// Walks the whole list with `size` pages, forwards (`first`/`after`) or backwards
/// (`last`/`before`), checking each page's flags; returns the ids in list order.
async fn walk(app: &TestApp, order: &str, ratings: &Value, forwards: bool) -> Vec<String> {
    let (size, cursor, end) = if forwards {
        ("first", "after", "endCursor")
    } else {
        ("last", "before", "startCursor")
    };
    let mut pages: Vec<Vec<String>> = Vec::new();
    let mut at = Value::Null;
    loop {
        let page = connection(app, order, ratings, json!({ size: 7, cursor: at })).await;
        let info = &page["pageInfo"];
        let (more, behind) = if forwards {
            (&info["hasNextPage"], &info["hasPreviousPage"])
        } else {
            (&info["hasPreviousPage"], &info["hasNextPage"])
        };
        assert_eq!(
            behind,
            &json!(!pages.is_empty()),
            "{order} {ratings}: {page}"
        );
        pages.push(ids(&page));
        if more != true {
            break;
        }
        at = info[end].clone();
    }
    if !forwards {
        pages.reverse();
    }
    pages.concat()
}

/// Everything this file checks, for one order and filter, against `list` (the order's list).
async fn check_order(app: &TestApp, order: &str, ratings: &Value, list: &[String]) {
    let n = list.len();
    let what = format!("{order} {ratings}");
    assert_eq!(
        walk(app, order, ratings, true).await,
        list,
        "{what} forwards"
    );
    assert_eq!(
        walk(app, order, ratings, false).await,
        list,
        "{what} backwards"
    );

    // Offsets below and above the index threshold (100), from both ends.
    for offset in [0, 3, 57, 101, 130, n.saturating_sub(2), n + 5] {
        let page = connection(app, order, ratings, json!({ "first": 5, "offset": offset })).await;
        let want: Vec<String> = list.iter().skip(offset).take(5).cloned().collect();
        assert_eq!(ids(&page), want, "{what} first 5 offset {offset}");
        assert_eq!(page["totalCount"], json!(n), "{what}");
        let start = if want.is_empty() {
            Value::Null
        } else {
            json!(offset)
        };
        assert_eq!(page["startOffset"], start, "{what} startOffset at {offset}");
        assert_eq!(
            page["pageInfo"]["hasPreviousPage"],
            json!(offset > 0 && n > 0),
            "{what}"
        );
        assert_eq!(
            page["pageInfo"]["hasNextPage"],
            json!(offset + 5 < n),
            "{what}"
        );

        let page = connection(app, order, ratings, json!({ "last": 5, "offset": offset })).await;
        let end = n.saturating_sub(offset);
        let want = list[end.saturating_sub(5)..end].to_vec();
        assert_eq!(ids(&page), want, "{what} last 5 offset {offset}");
    }

    // Every page a pager links, under both numberings, fetched by its cursor.
    for (numbering, size_arg, cursor_arg) in [
        ("FROM_START", "first", "after"),
        ("FROM_END", "last", "before"),
    ] {
        let page = connection(
            app,
            order,
            ratings,
            json!({ "first": 10, "offset": 40, "pager": numbering }),
        )
        .await;
        let pager = &page["pageCursors"];
        assert_eq!(pager["pageCount"], json!(n.div_ceil(10).max(1)), "{what}");
        let mut links: Vec<&Value> = pager["around"].as_array().expect("around").iter().collect();
        links.extend([
            &pager["first"],
            &pager["last"],
            &pager["previous"],
            &pager["next"],
        ]);
        for link in links.into_iter().filter(|l| !l.is_null()) {
            let number = link["page"].as_u64().expect("a page number") as usize;
            let got = connection(
                app,
                order,
                ratings,
                json!({ size_arg: 10, cursor_arg: link["cursor"] }),
            )
            .await;
            let want = if numbering == "FROM_START" {
                list.iter()
                    .skip((number - 1) * 10)
                    .take(10)
                    .cloned()
                    .collect()
            } else {
                let end = n - (number - 1) * 10;
                list[end.saturating_sub(10)..end].to_vec()
            };
            assert_eq!(ids(&got), want, "{what} {numbering} page {number}");
        }
    }

    // `containing` serves the aligned page that holds a comment, counted from either end.
    for at in [0, n / 2, n - 1] {
        let page = connection(
            app,
            order,
            ratings,
            json!({ "first": 10, "containing": list[at] }),
        )
        .await;
        let want: Vec<String> = list.iter().skip(at / 10 * 10).take(10).cloned().collect();
        assert_eq!(ids(&page), want, "{what} containing #{at}");
        let page = connection(
            app,
            order,
            ratings,
            json!({ "last": 10, "containing": list[at], "numbering": "FROM_END" }),
        )
        .await;
        let end = n - (n - 1 - at) / 10 * 10;
        assert_eq!(
            ids(&page),
            list[end.saturating_sub(10)..end].to_vec(),
            "{what} containing #{at} from the end"
        );
    }
}

/// Marks every third comment helpful (the one voter of these requests, the client's address),
/// then waits until the index ranks every comment where its count puts it in `MOST_HELPFUL`
/// (a server on DynamoDB learns of votes from the stream): so `MOST_HELPFUL` has two counts
/// with long ties in each, and a boundary between them that pages, offsets and pagers cross.
async fn vote_for_every_third(app: &TestApp) {
    let newest = newest_first(app, &Value::Null).await;
    for row in newest.iter().step_by(3) {
        let response = app
            .graphql(
                "mutation($id: ID!) { markHelpful(input: { commentId: $id }) { comment { helpfulCount } } }",
                json!({ "id": row.id }),
            )
            .await;
        assert_eq!(
            response["data"]["markHelpful"]["comment"]["helpfulCount"],
            json!(row.helpful + 1),
            "{response}"
        );
    }
    let list = expected("MOST_HELPFUL", &newest_first(app, &Value::Null).await);
    for (at, id) in list.iter().enumerate().step_by(7) {
        let placed = async {
            loop {
                let page = connection(
                    app,
                    "MOST_HELPFUL",
                    &Value::Null,
                    json!({ "first": 1, "containing": id }),
                )
                .await;
                if page["startOffset"] == json!(at) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), placed)
            .await
            .expect("the index places every vote");
    }
}

/// Checks every order, with and without a filter, on `app`.
async fn check_every_order(app: &TestApp) {
    vote_for_every_third(app).await;
    for ratings in [Value::Null, json!([2, 4, 5])] {
        let newest = newest_first(app, &ratings).await;
        assert!(
            newest.len() > 100,
            "enough comments to cross the index threshold"
        );
        for order in ORDERS {
            check_order(app, order, &ratings, &expected(order, &newest)).await;
        }
    }
}

#[tokio::test]
async fn every_order_pages_like_its_rule_says_on_the_embedded_server() {
    let app = TestApp::embedded(COMMENTS).await;
    check_every_order(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn every_order_pages_like_its_rule_says_on_dynamodb_local_with_redis() {
    // The server follows the stream itself, so that the index learns of the votes.
    let (_backends, app) = crate::support::backends::Backends::serving_demo_with(
        COMMENTS,
        &["--sync", "--sync-poll-ms", "50"],
    )
    .await;
    check_every_order(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_cursor_belongs_to_its_order() {
    let app = TestApp::embedded(30).await;
    for (sealed_in, used_in) in [
        ("NEWEST", "OLDEST"),
        ("OLDEST", "NEWEST"),
        ("HIGHEST_RATED", "LOWEST_RATED"),
        ("LOWEST_RATED", "NEWEST"),
        ("NEWEST", "HIGHEST_RATED"),
        ("MOST_HELPFUL", "NEWEST"),
        ("HIGHEST_RATED", "MOST_HELPFUL"),
    ] {
        let page = connection(&app, sealed_in, &Value::Null, json!({ "first": 3 })).await;
        let cursor = page["pageInfo"]["endCursor"].clone();
        for argument in ["after", "before"] {
            let response = app
                .graphql(
                    QUERY,
                    json!({ "sku": DEMO_SKU, "order": used_in, "first": 3, argument: cursor }),
                )
                .await;
            assert_eq!(error_codes(&response), ["BAD_CURSOR"], "{response}");
        }
    }
    let response = app
        .graphql(
            "{ comments(sku: \"X\", orderBy: SIDEWAYS) { totalCount } }",
            json!({}),
        )
        .await;
    // A bad argument is a validation error (the price walk leaves such a document to
    // async-graphql's validation, which refuses it).
    let codes = error_codes(&response);
    assert!(
        !codes.is_empty() && codes.iter().all(|c| c == "GRAPHQL_VALIDATION_FAILED"),
        "{response}"
    );
    app.stop().await.expect("clean stop");
}

/// The body of the answer to a `POST /graphql` of `body`, as the client receives it.
async fn raw_answer(app: &TestApp, body: &str) -> String {
    let json = [("content-type", "application/json")];
    let answer = app.post_graphql(body.to_owned(), &json).await;
    assert_eq!(answer.status, 200);
    answer.text
}

/// The bytes a client receives for a page of an order by rating: the demo data and the
/// development cursor key are fixed, so the page, its 56-character cursors and its positions
/// are too.
#[tokio::test]
async fn a_page_of_an_order_by_rating_as_raw_bytes() {
    let app = TestApp::embedded(8).await;
    let body = r#"{"query":"{ comments(sku: \"DAFT_PUNK_TSHIRT\", orderBy: HIGHEST_RATED, first: 3, offset: 1) { edges { cursor node { id rating } } pageInfo { hasNextPage hasPreviousPage } totalCount startOffset } }"}"#;
    let bytes = raw_answer(&app, body).await;
    let expected = concat!(
        r#"{"data":{"comments":{"edges":["#,
        r#"{"cursor":"AeFvfbnaGNBvgWRuqRqFop9B-jkb5Wn9U42jSCbU_XEg65wMG5yZtDqE","node":{"id":"Q29tbWVudDowMUtEVkRLQlNKWDFaSkZBUzJZWEE2MktGMw","rating":5}},"#,
        r#"{"cursor":"AYk-Dmx1VGc2GZqtJJvp9bbRfzvV7vVdoB0bC46uSEfBXbyF0c0GEZbA","node":{"id":"Q29tbWVudDowMUtEVkRLQlNKNVFIMlBLVkFTRlE5SkE2Qw","rating":5}},"#,
        r#"{"cursor":"AXp8gIV7YmSHAGbwrZ7UYjUAmUwoP2OOiqBbqrFR-RhAI0T1c5wQ5ftT","node":{"id":"Q29tbWVudDowMUtEVkRINlMwQTAzSDVTUlpEMTdCOUhTTQ","rating":5}}],"#,
        r#""pageInfo":{"hasNextPage":true,"hasPreviousPage":true},"totalCount":8,"startOffset":1}},"#,
        // The page ends where the five-star comments do: one query of rating 5 and one of
        // rating 4, the offset, the page and the one more read (5 items).
        r#""extensions":{"cost":{"requestedQueryCost":37,"actualQueryCost":37,"throttleStatus":null,"#,
        r#""itemsRead":5,"storeQueries":2,"indexCalls":1}}}"#,
    );
    assert_eq!(bytes, expected);
    app.stop().await.expect("clean stop");
}

/// The bytes a client receives for a page of `MOST_HELPFUL` after one vote: the voted comment
/// first, the others newest first; a cursor of this order carries the count in four bytes (60
/// characters), and the store read one partition (`byProductHelpful`).
#[tokio::test]
async fn a_page_of_the_most_helpful_order_as_raw_bytes() {
    let app = TestApp::embedded(8).await;
    let oldest = connection(&app, "OLDEST", &Value::Null, json!({ "first": 1 })).await;
    let voted = ids(&oldest).remove(0);
    let response = app
        .graphql(
            "mutation($id: ID!) { markHelpful(input: { commentId: $id }) { comment { helpfulCount } } }",
            json!({ "id": voted }),
        )
        .await;
    assert_eq!(
        response["data"]["markHelpful"]["comment"]["helpfulCount"],
        1
    );
    let body = r#"{"query":"{ comments(sku: \"DAFT_PUNK_TSHIRT\", orderBy: MOST_HELPFUL, first: 2) { edges { cursor node { id helpfulCount } } pageInfo { hasNextPage hasPreviousPage } totalCount startOffset } }"}"#;
    let bytes = raw_answer(&app, body).await;
    let cursors: Vec<&str> = bytes
        .split(r#""cursor":""#)
        .skip(1)
        .map(|c| &c[..c.find('"').expect("a cursor's end")])
        .collect();
    assert!(cursors.iter().all(|c| c.len() == 60), "{cursors:?}");
    let expected = concat!(
        r#"{"data":{"comments":{"edges":["#,
        r#"{"cursor":"AQYHgkyiNYWp8SyBfsgoAZUmcETmVc88-e_3KIOA3lyhJum-uc0HHn99VQnw","node":{"id":"Q29tbWVudDowMUtEVkRFOUg3V0RXRkJIU05UOUZWWFJCNg","helpfulCount":1}},"#,
        r#"{"cursor":"AXwcvhcLDFo12vn-tE9BqWfa808q3yChO0BLAU3-fO1bFa48Lb2I3k1KBTqw","node":{"id":"Q29tbWVudDowMUtEVkRLQlNKWTZFUEI0NzY0SzBTVzAxQQ","helpfulCount":0}}],"#,
        r#""pageInfo":{"hasNextPage":true,"hasPreviousPage":false},"totalCount":8,"startOffset":0}},"#,
        // One query of `byProductHelpful` (the page and the one more read: 3 items), one index
        // call for `totalCount` and `startOffset`.
        r#""extensions":{"cost":{"requestedQueryCost":21,"actualQueryCost":21,"throttleStatus":null,"#,
        r#""itemsRead":3,"storeQueries":1,"indexCalls":1}}}"#,
    );
    assert_eq!(bytes, expected);
    app.stop().await.expect("clean stop");
}
