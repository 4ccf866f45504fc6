//! Issue 22, items 5, 6 and 8: every read is priced, failures cost, error output is bounded.
//! Each attack is the issue's exact reproduction (or its shape at our limits), performed
//! against the real server over HTTP, followed by a normal page that still works.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::helpers::raw_http::Reply;
use crate::helpers::{Api, DEMO_SKU, TestApp, error_codes};

/// A page a storefront asks for: it must work after every attack.
const NORMAL_PAGE: &str = r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 10) { edges { cursor node { id body } } pageInfo { hasNextPage endCursor } } }"#;

/// `extensions.cost` of an answer.
fn cost_of(answer: &Reply) -> Value {
    answer.json()["extensions"]["cost"].clone()
}

async fn post(app: &Api, query: &str, client: Option<&str>) -> Reply {
    post_body(app, &json!({ "query": query }), client).await
}

/// POSTs `body` from `client` (`X-Forwarded-For`, trusted from 127.0.0.1) when there is one.
async fn post_body(app: &Api, body: &Value, client: Option<&str>) -> Reply {
    let mut headers = vec![("content-type", "application/json")];
    headers.extend(client.map(|client| ("x-forwarded-for", client)));
    app.post_graphql(body.to_string(), &headers).await
}

/// The normal page still pages: ten edges and a cursor to the next.
async fn assert_normal_page_works(app: &TestApp, client: Option<&str>) {
    let answer = post(app, NORMAL_PAGE, client).await;
    let body = answer.json();
    assert_eq!(answer.status, 200, "{body:#}");
    assert!(body.get("errors").is_none(), "{body:#}");
    let connection = &body["data"]["comments"];
    assert_eq!(connection["edges"].as_array().map(Vec::len), Some(10));
    assert_eq!(connection["pageInfo"]["hasNextPage"], true);
}

fn number(cost: &Value, name: &str) -> u64 {
    cost[name]
        .as_u64()
        .unwrap_or_else(|| panic!("{name} in {cost}"))
}

#[tokio::test]
async fn an_offset_read_from_the_store_over_four_ratings_costs_every_item_it_reads() {
    let app = TestApp::embedded(2_000).await;
    // Issue 22, item 5, exactly: it cost 3 points and read 408 items.
    let attack = r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 1, offset: 100, ratings: [1,2,3,4]) { pageInfo { hasNextPage } } }"#;
    let answer = post(&app, attack, None).await;
    let cost = cost_of(&answer);
    assert!(answer.json().get("errors").is_none(), "{:#}", answer.json());
    assert_eq!(number(&cost, "itemsRead"), 408, "each partition reads 102");
    assert_eq!(number(&cost, "requestedQueryCost"), 412);

    // Its amplified form: a fragment of ten such connections spread three times (30 aliases,
    // the most allowed) would read 12,240 items: too complex, refused unread.
    let mut fragment = String::from("fragment F on Query {");
    for i in 0..10 {
        fragment.push_str(&format!(
            r#" c{i}: comments(sku: "DAFT_PUNK_TSHIRT", first: 1, offset: 100, ratings: [1,2,3,4]) {{ pageInfo {{ hasNextPage }} }}"#
        ));
    }
    fragment.push('}');
    let spread = |times: usize| format!("{{ {} }} {fragment}", "...F ".repeat(times));
    let refused = post(&app, &spread(3), None).await;
    let body = refused.json();
    assert_eq!(
        error_codes(&body),
        ["GRAPHQL_VALIDATION_FAILED"],
        "{body:#}"
    );
    assert_eq!(number(&cost_of(&refused), "itemsRead"), 0);
    // Aliases count at every spread: ten spreads select 100 of them.
    let aliased = post(&app, &spread(10), None).await.json();
    let message = aliased["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("selects 100 aliased fields"),
        "{aliased:#}"
    );

    assert_normal_page_works(&app, None).await;
}

/// Fragments are priced on their own type: async-graphql counted a spread on the type around
/// it, so under `node` (an interface) a product's connection cost 1 and read 408 items.
#[tokio::test]
async fn a_fragment_spread_under_node_pays_for_its_products_reads() {
    let app = TestApp::embedded(2_000).await;
    let product = post(
        &app,
        &format!(r#"{{ product(sku: "{DEMO_SKU}") {{ id }} }}"#),
        None,
    )
    .await;
    let id = product.json()["data"]["product"]["id"]
        .as_str()
        .expect("a product id")
        .to_owned();
    let connection =
        "comments(first: 1, offset: 100, ratings: [1,2,3,4]) { pageInfo { hasNextPage } }";
    let spread =
        format!(r#"{{ node(id: "{id}") {{ ...P }} }} fragment P on Product {{ {connection} }}"#);
    let answer = post(&app, &spread, None).await;
    let body = answer.json();
    assert!(body.get("errors").is_none(), "{body:#}");
    let cost = cost_of(&answer);
    assert_eq!(number(&cost, "itemsRead"), 408, "{cost}");
    assert_eq!(number(&cost, "requestedQueryCost"), 1 + 412, "{cost}");
    assert_normal_page_works(&app, None).await;
}

/// An argument of a reading field that async-graphql's validation lets through but its
/// resolver cannot parse (an `Int` past 32 bits) leaves the price uncounted: the request is
/// refused unread, never run unpriced beside a field that reads.
#[tokio::test]
async fn an_argument_the_price_cannot_read_refuses_the_request_unread() {
    let app = TestApp::embedded(2_000).await;
    let query = format!(
        "query($n: Int) {{ a: comments(sku: \"{DEMO_SKU}\", first: $n) {{ totalCount }} b: comments(sku: \"{DEMO_SKU}\", first: 1, offset: 100, ratings: [1,2,3,4]) {{ pageInfo {{ hasNextPage }} }} }}"
    );
    let request = |n: u64| json!({ "query": query, "variables": { "n": n } });
    // Once answered, the text is taken for validated and its later requests are not validated
    // in full again: the refusal must hold on that path too.
    let fine = post_body(&app, &request(5), None).await;
    assert!(fine.json().get("errors").is_none(), "{:#}", fine.json());
    for _ in 0..2 {
        let answer = post_body(&app, &request(3_000_000_000), None).await;
        let body = answer.json();
        assert_eq!(
            error_codes(&body),
            ["GRAPHQL_VALIDATION_FAILED"],
            "{body:#}"
        );
        assert!(body["data"].is_null(), "{body:#}");
        assert_eq!(number(&cost_of(&answer), "itemsRead"), 0, "{body:#}");
    }
    assert_normal_page_works(&app, None).await;
}

/// The price is counted before async-graphql validates: a document it can price that validation
/// then refuses (an unknown argument) pays its price or the failure floor, whichever is larger,
/// and reads nothing.
#[tokio::test]
async fn a_priced_document_validation_refuses_pays_its_price_or_the_floor() {
    let app = TestApp::embedded(200).await;
    let small = r#"{ product(sku: "X") { sku(x: 1) } }"#;
    let large = format!(
        r#"{{ comments(sku: "{DEMO_SKU}", first: 100) {{ edges {{ node {{ id(x: 1) }} }} }} }}"#
    );
    // Per edge: edges 1, node 1 + id 1: 100 × 3 + 1.
    for (query, cost) in [(small, 10), (large.as_str(), 301)] {
        let answer = post(&app, query, None).await;
        let body = answer.json();
        assert_eq!(
            error_codes(&body),
            ["GRAPHQL_VALIDATION_FAILED"],
            "{body:#}"
        );
        let charged = cost_of(&answer);
        assert_eq!(
            number(&charged, "requestedQueryCost"),
            cost,
            "{query}: {charged}"
        );
        assert_eq!(number(&charged, "itemsRead"), 0, "{query}: {charged}");
    }
    assert_normal_page_works(&app, None).await;
}

#[tokio::test]
async fn nodes_cost_per_id_and_report_what_they_read() {
    let app = TestApp::embedded(200).await;
    let ids = crate::helpers::newest_ids(&app, 100).await;
    assert_eq!(ids.len(), 100);
    // Issue 22, item 6: thirty aliases of `nodes` over 100 ids served 3,000 comments for 90
    // points and reported `itemsRead: 0`. They are priced per id, a read and the selection
    // (issue 42: 2 points an id, so thirty aliases now cost more than one query may, and twenty
    // are sent); since issue 26 they are read in one batch, each id once, and the cost says so.
    let fields: String = (0..20)
        .map(|i| format!(" n{i}: nodes(ids: $ids) {{ id }}"))
        .collect();
    let query = format!("query($ids: [ID!]!) {{{fields} }}");
    let request = json!({ "query": query, "variables": { "ids": ids } });
    let answer = post_body(&app, &request, None).await;
    let body = answer.json();
    assert!(body.get("errors").is_none(), "{:#}", body["errors"]);
    let cost = cost_of(&answer);
    assert_eq!(number(&cost, "itemsRead"), 100);
    assert_eq!(number(&cost, "requestedQueryCost"), 20 * (100 * 2 + 1));
    assert_eq!(number(&cost, "storeQueries"), 1);

    // One `node` reads one item, and says so.
    let one = format!(r#"{{ node(id: "{}") {{ id }} }}"#, ids[0]);
    let cost = cost_of(&post(&app, &one, None).await);
    assert_eq!(number(&cost, "itemsRead"), 1);
    assert!(number(&cost, "requestedQueryCost") >= 1);

    assert_normal_page_works(&app, None).await;
}

#[tokio::test]
async fn a_request_over_the_items_cap_is_refused_before_it_reads() {
    let app = TestApp::spawn(&["--demo-comments", "500", "--max-items-per-request", "300"]).await;
    let deep = r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 100, offset: 100, ratings: [1,2]) { nodes { id } } }"#;
    let answer = post(&app, deep, None).await;
    let body = answer.json();
    assert_eq!(error_codes(&body), ["TOO_MANY_ITEMS"], "{body:#}");
    assert!(body.get("data").is_none(), "{body:#}");
    assert_eq!(number(&cost_of(&answer), "itemsRead"), 0);
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("more than 300 items"), "{message}");
    assert_normal_page_works(&app, None).await;
}

/// `{ f0 f1 … }`: `n` unknown fields, each a validation error.
fn unknown_fields(n: usize) -> String {
    let fields: String = (0..n).map(|i| format!(" f{i}")).collect();
    format!("{{{fields} }}")
}

#[tokio::test]
async fn a_document_of_thousands_of_unknown_fields_is_refused_before_validation_and_costs() {
    let app = TestApp::spawn(&["--demo-comments", "30", "--rate-limit-cost", "1000"]).await;
    // Issue 22, item 8: 9.8 kB of 4,900 unknown fields answered 695 kB of errors, for free.
    let document = format!("{{ {}}}", "x ".repeat(4_900));
    assert_eq!(document.len(), 9_803);
    let answer = post(&app, &document, None).await;
    let body = answer.json();
    assert_eq!(
        error_codes(&body),
        ["GRAPHQL_VALIDATION_FAILED"],
        "{body:#}"
    );
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("selects 4900 fields") && message.contains("at most 1000"),
        "{message}"
    );
    assert!(answer.text.len() < 1_000, "{} bytes", answer.text.len());
    let cost = cost_of(&answer);
    assert_eq!(
        number(&cost, "requestedQueryCost"),
        100,
        "10 points per KiB begun"
    );
    assert_eq!(number(&cost, "actualQueryCost"), 100);

    // Its 200 kB form no longer fits a body (64 KiB); 59 kB of fields pay 580 points, unvalidated.
    let big = unknown_fields(25_000);
    let too_big = reqwest::Client::new()
        .post(format!("{}/graphql", app.address))
        .json(&json!({ "query": big }))
        .send()
        .await
        .expect("sent");
    assert_eq!(too_big.status(), 413);
    let wide = unknown_fields(10_000);
    assert_eq!((wide.len() as u64).div_ceil(1024), 58);
    let answer = post(&app, &wide, None).await;
    assert_eq!(number(&cost_of(&answer), "requestedQueryCost"), 580);
    assert_eq!(error_codes(&answer.json()), ["GRAPHQL_VALIDATION_FAILED"]);
    assert_normal_page_works(&app, None).await;
}

#[tokio::test]
async fn a_response_carries_at_most_twenty_errors_and_says_how_many_were_cut() {
    let app = TestApp::embedded(30).await;
    // Under --max-selections, so async-graphql validates it: 500 errors, 480 of them cut.
    let answer = post(&app, &unknown_fields(500), None).await;
    let raw = answer.text.clone();
    assert!(raw.len() < 6_000, "{} bytes: {raw}", raw.len());
    let body = answer.json();
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 21, "{raw}");
    assert_eq!(
        raw.matches(r#""code":"GRAPHQL_VALIDATION_FAILED""#).count(),
        20
    );
    let last = &errors[20];
    assert_eq!(last["extensions"]["code"], "TOO_MANY_ERRORS");
    assert_eq!(
        last["message"],
        "480 more errors were cut: only the first 20 are reported"
    );
    assert_normal_page_works(&app, None).await;
}

#[tokio::test]
async fn a_client_spending_its_budget_on_failing_documents_gets_429_and_others_do_not() {
    // 1,000 points of burst, refilled at 1 a second; the client's address comes from the trusted
    // proxy's X-Forwarded-For, so two clients share one test.
    let app = TestApp::spawn(&[
        "--demo-comments",
        "30",
        "--rate-limit-cost",
        "1",
        "--rate-limit-cost-burst",
        "1000",
        "--trusted-proxies",
        "127.0.0.1",
    ])
    .await;
    let attacker = Some("203.0.113.7");
    // 8.6 kB of unknown fields: 90 points a try, refused by the selection limit before
    // validation; and 8.6 kB that does not parse, 90 points too.
    let refused_shape = unknown_fields(1_650);
    let broken = unknown_fields(1_650).replace('}', "");
    assert_eq!((refused_shape.len() as u64).div_ceil(1024), 9);
    let mut statuses = Vec::new();
    for _ in 0..12 {
        statuses.push(post(&app, &refused_shape, attacker).await.status);
    }
    // 11 × 90 = 990 of the 1,000 points; the twelfth cannot be paid (1 point comes back a
    // second).
    assert_eq!(&statuses[..11], [200; 11], "{statuses:?}");
    assert_eq!(statuses[11], 429, "{statuses:?}");
    for document in [&refused_shape, &broken] {
        let spent = post(&app, document, attacker).await;
        assert_eq!(spent.status, 429, "{:#}", spent.json());
        assert!(spent.header("retry-after").is_some());
        assert_eq!(error_codes(&spent.json()), ["RATE_LIMITED"]);
        assert_eq!(cost_of(&spent)["actualQueryCost"], Value::Null);
    }

    assert_normal_page_works(&app, Some("198.51.100.2")).await;
}

/// A random read: a connection with random arguments and selection, perhaps nested under its
/// comments' product, or `nodes`/`node` over known ids.
fn random_field(ids: Vec<String>) -> impl Strategy<Value = String> {
    let size = prop_oneof![Just(None), (0..=100i32).prop_map(Some)];
    let offset = prop_oneof![
        Just(None),
        (0..=120i32).prop_map(Some),
        (101..3_000i32).prop_map(Some)
    ];
    let ratings = prop_oneof![
        Just(None),
        proptest::sample::subsequence(vec![1, 2, 3, 4, 5], 1..=5).prop_map(Some)
    ];
    let selection = proptest::sample::subsequence(
        vec![
            "edges { cursor node { id } }",
            "nodes { id body }",
            "edges { node { id viewerFoundHelpful } }",
            "nodes { viewerFoundHelpful helpfulCount }",
            "pageInfo { hasNextPage hasPreviousPage startCursor }",
            "totalCount",
            "startOffset",
            "nodes { product { comments(first: 3, offset: 50) { nodes { id } } } }",
            "pageCursors(around: 3) { around { page cursor } }",
        ],
        1..=3,
    );
    let connection = (size.clone(), size, offset, ratings, selection).prop_map(
        |(first, last, offset, ratings, selection)| {
            let mut args = vec![format!("sku: \"{DEMO_SKU}\"")];
            // `last` alone when `first` is absent; both sometimes (the spec allows it).
            if let Some(first) = first {
                args.push(format!("first: {first}"));
            }
            if let Some(last) = last.filter(|_| first.is_none()) {
                args.push(format!("last: {last}"));
            }
            if let Some(offset) = offset.filter(|_| first.is_some()) {
                args.push(format!("offset: {offset}"));
            }
            if let Some(ratings) = ratings {
                args.push(format!("ratings: {ratings:?}"));
            }
            format!(
                "comments({}) {{ {} }}",
                args.join(", "),
                selection.join(" ")
            )
        },
    );
    // Every shape of a lookup's selection, down to the one that reads most for what it
    // selects: the vote alone (issue 42, item 10: it read twice its price).
    let looked_up = || {
        proptest::sample::subsequence(
            vec![
                "id",
                "... on Comment { viewerFoundHelpful }",
                "... on Comment { helpfulCount body }",
                "... on Comment { product { comments(first: 2) { nodes { id viewerFoundHelpful } } } }",
                "... on Product { sku }",
                "__typename",
            ],
            1..=3,
        )
    };
    let nodes = (
        proptest::sample::subsequence(ids.clone(), 0..=ids.len().min(40)),
        looked_up(),
    )
        .prop_map(|(ids, selection)| {
            format!(
                "nodes(ids: {}) {{ {} }}",
                serde_json::to_string(&ids).expect("JSON"),
                selection.join(" ")
            )
        });
    let containing = (
        proptest::sample::select(ids.clone()),
        1..=100i32,
        proptest::option::of(proptest::sample::subsequence(vec![1, 2, 3, 4, 5], 1..=5)),
    )
        .prop_map(|(id, size, ratings)| {
            let ratings = ratings.map_or(String::new(), |r| format!(", ratings: {r:?}"));
            format!(
                "comments(sku: \"{DEMO_SKU}\", first: {size}, containing: \"{id}\"{ratings}) {{ nodes {{ id }} pageInfo {{ hasPreviousPage hasNextPage }} }}"
            )
        });
    let node = (proptest::sample::select(ids), looked_up())
        .prop_map(|(id, selection)| format!("node(id: \"{id}\") {{ {} }}", selection.join(" ")));
    prop_oneof![4 => connection, 1 => containing, 1 => nodes, 1 => node]
}

#[tokio::test]
async fn no_response_reads_more_items_than_it_was_priced() {
    let app = TestApp::embedded(1_000).await;
    let ids = crate::helpers::newest_ids(&app, 60).await;
    let documents = proptest::collection::vec(random_field(ids), 1..=3).prop_map(|fields| {
        let aliased: String = fields
            .iter()
            .enumerate()
            .map(|(i, field)| format!(" a{i}: {field}"))
            .collect();
        format!("{{{aliased} }}")
    });
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let (mut reads, mut answered) = (0, 0);
    for _ in 0..120 {
        let document = documents
            .new_tree(&mut runner)
            .expect("a document")
            .current();
        let answer = post(&app, &document, None).await;
        let cost = cost_of(&answer);
        let (read, priced) = (
            number(&cost, "itemsRead"),
            number(&cost, "requestedQueryCost"),
        );
        assert!(
            read <= priced,
            "{read} items read for {priced}: {document}\n{cost}"
        );
        reads += read;
        answered += usize::from(answer.json().get("errors").is_none());
    }
    assert!(reads > 1_000, "the documents read something: {reads}");
    assert!(
        answered > 40,
        "most documents are answered: {answered} of 120"
    );
    assert_normal_page_works(&app, None).await;
}

/// What is left of 127.0.0.1's cost budget, as a cheap query reports it.
async fn budget_left(app: &TestApp) -> u64 {
    let answer = post(app, "{ product(sku: \"X\") { sku } }", None).await;
    number(&cost_of(&answer)["throttleStatus"], "currentlyAvailable")
}

#[tokio::test]
async fn a_query_is_priced_with_the_servers_paging_settings_and_its_neighbours_cost_nothing() {
    // Offsets up to 1,000 are read from the store on this server (the default threshold is
    // 100): a query whose reads reach 900 deep costs about 900 here. Only the operation that
    // runs is priced: a subscription beside that query, over the WebSocket, pays its own few
    // points (async-graphql's count charged it the query's 900 too).
    let app = TestApp::spawn(&[
        "--demo-comments",
        "30",
        "--offset-index-threshold",
        "1000",
        "--rate-limit-cost",
        "1",
        "--rate-limit-writes",
        "0",
    ])
    .await;
    let document = format!(
        "subscription Live {{ commentEvents(sku: \"{DEMO_SKU}\") {{ kind }} }} \
         query Deep {{ comments(sku: \"{DEMO_SKU}\", first: 1, offset: 900) {{ pageInfo {{ hasNextPage }} }} }}"
    );
    let over_http = post_body(
        &app,
        &json!({ "query": document, "operationName": "Deep" }),
        None,
    )
    .await;
    let priced = number(&cost_of(&over_http), "requestedQueryCost");
    assert!(priced > 900, "{}", over_http.json());

    let before = budget_left(&app).await;
    let mut client = crate::helpers::websocket::Client::ready(&app).await;
    client
        .send(json!({ "id": "live", "type": "subscribe", "payload": { "query": document, "operationName": "Live" } }))
        .await;
    // An event proves the subscription ran, so its price was charged.
    app.add_comment(None, DEMO_SKU, "b", 5).await;
    let event = client.next().await;
    assert_eq!(
        event["payload"]["data"]["commentEvents"]["kind"], "ADDED",
        "{event}"
    );
    let left = budget_left(&app).await;
    assert!(
        before - left < 100,
        "charged {} for a subscription of two fields and a write (the query costs {priced})",
        before - left
    );
    assert_normal_page_works(&app, None).await;
}

/// What is left of 127.0.0.1's budget after a probe of known cost (`{ __typename }` pays its
/// bytes: 1 point, as run or as a hit), read from the `RateLimit` field (a kept answer carries
/// no `extensions.cost`); the probe's cost is subtracted by the caller.
async fn left_after_probe(app: &TestApp) -> u64 {
    let response = app
        .client
        .post(format!("{}/graphql", app.address))
        .json(&json!({ "query": "{ __typename }" }))
        .send()
        .await
        .expect("sent");
    let field = response.headers()["ratelimit"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    field
        .split(';')
        .find_map(|p| p.strip_prefix("r="))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("points left in {field}"))
}

/// One of the things a client may make the server do beyond reading, each with what it must
/// at least pay: a hit of the response cache (its KiB sent), a registration of an automatic
/// persisted query (its text's bytes, beside its request), a `subscribe` the request check
/// refuses (the failure floor of its message).
#[derive(Clone, Debug)]
enum Beyond {
    Hit(String),
    Registration(String),
    RefusedSubscribe(String),
}

fn beyond_reads(ids: Vec<String>) -> impl Strategy<Value = Beyond> {
    prop_oneof![
        3 => random_field(ids.clone()).prop_map(|field| Beyond::Hit(format!("{{ {field} }}"))),
        1 => (random_field(ids.clone()), 0..4_000usize).prop_map(|(field, padding)| {
            Beyond::Registration(format!("# {}\n{{ {field} }}", "p".repeat(padding)))
        }),
        1 => (random_field(ids), 0..12_000usize).prop_map(|(field, padding)| {
            // A query over the WebSocket: refused by the check (only subscriptions run there).
            Beyond::RefusedSubscribe(format!("# {}\n{{ {field} }}", "p".repeat(padding)))
        }),
    ]
}

/// The price invariant beyond reads (issue 42): what a request sends from the response cache,
/// stores as a persisted query, or makes the server refuse over a WebSocket is within what it
/// paid, for random documents of every shape `no_response_reads_more_items_than_it_was_priced`
/// draws. Paid is measured from the budget itself (a probe of known cost before and after),
/// allowing for the points that came back meanwhile (1 a second).
#[tokio::test]
async fn nothing_sends_stores_or_refuses_more_than_it_paid() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let app = TestApp::spawn(&[
        "--demo-comments",
        "1000",
        "--response-cache-bytes",
        "8388608",
        "--rate-limit-cost",
        "1",
        "--rate-limit-cost-burst",
        "10000000",
        "--rate-limit-writes",
        "0",
        "--rate-limit-registrations",
        "0",
    ])
    .await;
    let ids = crate::helpers::newest_ids(&app, 60).await;
    let mut socket =
        crate::helpers::websocket::open_socket(&app.address, "graphql-transport-ws").await;
    let init = json!({ "type": "connection_init", "payload": {} }).to_string();
    socket.send(Message::Text(init.into())).await.expect("sent");
    socket.next().await.expect("an ack").expect("a message");

    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let strategy = beyond_reads(ids);
    let mut seen = [0usize; 3];
    for round in 0..60 {
        let draw = strategy.new_tree(&mut runner).expect("a draw").current();
        let get_url = |query: &str| {
            reqwest::Url::parse_with_params(
                &format!("{}/graphql", app.address),
                &[("query", query)],
            )
            .expect("a URL")
        };
        // Prepared outside the measured window: a hit needs its answer kept and verified.
        if let Beyond::Hit(query) = &draw {
            for _ in 0..2 {
                app.client.get(get_url(query)).send().await.expect("sent");
            }
        }
        let before = left_after_probe(&app).await;
        let started = std::time::Instant::now();
        let owed = match &draw {
            Beyond::Hit(query) => {
                let response = app.client.get(get_url(query)).send().await.expect("sent");
                let etag = response.headers().get("etag").is_some();
                let sent = response.bytes().await.expect("a body").len() as u64;
                // An answer with errors is not kept: no hit, nothing sent from the cache.
                if !etag {
                    continue;
                }
                seen[0] += 1;
                sent.div_ceil(1024)
            }
            Beyond::Registration(text) => {
                let body = json!({
                    "query": text,
                    "extensions": { "persistedQuery": { "version": 1, "sha256Hash": dynapage::persisted::sha256_hex(text) } },
                });
                let answer = post_body(&app, &body, None).await.json();
                if answer.get("errors").is_some() {
                    continue; // not registered: a document that fails is never kept
                }
                seen[1] += 1;
                dynapage::graphql::bytes_floor(text.len())
                    + dynapage::graphql::bytes_floor(body.to_string().len())
            }
            Beyond::RefusedSubscribe(text) => {
                let id = format!("r{round}");
                let message =
                    json!({ "id": id, "type": "subscribe", "payload": { "query": text } });
                socket
                    .send(Message::Text(message.to_string().into()))
                    .await
                    .expect("sent");
                loop {
                    let Some(Ok(Message::Text(reply))) = socket.next().await else {
                        panic!("the socket closed");
                    };
                    let reply: Value = serde_json::from_str(&reply).expect("JSON");
                    if reply["id"] == id.as_str() && reply["type"] != "complete" {
                        break;
                    }
                }
                seen[2] += 1;
                dynapage::graphql::failure_floor(text.len())
            }
        };
        let after = left_after_probe(&app).await;
        let refilled = started.elapsed().as_secs() + 1;
        let paid = (before + refilled).saturating_sub(after + 1);
        assert!(
            paid >= owed,
            "paid {paid} for what costs {owed} at least: {draw:?}"
        );
    }
    assert!(
        seen.iter().all(|&n| n >= 5),
        "every kind was drawn and measured: {seen:?}"
    );
    assert_normal_page_works(&app, None).await;
}
