//! `ab run`: the server's CPU per request in two builds. Both servers run at once; for each
//! page shape and round, wrk (1 thread, 4 connections, one prebuilt POST body) loads one
//! server, then the other (the order flips every round), and the server's user + system time
//! from `/proc/PID/stat` around the run, divided by the requests wrk completed, is its CPU per
//! request. Load on a shared machine stretches req/s far more than CPU per request, and the
//! two runs of a round are adjacent in time, so their ratio ([`super::paired`]) is the figure
//! to report.

use std::path::PathBuf;

use super::{CASES, Case, cpu_us_per_request, header, start_server, write_case_bodies, wrk_cpu};
use crate::benchmarks::parse_seconds;
use crate::context::Context;
use crate::proc_stat::loadavg;
use crate::report::log;
use crate::stats::median;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The old build's dynapage binary
    old: PathBuf,
    /// The new build's dynapage binary
    new: PathBuf,
    /// Rounds: every case on each server, the order of the two flipped every round
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// Each measured wrk run (after one of 2 s per side and case, not counted)
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    duration: u64,
    /// The page shapes, comma-separated
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = CASES)]
    cases: Vec<Case>,
    /// What the two builds are (commits, profile), written into the result's header
    #[arg(long)]
    note: Option<String>,
    /// The result file's name in bench/results/ab, without `.txt`
    #[arg(long, default_value = "run")]
    result_name: String,
}

/// One measured run: `round case side requests req_per_s cpu_us_per_request`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunLine {
    pub round: u32,
    pub case: String,
    pub side: String,
    pub requests: u64,
    pub req_per_s: f64,
    pub cpu_us: f64,
}

impl RunLine {
    /// The line as `run.sh` printed it and [`super::paired`] reads it.
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {} {:.0} {:.2}",
            self.round, self.case, self.side, self.requests, self.req_per_s, self.cpu_us
        )
    }
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    crate::wrk::require()?;
    let bodies = write_case_bodies(&ctx.raw("ab-bodies"))?;
    let old = start_server(ctx, "ab-old", &args.old, &[]).await?;
    let new = start_server(ctx, "ab-new", &args.new, &[]).await?;
    let sides = [("old", &old), ("new", &new)];
    let path = ctx.result(&format!("ab/{}.txt", args.result_name));
    let mut out = header(
        ctx,
        &path,
        &[("old", &args.old), ("new", &args.new)],
        args.note.as_deref(),
    )?;
    log("a warm-up run of 2 s per side and case (page caches, allocator), not counted");
    for &case in &args.cases {
        for (_, server) in sides {
            wrk_cpu(ctx, &server.api, server.pid(), &bodies, case, 2).await?;
        }
    }
    out.line(&format!(
        "# {} {} cores, load: {}",
        chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ"),
        std::thread::available_parallelism().map_or(0, usize::from),
        loadavg()
    ))?;
    out.line("# round case side requests req_per_s cpu_us_per_request")?;
    let mut lines = Vec::new();
    for round in 1..=args.rounds {
        let order = if round % 2 == 0 {
            [sides[1], sides[0]]
        } else {
            sides
        };
        for &case in &args.cases {
            for (side, server) in order {
                let (requests, ticks) =
                    wrk_cpu(ctx, &server.api, server.pid(), &bodies, case, args.duration).await?;
                let line = RunLine {
                    round,
                    case: case.name().to_owned(),
                    side: side.to_owned(),
                    requests,
                    req_per_s: requests as f64 / args.duration as f64,
                    cpu_us: cpu_us_per_request(ticks, requests),
                };
                out.line(&line.line())?;
                lines.push(line);
            }
        }
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    out.line("")?;
    for line in table(&lines, &args.cases) {
        out.line(&line)?;
    }
    out.line("")?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    for line in super::paired::summaries(&name, &lines) {
        out.line(&line)?;
    }
    log(&format!("wrote {}", path.display()));
    Ok(())
}

/// The table of medians: µs of server CPU per request and req/s, old and new, per case.
fn table(lines: &[RunLine], cases: &[Case]) -> Vec<String> {
    let mut table = vec![
        "| case | old µs/req | new µs/req | Δ CPU/req | old req/s | new req/s | Δ req/s |"
            .to_owned(),
        "|---|---|---|---|---|---|---|".to_owned(),
    ];
    for case in cases {
        let column = |side: &str, value: fn(&RunLine) -> f64| {
            let values: Vec<f64> = lines
                .iter()
                .filter(|l| l.case == case.name() && l.side == side)
                .map(value)
                .collect();
            median(&values)
        };
        let (oc, nc) = (column("old", |l| l.cpu_us), column("new", |l| l.cpu_us));
        let (orps, nrps) = (
            column("old", |l| l.req_per_s),
            column("new", |l| l.req_per_s),
        );
        table.push(format!(
            "| {} | {oc:.1} | {nc:.1} | {:+.1} % | {orps:.0} | {nrps:.0} | {:+.1} % |",
            case.name(),
            (nc - oc) * 100.0 / oc,
            (nrps - orps) * 100.0 / orps
        ));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::{RunLine, table};
    use crate::benchmarks::ab::Case;

    fn line(round: u32, side: &str, req_per_s: f64, cpu_us: f64) -> RunLine {
        RunLine {
            round,
            case: "page-0".to_owned(),
            side: side.to_owned(),
            requests: (req_per_s * 10.0) as u64,
            req_per_s,
            cpu_us,
        }
    }

    #[test]
    fn a_run_line_prints_as_the_script_printed_it() {
        assert_eq!(
            line(1, "old", 4966.5, 370.884).line(),
            "1 page-0 old 49665 4966 370.88"
        );
    }

    #[test]
    fn the_table_gives_each_sides_medians_and_their_change() {
        let lines = [
            line(1, "old", 5000.0, 300.0),
            line(1, "new", 4000.0, 330.0),
            line(2, "new", 4200.0, 320.0),
            line(2, "old", 5200.0, 310.0),
            line(3, "old", 5100.0, 305.0),
            line(3, "new", 4100.0, 340.0),
        ];
        assert_eq!(
            table(&lines, &[Case::Page0])[2],
            "| page-0 | 305.0 | 330.0 | +8.2 % | 5100 | 4100 | -19.6 % |"
        );
    }
}
