//! wrk, the external load generator: one run of POST bodies against `/graphql` through
//! `bench/wrk/post.lua`, whose `RESULT` line this module parses (requests, req/s, p50 and p99,
//! errors). With one body and `lean`, wrk sends a prebuilt request and reads no body, and the
//! run's GraphQL errors are the growth of the server's own count (`/metrics`) instead.

use std::fmt;
use std::path::Path;

use anyhow::{Context as _, bail};

use crate::context::Context;
use crate::graphql::Api;

/// What to run.
#[derive(Debug)]
pub struct Load<'a> {
    pub api: &'a Api,
    /// Request bodies, one a line; wrk picks one at random per request.
    pub bodies: &'a Path,
    pub connections: u32,
    pub seconds: u64,
    /// A header line sent with every request ("Authorization: Bearer …").
    pub header: Option<&'a str>,
    /// With one body: prebuilt request, no Lua per response (less of wrk's CPU on shared cores).
    pub lean: bool,
    /// A `taskset -c` core list to confine wrk to.
    pub cpus: Option<&'a str>,
    /// wrk's threads; none: one for one connection, else two.
    pub threads: Option<u32>,
}

/// `post.lua`'s RESULT line, with the server's count of GraphQL errors in a lean run.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub requests: u64,
    pub requests_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
    pub non2xx: u64,
    /// -1 when nobody counted them (a lean run before the server's count is added).
    pub graphql_errors: i64,
    pub socket_errors: u64,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RESULT requests={} requests_per_s={:.1} p50_ms={:.2} p99_ms={:.2} errors={} non2xx={} graphql_errors={} socket_errors={}",
            self.requests,
            self.requests_per_s,
            self.p50_ms,
            self.p99_ms,
            self.errors,
            self.non2xx,
            self.graphql_errors,
            self.socket_errors
        )
    }
}

/// Fails, saying how to install it, when wrk is missing.
pub fn require() -> anyhow::Result<()> {
    crate::processes::require(
        "wrk",
        "apt-get install wrk (Debian, Ubuntu), brew install wrk, or build github.com/wg/wrk",
    )
}

/// One wrk run; its whole output is kept in `<raw>/wrk-last.txt`.
impl<'a> Load<'a> {
    /// A lean load (one prebuilt body, no header) of `connections` for `seconds`, on `cpus`
    /// when given.
    pub fn lean(
        api: &'a Api,
        bodies: &'a Path,
        connections: u32,
        seconds: u64,
        cpus: Option<&'a str>,
    ) -> Self {
        Self {
            api,
            bodies,
            connections,
            seconds,
            header: None,
            lean: true,
            cpus,
            threads: None,
        }
    }
}

/// One run, its GraphQL errors counted by the server in a lean run (see [`Outcome`]).
pub async fn run(ctx: &Context, load: &Load<'_>) -> anyhow::Result<Outcome> {
    let before = if load.lean {
        Some(load.api.graphql_failures().await?)
    } else {
        None
    };
    let mut outcome = run_alone(ctx, load).await?;
    if outcome.graphql_errors == -1 {
        let Some(before) = before else {
            bail!("wrk ran lean but no error count was taken");
        };
        let failed = load.api.graphql_failures().await?.saturating_sub(before);
        outcome.graphql_errors = i64::try_from(failed)?;
        outcome.errors += failed;
    }
    Ok(outcome)
}

/// One run and nothing else sent to the server around it (a lean run's GraphQL errors stay
/// -1), for a caller that reads the server's CPU around wrk alone.
pub async fn run_alone(ctx: &Context, load: &Load<'_>) -> anyhow::Result<Outcome> {
    let threads = load
        .threads
        .unwrap_or(if load.connections < 2 { 1 } else { 2 });
    let mut command = command(load.cpus);
    command
        .args([
            "-t",
            &threads.to_string(),
            "-c",
            &load.connections.to_string(),
        ])
        .args(["-d", &format!("{}s", load.seconds), "--timeout", "60s"])
        .env("BENCH_BODIES", load.bodies)
        .env("BENCH_LEAN", if load.lean { "1" } else { "0" });
    if let Some(header) = load.header {
        command.args(["-H", header]);
    }
    command
        .arg("-s")
        .arg(ctx.repo.join("bench/wrk/post.lua"))
        .arg(format!("{}/graphql", load.api.url));
    let text = output(ctx, command).await?;
    let line = text
        .lines()
        .rfind(|l| l.starts_with("RESULT"))
        .with_context(|| format!("wrk printed no RESULT line:\n{text}"))?;
    parse(line)
}

/// `wrk`, or `taskset -c CPUS wrk`.
fn command(cpus: Option<&str>) -> tokio::process::Command {
    let mut command = match cpus {
        Some(cpus) => {
            let mut c = tokio::process::Command::new("taskset");
            c.args(["-c", cpus, "wrk"]);
            c
        }
        None => tokio::process::Command::new("wrk"),
    };
    command.kill_on_drop(true);
    command
}

/// Runs wrk; its whole output (stdout, then stderr) is returned and kept in
/// `<raw>/wrk-last.txt`.
async fn output(ctx: &Context, mut command: tokio::process::Command) -> anyhow::Result<String> {
    let output = command.output().await.context("running wrk")?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    std::fs::write(ctx.raw("wrk-last.txt"), &text)?;
    if !output.status.success() {
        bail!("wrk failed ({}):\n{text}", output.status);
    }
    Ok(text)
}

/// What wrk prints of a run of GETs with `--latency` (no script): its figures as it wrote
/// them (`1.23ms`), for lines that quote them.
#[derive(Clone, Debug, PartialEq)]
pub struct GetOutcome {
    pub requests: u64,
    pub requests_per_s: String,
    pub p50: String,
    pub p99: String,
    /// Responses that were neither 2xx nor 3xx.
    pub non2xx_3xx: u64,
}

/// GETs of `url` from `connections` connections on `threads` threads for `seconds`, with
/// `headers` ("Name: value"), wrk's own request and report.
pub async fn get(
    ctx: &Context,
    url: &str,
    (threads, connections): (u32, u32),
    seconds: u64,
    headers: &[String],
) -> anyhow::Result<GetOutcome> {
    let mut command = command(None);
    command
        .args(["-t", &threads.to_string(), "-c", &connections.to_string()])
        .args(["-d", &format!("{seconds}s"), "--latency"]);
    for header in headers {
        command.args(["-H", header]);
    }
    command.arg(url);
    parse_report(&output(ctx, command).await?)
}

/// Reads wrk's own report: `N requests in`, `Requests/sec:`, the `50%` and `99%` lines of
/// `--latency`, and `Non-2xx or 3xx responses:` (absent when there were none).
pub fn parse_report(text: &str) -> anyhow::Result<GetOutcome> {
    let words = |prefix: &str| {
        text.lines()
            .map(str::trim)
            .find(|line| line.starts_with(prefix))
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
    };
    let requests = text
        .lines()
        .find(|line| line.contains(" requests in "))
        .and_then(|line| line.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no request count in wrk's report:\n{text}"))?;
    let second = |prefix: &str| {
        words(prefix)
            .and_then(|w| w.get(1).map(|v| (*v).to_owned()))
            .with_context(|| format!("no {prefix} in wrk's report:\n{text}"))
    };
    let non2xx_3xx = words("Non-2xx or 3xx responses:")
        .and_then(|w| w.last()?.parse().ok())
        .unwrap_or(0);
    Ok(GetOutcome {
        requests,
        requests_per_s: second("Requests/sec:")?,
        p50: second("50%")?,
        p99: second("99%")?,
        non2xx_3xx,
    })
}

/// Parses `RESULT requests=… requests_per_s=… …`.
pub fn parse(line: &str) -> anyhow::Result<Outcome> {
    let field = |name: &str| -> anyhow::Result<&str> {
        crate::report::field(line, name).with_context(|| format!("no {name} in {line}"))
    };
    Ok(Outcome {
        requests: field("requests")?.parse()?,
        requests_per_s: field("requests_per_s")?.parse()?,
        p50_ms: field("p50_ms")?.parse()?,
        p99_ms: field("p99_ms")?.parse()?,
        errors: field("errors")?.parse()?,
        non2xx: field("non2xx")?.parse()?,
        graphql_errors: field("graphql_errors")?.parse()?,
        socket_errors: field("socket_errors")?.parse()?,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn wrks_own_report_gives_requests_rate_percentiles_and_failures() {
        let report = "Running 8s test @ http://127.0.0.1:1/graphql?query=x
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.21ms  410.00us   9.87ms   80.00%
    Req/Sec     6.66k   300.00     7.10k    70.00%
  Latency Distribution
     50%    1.10ms
     75%    1.40ms
     90%    1.80ms
     99%    2.90ms
  106254 requests in 8.00s, 520.00MB read
  Non-2xx or 3xx responses: 12
Requests/sec:  13281.75
Transfer/sec:     65.00MB
";
        let outcome = super::parse_report(report).expect("a report");
        assert_eq!(outcome.requests, 106_254);
        assert_eq!(outcome.requests_per_s, "13281.75");
        assert_eq!(
            (outcome.p50.as_str(), outcome.p99.as_str()),
            ("1.10ms", "2.90ms")
        );
        assert_eq!(outcome.non2xx_3xx, 12);
    }

    #[test]
    fn a_result_line_reads_back_as_it_was_printed() {
        let line = "RESULT requests=69770 requests_per_s=6908.1 p50_ms=0.15 p99_ms=0.52 errors=0 non2xx=0 graphql_errors=-1 socket_errors=0";
        let outcome = super::parse(line).expect("a RESULT line");
        assert_eq!(outcome.requests, 69770);
        assert_eq!(outcome.graphql_errors, -1);
        assert_eq!(outcome.to_string(), line);
    }
}
