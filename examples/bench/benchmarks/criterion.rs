//! `criterion`: one criterion bench of `benches/` (`cargo bench --bench NAME`), its output saved
//! under the results with the machine, the commit and the load average around it. The benches
//! start what they need themselves (redis_index and rate_limit their own redis-server).

use std::process::Stdio;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::context::Context;
use crate::machine::Machine;
use crate::proc_stat::loadavg;
use crate::report::{Summary, log};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The bench: engine, redis_index, auth, rate_limit or field_errors
    bench: String,
    /// A filter of criterion's, e.g. "page/"
    filter: Option<String>,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    if !ctx
        .repo
        .join("benches")
        .join(format!("{}.rs", args.bench))
        .is_file()
    {
        bail!("no benches/{}.rs", args.bench);
    }
    if matches!(args.bench.as_str(), "redis_index" | "rate_limit") {
        crate::processes::require(
            "redis-server",
            "apt-get install redis-server (Debian, Ubuntu) or brew install redis",
        )?;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    log(&format!("cargo bench --bench {} --no-run", args.bench));
    let built = tokio::process::Command::new(&cargo)
        .current_dir(&ctx.repo)
        .args(["bench", "--quiet", "--no-run", "--bench", &args.bench])
        .status()
        .await?;
    if !built.success() {
        bail!("building the bench failed ({built})");
    }
    let machine = Machine::describe(ctx);
    let commit = machine
        .commit
        .split_whitespace()
        .next()
        .unwrap_or("unknown");
    let mut out = Summary::create(&ctx.result(&format!("criterion-{}-{commit}.txt", args.bench)))?;
    let mut header = machine.header();
    // The bench's own build, not the server's.
    header.truncate(2);
    header.push(format!(
        "# {}",
        crate::context::profile_description("bench")
    ));
    for line in header {
        out.line(&line)?;
    }
    out.line(&format!("# load before: {}", loadavg()))?;
    let mut command = tokio::process::Command::new(&cargo);
    command
        .current_dir(&ctx.repo)
        .args(["bench", "--quiet", "--bench", &args.bench, "--", "--noplot"])
        .args(args.filter.iter())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().context("running cargo bench")?;
    let stdout = child.stdout.take().context("cargo bench's stdout")?;
    let stderr = child.stderr.take().context("cargo bench's stderr")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut errors = BufReader::new(stderr).lines();
    // criterion's progress lines are noise in a record.
    let noise = |l: &str| {
        ["Benchmarking", "Gnuplot", "Warning"]
            .iter()
            .any(|p| l.starts_with(p))
    };
    loop {
        tokio::select! {
            line = lines.next_line() => match line? {
                Some(line) if !noise(&line) => out.line(&line)?,
                Some(_) => {}
                None => break,
            },
            line = errors.next_line() => if let Some(line) = line? {
                if !noise(&line) { out.line(&line)?; }
            },
        }
    }
    let status = child.wait().await?;
    out.line(&format!("# load after: {}", loadavg()))?;
    if !status.success() {
        bail!("cargo bench failed ({status})");
    }
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}
