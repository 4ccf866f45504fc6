//! A page whose edges select only a comment's stored fields is written by dynapage itself
//! (`graphql::plain`), and so is a plain selection of its `pageCursors` (`graphql::plain_pager`)
//! and of its `pageInfo` (`graphql::plain_info`);
//! any other selection by async-graphql: the two must give a client the same
//! bytes. Each query here is asked twice, once plain and once with the same fields behind a
//! fragment (which takes async-graphql's path), and the `data` of the two responses must be
//! equal byte for byte: values, key order, aliases, `__typename`, nulls.

use serde_json::json;

use crate::helpers::TestApp;

/// The `data` member of the response to `query`, as the bytes a client receives.
async fn data_bytes(app: &TestApp, query: &str) -> String {
    let body = json!({ "query": query }).to_string();
    let headers = [("content-type", "application/json")];
    let raw = app.raw_request("POST", "/graphql", &headers, &body).await;
    assert_eq!(raw.status, 200);
    let text = String::from_utf8(raw.body).expect("UTF-8");
    assert!(!text.contains("\"errors\""), "{text}");
    let end = text.find(",\"extensions\":").unwrap_or(text.len() - 1);
    text[..end].to_owned()
}

const NODE: &str = "__typename id author body rating createdAt updatedAt verifiedPurchase helpfulCount stars: rating";

#[tokio::test]
async fn both_paths_answer_the_same() {
    let app = TestApp::embedded(0).await;
    let edited = app.add_comment(None, "PLAIN", "edited later", 3).await;
    // Bodies with what JSON escapes (quotes, a backslash, a line feed, a tab) and what it
    // does not (non-ASCII, `/`), which the plain path writes itself.
    let escaped = "\"quoted\" \\ back\nslash\tand tab é 😀 </script>";
    for (body, rating) in [(escaped, 5), ("second", 1), ("third", 4)] {
        app.add_comment(None, "PLAIN", body, rating).await;
    }
    let update = "mutation($id: ID!) { updateComment(input: { id: $id, rating: 2 }) { comment { updatedAt } } }";
    app.data(update, json!({ "id": edited })).await;
    let connection = "comments(first: 4)";
    let pairs = [
        (
            format!(
                "{{ product(sku: \"PLAIN\") {{ {connection} {{ edges {{ __typename cursor node {{ {NODE} }} c: cursor }} }} }} }}"
            ),
            format!(
                "{{ product(sku: \"PLAIN\") {{ {connection} {{ edges {{ ...E }} }} }} }} fragment E on CommentEdge {{ __typename cursor node {{ {NODE} }} c: cursor }}"
            ),
        ),
        (
            format!("{{ product(sku: \"PLAIN\") {{ {connection} {{ nodes {{ {NODE} }} }} }} }}"),
            format!(
                "{{ product(sku: \"PLAIN\") {{ {connection} {{ nodes {{ ... on Comment {{ {NODE} }} }} }} }} }}"
            ),
        ),
        (
            format!(
                "{{ product(sku: \"PLAIN\") {{ {connection} {{ edges {{ node {{ body }} }} }} }} }}"
            ),
            format!(
                "{{ product(sku: \"PLAIN\") {{ {connection} {{ edges {{ node {{ ... on Node {{ ... on Comment {{ body }} }} }} }} }} }} }}"
            ),
        ),
    ];
    let pairs: Vec<(String, String)> = pairs
        .into_iter()
        .chain(pager_pairs())
        .chain(page_info_pairs())
        .collect();
    for (plain, through_fragments) in &pairs {
        let (a, b) = (
            data_bytes(&app, plain).await,
            data_bytes(&app, through_fragments).await,
        );
        assert_eq!(a, b, "{plain}");
        // Asked again, each text runs on a schema that does not validate it again (a plain
        // one skips async-graphql's walk too, `graphql::validated`): the same bytes.
        assert_eq!(data_bytes(&app, plain).await, a, "{plain}, again");
        let again = data_bytes(&app, through_fragments).await;
        assert_eq!(again, b, "{through_fragments}, again");
    }
    // The last `pageInfo` is of an empty page: its cursors are null.
    let empty = data_bytes(&app, &page_info_pairs()[3].0).await;
    assert!(
        empty.contains("\"startCursor\":null,\"endCursor\":null"),
        "{empty}"
    );
    // The page holds both kinds of `updatedAt`: one comment edited, three not.
    let page = data_bytes(&app, &pairs[0].0).await;
    assert_eq!(page.matches("\"updatedAt\":\"").count(), 1, "{page}");
    assert_eq!(page.matches("\"updatedAt\":null").count(), 3, "{page}");
    assert!(
        page.contains(r#""\"quoted\" \\ back\nslash\tand tab é 😀 </script>""#),
        "{page}"
    );
}

/// `pageInfo` on the first page, a middle one, the last and an empty one past the end (null
/// cursors), plain and behind a fragment.
fn page_info_pairs() -> Vec<(String, String)> {
    const INFO: &str =
        "__typename hasNextPage hasPreviousPage startCursor endCursor s: startCursor";
    [
        "first: 1",
        "first: 1, offset: 2",
        "last: 1",
        "first: 2, offset: 9",
    ]
    .into_iter()
    .map(|page| {
        let at = format!("{{ product(sku: \"PLAIN\") {{ comments({page}) {{ pageInfo");
        (
            format!("{at} {{ {INFO} }} }} }} }}"),
            format!("{at} {{ ...I }} }} }} }} fragment I on PageInfo {{ {INFO} }}"),
        )
    })
    .collect()
}

/// `pageCursors` on page 1 (no previous page), a middle page and the last (no next page), plain
/// and behind a fragment.
fn pager_pairs() -> Vec<(String, String)> {
    const PAGE: &str = "__typename page cursor offset isCurrent o: offset";
    let pager = format!(
        "__typename pageCount first {{ {PAGE} }} last {{ page cursor }} previous {{ {PAGE} }} next {{ page c: cursor }} around {{ {PAGE} }} n: pageCount"
    );
    ["first: 1", "first: 1, offset: 2", "last: 1"]
        .into_iter()
        .map(|page| {
            let at =
                format!("{{ product(sku: \"PLAIN\") {{ comments({page}) {{ pageCursors(around: 3)");
            (
                format!("{at} {{ {pager} }} }} }} }}"),
                format!("{at} {{ ...P }} }} }} }} fragment P on PageCursors {{ {pager} }}"),
            )
        })
        .collect()
}
