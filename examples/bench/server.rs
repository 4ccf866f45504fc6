//! The dynapage binary as benchmarks run it: `serve` on a free loopback port (rate limits off
//! unless a benchmark sets them: every load comes from one client address, which the budgets
//! would throttle), and one-shot commands (`seed`, `reindex`, `token`) with their output kept.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::context::Context;
use crate::graphql::Api;
use crate::processes::{self, Process, free_port, wait_until};
use crate::report::log;

/// The AWS settings every dynapage process gets (DynamoDB Local takes any credentials).
pub const AWS_ENV: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "bench"),
    ("AWS_SECRET_ACCESS_KEY", "bench"),
    ("AWS_REGION", "us-east-1"),
];

/// A running `dynapage serve`.
#[derive(Debug)]
pub struct Server {
    pub name: String,
    pub service: Process,
    pub api: Api,
    /// The path that answers 200 once the server serves.
    ready_path: &'static str,
}

/// How to run a server other than the chosen build's plain `serve`: another binary (the two
/// builds of an A/B), under another program (valgrind), with more environment.
#[derive(Debug)]
pub struct Launch<'a> {
    /// The binary; none: the chosen build's (`Context::dynapage`).
    pub binary: Option<&'a Path>,
    /// A program (and its arguments) to run the server under.
    pub under: &'a [String],
    /// Environment beyond the benchmarks' own (which it may override).
    pub env: &'a [(&'a str, &'a str)],
    /// The path that says the server serves: `/readyz`, or `/healthz` as the A/B scripts
    /// asked of builds of any age.
    pub ready_path: &'static str,
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Self {
            binary: None,
            under: &[],
            env: &[],
            ready_path: "/readyz",
        }
    }
}

impl Server {
    /// Starts `dynapage serve --listen 127.0.0.1:<free port> ARGS` without waiting for it.
    /// `RUST_LOG` defaults to `warn` (no line per request).
    pub fn launch(ctx: &Context, name: &str, args: &[String]) -> anyhow::Result<Self> {
        Self::launch_with(ctx, name, args, &Launch::default())
    }

    /// [`Self::launch`] as `launch` says.
    pub fn launch_with(
        ctx: &Context,
        name: &str,
        args: &[String],
        launch: &Launch<'_>,
    ) -> anyhow::Result<Self> {
        let port = free_port()?;
        let binary = launch.binary.map_or_else(|| ctx.dynapage(), Path::to_owned);
        let mut command = match launch.under.split_first() {
            Some((program, options)) => {
                let mut command = Command::new(program);
                command.args(options).arg(binary);
                command
            }
            None => Command::new(binary),
        };
        command
            .arg("serve")
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned()),
            )
            .env("DYNAPAGE_REQUEST_TIMEOUT_MS", "120000")
            .env("DYNAPAGE_RATE_LIMIT_COST", "0")
            .env("DYNAPAGE_RATE_LIMIT_WRITES", "0")
            .envs(AWS_ENV)
            .envs(launch.env.iter().copied());
        let service = processes::spawn(
            &format!("server {name}"),
            command,
            &ctx.raw(&format!("server-{name}.log")),
        )?;
        Ok(Self {
            name: name.to_owned(),
            service,
            api: Api::new(&format!("http://127.0.0.1:{port}")),
            ready_path: launch.ready_path,
        })
    }

    /// Waits for the ready path (seeding millions of demo comments takes minutes, and
    /// 200,000 under valgrind too).
    pub async fn await_ready(&mut self) -> anyhow::Result<()> {
        let ready = format!("{}{}", self.api.url, self.ready_path);
        let client = reqwest::Client::new();
        wait_until(
            &format!("server {}", self.name),
            Duration::from_secs(900),
            Some(&mut self.service),
            || {
                let (client, ready) = (client.clone(), ready.clone());
                async move {
                    client
                        .get(&ready)
                        .send()
                        .await
                        .is_ok_and(|r| r.status().is_success())
                }
            },
        )
        .await?;
        log(&format!("server {} ready on {}", self.name, self.api.url));
        Ok(())
    }

    /// [`Self::launch`], then [`Self::await_ready`].
    pub async fn start(ctx: &Context, name: &str, args: &[String]) -> anyhow::Result<Self> {
        Self::start_with(ctx, name, args, &Launch::default()).await
    }

    /// [`Self::launch_with`], then [`Self::await_ready`].
    pub async fn start_with(
        ctx: &Context,
        name: &str,
        args: &[String],
        launch: &Launch<'_>,
    ) -> anyhow::Result<Self> {
        let mut server = Self::launch_with(ctx, name, args, launch)?;
        server.await_ready().await?;
        Ok(server)
    }

    pub fn pid(&self) -> u32 {
        self.service.pid()
    }
}

/// Runs `dynapage ARGS` to completion; its output goes to `<raw>/<log_name>.log` and is
/// returned (stdout, then stderr).
pub async fn dynapage(ctx: &Context, log_name: &str, args: &[String]) -> anyhow::Result<String> {
    let mut command = tokio::process::Command::new(ctx.dynapage());
    command.args(args).envs(AWS_ENV).kill_on_drop(true);
    let output = command
        .output()
        .await
        .with_context(|| format!("running dynapage {}", args.join(" ")))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    let log_path = ctx.raw(&format!("{log_name}.log"));
    std::fs::write(&log_path, &text)?;
    if !output.status.success() {
        bail!(
            "dynapage {} failed ({}); see {}",
            args.first().map_or("", String::as_str),
            output.status,
            log_path.display()
        );
    }
    Ok(text)
}

/// Seeds `count` generated comments of `sku` into DynamoDB Local; returns the seconds it took.
pub async fn seed_dynamodb(
    ctx: &Context,
    endpoint: &str,
    sku: &str,
    count: u64,
    create_tables: bool,
    log_name: &str,
) -> anyhow::Result<u64> {
    let mut args = strings(&["seed", "--sku", sku, "--count", &count.to_string()]);
    args.extend(strings(&[
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        endpoint,
    ]));
    if create_tables {
        args.push("--create-tables".to_owned());
    }
    log(&format!(
        "seeding {count} comments of {sku} into DynamoDB Local"
    ));
    let started = Instant::now();
    dynapage(ctx, log_name, &args).await?;
    Ok(started.elapsed().as_secs())
}

/// Waits until the server's index counts `count` comments of `sku` (a stream consumer is
/// indexing them); fails after `timeout`.
pub async fn await_indexed(
    api: &Api,
    sku: &str,
    count: u64,
    poll: Duration,
    timeout: Duration,
) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let indexed = api.total_count(sku).await.unwrap_or(0);
        if indexed >= count {
            return Ok(());
        }
        if started.elapsed() > timeout {
            bail!("the index stopped at {indexed} of {count} comments");
        }
        tokio::time::sleep(poll).await;
    }
}

/// The cursor secret of every benchmark server on DynamoDB (`serve --store dynamodb` needs one).
pub const BENCH_CURSOR_SECRET: &str = "bench-cursor-secret-0123456789";

/// `serve`'s arguments for DynamoDB Local at `dynamo_url` (tables created) with the Redis index
/// at `redis_url`, and the benchmarks' cursor secret.
pub fn dynamodb_redis_args(dynamo_url: &str, redis_url: &str) -> Vec<String> {
    strings(&[
        "--store",
        "dynamodb",
        "--dynamodb-endpoint",
        dynamo_url,
        "--cursor-secret",
        BENCH_CURSOR_SECRET,
        "--create-tables",
        "--index",
        "redis",
        "--redis-url",
        redis_url,
    ])
}

/// `&str`s as owned arguments.
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}
