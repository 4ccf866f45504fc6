//! The price walk's unit tests: prices of documents against the schema's own SDL.

use super::*;

fn priced(query: &str, operation: Option<&str>, variables: serde_json::Value) -> Priced {
    let types = OutputTypes::from_sdl(&crate::graphql::sdl()).expect("our SDL parses");
    let document = async_graphql::parser::parse_query(query).expect("parses");
    let variables = Variables::from_json(variables);
    let settings = PagingSettings::default();
    Pricing::default().price(&types, &document, operation, &variables, &settings)
}

fn price_of(query: &str, variables: serde_json::Value) -> Option<u64> {
    match priced(query, None, variables) {
        Priced::Cost(cost) => Some(cost),
        Priced::Unknown | Priced::Invalid(_) => None,
    }
}

#[test]
fn a_kept_plan_prices_each_requests_variables() {
    let types = OutputTypes::from_sdl(&crate::graphql::sdl()).expect("our SDL parses");
    let query =
        r#"query($n: Int) { comments(sku: "D", first: $n) { totalCount edges { cursor } } }"#;
    let document = async_graphql::parser::parse_query(query).expect("parses");
    let pricing = Pricing::default();
    let settings = PagingSettings::default();
    let with = |n: i32| Variables::from_json(serde_json::json!({ "n": n }));
    let price = |variables| pricing.price(&types, &document, None, &variables, &settings);
    // Per edge: edges 1, cursor 1; totalCount 1 beside them.
    assert_eq!(price(with(10)), Priced::Cost(10 * 3 + 1));
    assert_eq!(price(with(50)), Priced::Cost(50 * 3 + 1));
    let not_an_int = Variables::from_json(serde_json::json!({ "n": "many" }));
    assert!(matches!(price(not_an_int), Priced::Invalid(_)));
    assert_eq!(
        price(with(10)),
        Priced::Cost(31),
        "the kept plan is unchanged"
    );
}

/// Issue 22, item 5: one comment at offset 100 over four ratings reads 4 × 102 items.
const ATTACK: &str = r#"comments(sku: "D", first: 1, offset: 100, ratings: [1, 2, 3, 4]) { pageInfo { hasNextPage } }"#;

#[test]
fn fields_cost_one_plus_their_selection_and_connections_their_reads() {
    let page = r#"{ comments(sku: "D", first: 10) { edges { cursor node { id body } } pageInfo { hasNextPage } } }"#;
    // Per edge: edges 1, cursor 1, node 1 + 2; pageInfo 1 + 1: 7.
    assert_eq!(price_of(page, serde_json::json!({})), Some(10 * 7 + 1));
    assert_eq!(
        price_of(&format!("{{ {ATTACK} }}"), serde_json::json!({})),
        Some(412)
    );
    let product = r#"{ product(sku: "D") { sku comments(first: 5) { totalCount } } }"#;
    assert_eq!(
        price_of(product, serde_json::json!({})),
        Some(1 + 1 + (5 + 1))
    );
    // A reader's reports are a connection too: priced by the page they ask for.
    let reports = r#"{ viewer { reports(first: 30) { edges { node { status } } } } }"#;
    assert_eq!(
        price_of(reports, serde_json::json!({})),
        Some(1 + (30 * (1 + 1 + 1) + 1))
    );
}

#[test]
fn arguments_come_from_variables_their_defaults_and_lone_values() {
    let query = r#"query($n: Int, $o: Int = 100, $r: [Int!]) { comments(sku: "D", first: $n, offset: $o, ratings: $r) { pageInfo { hasNextPage } } }"#;
    let variables = serde_json::json!({"n": 1, "r": [1, 2, 3, 4]});
    assert_eq!(price_of(query, variables), Some(412));
    // A lone value where a list is expected is a list of one: one partition.
    let lone =
        r#"{ comments(sku: "D", first: 1, offset: 100, ratings: 3) { pageInfo { hasNextPage } } }"#;
    assert_eq!(price_of(lone, serde_json::json!({})), Some(2 + 1 + 103 - 3));
    let ids = r#"query($ids: [ID!]!) { a: nodes(ids: $ids) { id } b: nodes(ids: $ids) { id } }"#;
    let variables = serde_json::json!({"ids": ["a", "b", "c"]});
    assert_eq!(price_of(ids, variables), Some(2 * (3 * 2 + 1)));
    let grouped = r#"{ comments(sku: "D", first: 1, orderBy: HIGHEST_RATED) { totalCount } }"#;
    // A page of 1 by rating reads the page, one more, the boundary and one item per group
    // (five): 8 items, 5 beyond the page's 1 × 1 + 1.
    assert_eq!(price_of(grouped, serde_json::json!({})), Some(2 + 5));
}

#[test]
fn fragments_count_at_every_spread_on_their_own_type() {
    let spread = format!(
        r#"{{ node(id: "x") {{ ...P }} a: node(id: "y") {{ ...P }} }} fragment P on Product {{ {ATTACK} }}"#
    );
    assert_eq!(
        price_of(&spread, serde_json::json!({})),
        Some(2 * (1 + 412))
    );
    let inline = format!(r#"{{ node(id: "x") {{ ... on Product {{ {ATTACK} }} }} }}"#);
    assert_eq!(price_of(&inline, serde_json::json!({})), Some(1 + 412));
}

#[test]
fn typename_is_free_and_introspection_costs_one_a_field() {
    assert_eq!(price_of("{ __typename }", serde_json::json!({})), Some(0));
    let schema = "{ __schema { types { name fields { name } } } }";
    assert_eq!(price_of(schema, serde_json::json!({})), Some(5));
}

#[test]
fn only_the_operation_that_runs_is_priced() {
    let two = format!("query A {{ {ATTACK} }} query B {{ __typename a: {ATTACK} b: {ATTACK} }}");
    assert_eq!(
        priced(&two, Some("A"), serde_json::json!({})),
        Priced::Cost(412)
    );
    assert_eq!(
        priced(&two, Some("B"), serde_json::json!({})),
        Priced::Cost(2 * 412)
    );
    assert_eq!(priced(&two, None, serde_json::json!({})), Priced::Unknown);
    assert_eq!(
        priced(&two, Some("C"), serde_json::json!({})),
        Priced::Unknown
    );
    // A neighbour's arguments decide nothing about the operation that runs.
    let neighbour = format!(
        "query A($n: Int!) {{ comments(sku: \"D\", first: $n) {{ totalCount }} }} query B {{ {ATTACK} }}"
    );
    assert_eq!(
        priced(&neighbour, Some("B"), serde_json::json!({})),
        Priced::Cost(412)
    );
}

#[test]
fn documents_the_walk_cannot_follow_are_unknown_and_bad_arguments_invalid() {
    for query in [
        "{ nothing }",
        "{ ...Missing }",
        "{ ... on Nowhere { __typename } }",
    ] {
        assert_eq!(
            priced(query, None, serde_json::json!({})),
            Priced::Unknown,
            "{query}"
        );
    }
    for (query, variables) in [
        (
            r#"{ comments(sku: "D", first: "ten") { totalCount } }"#,
            serde_json::json!({}),
        ),
        (
            r#"{ comments(sku: "D", first: $undefined) { totalCount } }"#,
            serde_json::json!({}),
        ),
        (
            r#"{ comments(sku: "D", orderBy: SIDEWAYS) { totalCount } }"#,
            serde_json::json!({}),
        ),
        // Valid for `Int` (a 64-bit integer), not for the resolver's `i32`: async-graphql's
        // validation passes it, so the price must refuse it or the request ran unpriced.
        (
            r#"query($n: Int) { comments(sku: "D", first: $n) { totalCount } }"#,
            serde_json::json!({"n": 3_000_000_000_u64}),
        ),
    ] {
        let answer = priced(query, None, variables);
        assert!(matches!(answer, Priced::Invalid(_)), "{query}: {answer:?}");
    }
}
