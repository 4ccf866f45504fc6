//! Pages of comments as the tests compare them: one page's ids, cursors and flags, a product
//! walked whole with cursors, and the ids of the newest comments.

use serde_json::{Value, json};

use crate::helpers::{Api, DEMO_SKU};

/// A page of `comments(sku:)` with every paging argument as a variable.
pub const PAGE_QUERY: &str = r#"
query Page($sku: String!, $ratings: [Int!], $first: Int, $after: String, $last: Int, $before: String, $offset: Int) {
  comments(sku: $sku, ratings: $ratings, first: $first, after: $after, last: $last, before: $before, offset: $offset) {
    edges { cursor node { id rating createdAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// The parts of a connection the tests compare.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub ids: Vec<String>,
    pub cursors: Vec<String>,
    pub has_next_page: bool,
    pub has_previous_page: bool,
    pub start_cursor: Option<String>,
    pub end_cursor: Option<String>,
}

impl Page {
    pub fn from_connection(connection: &Value) -> Self {
        let edges = connection["edges"].as_array().expect("edges");
        let info = &connection["pageInfo"];
        Self {
            ids: edge_ids(connection),
            cursors: edges
                .iter()
                .map(|e| e["cursor"].as_str().expect("cursor").to_owned())
                .collect(),
            has_next_page: info["hasNextPage"].as_bool().expect("hasNextPage"),
            has_previous_page: info["hasPreviousPage"].as_bool().expect("hasPreviousPage"),
            start_cursor: info["startCursor"].as_str().map(str::to_owned),
            end_cursor: info["endCursor"].as_str().map(str::to_owned),
        }
    }
}

/// The global ids of the newest `count` comments of [`DEMO_SKU`].
pub async fn newest_ids(app: &Api, count: usize) -> Vec<String> {
    let query =
        format!(r#"{{ comments(sku: "{DEMO_SKU}", first: {count}) {{ nodes {{ id }} }} }}"#);
    let page = app.data(&query, json!({})).await;
    page["comments"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// Every comment of `sku` with a rating in `ratings` (all when `null`), newest first, as
/// `{ id rating }` nodes, by walking with cursors in pages of 100.
pub async fn walk_nodes(app: &Api, sku: &str, ratings: &Value) -> Vec<Value> {
    let mut nodes = Vec::new();
    let mut after = Value::Null;
    loop {
        let page = app
            .data(
                "query($sku: String!, $ratings: [Int!], $after: String) { comments(sku: $sku, ratings: $ratings, first: 100, after: $after) { edges { node { id rating helpfulCount } } pageInfo { hasNextPage endCursor } } }",
                json!({ "sku": sku, "ratings": ratings, "after": after }),
            )
            .await;
        let connection = &page["comments"];
        let edges = connection["edges"].as_array().expect("edges");
        nodes.extend(edges.iter().map(|edge| edge["node"].clone()));
        if connection["pageInfo"]["hasNextPage"] != true {
            return nodes;
        }
        after = connection["pageInfo"]["endCursor"].clone();
    }
}

/// The ids of a connection's edges (`edges { node { id } }`), in order.
pub fn edge_ids(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["node"]["id"].as_str().expect("id").to_owned())
        .collect()
}

/// Shallow merge of two JSON objects.
pub fn merge(mut a: Value, b: Value) -> Value {
    if let (Some(a), Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}
