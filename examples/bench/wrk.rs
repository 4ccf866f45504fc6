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
        }
    }
}

pub async fn run(ctx: &Context, load: &Load<'_>) -> anyhow::Result<Outcome> {
    let before = if load.lean {
        Some(load.api.graphql_failures().await?)
    } else {
        None
    };
    let threads = if load.connections < 2 { 1 } else { 2 };
    let mut command = match load.cpus {
        Some(cpus) => {
            let mut c = tokio::process::Command::new("taskset");
            c.args(["-c", cpus, "wrk"]);
            c
        }
        None => tokio::process::Command::new("wrk"),
    };
    command
        .args([
            "-t",
            &threads.to_string(),
            "-c",
            &load.connections.to_string(),
        ])
        .args(["-d", &format!("{}s", load.seconds), "--timeout", "60s"])
        .env("BENCH_BODIES", load.bodies)
        .env("BENCH_LEAN", if load.lean { "1" } else { "0" })
        .kill_on_drop(true);
    if let Some(header) = load.header {
        command.args(["-H", header]);
    }
    command
        .arg("-s")
        .arg(ctx.repo.join("bench/wrk/post.lua"))
        .arg(format!("{}/graphql", load.api.url));
    let output = command.output().await.context("running wrk")?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    std::fs::write(ctx.raw("wrk-last.txt"), &text)?;
    let line = text
        .lines()
        .rfind(|l| l.starts_with("RESULT"))
        .with_context(|| format!("wrk printed no RESULT line ({}):\n{text}", output.status))?;
    let mut outcome = parse(line)?;
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
    fn a_result_line_reads_back_as_it_was_printed() {
        let line = "RESULT requests=69770 requests_per_s=6908.1 p50_ms=0.15 p99_ms=0.52 errors=0 non2xx=0 graphql_errors=-1 socket_errors=0";
        let outcome = super::parse(line).expect("a RESULT line");
        assert_eq!(outcome.requests, 69770);
        assert_eq!(outcome.graphql_errors, -1);
        assert_eq!(outcome.to_string(), line);
    }
}
