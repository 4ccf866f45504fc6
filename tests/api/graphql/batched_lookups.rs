//! A category page's lookups batch their reads (issue 26): 48 aliased `product(sku:) {
//! ratingSummary }` read every product's counts in one index call (one per hash slot on a
//! Redis Cluster: `backends::redis_cluster`), and so do connections that select only their `totalCount`;
//! aliased `node(id:)` and `nodes(ids:)` read their comments in one store query, each id once.
//! Each answer is the one the field gives alone, `extensions.cost` says what was really read,
//! and a backend down still nulls each field with its own code. On the embedded index, on
//! Redis and on DynamoDB Local.

use serde_json::{Value, json};

use crate::graphql::field_errors::{assert_partial, raw};
use crate::helpers::{TestApp, eventually};

/// Products a category page shows: more than the default 30 aliases, so the servers here run
/// with `--max-aliases 64`.
pub(crate) const PRODUCTS: usize = 48;
pub(crate) const MANY_ALIASES: [&str; 2] = ["--max-aliases", "64"];
const SUMMARY: &str = "ratingSummary { total average counts { rating count } }";
const ONE: &str = "query($sku: String!) { product(sku: $sku) { ratingSummary { total average counts { rating count } } } }";

/// The shelf's SKUs: `SHELF_0` to `SHELF_47`.
pub(crate) fn shelf() -> Vec<String> {
    (0..PRODUCTS).map(|i| format!("SHELF_{i}")).collect()
}

/// `{ p0: product(sku: "SHELF_0") { ratingSummary { … } } … }`.
fn aliased_summaries(skus: &[String]) -> String {
    let fields: String = skus
        .iter()
        .enumerate()
        .map(|(i, sku)| format!(" p{i}: product(sku: \"{sku}\") {{ {SUMMARY} }}"))
        .collect();
    format!("{{{fields} }}")
}

/// Rates some of the shelf (product `i` of the first eight gets `i + 1` comments, ratings
/// cycling from `i`), and waits until the index has every write.
async fn rate_the_shelf(app: &TestApp) {
    for i in 0..8 {
        for j in 0..=i {
            let rating = 1 + (i + j) % 5;
            app.add_comment(None, &format!("SHELF_{i}"), "b", rating)
                .await;
        }
    }
    eventually("the writes reach the index", || async {
        let last = app.data(ONE, json!({ "sku": "SHELF_7" })).await;
        (last["product"]["ratingSummary"]["total"] == 8).then_some(())
    })
    .await;
}

fn cost(response: &Value, what: &str) -> u64 {
    response["extensions"]["cost"][what]
        .as_u64()
        .unwrap_or_else(|| panic!("no {what} in {response:#}"))
}

/// 48 aliased lookups answer what each answers alone, from `index_calls` index calls; so do 48
/// aliased totals (of connections that select nothing else) beside them.
pub(crate) async fn aliased_lookups_answer_as_alone_in_one_batch(app: &TestApp, index_calls: u64) {
    rate_the_shelf(app).await;
    let skus = shelf();
    let response = app.graphql(&aliased_summaries(&skus), json!({})).await;
    assert!(response.get("errors").is_none(), "{response:#}");
    assert_eq!(cost(&response, "indexCalls"), index_calls, "{response:#}");
    assert_eq!(cost(&response, "storeQueries"), 0);
    assert_eq!(cost(&response, "itemsRead"), 0);
    for (i, sku) in skus.iter().enumerate() {
        let alone = app.graphql(ONE, json!({ "sku": sku })).await;
        assert_eq!(cost(&alone, "indexCalls"), 1, "{alone:#}");
        assert_eq!(
            response["data"][format!("p{i}")],
            alone["data"]["product"],
            "{sku}"
        );
    }
    assert_eq!(response["data"]["p7"]["ratingSummary"]["total"], 8);
    assert_eq!(response["data"]["p40"]["ratingSummary"]["total"], 0);

    // Lone totals, through both fields, in either order, filtered or not, with an offset or not.
    let totals: String = skus
        .iter()
        .enumerate()
        .map(|(i, sku)| match i % 3 {
            0 => format!(" t{i}: comments(sku: \"{sku}\", orderBy: OLDEST) {{ totalCount }}"),
            1 => format!(" t{i}: comments(sku: \"{sku}\", ratings: [1, 2], first: 5, offset: 2) {{ totalCount }}"),
            _ => format!(" t{i}: product(sku: \"{sku}\") {{ comments(ratings: [3]) {{ totalCount }} ratingSummary {{ total }} }}"),
        })
        .collect();
    let response = app.graphql(&format!("{{{totals} }}"), json!({})).await;
    assert!(response.get("errors").is_none(), "{response:#}");
    assert_eq!(cost(&response, "indexCalls"), index_calls, "{response:#}");
    for (i, sku) in skus.iter().enumerate() {
        // The same total read with a page (the connection's own index view).
        let ratings = match i % 3 {
            0 => Value::Null,
            1 => json!([1, 2]),
            _ => json!([3]),
        };
        let paged = app
            .data(
                "query($sku: String!, $r: [Int!]) { comments(sku: $sku, ratings: $r, first: 1) { totalCount edges { cursor } } }",
                json!({ "sku": sku, "r": ratings }),
            )
            .await;
        let total = &paged["comments"]["totalCount"];
        let batched = &response["data"][format!("t{i}")];
        let batched = batched
            .get("totalCount")
            .unwrap_or(&batched["comments"]["totalCount"]);
        assert_eq!(batched, total, "{sku} {ratings}");
    }
}

#[tokio::test]
async fn on_the_embedded_index_48_aliased_lookups_make_one_index_call() {
    let app = TestApp::spawn(&["--demo-comments", "0", MANY_ALIASES[0], MANY_ALIASES[1]]).await;
    aliased_lookups_answer_as_alone_in_one_batch(&app, 1).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn on_redis_48_aliased_lookups_make_one_index_call() {
    let (app, _redis) = TestApp::on_redis(0, &MANY_ALIASES).await;
    aliased_lookups_answer_as_alone_in_one_batch(&app, 1).await;
    app.stop().await.expect("clean stop");
}

/// Ten aliased `nodes` of five ids each (overlapping: 20 ids in all) and ten aliased `node`
/// read the 20 comments once, in one store query, and answer what they answer alone.
async fn aliased_nodes_read_each_comment_once_in_one_store_query(app: &TestApp) {
    let ids = crate::helpers::newest_ids(app, 20).await;
    let gone = app.deleted_comment_id().await;
    let mut fields = String::new();
    for i in 0..10 {
        let some: Vec<&String> = ids.iter().skip(i * 15 / 10).take(5).collect();
        fields += &format!(
            " n{i}: nodes(ids: {}) {{ id ... on Comment {{ body rating }} }}",
            json!(some)
        );
        fields += &format!(
            " c{i}: node(id: \"{}\") {{ id ... on Comment {{ body }} }}",
            ids[19 - i]
        );
    }
    fields += &format!(" gone: nodes(ids: [\"{gone}\"]) {{ id }}");
    let response = app.graphql(&format!("{{{fields} }}"), json!({})).await;
    assert!(response.get("errors").is_none(), "{response:#}");
    assert_eq!(cost(&response, "storeQueries"), 1, "{response:#}");
    assert_eq!(
        cost(&response, "itemsRead"),
        21,
        "20 ids and a gone one, each once"
    );
    assert_eq!(cost(&response, "indexCalls"), 0);
    assert_eq!(response["data"]["gone"], json!([null]));
    for i in 0..10 {
        let some: Vec<&String> = ids.iter().skip(i * 15 / 10).take(5).collect();
        let alone = app
            .data(
                "query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Comment { body rating } } }",
                json!({ "ids": some }),
            )
            .await;
        assert_eq!(response["data"][format!("n{i}")], alone["nodes"], "n{i}");
        let alone = app
            .data(
                "query($id: ID!) { node(id: $id) { id ... on Comment { body } } }",
                json!({ "id": ids[19 - i] }),
            )
            .await;
        assert_eq!(response["data"][format!("c{i}")], alone["node"], "c{i}");
    }
}

#[tokio::test]
async fn on_the_embedded_store_aliased_nodes_make_one_store_query() {
    let app = TestApp::embedded(40).await;
    aliased_nodes_read_each_comment_once_in_one_store_query(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn on_dynamodb_aliased_nodes_make_one_batch_get() {
    let store = crate::support::dynamodb_local::dynamo_store().await;
    crate::helpers::seed_demo(&store, 40).await;
    let app = TestApp::on_dynamodb(store.table(), &[]).await;
    aliased_nodes_read_each_comment_once_in_one_store_query(&app).await;
    app.stop().await.expect("clean stop");
}

/// The bytes of one batched answer, as a client receives them: the data in the order asked and
/// the cost of one index call.
#[tokio::test]
async fn the_bytes_of_a_batched_answer() {
    let app = TestApp::spawn(&["--demo-comments", "0"]).await;
    app.add_comment(None, "B", "b", 4).await;
    let query = r#"{ a: product(sku: "A") { ratingSummary { total average } } b: product(sku: "B") { sku ratingSummary { total average } } c: comments(sku: "B", ratings: [4]) { totalCount } }"#;
    let body = eventually("the write reaches the index", || async {
        let (text, parsed) = raw(&app, query, json!({})).await;
        (parsed["data"]["c"]["totalCount"] == 1).then_some(text)
    })
    .await;
    assert_eq!(
        body,
        concat!(
            r#"{"data":{"a":{"ratingSummary":{"total":0,"average":null}},"#,
            r#""b":{"sku":"B","ratingSummary":{"total":1,"average":4.0}},"#,
            r#""c":{"totalCount":1}},"#,
            r#""extensions":{"cost":{"requestedQueryCost":30,"actualQueryCost":30,"#,
            r#""throttleStatus":null,"itemsRead":0,"storeQueries":0,"indexCalls":1}}}"#
        )
    );
    app.stop().await.expect("clean stop");
}

/// The index down: every batched field is null with `INDEX_UNAVAILABLE` at its own path, and
/// the fields that need no index still answer.
#[tokio::test]
async fn without_the_index_each_batched_field_is_null_with_its_code() {
    let (app, _redis) = TestApp::without_its_index(10, &[]).await;
    let body = raw(
        &app,
        r#"{ a: product(sku: "A") { sku ratingSummary { total } } b: product(sku: "B") { ratingSummary { total } comments { totalCount } } c: comments(sku: "C") { totalCount } }"#,
        json!({}),
    )
    .await;
    assert_partial(
        &body,
        r#"{"a":{"sku":"A","ratingSummary":null},"b":{"ratingSummary":null,"comments":{"totalCount":null}},"c":{"totalCount":null}}"#,
        &[
            ("INDEX_UNAVAILABLE", json!(["a", "ratingSummary"])),
            ("INDEX_UNAVAILABLE", json!(["b", "ratingSummary"])),
            ("INDEX_UNAVAILABLE", json!(["b", "comments", "totalCount"])),
            ("INDEX_UNAVAILABLE", json!(["c", "totalCount"])),
        ],
    );
    app.stop().await.expect("clean stop");
}

/// The store down: every batched `node` is null with `STORE_UNAVAILABLE` at its own path; a
/// product's node, which reads nothing, still answers; batched `nodes` (non-null lists) null
/// the data, each with its error.
#[tokio::test]
async fn without_the_store_each_batched_node_is_null_with_its_code() {
    let (app, proxy) = TestApp::on_proxied_dynamodb(&[]).await;
    let ids = crate::helpers::newest_ids(&app, 3).await;
    let product = app.data(r#"{ product(sku: "X") { id } }"#, json!({})).await;
    let product = product["product"]["id"].clone();
    proxy.set(crate::support::fault_proxy::Fault::Refuse);
    let body = raw(
        &app,
        "query($a: ID!, $b: ID!, $p: ID!) { a: node(id: $a) { id } b: node(id: $b) { id } p: node(id: $p) { id } }",
        json!({ "a": ids[0], "b": ids[2], "p": product }),
    )
    .await;
    let data = format!(r#"{{"a":null,"b":null,"p":{{"id":{product}}}}}"#);
    assert_partial(
        &body,
        &data,
        &[
            ("STORE_UNAVAILABLE", json!(["a"])),
            ("STORE_UNAVAILABLE", json!(["b"])),
        ],
    );
    let body = raw(
        &app,
        "query($one: [ID!]!, $two: [ID!]!) { one: nodes(ids: $one) { id } two: nodes(ids: $two) { id } }",
        json!({ "one": ids[..2], "two": ids[1..] }),
    )
    .await;
    assert_partial(
        &body,
        "null",
        &[
            ("STORE_UNAVAILABLE", json!(["one"])),
            ("STORE_UNAVAILABLE", json!(["two"])),
        ],
    );
    app.stop().await.expect("clean stop");
}
