//! `ab soak`: the WebSocket soak (the integration test `ws_soak`, BENCHMARKS.md "Soak beside
//! hostile sockets") with one server setting at two values, given by its environment variable,
//! which the test's server inherits. The test runs the debug server binary it was built with;
//! the binary given here (a release build) is copied over it for the runs and put back
//! afterwards, however they end. The order of the two values flips every round. Each run's
//! report is printed; then, per value, the p99 ratio (beside the sockets / quiet) of each round
//! and the server's CPU.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};

use super::header;
use crate::context::Context;
use crate::report::log;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server binary the soak runs (e.g. target/release/dynapage)
    binary: PathBuf,
    /// The setting's environment variable, e.g. DYNAPAGE_WEBSOCKET_SEND_BUFFER_BYTES
    variable: String,
    /// Its first value
    a: String,
    /// Its second value
    b: String,
    /// Rounds: one run with each value, the order flipped every round
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// Writes per phase (the test's SOAK_WRITES)
    #[arg(long, default_value_t = 1000)]
    writes: u32,
    /// One kind of socket only (the test's SOAK_ONLY; 3: 200 honest subscribers instead of
    /// the hostile mix)
    #[arg(long)]
    only: Option<u32>,
    /// The result file's name in bench/results/ab, without `.txt`
    #[arg(long, default_value = "soak")]
    result_name: String,
}

/// Puts the test's server binary back when dropped.
struct Swapped {
    target: PathBuf,
    saved: PathBuf,
}

impl Drop for Swapped {
    fn drop(&mut self) {
        if let Err(err) = std::fs::copy(&self.saved, &self.target) {
            eprintln!(
                "bench: could not put {} back from {}: {err}",
                self.target.display(),
                self.saved.display()
            );
        } else {
            let _ = std::fs::remove_file(&self.saved);
        }
    }
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let test_binary = build_test_binary(ctx).await?;
    let target = ctx.target_dir().join("debug/dynapage");
    if std::fs::canonicalize(&args.binary)? == std::fs::canonicalize(&target)? {
        bail!(
            "{} is the test's own server binary: give another build (a copy of it will do)",
            args.binary.display()
        );
    }
    let saved = ctx.raw("ab-soak-saved-dynapage");
    std::fs::copy(&target, &saved).with_context(|| format!("saving {}", target.display()))?;
    let _swapped = Swapped {
        target: target.clone(),
        saved,
    };
    std::fs::copy(&args.binary, &target).with_context(|| {
        format!(
            "copying {} over {}",
            args.binary.display(),
            target.display()
        )
    })?;

    let path = ctx.result(&format!("ab/{}.txt", args.result_name));
    let mut out = header(ctx, &path, &[("binary", &args.binary)], None)?;
    out.line(&format!(
        "# {} at {} and at {}; SOAK_WRITES={}{}",
        args.variable,
        args.a,
        args.b,
        args.writes,
        args.only
            .map_or_else(String::new, |k| format!(", SOAK_ONLY={k}"))
    ))?;
    let mut results: Vec<(String, Vec<String>, Vec<String>)> = [&args.a, &args.b]
        .map(|v| (v.clone(), Vec::new(), Vec::new()))
        .into();
    for round in 1..=args.rounds {
        let order = if round % 2 == 0 { [1, 0] } else { [0, 1] };
        for index in order {
            let value = results[index].0.clone();
            out.line(&format!("== round {round}: {}={value}", args.variable))?;
            let report = soak_once(&test_binary, &args, &value).await?;
            for line in &report {
                out.line(line)?;
            }
            let (ratio, cores) = ratio_and_cores(&report).map_or_else(
                || ("failed".to_owned(), "-".to_owned()),
                |(r, c)| (format!("{r:.2}"), c),
            );
            results[index].1.push(ratio);
            results[index].2.push(cores);
        }
    }
    for (value, ratios, cores) in results {
        out.line(&format!(
            "{}={value}: p99 beside / quiet per round: {}; server cores: {}",
            args.variable,
            ratios.join(" "),
            cores.join(" ")
        ))?;
    }
    log(&format!("wrote {}", path.display()));
    Ok(())
}

/// Builds the integration tests (and with them the debug server) and returns the test binary.
async fn build_test_binary(ctx: &Context) -> anyhow::Result<PathBuf> {
    log("cargo test --test api --no-run (the soak and the debug server it runs)");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = tokio::process::Command::new(cargo)
        .current_dir(&ctx.repo)
        .args(["test", "--test", "api", "--no-run", "--message-format=json"])
        .stderr(Stdio::inherit())
        .output()
        .await
        .context("running cargo test --no-run")?;
    if !output.status.success() {
        bail!("building the integration tests failed ({})", output.status);
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["target"]["name"] == "api")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .context("cargo named no executable of the api tests")
}

/// One run of the soak with `variable=value`: its `soak:` lines, and a panic's line if it
/// failed.
async fn soak_once(test_binary: &Path, args: &Args, value: &str) -> anyhow::Result<Vec<String>> {
    let mut command = tokio::process::Command::new(test_binary);
    command
        .args(["ws_soak", "--nocapture"])
        .env(&args.variable, value)
        .env("SOAK_WRITES", args.writes.to_string())
        .kill_on_drop(true);
    if let Some(only) = args.only {
        command.env("SOAK_ONLY", only.to_string());
    }
    let output = tokio::time::timeout(Duration::from_secs(900), command.output())
        .await
        .context("the soak ran past 15 minutes")?
        .context("running the soak")?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    Ok(text
        .lines()
        .filter(|l| l.starts_with("soak:") || l.contains("panicked"))
        .map(str::to_owned)
        .collect())
}

/// From the soak's report ("p99 of N writes quiet 1.02ms, beside 200 hostile sockets 1.48ms;
/// … the server used 0.16 cores …"): the p99 beside the sockets over the quiet one, and the
/// server's cores as printed.
fn ratio_and_cores(report: &[String]) -> Option<(f64, String)> {
    let line = report.iter().find(|l| l.contains(" quiet "))?;
    let after = |marker: &str| line.split(marker).nth(1)?.split([',', ';', ' ']).next();
    let quiet = duration_ms(after(" quiet ")?)?;
    let beside = duration_ms(after(" hostile sockets ")?)?;
    let cores = after("server used ")?.to_owned();
    Some((beside / quiet, cores))
}

/// Milliseconds of a duration as Rust's `Debug` prints it: `1.48ms`, `850.3µs`, `1.2s`.
fn duration_ms(text: &str) -> Option<f64> {
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix("µs") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("ns") {
        (n, 1e-6)
    } else {
        (text.strip_suffix('s')?, 1e3)
    };
    Some(number.parse::<f64>().ok()? * scale)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_ratio_and_cores_are_read_from_the_soaks_report() {
        let report = ["soak: RSS 30.1 MiB before, 41.0 MiB at the peak; p99 of 1000 writes quiet 1.02ms, beside 200 hostile sockets 1.53ms; over the busy 15.2 s the server used 0.16 cores and this test process (the attackers and the normal clients) 0.9, of 2".to_owned()];
        let (ratio, cores) = super::ratio_and_cores(&report).expect("a report");
        assert!((ratio - 1.5).abs() < 1e-9, "{ratio}");
        assert_eq!(cores, "0.16");
        assert_eq!(super::duration_ms("850µs"), Some(0.85));
        assert_eq!(super::ratio_and_cores(&["soak: panicked".to_owned()]), None);
    }
}
