//! What completing field errors costs (`dynapage::graphql::field_errors`): the pass the server
//! runs after execution so a failed field is a `null` and nulls propagate as the GraphQL
//! specification says. Measured on the response that needs it most often (a page of 20 edges
//! whose `totalCount` failed because the index is down), on the same response with three
//! errors, and on an error-free response (the pass returns at once). Then the pass that puts
//! every object's keys in selection order (`KeyOrder`, run on every response): on the same page
//! complete and in order, and with its `totalCount` written last, as async-graphql writes a
//! field that waited, with the text's plan kept from an earlier request and on the text's first
//! request (the plan made). See BENCHMARKS.md.

use std::hint::black_box;

use async_graphql::{Name, PathSegment, Response, ServerError, Value};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use dynapage::graphql::field_errors::{KeyOrder, OutputTypes, complete};

const QUERY: &str = r#"
query Page($sku: String!, $after: String) {
  comments(sku: $sku, first: 20, after: $after) {
    totalCount
    edges { cursor node { id author body rating createdAt updatedAt } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
  product(sku: $sku) { ...Rated }
}
fragment Rated on Product { sku comments(first: 1) { totalCount } }"#;

/// The executed page as async-graphql leaves it: `totalCount` keys missing.
fn page() -> Value {
    let edges: Vec<serde_json::Value> = (0..20)
        .map(|i| {
            serde_json::json!({
                "cursor": format!("AXk3bGd2Y3Vyc29yLW9mLWNvbW1lbnQte{i:04}"),
                "node": {
                    "id": format!("Q29tbWVudDowMUg3Wk{i:04}"),
                    "author": "Ann",
                    "body": "Fits well, washed twice, colours still bright.",
                    "rating": 1 + i % 5,
                    "createdAt": "2026-09-04T15:43:19.800+00:00",
                    "updatedAt": null
                }
            })
        })
        .collect();
    let data = serde_json::json!({
        "comments": {
            "edges": edges,
            "pageInfo": { "hasNextPage": true, "hasPreviousPage": false, "startCursor": "a", "endCursor": "b" }
        },
        "product": { "sku": "DAFT_PUNK_TSHIRT", "comments": null }
    });
    Value::from_json(data).expect("JSON is a value")
}

fn error(path: &[&str]) -> ServerError {
    let mut error = ServerError::new("the page index is unavailable", None);
    error.path = path
        .iter()
        .map(|s| PathSegment::Field((*s).into()))
        .collect();
    error
}

fn bench(c: &mut Criterion) {
    let types = OutputTypes::from_sdl(&dynapage::graphql::sdl()).expect("our SDL parses");
    let document = async_graphql::parser::parse_query(QUERY).expect("the query parses");
    let cases = [
        ("no errors", Vec::new()),
        ("one error", vec![error(&["comments", "totalCount"])]),
        (
            "two errors, one object reopened",
            vec![
                error(&["comments", "totalCount"]),
                error(&["product", "comments", "totalCount"]),
            ],
        ),
    ];
    let mut group = c.benchmark_group("field_errors");
    let data = page();
    for (name, errors) in cases {
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let mut response = Response::new(data.clone());
                    response.errors = errors.clone();
                    response
                },
                |mut response| {
                    complete(&types, &document, None, &mut response);
                    black_box(response)
                },
                BatchSize::SmallInput,
            );
        });
    }
    let mut in_order = page();
    if let Value::Object(data) = &mut in_order {
        if let Some(Value::Object(comments)) = data.get_mut("comments") {
            comments.shift_insert(0, Name::new("totalCount"), Value::from(250_000));
        }
    }
    let mut total_last = in_order.clone();
    if let Value::Object(data) = &mut total_last {
        if let Some(Value::Object(comments)) = data.get_mut("comments") {
            comments.shift_remove("totalCount");
            comments.insert(Name::new("totalCount"), Value::from(250_000));
        }
    }
    // A plan kept from an earlier request of the text, or made afresh (its first request).
    let kept = KeyOrder::default();
    for (name, data, fresh) in [
        ("selection order: in order already", &in_order, false),
        (
            "selection order: totalCount written last",
            &total_last,
            false,
        ),
        (
            "selection order: first request of a text",
            &total_last,
            true,
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let order = if fresh {
                        KeyOrder::default()
                    } else {
                        kept.clone()
                    };
                    (data.clone(), order)
                },
                |(mut data, order)| {
                    order.apply(&document, None, &mut data);
                    black_box(data)
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();

    c.bench_function("field_errors/types from the SDL (once at start-up)", |b| {
        let sdl = dynapage::graphql::sdl();
        b.iter(|| OutputTypes::from_sdl(black_box(&sdl)).expect("parses"));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
