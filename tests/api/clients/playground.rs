//! The example queries in `playground/` run against the real server and do what their comments
//! say, so the examples users copy never rot; the AddComment tab the page serves writes under
//! both `--auth` modes.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::helpers::{Page, TestApp, edge_ids};
use crate::support::jwks::{JwksServer, TestKey, claims};

fn example(name: &str) -> String {
    let path = format!("{}/playground/{name}.graphql", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const EXAMPLES: [&str; 10] = [
    "first-page",
    "next-page",
    "previous-page",
    "page-jump",
    "total-count",
    "ratings-filter",
    "page-cursors",
    "containing",
    "add-comment",
    "comment-events",
];

#[test]
fn every_playground_file_is_exercised_here() {
    let dir = format!("{}/playground", env!("CARGO_MANIFEST_DIR"));
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("playground/")
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .into_string()
                .ok()?
                .strip_suffix(".graphql")
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(
        files,
        EXAMPLES.iter().map(|s| s.to_string()).collect(),
        "add new examples to this test"
    );
}

#[tokio::test]
async fn the_playground_examples_page_through_the_demo_product() {
    let app = TestApp::embedded(2_000).await;
    let first = app.data(&example("first-page"), json!({})).await;
    let first_page = Page::from_connection(&first["product"]["comments"]);
    assert_eq!(first["product"]["comments"]["totalCount"], 2_000);
    assert_eq!(first_page.ids.len(), 5);

    let next = app
        .data(
            &example("next-page"),
            json!({ "after": first_page.end_cursor }),
        )
        .await;
    let next_page = Page::from_connection(&next["comments"]);
    assert!(next_page.has_previous_page && next_page.has_next_page);

    let previous = app
        .data(
            &example("previous-page"),
            json!({ "before": next_page.start_cursor }),
        )
        .await;
    assert_eq!(
        Page::from_connection(&previous["comments"]).ids,
        first_page.ids,
        "back where we started"
    );

    let oldest = app.data(&example("previous-page"), json!({})).await;
    assert!(
        !Page::from_connection(&oldest["comments"]).has_next_page,
        "without a cursor: the oldest comments"
    );

    let jump = app
        .data(&example("page-jump"), json!({ "offset": 1_000 }))
        .await;
    let walked = app
        .page("DAFT_PUNK_TSHIRT", json!({ "first": 20, "offset": 1_000 }))
        .await;
    assert_eq!(Page::from_connection(&jump["comments"]).ids, walked.ids);

    let counts = app.data(&example("total-count"), json!({})).await;
    let all = counts["all"]["totalCount"].as_i64().expect("count");
    assert_eq!(all, 2_000);
    assert!(counts["oneStar"]["totalCount"].as_i64() < counts["fiveStars"]["totalCount"].as_i64());

    let filtered = app.data(&example("ratings-filter"), json!({})).await;
    let ratings: Vec<Value> = filtered["comments"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["node"]["rating"].clone())
        .collect();
    assert!(
        !ratings.is_empty() && ratings.iter().all(|r| *r == 3 || *r == 5),
        "{ratings:?}"
    );

    let pager = app.data(&example("page-cursors"), json!({})).await;
    let connection = &pager["comments"];
    let third_oldest = app
        .page("DAFT_PUNK_TSHIRT", json!({ "last": 10, "offset": 20 }))
        .await;
    assert_eq!(edge_ids(connection), third_oldest.ids);
    assert_eq!(connection["startOffset"], 2_000 - 30);
    assert_eq!(connection["pageCursors"]["pageCount"], 200);
    let current: Vec<&Value> = connection["pageCursors"]["around"]
        .as_array()
        .expect("around")
        .iter()
        .filter(|link| link["isCurrent"] == true)
        .collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["page"], 3, "the third page from the oldest");
    // What its comment says: one index call for the pager, the start offset and the total,
    // and a link's cursor that serves the page at its offset.
    let response = app.graphql(&example("page-cursors"), json!({})).await;
    assert_eq!(
        response["extensions"]["cost"]["indexCalls"], 1,
        "{response:#}"
    );
    let next = &connection["pageCursors"]["next"];
    let by_cursor = app
        .page(
            "DAFT_PUNK_TSHIRT",
            json!({ "last": 10, "before": next["cursor"] }),
        )
        .await;
    let by_offset = app
        .page(
            "DAFT_PUNK_TSHIRT",
            json!({ "last": 10, "offset": next["offset"] }),
        )
        .await;
    assert_eq!(next["offset"], 30);
    assert_eq!(by_cursor.ids.len(), 10);
    assert_eq!(by_cursor.ids, by_offset.ids);

    let containing = app.data(&example("containing"), json!({})).await;
    let connection = &containing["comments"];
    let page_124 = app
        .page("DAFT_PUNK_TSHIRT", json!({ "first": 10, "offset": 1_230 }))
        .await;
    assert_eq!(edge_ids(connection), page_124.ids);
    let default_id = example("containing")
        .split("$id: ID = \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a default id")
        .to_owned();
    assert_eq!(page_124.ids[3], default_id, "the 1,234th newest comment");
    assert_eq!(connection["startOffset"], 1_230);

    // The subscription tab, with the AddComment tab run beside it.
    let mut live = crate::helpers::websocket::Client::ready(&app).await;
    live.subscribe_to("tab", &example("comment-events"), json!({}))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let added = app.data(&example("add-comment"), json!({})).await;
    let event = live.event().await;
    assert_eq!(event["kind"], "ADDED");
    assert_eq!(
        event["edge"]["node"]["id"],
        added["addComment"]["comment"]["id"]
    );
    assert_eq!(event["totalCount"], 2_001);
    assert_eq!(added["addComment"]["clientMutationId"], "playground");
    let top = app.page("DAFT_PUNK_TSHIRT", json!({ "first": 1 })).await;
    assert_eq!(
        Value::from(top.ids[0].clone()),
        added["addComment"]["comment"]["id"]
    );
}

/// The tab named `operation` as GraphiQL gets it from `app`'s page (`defaultTabs`).
async fn served_tab(app: &TestApp, operation: &str) -> Value {
    let page = app
        .client
        .get(format!("{}/", app.address))
        .send()
        .await
        .expect("the page")
        .text()
        .await
        .expect("its text");
    let start = page.find("type=\"application/json\">").expect("tabs") + 24;
    let end = start + page[start..].find("</script>").expect("end of tabs");
    let tabs: Value = serde_json::from_str(&page[start..end]).expect("JSON tabs");
    let tab = tabs.as_array().expect("a list").iter().find(|tab| {
        tab["query"]
            .as_str()
            .is_some_and(|q| q.contains(&format!("mutation {operation}(")))
    });
    tab.unwrap_or_else(|| panic!("no {operation} tab in {tabs:#}"))
        .clone()
}

/// Runs `tab` as its Run button does: its query, and its headers with the token in place.
async fn run_tab(app: &TestApp, tab: &Value, token: Option<&str>) -> Value {
    let query = tab["query"].as_str().expect("the tab's query");
    let Some(headers) = tab["headers"].as_str() else {
        return app.graphql(query, Value::Null).await;
    };
    let headers: Value = serde_json::from_str(headers).expect("the Headers pane is JSON");
    let authorization = headers["Authorization"]
        .as_str()
        .expect("where the token goes");
    assert!(authorization.starts_with("Bearer <"), "{authorization}");
    let token = token.expect("a token for a tab that asks for one");
    app.graphql_as(token, query, Value::Null).await
}

#[tokio::test]
async fn the_add_comment_tab_the_page_serves_writes_under_auth_off_and_under_auth_jwt() {
    let open = TestApp::embedded(0).await;
    let tab = served_tab(&open, "AddComment").await;
    assert!(tab.get("headers").is_none(), "{tab:#}");
    let answer = run_tab(&open, &tab, None).await;
    assert!(answer.get("errors").is_none(), "{answer:#}");
    assert_eq!(
        answer["data"]["addComment"]["comment"]["author"],
        "Guy-Manuel"
    );

    let key = TestKey::ec("ec-playground");
    let jwks = JwksServer::start(&[&key]).await;
    let signed = TestApp::under_jwt(&jwks, 0, &[]).await;
    let tab = served_tab(&signed, "AddComment").await;
    let token = key.sign(&claims("ada", json!({ "name": "Ada" })));
    let answer = run_tab(&signed, &tab, Some(&token)).await;
    assert!(answer.get("errors").is_none(), "{answer:#}");
    assert_eq!(answer["data"]["addComment"]["comment"]["author"], "Ada");
    assert_eq!(
        answer["data"]["addComment"]["clientMutationId"],
        "playground"
    );
    // The file as written (with `author`) is what a jwt server refuses.
    let refused = signed
        .graphql_as(&token, &example("add-comment"), Value::Null)
        .await;
    assert_eq!(
        refused["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{refused:#}"
    );
}
