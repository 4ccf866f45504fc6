//! `dynapage verify [--sku S]`: compares the table with the Redis index and prints the drift;
//! without `--sku`, also each comment's helpful count with the votes the table holds for it;
//! exits 1 when there is any drift or a count that disagrees, 0 when there is none. With `--data-dir`, it checks the durable
//! embedded store's database file and compares the store with the index built from it.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::config::BackendArgs;
use crate::domain::{IndexEntry, Rating, Sku};
use crate::startup::{Process, open_backends};
use crate::sync::{DriftReport, HelpfulCheck, ProductDrift};

/// The arguments of `dynapage verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Verify only this product (reads its GSI partition rather than scanning the table).
    #[arg(long, env = "DYNAPAGE_VERIFY_SKU", conflicts_with = "person")]
    pub sku: Option<String>,
    /// Check instead that nothing of this person (a token subject) is left after their
    /// erasure: no comment, vote or report in the store, nothing in their list in the index.
    #[arg(long)]
    pub person: Option<String>,
    /// Example comment ids printed per product and kind of drift.
    #[arg(long, env = "DYNAPAGE_VERIFY_EXAMPLES", default_value_t = 5)]
    pub examples: usize,
    /// Scan segments read concurrently (without --sku).
    #[arg(long, env = "DYNAPAGE_SCAN_SEGMENTS", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub segments: u32,
    /// The store and index to compare.
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// Runs `dynapage verify`: prints the drift, and exits with 1 when there is any (or a helpful
/// count that disagrees), 0 when there is none. `Err` when a backend cannot be opened or read,
/// or `--sku` is not a SKU.
pub async fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    match args.backend.data_dir()? {
        // The durable embedded store: SQLite's own check of the file, then the store against
        // the index built from it (the embedded index, as `serve` builds it) or against the
        // Redis index as it is (`--index redis`). The server must be stopped (the lock).
        Some(dir) => {
            crate::store::sqlite::quick_check(dir).context("verify: the database file")?;
            println!("database file: ok");
        }
        None => args.backend.require_dynamodb_and_redis("verify")?,
    }
    let sku = args
        .sku
        .as_deref()
        .map(Sku::parse)
        .transpose()
        .context("--sku / DYNAPAGE_VERIFY_SKU")?;
    let shutdown = CancellationToken::new();
    let backends = open_backends(&args.backend, Process::Verify, &shutdown).await?;
    if let Some(person) = &args.person {
        let left = verify_person(&backends.store, &backends.index, person).await;
        shutdown.cancel();
        return left;
    }
    let report = crate::sync::verify(
        &backends.store,
        &backends.index,
        sku.as_ref(),
        args.segments,
    )
    .await
    .context("verify")?;
    shutdown.cancel();
    print!("{}", render(&report, args.examples));
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `verify --person`: what is left of `sub` (a dry run of their erasure, and their list in the
/// index), printed; exit 1 when anything is. The change log names no author, so nothing of
/// theirs can be in it; the response caches are each server's (a change purges them).
async fn verify_person(
    store: &crate::store::AnyStore,
    index: &crate::index::AnyIndex,
    sub: &str,
) -> anyhow::Result<ExitCode> {
    use crate::index::PageIndex as _;
    let erasure = crate::privacy::Erasure {
        sub: sub.to_owned(),
        mode: crate::domain::ErasureMode::Delete,
        dry_run: true,
    };
    let left = crate::privacy::erase(store, &erasure, |_| {})
        .await
        .context("verify --person: reading the person's lists")?;
    let list = crate::domain::AuthorList::new(sub, None).index_name();
    let indexed = index
        .count(&list, crate::domain::RatingSet::ALL)
        .await
        .context("verify --person: their list in the index")?;
    println!(
        "person {sub}: {} comments, {} helpful votes and {} reports in the store; {indexed} comments in their list in the index",
        left.comments_deleted, left.votes_removed, left.reports_removed
    );
    if left.total() == 0 && indexed == 0 {
        println!("nothing of the person is left");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("the person's data is still there: run erase-person (again)");
        Ok(ExitCode::FAILURE)
    }
}

/// The report as printed: a line per drifted product, a few example ids, a summary line.
pub fn render(report: &DriftReport, examples: usize) -> String {
    let mut out = String::new();
    for drift in &report.drifted {
        render_product(&mut out, drift, examples);
    }
    render_helpful(&mut out, report.helpful.as_ref(), examples);
    if report.is_clean() {
        out.push_str(&format!(
            "no drift: {} products, {} comments\n",
            report.products, report.comments
        ));
    } else {
        out.push_str(&format!(
            "drift in {} of {} products ({} comments in the table)\n",
            report.drifted.len(),
            report.products,
            report.comments
        ));
    }
    out
}

/// The helpful counts' line, and a few comments whose count disagrees with their votes.
fn render_helpful(out: &mut String, check: Option<&HelpfulCheck>, examples: usize) {
    let Some(check) = check else {
        out.push_str("helpful counts: not checked (a full verify, without --sku, checks them)\n");
        return;
    };
    let verdict = if check.mismatched.is_empty() {
        "every count equals its votes".to_owned()
    } else {
        format!("{} counts differ from their votes", check.mismatched.len())
    };
    out.push_str(&format!(
        "helpful counts: {verdict} ({} comments, {} votes; {} votes of deleted comments)\n",
        check.comments, check.votes, check.orphan_votes
    ));
    for mismatch in check.mismatched.iter().take(examples) {
        out.push_str(&format!(
            "  HELPFUL COUNT {} {}: helpfulCount={} votes={}\n",
            mismatch.sku, mismatch.id, mismatch.count, mismatch.votes
        ));
    }
    if !check.unranked.is_empty() {
        out.push_str(&format!(
            "helpful ranks: {} comments out of place in the table's indexes (no rank or \
             not their count's, written before the list by helpful votes existed; or index keys \
             that disagree with their status, written by another tool): run `dynapage reindex`\n",
            check.unranked.len()
        ));
        for (sku, id) in check.unranked.iter().take(examples) {
            out.push_str(&format!("  HELPFUL RANK {sku} {id}\n"));
        }
    }
}

fn render_product(out: &mut String, drift: &ProductDrift, examples: usize) {
    let total = |counts: &[u64; 5]| counts.iter().sum::<u64>();
    let ratings: Vec<String> = Rating::ALL
        .into_iter()
        .filter(|r| drift.table_counts[r.index()] != drift.index_counts[r.index()])
        .map(|r| {
            format!(
                "r{}={}/{}",
                r.get(),
                drift.table_counts[r.index()],
                drift.index_counts[r.index()]
            )
        })
        .collect();
    out.push_str(&format!(
        "DRIFT {}: table={} index={} missing={} extra={} mismatched={} ratings(table/index): {}\n",
        drift.sku,
        total(&drift.table_counts),
        total(&drift.index_counts),
        drift.missing.len(),
        drift.extra.len(),
        drift.mismatched.len(),
        if ratings.is_empty() {
            "same counts".to_owned()
        } else {
            ratings.join(" ")
        }
    ));
    let line = |out: &mut String, kind: &str, entry: &IndexEntry, detail: String| {
        out.push_str(&format!(
            "  {kind} {} rating={}{detail}\n",
            entry.key.id(),
            entry.rating.get()
        ));
    };
    for entry in drift.missing.iter().take(examples) {
        line(out, "missing", entry, String::new());
    }
    for entry in drift.extra.iter().take(examples) {
        line(out, "extra", entry, String::new());
    }
    for mismatch in drift.mismatched.iter().take(examples) {
        let detail = format!(
            " index_rating={} index_ms={} table_ms={} version(table/index)={}/{}",
            mismatch.index.rating.get(),
            mismatch.index.key.millis(),
            mismatch.table.key.millis(),
            mismatch.table.version,
            mismatch.index.version
        );
        line(out, "mismatched", &mismatch.table, detail);
    }
}
