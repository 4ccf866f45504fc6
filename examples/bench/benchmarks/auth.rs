//! `auth`: what authentication costs a server (BENCHMARKS.md, "Bearer tokens"): req/s of one
//! read (the first page of 20 with totalCount and viewerCanUpdate) on the embedded backends,
//! from a server with `--auth off` and no token, and from one with `--auth jwt` whose every
//! request carries a token (EdDSA, from `dynapage token`; its JWKS read from a file, so no
//! network). The runs alternate, `runs` times each; the medians and their ratio go to
//! auth.csv. Per-token verification alone: `criterion auth`.

use anyhow::{Context as _, bail, ensure};

use super::{SKU, parse_seconds};
use crate::context::Context;
use crate::graphql::{body, write_bodies};
use crate::machine::Machine;
use crate::report::{Csv, Summary, log};
use crate::server::{Server, dynapage, strings};
use crate::stats::{median, spread_pct};
use crate::wrk;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// wrk connections
    #[arg(long, default_value_t = 16)]
    connections: u32,
    /// Each run
    #[arg(long, default_value = "10s", value_parser = parse_seconds)]
    duration: u64,
    /// Runs of each server, alternated (the table gives the medians)
    #[arg(long, default_value_t = 5)]
    runs: u32,
    /// Demo comments of the product
    #[arg(long, default_value_t = 20_000)]
    comments: u64,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    wrk::require()?;
    ctx.build_dynapage()?;
    let keys = ctx.raw("auth-keys");
    let _ = std::fs::remove_dir_all(&keys);
    let key_dir = keys.display().to_string();
    let token_args = strings(&[
        "token",
        "--sub",
        "bench-user",
        "--name",
        "Bench User",
        "--key-dir",
        &key_dir,
    ]);
    let output = dynapage(ctx, "auth-token", &token_args).await?;
    // The token is the line that looks like a JWT (stderr may hold log lines).
    let token = output
        .lines()
        .find(|l| l.starts_with("ey") && l.matches('.').count() == 2)
        .context("dynapage token printed no token")?
        .to_owned();
    let bodies = ctx.raw("auth-body.json");
    let query = format!(
        "{{ comments(sku: \"{SKU}\", first: 20) {{ totalCount edges {{ cursor node {{ id author body rating createdAt viewerCanUpdate }} }} pageInfo {{ hasNextPage endCursor }} }} }}"
    );
    write_bodies(&bodies, &[body(&query)])?;

    let demo = strings(&["--demo-comments", &args.comments.to_string()]);
    let off = Server::start(
        ctx,
        "off",
        &[demo.clone(), strings(&["--auth", "off"])].concat(),
    )
    .await?;
    let mut jwt_args = demo;
    jwt_args.extend(strings(&[
        "--auth",
        "jwt",
        "--auth-jwks-url",
        &format!("file:{key_dir}/jwks.json"),
    ]));
    jwt_args.extend(strings(&[
        "--auth-issuer",
        "dynapage-local",
        "--auth-audience",
        "dynapage",
    ]));
    let jwt = Server::start(ctx, "jwt", &jwt_args).await?;
    let header = format!("Authorization: Bearer {token}");
    // The token must verify, or every measured request would be a cheap 401.
    let checked = jwt.api.post(&body(&query), Some(&header)).await?;
    ensure!(
        checked.contains("\"viewerCanUpdate\""),
        "the token does not verify: {checked}"
    );

    let (mut off_rps, mut jwt_rps) = (Vec::new(), Vec::new());
    for run in 1..=args.runs {
        for (server, header, rates) in [
            (&off, None, &mut off_rps),
            (&jwt, Some(header.as_str()), &mut jwt_rps),
        ] {
            let load = wrk::Load {
                api: &server.api,
                bodies: &bodies,
                connections: args.connections,
                seconds: args.duration,
                header,
                lean: true,
                cpus: None,
                threads: None,
            };
            let outcome = wrk::run(ctx, &load).await?;
            if outcome.errors != 0 {
                bail!("errors: {outcome}");
            }
            rates.push(outcome.requests_per_s);
        }
        let last = |rates: &[f64]| rates.last().copied().unwrap_or_default();
        log(&format!(
            "run {run}: off {} req/s, jwt {} req/s",
            last(&off_rps),
            last(&jwt_rps)
        ));
    }
    let path = ctx.result("auth.csv");
    let mut csv = Csv::create(
        &path,
        &[
            "case",
            "connections",
            "runs",
            "req_s_median",
            "req_s_spread_pct",
        ],
    )?;
    for (case, rates) in [("auth_off", &off_rps), ("auth_jwt_token", &jwt_rps)] {
        csv.row(&[
            &case,
            &args.connections,
            &args.runs,
            &median(rates),
            &spread_pct(rates).round(),
        ])?;
    }
    let mut out = Summary::create(&ctx.result("auth.txt"))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    for line in std::fs::read_to_string(&path)?.lines() {
        out.line(line)?;
    }
    out.line(&format!(
        "jwt/off throughput ratio: {:.3}",
        median(&jwt_rps) / median(&off_rps)
    ))
}
