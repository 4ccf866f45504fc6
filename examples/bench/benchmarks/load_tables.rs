//! The Markdown tables of `load` (BENCHMARKS.md, "Throughput", "Raw backends", "Server against
//! the raw backends", "Latency against offset", and the targets) from its CSV files:
//! load.csv, raw.csv and offsets.csv. `load` prints them at its end; `summarize` prints them
//! again from the files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::report::{Row, read_csv};
use crate::stats::thousands;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory of load.csv, raw.csv and offsets.csv [default: the results directory]
    dir: Option<PathBuf>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    print(args.dir.as_deref().unwrap_or(ctx.results_dir()))
}

fn rows(path: &Path) -> anyhow::Result<Vec<Row>> {
    if path.exists() {
        read_csv(path)
    } else {
        Ok(Vec::new())
    }
}

/// Prints the tables of the CSV files in `dir`.
pub fn print(dir: &Path) -> anyhow::Result<()> {
    let load = rows(&dir.join("load.csv"))?;
    let raw = rows(&dir.join("raw.csv"))?;
    let offsets = rows(&dir.join("offsets.csv"))?;
    let connections = load.first().map_or("?", |r| r.get("connections"));
    println!("### Throughput ({connections} connections)\n");
    println!(
        "| backend | case | offset | req/s (spread) | p50 ms (spread) | p99 ms (spread) | items read | store queries | index calls | errors |"
    );
    println!("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    for r in &load {
        println!(
            "| {} | {} | {} | {} (±{}%) | {} (±{}%) | {} (±{}%) | {} | {} | {} | {} |",
            r.get("backend"),
            r.get("case"),
            thousands(r.num("offset"), 0),
            thousands(r.num("req_s"), 1),
            r.get("req_s_spread_pct"),
            thousands(r.num("p50_ms"), 2),
            r.get("p50_spread_pct"),
            thousands(r.num("p99_ms"), 2),
            r.get("p99_spread_pct"),
            r.get("items_read"),
            r.get("store_queries"),
            r.get("index_calls"),
            r.get("errors"),
        );
    }
    if !raw.is_empty() {
        print_raw(&load, &raw);
    }
    if !offsets.is_empty() {
        print_offsets(&offsets);
    }
    Ok(())
}

fn print_raw(load: &[Row], raw: &[Row]) {
    println!("\n### Raw backends (same concurrency)\n");
    println!("| backend | operation | req/s (spread) | p50 ms | p99 ms | items per call |");
    println!("|---|---|--:|--:|--:|--:|");
    for r in raw {
        println!(
            "| {} | {} | {} (±{}%) | {} | {} | {} |",
            r.get("backend"),
            r.get("operation"),
            thousands(r.num("req_s"), 1),
            r.get("req_s_spread_pct"),
            thousands(r.num("p50_ms"), 2),
            thousands(r.num("p99_ms"), 2),
            r.get("items"),
        );
    }
    // "Query Limit 21 (first)", "key_at, then Query Limit 21 (offset, pinned)": by the name
    // in parentheses.
    let measured: BTreeMap<&str, f64> = raw
        .iter()
        .filter(|r| r.get("backend") == "dynamodb-local")
        .map(|r| {
            let operation = r.get("operation");
            let name = operation.rsplit('(').next().unwrap_or(operation);
            (name.trim_end_matches(')'), r.num("req_s"))
        })
        .collect();
    println!("\n### Server against the raw backends (DynamoDB Local + Redis)\n");
    println!(
        "Raw equivalent of a page: for the first page, the bare client's `Query` rate; for the offset page, the bare client's rate for the same two calls (the index's `key_at` in Redis, then the `Query` below the key it found); for the two-query pages, the first page's `Query` rate divided by two.\n"
    );
    println!("| cores | case | server req/s | raw equivalent req/s | ratio |");
    println!("|---|---|--:|--:|--:|");
    for r in load {
        let suffix = match r.get("backend") {
            "dynamodb" => "",
            "dynamodb-pinned" => ", pinned",
            _ => continue,
        };
        let equivalent = if r.get("case") == "offset" {
            measured.get(format!("offset{suffix}").as_str()).copied()
        } else {
            measured
                .get(format!("first{suffix}").as_str())
                .map(|first| first / r.num("store_queries").max(1.0))
        };
        let Some(equivalent) = equivalent else {
            continue;
        };
        println!(
            "| {} | {} | {} | {} | {:.2} |",
            if suffix.is_empty() {
                "shared"
            } else {
                "separate"
            },
            r.get("case"),
            thousands(r.num("req_s"), 1),
            thousands(equivalent, 1),
            r.num("req_s") / equivalent
        );
    }
}

fn print_offsets(offsets: &[Row]) {
    println!("\n### Latency against offset (one connection, page of 20)\n");
    let mut series: BTreeMap<(String, String), BTreeMap<u64, &Row>> = BTreeMap::new();
    for r in offsets {
        let key = (r.get("backend").to_owned(), r.get("mode").to_owned());
        series
            .entry(key)
            .or_default()
            .insert(r.num("offset") as u64, r);
    }
    let names: Vec<String> = series
        .keys()
        .map(|(b, m)| format!("{b} {m}: p50 ms (spread) / items read"))
        .collect();
    println!("| offset | {} |", names.join(" | "));
    println!("|--:|{}", "--:|".repeat(series.len()));
    let all: std::collections::BTreeSet<u64> =
        offsets.iter().map(|r| r.num("offset") as u64).collect();
    for offset in all {
        let cells: Vec<String> = series
            .values()
            .map(|s| {
                s.get(&offset).map_or(String::new(), |r| {
                    format!(
                        "{} (±{}%) / {}",
                        thousands(r.num("p50_ms"), 2),
                        r.get("p50_spread_pct"),
                        thousands(r.num("items_read"), 0)
                    )
                })
            })
            .collect();
        println!(
            "| {} | {} |",
            thousands(offset as f64, 0),
            cells.join(" | ")
        );
    }
    println!("\n### Targets\n");
    for ((backend, mode), s) in &series {
        let (Some((lo, low)), Some((hi, high))) = (s.first_key_value(), s.last_key_value()) else {
            continue;
        };
        println!(
            "- {backend} {mode}: p50 at offset {} / p50 at offset {} = {:.2}",
            thousands(*hi as f64, 0),
            thousands(*lo as f64, 0),
            high.num("p50_ms") / low.num("p50_ms")
        );
    }
}
