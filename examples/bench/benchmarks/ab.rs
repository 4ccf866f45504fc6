//! `ab`: two builds of the server compared on the same page shapes (BENCHMARKS.md, "Cost of the
//! abuse checks"): CPU per request under wrk in alternating rounds (`ab run`, and `ab paired`
//! for the statistics of its rounds), one build's CPU per request for `git bisect run` (`ab
//! cpu`), and the instructions per request under callgrind (`ab callgrind`); and two values of
//! one server setting compared in the WebSocket soak (`ab soak`, "Soak beside hostile
//! sockets").
//!
//! Builds of any age are compared, so a server here is a binary given on the command line, run
//! with the flags every build has had and the environment newer ones read (builds before a
//! setting ignore its variable): the embedded backends with 200,000 demo comments, no rate
//! limits, no line per request, and no response cache (every request repeats one body, which a
//! server with the cache would answer from it: the A/B measures running a page). Build each
//! side with `CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 cargo
//! build --release --bin dynapage` in a worktree of its commit (the patches of
//! `bench/ab/patches/` apply there with `git apply`).

pub mod callgrind;
pub mod cpu;
pub mod paired;
pub mod run;
pub mod soak;

use std::path::{Path, PathBuf};

use super::SKU;
use crate::context::Context;
use crate::graphql::{Api, body, write_bodies};
use crate::machine::Machine;
use crate::proc_stat::{process_ticks, ticks_per_s};
use crate::report::Summary;
use crate::server::{Launch, Server, strings};
use crate::wrk;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Two builds' CPU per request under wrk, both servers up, one after the other in every
    /// round (the order flipped each round); medians and the paired ratios (~6 min: 4 rounds
    /// of the four shapes at 10 s)
    Run(run::Args),
    /// One build's CPU per request on one page shape, the median of three wrk runs: for `git
    /// bisect run` (~30 s)
    Cpu(cpu::Args),
    /// One build's instructions per request on each page shape, under valgrind's callgrind
    /// (deterministic; ~2 min with the seeding under valgrind)
    Callgrind(callgrind::Args),
    /// The WebSocket soak with a server setting at two values, alternated: each value's p99
    /// ratio per round and the server's CPU (~40 s a run, ~5 min at the defaults)
    Soak(soak::Args),
    /// The paired statistics of `ab run` outputs: per case, the median and geometric mean of
    /// the rounds' new/old ratios and a bootstrap interval of the median (instant)
    Paired(paired::Args),
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Run(args) => run::run(ctx, args).await,
        Command::Cpu(args) => cpu::run(ctx, args).await,
        Command::Callgrind(args) => callgrind::run(ctx, args).await,
        Command::Soak(args) => soak::run(ctx, args).await,
        Command::Paired(args) => paired::run(&args),
    }
}

/// The page shapes: a page of 20 (the selection of `load` and `page-numbers`), alone and with
/// the numbered pager, at offset 0 and at offset 199,000 of the 200,000 demo comments; and, when
/// asked for, the page at offset 0 with its edges behind a fragment, as Relay asks (every field
/// resolved by async-graphql, none written by `graphql::plain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Case {
    #[value(name = "page-0")]
    Page0,
    #[value(name = "pager-0")]
    Pager0,
    #[value(name = "pager-deep")]
    PagerDeep,
    #[value(name = "page-deep")]
    PageDeep,
    #[value(name = "page-fragment")]
    PageFragment,
}

/// The shapes the runs take when none is named, in that order.
pub const CASES: [Case; 4] = [Case::Page0, Case::Pager0, Case::PagerDeep, Case::PageDeep];

const PAGE: &str = "edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }";
const PAGER: &str = "totalCount startOffset pageCursors(around: 5) { pageCount first { page cursor offset } last { page cursor offset } previous { page cursor offset } next { page cursor offset } around { page cursor offset isCurrent } }";
const DEEP: u64 = 199_000;

impl Case {
    pub fn name(self) -> &'static str {
        match self {
            Self::Page0 => "page-0",
            Self::Pager0 => "pager-0",
            Self::PagerDeep => "pager-deep",
            Self::PageDeep => "page-deep",
            Self::PageFragment => "page-fragment",
        }
    }

    /// The case's request body, one line of JSON.
    pub fn body(self) -> String {
        let (offset, selection) = match self {
            Self::Page0 => (0, PAGE.to_owned()),
            Self::Pager0 => (0, format!("{PAGE} {PAGER}")),
            Self::PagerDeep => (DEEP, format!("{PAGE} {PAGER}")),
            Self::PageDeep => (DEEP, PAGE.to_owned()),
            Self::PageFragment => {
                let (edges, info) = PAGE.split_at(PAGE.find(" pageInfo").unwrap_or_default());
                let fragment = edges.trim_start_matches("edges {").trim_end_matches('}');
                return body(&format!(
                    "{{ comments(sku: \"{SKU}\", first: 20, offset: 0) {{ edges {{ ...Edge }}{info} }} }} fragment Edge on CommentEdge {{{fragment}}}"
                ));
            }
        };
        body(&format!(
            "{{ comments(sku: \"{SKU}\", first: 20, offset: {offset}) {{ {selection} }} }}"
        ))
    }
}

/// Writes `<dir>/<case>.json` for every case; returns the directory.
pub fn write_case_bodies(dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    for &case in <Case as clap::ValueEnum>::value_variants() {
        write_bodies(&dir.join(format!("{}.json", case.name())), &[case.body()])?;
    }
    Ok(dir.to_owned())
}

/// The server's flags in every run, which every build has had.
pub fn server_args() -> Vec<String> {
    strings(&[
        "--demo-comments",
        "200000",
        "--rate-limit-cost",
        "0",
        "--rate-limit-writes",
        "0",
    ])
}

/// The environment of every run: no line per request, a long timeout, no response cache.
pub const SERVER_ENV: [(&str, &str); 3] = [
    ("RUST_LOG", "warn"),
    ("DYNAPAGE_REQUEST_TIMEOUT_MS", "120000"),
    ("DYNAPAGE_RESPONSE_CACHE_BYTES", "0"),
];

/// Starts `binary` as the A/B runs it (under `under`, if given), ready once `/healthz`
/// answers, as every build's does.
pub async fn start_server(
    ctx: &Context,
    name: &str,
    binary: &Path,
    under: &[String],
) -> anyhow::Result<Server> {
    let launch = Launch {
        binary: Some(binary),
        under,
        env: &SERVER_ENV,
        ready_path: "/healthz",
    };
    Server::start_with(ctx, name, &server_args(), &launch).await
}

/// One wrk run of the case's body (1 thread, 4 connections, one prebuilt request) against
/// the server `pid` serves on `api`: the requests it completed and the CPU clock ticks (user
/// and system) the server spent meanwhile, read right around wrk. Fails on any non-2xx.
pub async fn wrk_cpu(
    ctx: &Context,
    api: &Api,
    pid: u32,
    bodies: &Path,
    case: Case,
    seconds: u64,
) -> anyhow::Result<(u64, u64)> {
    let file = bodies.join(format!("{}.json", case.name()));
    let load = wrk::Load {
        threads: Some(1),
        ..wrk::Load::lean(api, &file, 4, seconds, None)
    };
    let before = process_ticks(pid);
    let outcome = wrk::run_alone(ctx, &load).await?;
    let after = process_ticks(pid);
    anyhow::ensure!(
        outcome.requests > 0 && outcome.non2xx == 0,
        "wrk failed on {} {}: {outcome}",
        api.url,
        case.name()
    );
    Ok((outcome.requests, after.saturating_sub(before)))
}

/// µs of CPU per request from clock ticks over requests.
pub fn cpu_us_per_request(ticks: u64, requests: u64) -> f64 {
    ticks as f64 * 1e6 / ticks_per_s() / requests.max(1) as f64
}

/// The header of an A/B result: the command, commit and machine, then the binaries compared
/// (they, not this checkout's build, are what ran) and what the user says they are.
pub fn header(
    ctx: &Context,
    path: &Path,
    binaries: &[(&str, &Path)],
    note: Option<&str>,
) -> anyhow::Result<Summary> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut out = Summary::create(path)?;
    let mut lines = Machine::describe(ctx).header();
    lines.truncate(2);
    for (side, binary) in binaries {
        lines.push(format!("# {side}: {}", describe_binary(binary)));
    }
    if let Some(note) = note {
        lines.push(format!("# {note}"));
    }
    for line in lines {
        out.line(&line)?;
    }
    Ok(out)
}

/// A binary's path, size and time of last change: what tells two builds apart afterwards.
fn describe_binary(binary: &Path) -> String {
    let meta = std::fs::metadata(binary).ok();
    let size = meta.as_ref().map_or(0, std::fs::Metadata::len);
    let modified = meta
        .and_then(|m| m.modified().ok())
        .map(chrono::DateTime::<chrono::Utc>::from)
        .map_or_else(
            || "unknown".to_owned(),
            |t| t.format("%Y-%m-%dT%H:%MZ").to_string(),
        );
    format!("{} ({size} B, built {modified})", binary.display())
}

#[cfg(test)]
mod tests {
    use super::{CASES, Case};

    #[test]
    fn each_case_asks_its_page_at_its_offset() {
        let names: Vec<&str> = CASES.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["page-0", "pager-0", "pager-deep", "page-deep"]);
        let deep = Case::PagerDeep.body();
        assert!(deep.starts_with(
            r#"{"query":"{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, offset: 199000) { edges"#
        ));
        assert!(deep.contains("pageCursors(around: 5)"));
        assert!(!Case::Page0.body().contains("totalCount"));
        assert_eq!(
            Case::PageFragment.body(),
            r#"{"query":"{ comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, offset: 0) { edges { ...Edge } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } fragment Edge on CommentEdge { cursor node { id author body rating createdAt } }"}"#
        );
    }
}
