//! `ab callgrind`: the instructions the server executes per request (valgrind's callgrind:
//! deterministic, unlike time on a shared machine), for each page shape of `ab run`. The server
//! starts under callgrind with instrumentation off (seeding 200,000 demo comments at near
//! native speed), answers a few requests of the case to warm up, then counts N requests sent
//! one after another on one keep-alive connection, and dumps a profile per case.
//! `VALGRIND_OPTS` (valgrind's own variable) adds options, e.g. `--cache-sim=yes` for cache
//! misses; `callgrind_annotate --inclusive=yes FILE` reads a profile.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::{CASES, Case, header, start_server, write_case_bodies};
use crate::context::Context;
use crate::graphql::Api;
use crate::processes::require;
use crate::report::log;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The build's dynapage binary
    binary: PathBuf,
    /// Where the profiles go (`callgrind.out.<pid>.<n>`, one per case; earlier ones removed)
    out: PathBuf,
    /// Requests counted per case (after 5 to warm up)
    #[arg(long, default_value_t = 200)]
    requests: u64,
    /// The page shapes, comma-separated
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = CASES)]
    cases: Vec<Case>,
    /// The result file's name in bench/results/ab, without `.txt`
    #[arg(long, default_value = "callgrind")]
    result_name: String,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    require("valgrind", "apt-get install valgrind")?;
    require("callgrind_control", "apt-get install valgrind")?;
    std::fs::create_dir_all(&args.out)?;
    let out_dir = std::fs::canonicalize(&args.out)?;
    for entry in std::fs::read_dir(&out_dir)? {
        let path = entry?.path();
        if file_name(&path).starts_with("callgrind.out.") {
            std::fs::remove_file(&path)?;
        }
    }
    let bodies = write_case_bodies(&out_dir.join("bodies"))?;
    let under = [
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        "--instr-atstart=no".to_owned(),
        format!(
            "--callgrind-out-file={}",
            out_dir.join("callgrind.out.%p").display()
        ),
    ];
    log("starting the server under callgrind (seeding 200,000 comments takes minutes)");
    let server = start_server(ctx, "ab-callgrind", &args.binary, &under).await?;
    let pid = server.pid().to_string();
    for &case in &args.cases {
        let body = std::fs::read_to_string(bodies.join(format!("{}.json", case.name())))?;
        send(&server.api, &body, 5).await?;
        control(&["--instr=on", &pid]).await?;
        control(&["--zero", &pid]).await?;
        send(&server.api, &body, args.requests).await?;
        control(&[&format!("--dump={}", case.name()), &pid]).await?;
        control(&["--instr=off", &pid]).await?;
        log(&format!(
            "{}: {} requests counted",
            case.name(),
            args.requests
        ));
    }
    drop(server);
    let path = ctx.result(&format!("ab/{}.txt", args.result_name));
    let mut out = header(ctx, &path, &[("binary", &args.binary)], None)?;
    out.line(&format!(
        "# case instructions_per_request profile ({} requests a case; VALGRIND_OPTS={})",
        args.requests,
        std::env::var("VALGRIND_OPTS").unwrap_or_default()
    ))?;
    for &case in &args.cases {
        let profile = profile_of(&out_dir, case)?;
        let total = instructions(&std::fs::read_to_string(&profile)?)
            .with_context(|| format!("no totals in {}", profile.display()))?;
        out.line(&format!(
            "{} {} {}",
            case.name(),
            total / args.requests,
            profile.display()
        ))?;
    }
    log(&format!("wrote {}", path.display()));
    Ok(())
}

/// `count` POSTs of `body`, one after another on one keep-alive connection.
async fn send(api: &Api, body: &str, count: u64) -> anyhow::Result<()> {
    for _ in 0..count {
        api.post(body, None).await?;
    }
    Ok(())
}

/// `callgrind_control ARGS`, which must succeed.
async fn control(args: &[&str]) -> anyhow::Result<()> {
    let status = tokio::process::Command::new("callgrind_control")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .context("running callgrind_control")?;
    if !status.success() {
        bail!("callgrind_control {} failed ({status})", args.join(" "));
    }
    Ok(())
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The profile dumped for `case`: the one whose `desc: Trigger:` line names it.
fn profile_of(dir: &Path, case: Case) -> anyhow::Result<PathBuf> {
    let mut profiles: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| file_name(path).starts_with("callgrind.out."))
        .collect();
    profiles.sort();
    for path in profiles {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let trigger = text.lines().find(|l| l.starts_with("desc: Trigger:"));
        if trigger.is_some_and(|l| l.ends_with(&format!(" {}", case.name()))) {
            return Ok(path);
        }
    }
    bail!("no profile dumped for {} in {}", case.name(), dir.display())
}

/// The instructions (the first event, `Ir`) of a profile's program totals: its `totals:` line,
/// or its `summary:` line (what `callgrind_annotate` reports as PROGRAM TOTALS).
pub fn instructions(profile: &str) -> Option<u64> {
    ["totals:", "summary:"].iter().find_map(|key| {
        profile
            .lines()
            .find_map(|line| line.strip_prefix(key))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_profiles_instructions_are_its_first_total() {
        let profile = "version: 1\ncmd: dynapage serve\ndesc: Trigger: Client Request: page-0\nevents: Ir Dr Dw\nfn=(1) main\n5 10 2 1\nsummary: 123456789 2000 1000\n";
        assert_eq!(super::instructions(profile), Some(123_456_789));
        assert_eq!(super::instructions("events: Ir\n"), None);
    }
}
