//! The metrics table (`docs/operations/operations.md`) is every metric name the code emits, and
//! only those: the names are read from the source (every `"dynapage_…"` literal under `src/`),
//! so a metric that appears only after its first event is held to the table too. Every name
//! the README and the book mention elsewhere is in the table, and what a running server's
//! `/metrics` serves is in it, with the type the table gives.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::markdown::{Document, examples_documents};
use crate::helpers::TestApp;

/// The table between `<!-- metrics -->` and `<!-- /metrics -->`: name → type.
fn table() -> BTreeMap<String, String> {
    let document = Document::read("docs/operations/operations.md");
    let start = document
        .text
        .find("<!-- metrics -->")
        .expect("a `<!-- metrics -->` table");
    let end = document.text[start..]
        .find("<!-- /metrics -->")
        .expect("its end")
        + start;
    let mut names = BTreeMap::new();
    for line in document.text[start..end].lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let Some(name) = cells[0]
            .strip_prefix("`dynapage_")
            .and_then(|n| n.strip_suffix('`'))
        else {
            continue;
        };
        let kind = cells.get(1).copied().unwrap_or("").to_owned();
        assert!(
            names.insert(format!("dynapage_{name}"), kind).is_none(),
            "dynapage_{name} has two rows"
        );
    }
    names
}

/// Every `dynapage_[a-z0-9_]+` word of `text`.
fn names_in(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("dynapage_") {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            names.insert(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

/// The names the code emits: the server's one list of metrics (`telemetry::metric::ALL`), which
/// every call site goes through (clippy refuses the `metrics` macros anywhere else).
fn emitted() -> BTreeSet<String> {
    dynapage::telemetry::metric::ALL
        .iter()
        .map(|metric| metric.name.to_owned())
        .collect()
}

#[test]
fn the_metrics_table_names_every_metric_the_code_emits_and_no_other() {
    let documented: BTreeSet<String> = table().into_keys().collect();
    let emitted = emitted();
    assert!(emitted.len() > 30, "only {emitted:?} found in src/");
    let undocumented: Vec<_> = emitted.difference(&documented).collect();
    let not_emitted: Vec<_> = documented.difference(&emitted).collect();
    assert!(
        undocumented.is_empty() && not_emitted.is_empty(),
        "emitted, not in the table: {undocumented:?}\nin the table, not emitted: {not_emitted:?}"
    );
}

#[test]
fn every_metric_the_readme_and_the_book_mention_is_in_the_table() {
    let documented = table();
    let mut unknown = Vec::new();
    for document in examples_documents() {
        if document.path.starts_with("docs/benchmarks/") {
            continue; // past rounds keep the names of their day
        }
        for name in names_in(&document.text) {
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .filter(|base| {
                    documented
                        .get(*base)
                        .is_some_and(|kind| kind == "histogram")
                })
                .unwrap_or(&name);
            if !documented.contains_key(base) {
                unknown.push(format!("{}: {name}", document.path));
            }
        }
    }
    assert!(unknown.is_empty(), "not in the metrics table: {unknown:?}");
}

#[tokio::test]
async fn what_metrics_serves_is_in_the_table_with_its_type() {
    let documented = table();
    let app = TestApp::embedded(50).await;
    app.data(
        r#"{ comments(sku: "DAFT_PUNK_TSHIRT", first: 2) { totalCount edges { node { id } } } }"#,
        json!({}),
    )
    .await;
    let text = app
        .client
        .get(format!("{}/metrics", app.address))
        .send()
        .await
        .expect("sent")
        .text()
        .await
        .expect("a body");
    let mut served = 0;
    let mut problems = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (name, kind) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        served += 1;
        match documented.get(name) {
            None => problems.push(format!("{name} is served, not in the table")),
            Some(documented) if documented != kind => problems.push(format!(
                "{name} is served as a {kind}, the table says {documented}"
            )),
            Some(_) => {}
        }
    }
    assert!(served >= 3, "{text}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn names_are_found_as_words() {
    let found = names_in("`dynapage_a_total{x}`, rate(dynapage_b_bucket[5m]) my_dynapage_c");
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        ["dynapage_a_total", "dynapage_b_bucket"]
    );
}
