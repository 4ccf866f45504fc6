//! `plot`: page latency (p50, one connection) against offset from offsets.csv, drawn by
//! gnuplot (an external program, as wrk is) into latency-vs-offset.png: the index and the naive
//! walk on the embedded backends, and the index on DynamoDB Local + Redis when measured.
//! Without gnuplot there is no picture, only the CSV and the table (`summarize`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

use crate::context::Context;
use crate::report::read_csv;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The sweep's CSV [default: offsets.csv in the results directory]
    #[arg(long)]
    csv: Option<PathBuf>,
    /// The picture [default: latency-vs-offset.png in the results directory]
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let csv = args.csv.unwrap_or_else(|| ctx.result("offsets.csv"));
    let out = args
        .out
        .unwrap_or_else(|| ctx.result("latency-vs-offset.png"));
    draw(&csv, &out)
}

/// Draws the picture; fails, saying how to install it, without gnuplot.
pub fn draw(csv: &Path, out: &Path) -> anyhow::Result<()> {
    crate::processes::require(
        "gnuplot",
        "apt-get install gnuplot-nox (Debian, Ubuntu) or brew install gnuplot",
    )?;
    let rows = read_csv(csv)?;
    // "x p50" rows of one series; offset 0 is drawn at x = 1 (log axis).
    let series = |backend: &str, mode: &str| -> String {
        rows.iter()
            .filter(|r| r.get("backend") == backend && r.get("mode") == mode)
            .map(|r| format!("{} {}\n", r.num("offset").max(1.0), r.get("p50_ms")))
            .collect()
    };
    let mut commands = Vec::new();
    let mut data = Vec::new();
    for (backend, mode, style, title) in [
        (
            "embedded",
            "index",
            "pt 7",
            "embedded, index (Redis-like treap)",
        ),
        (
            "embedded",
            "naive walk",
            "pt 5",
            "embedded, naive walk (no index)",
        ),
        ("dynamodb", "index", "pt 9", "DynamoDB Local + Redis, index"),
    ] {
        let points = series(backend, mode);
        if !points.is_empty() {
            commands.push(format!(
                "'-' using 1:2 with linespoints lw 2 {style} title '{title}'"
            ));
            // Inline data ('-') ends with a line holding "e".
            data.push(points + "e\n");
        }
    }
    if commands.is_empty() {
        bail!("{} holds no sweep", csv.display());
    }
    let script = format!(
        r#"set terminal pngcairo size 800,500 font "sans,10"
set output "{}"
set title "Page of 20 at an offset: median latency, one connection"
set xlabel "offset (items skipped)"
set ylabel "p50 latency (ms)"
set logscale xy
set xtics ("0" 1, "10^2" 100, "10^3" 1000, "10^4" 10000, "10^5" 100000, "10^6" 1000000)
set format y "%g"
set grid
set key top left
plot {}
{}"#,
        out.display(),
        commands.join(", "),
        data.concat()
    );
    let mut gnuplot = Command::new("gnuplot")
        .stdin(Stdio::piped())
        .spawn()
        .context("starting gnuplot")?;
    gnuplot
        .stdin
        .take()
        .context("gnuplot's stdin")?
        .write_all(script.as_bytes())?;
    let status = gnuplot.wait()?;
    if !status.success() {
        bail!("gnuplot failed ({status})");
    }
    let size = std::fs::metadata(out).map_or(0, |m| m.len());
    println!("wrote {} ({size} bytes)", out.display());
    Ok(())
}
