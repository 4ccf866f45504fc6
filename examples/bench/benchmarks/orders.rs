//! `orders`: a page of 20 in each `orderBy` against newest-first (BENCHMARKS.md, "Sort
//! orders"): at offset 0 and at the deep offset (10^6), (a) on the embedded backends and (b)
//! on DynamoDB Local + Redis, in rounds (`rounds`: the method), each order's runs beside
//! `NEWEST`'s of the same round. Each query is checked once first (`totalCount`,
//! `startOffset`, the page in its order) and its `extensions.cost` kept.

use anyhow::{Context as _, ensure};
use chrono::{DateTime, FixedOffset};
use serde_json::Value;

use super::SKU;
use super::rounds::{self, Plan};
use super::rounds_table::Case;
use crate::context::Context;

/// What each page selects: the benchmarks' page, and `helpfulCount` (which `MOST_HELPFUL`
/// pages are checked by), in every order alike.
const PAGE_SELECTION: &str = "edges { cursor node { id author body rating createdAt helpfulCount } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }";

/// The orders, `NEWEST` (the default, the baseline) first; a case's name is its `orderBy`
/// value in lower case with dashes.
const CASES: [Case; 5] = [
    Case {
        name: "newest",
        label: "NEWEST",
    },
    Case {
        name: "oldest",
        label: "OLDEST",
    },
    Case {
        name: "highest-rated",
        label: "HIGHEST_RATED",
    },
    Case {
        name: "lowest-rated",
        label: "LOWEST_RATED",
    },
    Case {
        name: "most-helpful",
        label: "MOST_HELPFUL",
    },
];

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    rounds: rounds::Args,
    /// The results' file name (another keeps an earlier run's): <name>.txt and <name>.csv
    #[arg(long, default_value = "orders")]
    result_name: String,
}

/// A page in each order.
#[derive(Debug)]
struct Orders;

impl Plan for Orders {
    fn name(&self) -> &'static str {
        "orders"
    }

    fn cases(&self) -> &[Case] {
        &CASES
    }

    fn query(&self, case: Case, offset: u64) -> String {
        page(case, offset, PAGE_SELECTION)
    }

    fn check_query(&self, case: Case, offset: u64) -> String {
        page(
            case,
            offset,
            &format!("{PAGE_SELECTION} totalCount startOffset"),
        )
    }

    fn verify(&self, case: Case, offset: u64, total: u64, comments: &Value) -> anyhow::Result<()> {
        ensure!(
            comments["totalCount"].as_u64() == Some(total),
            "totalCount {} != {total}",
            comments["totalCount"]
        );
        ensure!(
            comments["startOffset"].as_u64() == Some(offset),
            "startOffset {} != {offset}",
            comments["startOffset"]
        );
        let keys = comments["edges"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|edge| sort_key(case, &edge["node"]))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let out_of_order = keys.windows(2).position(|pair| pair[0] < pair[1]);
        ensure!(
            out_of_order.is_none(),
            "edges {out_of_order:?} and the next are out of {} order",
            case.label
        );
        Ok(())
    }

    fn describe(&self) -> Vec<String> {
        let orders: Vec<&str> = CASES.iter().map(|c| c.label).collect();
        vec![format!(
            "# a page of 20 ({PAGE_SELECTION}) in each orderBy: {}; each against NEWEST",
            orders.join(", ")
        )]
    }

    fn ratio(&self) -> &'static str {
        "order/NEWEST"
    }
}

/// The query of a page of 20 in the case's order.
fn page(case: Case, offset: u64, selection: &str) -> String {
    let order = case.label;
    format!(
        "{{ comments(sku: \"{SKU}\", first: 20, offset: {offset}, orderBy: {order}) {{ {selection} }} }}"
    )
}

/// A comment's place in the case's order as a key that does not grow along the page: the
/// rating (negated from the lowest) or the helpful count, and then the time, in milliseconds
/// (negated for oldest first).
fn sort_key(case: Case, node: &Value) -> anyhow::Result<(i64, i64)> {
    let rating = node["rating"].as_i64().context("a rating")?;
    let created: DateTime<FixedOffset> = node["createdAt"]
        .as_str()
        .context("a createdAt")?
        .parse()
        .context("createdAt in RFC 3339")?;
    let time = created.timestamp_millis();
    Ok(match case.label {
        "OLDEST" => (0, -time),
        "HIGHEST_RATED" => (rating, time),
        "LOWEST_RATED" => (-rating, time),
        "MOST_HELPFUL" => (node["helpfulCount"].as_i64().context("a count")?, time),
        _ => (0, time),
    })
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    rounds::run(ctx, &Orders, &args.rounds, &args.result_name).await
}
