//! GraphQL over HTTP, as the GraphQL-over-HTTP specification says, on the raw bytes a client
//! receives: the response's media type follows `Accept`; unsupported media types get 406/415;
//! bodies that are not JSON, or not GraphQL requests, get 400 with a JSON body of the usual
//! shape; requests that fail before execution have no `data` entry, and answer 400 under
//! `application/graphql-response+json`. (`src/http/transport.rs` says why this is ours and not
//! async-graphql-axum's.) The npm package graphql-http's audit runs in `clients::tools`.

use reqwest::header::ACCEPT;
use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::helpers::raw_http::Reply;

const JSON: &str = "application/json; charset=utf-8";
const GRAPHQL_RESPONSE: &str = "application/graphql-response+json; charset=utf-8";

/// The single error's code of `answer`; also checks the error has the usual shape.
fn code(answer: &Reply) -> String {
    let body = answer.json();
    let errors = body["errors"].as_array().expect("an errors list");
    assert_eq!(errors.len(), 1, "{}", answer.text);
    assert!(errors[0]["message"].is_string(), "{}", answer.text);
    errors[0]["extensions"]["code"]
        .as_str()
        .expect("a code")
        .to_owned()
}

/// The answer's media type (empty when it names none).
fn content_type(answer: &Reply) -> &str {
    answer.header("content-type").unwrap_or_default()
}

async fn post(app: &TestApp, headers: &[(&str, &str)], body: &str) -> Reply {
    app.post_graphql(body.to_owned(), headers).await
}

async fn get(app: &TestApp, headers: &[(&str, &str)], query: &[(&str, &str)]) -> Reply {
    app.get_graphql(query, headers).await
}

const TYPENAME: &str = r#"{"query":"{ __typename }"}"#;
const JSON_BODY: (&str, &str) = ("content-type", "application/json");

#[tokio::test]
async fn the_response_media_type_follows_the_accept_header() {
    let app = TestApp::embedded(5).await;
    let cases = [
        (None, JSON),
        (Some("application/json"), JSON),
        (Some("application/graphql-response+json"), GRAPHQL_RESPONSE),
        (
            Some("application/graphql-response+json, application/json;q=0.9"),
            GRAPHQL_RESPONSE,
        ),
        (
            Some("application/json, application/graphql-response+json"),
            JSON,
        ),
        (Some("*/*"), JSON),
        (Some("text/html, application/*;q=0.5"), JSON),
    ];
    for (accept, expected) in cases {
        let mut headers = vec![JSON_BODY];
        if let Some(accept) = accept {
            headers.push(("accept", accept));
        }
        let answer = post(&app, &headers, TYPENAME).await;
        assert_eq!(answer.status, 200, "{accept:?}: {}", answer.text);
        assert_eq!(content_type(&answer), expected, "Accept: {accept:?}");
        assert!(
            answer.text.starts_with(r#"{"data":{"__typename":"Query"}"#),
            "{}",
            answer.text
        );
    }
    let answer = get(
        &app,
        &[(ACCEPT.as_str(), "application/graphql-response+json")],
        &[("query", "{ __typename }")],
    )
    .await;
    assert_eq!(
        (answer.status, content_type(&answer)),
        (200, GRAPHQL_RESPONSE)
    );
}

#[tokio::test]
async fn an_accept_header_without_a_type_the_server_speaks_gets_406_in_json() {
    let app = TestApp::embedded(5).await;
    let answer = post(&app, &[JSON_BODY, ("accept", "text/html")], TYPENAME).await;
    assert_eq!(answer.status, 406, "{}", answer.text);
    assert_eq!(content_type(&answer), JSON);
    assert_eq!(code(&answer), "BAD_REQUEST");
}

#[tokio::test]
async fn a_body_that_is_not_json_gets_400_with_a_json_error_not_debug_text() {
    let app = TestApp::embedded(5).await;
    for accept in ["application/json", "application/graphql-response+json"] {
        let answer = post(&app, &[JSON_BODY, ("accept", accept)], r#"{ "not a JSON"#).await;
        assert_eq!(answer.status, 400, "{}", answer.text);
        assert!(
            content_type(&answer).starts_with(accept),
            "{}",
            content_type(&answer)
        );
        assert_eq!(code(&answer), "BAD_REQUEST");
        assert!(
            answer.json()["errors"][0]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("the request body is not valid JSON")),
            "{}",
            answer.text
        );
        assert!(!answer.text.contains("InvalidRequest"), "{}", answer.text);
    }
}

#[tokio::test]
async fn json_that_is_not_a_graphql_request_gets_400_saying_what_is_wrong() {
    let app = TestApp::embedded(5).await;
    let cases = [
        ("", "the request has no body"),
        (
            r#"{"qeury":"{ __typename }"}"#,
            "the request has no `query`",
        ),
        (r#"{"query":{"obj":"ect"}}"#, "`query` must be a string"),
        (r#"{"query":0}"#, "`query` must be a string"),
        (
            r#"{"query":"{ __typename }","variables":"{}"}"#,
            "`variables` must be a JSON object",
        ),
        (
            r#"{"query":"{ __typename }","variables":[]}"#,
            "`variables` must be a JSON object",
        ),
        (
            r#"{"query":"{ __typename }","operationName":1}"#,
            "`operationName` must be a string",
        ),
        (
            r#"{"query":"{ __typename }","extensions":"x"}"#,
            "`extensions` must be a JSON object",
        ),
        (r#"[{"query":"{ __typename }"}]"#, "batched requests"),
        (
            r#""{ __typename }""#,
            "the request body must be a JSON object",
        ),
    ];
    for (body, message) in cases {
        let answer = post(&app, &[JSON_BODY], body).await;
        assert_eq!(answer.status, 400, "{body}: {}", answer.text);
        assert_eq!(content_type(&answer), JSON, "{body}");
        assert_eq!(code(&answer), "BAD_REQUEST", "{body}");
        let got = answer.json()["errors"][0]["message"].clone();
        assert!(
            got.as_str().is_some_and(|m| m.starts_with(message)),
            "{body}: {got}"
        );
    }
}

#[tokio::test]
async fn null_parameters_and_extensions_are_accepted() {
    let app = TestApp::embedded(5).await;
    let body = r#"{"query":"{ __typename }","operationName":null,"variables":null,"extensions":{"some":"value"}}"#;
    let answer = post(&app, &[JSON_BODY], body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(answer.json().get("errors").is_none(), "{}", answer.text);
}

#[tokio::test]
async fn a_body_that_is_not_json_by_its_content_type_gets_415() {
    let app = TestApp::embedded(5).await;
    let cases: [&[(&str, &str)]; 4] = [
        &[],
        &[("content-type", "text/plain")],
        &[("content-type", "application/graphql")],
        &[("content-type", "application/json; charset=utf-16")],
    ];
    for headers in cases {
        let answer = post(&app, headers, TYPENAME).await;
        assert_eq!(answer.status, 415, "{headers:?}: {}", answer.text);
        assert_eq!(content_type(&answer), JSON);
        assert_eq!(code(&answer), "BAD_REQUEST");
    }
    let answer = post(
        &app,
        &[("content-type", "application/json; charset=UTF-8")],
        TYPENAME,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
}

#[tokio::test]
async fn a_request_that_fails_before_execution_has_no_data_and_its_status_follows_the_media_type() {
    let app = TestApp::embedded(5).await;
    let requests = [
        json!({ "query": "{ comments(" }),
        json!({ "query": "{ noSuchField }" }),
        json!({ "query": "query($n: Int!) { comments(sku: \"X\", first: $n) { totalCount } }", "variables": { "n": "ten" } }),
        json!({ "query": "query($n: Int!) { comments(sku: \"X\", first: $n) { totalCount } }" }),
        // A required variable absent or null is a request error (async-graphql 7.2.1 ran the
        // operation and failed the field; `http::admission::check` refuses it first).
        json!({ "query": "query($s: String!) { product(sku: $s) { sku } }", "variables": { "s": null } }),
        json!({ "query": "query($s: String!) { product(sku: $s) { sku } }" }),
    ];
    for request in requests {
        let body = request.to_string();
        let legacy = post(&app, &[JSON_BODY, ("accept", "application/json")], &body).await;
        assert_eq!(legacy.status, 200, "{body}: {}", legacy.text);
        assert!(
            legacy.text.starts_with(r#"{"errors":["#),
            "{body}: {}",
            legacy.text
        );
        assert!(legacy.json().get("data").is_none());

        let modern = post(
            &app,
            &[JSON_BODY, ("accept", "application/graphql-response+json")],
            &body,
        )
        .await;
        assert_eq!(modern.status, 400, "{body}: {}", modern.text);
        assert_eq!(content_type(&modern), GRAPHQL_RESPONSE);
        assert!(
            modern.text.starts_with(r#"{"errors":["#),
            "{body}: {}",
            modern.text
        );
    }

    // A field error is an execution result: 200 under both, with data.
    let failed = json!({ "query": r#"{ node(id: "garbage") { id } }"# }).to_string();
    let modern = post(
        &app,
        &[JSON_BODY, ("accept", "application/graphql-response+json")],
        &failed,
    )
    .await;
    assert_eq!(modern.status, 200, "{}", modern.text);
    assert!(
        modern
            .text
            .starts_with(r#"{"data":{"node":null},"errors":"#),
        "{}",
        modern.text
    );
}

/// A text that passed validation once is not validated in full again (`graphql::variables`),
/// so its later requests' variables are held to their types at our boundary: a wrong value is
/// still a request error, as async-graphql's validation answers one on a text's first request.
#[tokio::test]
async fn a_validated_texts_later_requests_with_wrong_variables_are_request_errors() {
    let app = TestApp::embedded(30).await;
    let query = "query($n: Int, $r: [Int!], $o: CommentOrder) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: $n, ratings: $r, orderBy: $o) { totalCount edges { node { rating } } } }";
    let request = |variables: Value| json!({ "query": query, "variables": variables }).to_string();
    let modern = [JSON_BODY, ("accept", "application/graphql-response+json")];
    let fine = request(json!({ "n": 2, "r": [5, 4], "o": "HIGHEST_RATED" }));
    for _ in 0..2 {
        let answer = post(&app, &modern, &fine).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert!(answer.json().get("errors").is_none(), "{}", answer.text);
        assert_eq!(
            answer.json()["data"]["comments"]["edges"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }
    for variables in [
        json!({ "n": "two" }),
        json!({ "n": 2.5 }),
        json!({ "r": [5, null] }),
        json!({ "r": ["five"] }),
        json!({ "o": "SIDEWAYS" }),
        json!({ "o": 3 }),
    ] {
        let answer = post(&app, &modern, &request(variables.clone())).await;
        assert_eq!(answer.status, 400, "{variables}: {}", answer.text);
        assert!(
            answer
                .text
                .starts_with(r#"{"errors":[{"message":"variable `$"#),
            "{variables}: {}",
            answer.text
        );
        assert_eq!(code(&answer), "GRAPHQL_VALIDATION_FAILED", "{variables}");
    }
    // A lone value where a list is expected is a list of one, as validation takes it.
    let lone = post(&app, &modern, &request(json!({ "n": 1, "r": 5 }))).await;
    assert!(lone.json().get("errors").is_none(), "{}", lone.text);
    let answer = post(&app, &modern, &fine).await;
    assert!(answer.json().get("errors").is_none(), "{}", answer.text);
}

#[tokio::test]
async fn get_reads_json_variables_from_the_url_and_refuses_mutations_and_bad_parameters() {
    let app = TestApp::embedded(5).await;
    let query = "query($sku: String!) { product(sku: $sku) { sku } }";
    let answer = get(
        &app,
        &[],
        &[("query", query), ("variables", r#"{"sku":"X"}"#)],
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(
        answer
            .text
            .starts_with(r#"{"data":{"product":{"sku":"X"}}"#),
        "{}",
        answer.text
    );

    let answer = get(&app, &[], &[("query", query), ("variables", "{sku")]).await;
    assert_eq!(
        (answer.status, code(&answer).as_str()),
        (400, "BAD_REQUEST")
    );
    let answer = get(&app, &[], &[("operationName", "A")]).await;
    assert_eq!(
        (answer.status, code(&answer).as_str()),
        (400, "BAD_REQUEST")
    );

    let mutation = r#"mutation { deleteComment(input: { id: "x" }) { deletedCommentId } }"#;
    let answer = get(&app, &[], &[("query", mutation)]).await;
    assert_eq!(answer.status, 405, "{}", answer.text);
    assert_eq!(code(&answer), "BAD_REQUEST");
}
