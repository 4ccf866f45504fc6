//! `page-numbers`: what page numbers cost beside a page (BENCHMARKS.md, "Page numbers"): a page
//! of 20 alone, and the same page with `totalCount`, `startOffset` and `pageCursors(around: 5)`,
//! at offset 0 and at the deep offset (10^6), (a) on the embedded backends and (b) on DynamoDB
//! Local + Redis, in rounds (`rounds`: the method). Every response's `extensions.cost` says
//! what it read.

use anyhow::ensure;
use serde_json::Value;

use super::rounds::{self, Plan};
use super::rounds_table::Case;
use super::{PAGE_SELECTION, SKU};
use crate::context::Context;
use crate::report::log;

/// The pager's selection: the count, the page's offset, and the links of a numbered pager.
const PAGER: &str = "totalCount startOffset pageCursors(around: 5) { pageCount first { page cursor offset } last { page cursor offset } previous { page cursor offset } next { page cursor offset } around { page cursor offset isCurrent } }";

/// The page alone (the baseline), and the page with the pager.
const CASES: [Case; 2] = [
    Case {
        name: "page",
        label: "page alone",
    },
    Case {
        name: "pager",
        label: "page + pager",
    },
];

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    rounds: rounds::Args,
    /// The results' file name (another keeps an earlier run's): <name>.txt and <name>.csv
    #[arg(long, default_value = "page-numbers")]
    result_name: String,
}

/// The page, and the page with the pager.
#[derive(Debug)]
struct PageNumbers;

impl Plan for PageNumbers {
    fn name(&self) -> &'static str {
        "page-numbers"
    }

    fn cases(&self) -> &[Case] {
        &CASES
    }

    fn query(&self, case: Case, offset: u64) -> String {
        let selection = if case == CASES[1] {
            format!("{PAGE_SELECTION} {PAGER}")
        } else {
            PAGE_SELECTION.to_owned()
        };
        format!("{{ comments(sku: \"{SKU}\", first: 20, offset: {offset}) {{ {selection} }} }}")
    }

    fn verify(&self, case: Case, offset: u64, total: u64, comments: &Value) -> anyhow::Result<()> {
        if case == CASES[1] {
            check_pager(comments, offset, total)?;
        }
        Ok(())
    }

    fn describe(&self) -> Vec<String> {
        vec![format!("# page of 20 alone, and with {PAGER}")]
    }

    fn ratio(&self) -> &'static str {
        "pager/page"
    }
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    rounds::run(ctx, &PageNumbers, &args.rounds, &args.result_name).await
}

/// Fails where the page numbers do not fit the product.
fn check_pager(comments: &Value, offset: u64, total: u64) -> anyhow::Result<()> {
    let pager = &comments["pageCursors"];
    let page_count = total.div_ceil(20);
    let mut problems = Vec::new();
    if comments["totalCount"].as_u64() != Some(total) {
        problems.push(format!("totalCount {} != {total}", comments["totalCount"]));
    }
    if comments["startOffset"].as_u64() != Some(offset) {
        problems.push(format!(
            "startOffset {} != {offset}",
            comments["startOffset"]
        ));
    }
    if pager["pageCount"].as_u64() != Some(page_count) {
        problems.push(format!("pageCount {} != {page_count}", pager["pageCount"]));
    }
    let around = pager["around"].as_array().cloned().unwrap_or_default();
    let current: Vec<&Value> = around.iter().filter(|a| a["isCurrent"] == true).collect();
    let fits = |a: &&Value| {
        a["page"].as_u64() == Some(offset / 20 + 1) && a["offset"].as_u64() == Some(offset)
    };
    if current.len() != 1 || !current.first().is_some_and(fits) {
        problems.push(format!("current page {current:?}"));
    }
    ensure!(
        problems.is_empty(),
        "page numbers do not fit: {}",
        problems.join("; ")
    );
    let pages: Vec<String> = around.iter().map(|a| a["page"].to_string()).collect();
    log(&format!(
        "pager at offset {offset}: pageCount {page_count}, around [{}], last page {}",
        pages.join(", "),
        pager["last"]["page"]
    ));
    Ok(())
}
