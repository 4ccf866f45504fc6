//! `load`'s raw side: the bare client's runs (`raw-query`, a separate process, confined with
//! the load generators in the pinned pass), the warm-up of DynamoDB Local, the Redis rank
//! lookup alone under redis-benchmark, and the pinned pass that moves the processes onto their
//! cores.

use anyhow::Context as _;

use super::{Load, comments};
use crate::backends;
use crate::benchmarks::SKU;
use crate::generators::run_self;
use crate::graphql::{Api, body, write_bodies};
use crate::report::log;
use crate::server::{Server, strings};
use crate::stats::{median, round, spread_pct};

impl Load<'_> {
    /// One run of the raw work at the throughput concurrency; `raw-query`'s result line.
    pub(super) async fn raw_query(&self, seconds: u64, extra: &[String]) -> anyhow::Result<String> {
        let mut args = strings(&["raw-query", "--endpoint", &self.dynamodb_url, "--sku", SKU]);
        args.extend(strings(&[
            "--limit",
            "21",
            "--concurrency",
            &self.args.connections.to_string(),
        ]));
        args.extend(strings(&["--seconds", &seconds.to_string()]));
        args.extend_from_slice(extra);
        Ok(run_self(&args, self.cpus).await?.trim().to_owned())
    }

    /// DynamoDB Local is a JVM whose JIT keeps speeding it up for the first minute or so of
    /// load; measuring before that would favour whichever side runs last.
    pub(super) async fn warm_up(
        &mut self,
        api: &Api,
        deep: u64,
        redis_url: &str,
    ) -> anyhow::Result<()> {
        let seconds = self.args.warm_up;
        log(&format!(
            "warming up DynamoDB Local ({seconds}s of raw queries and of pages)"
        ));
        self.raw_query(seconds, &[]).await?;
        let mut rank = strings(&["--redis-url", redis_url]);
        rank.extend(strings(&["--rank", &deep.to_string()]));
        self.raw_query(seconds, &rank).await?;
        let bodies = self.ctx.raw("bodies-warm-up.jsonl");
        let pages = [
            comments("first: 20"),
            comments(&format!("first: 20, offset: {deep}")),
        ];
        write_bodies(&bodies, &pages.map(|q| body(&q)))?;
        self.wrk(api, &bodies, self.args.connections, seconds)
            .await?;
        Ok(())
    }

    /// The Redis rank lookup alone under redis-benchmark, for information (the raw offset page
    /// does the same lookup itself before its Query): the index's read script on the
    /// product's five rating sets, as the server calls it for a bare deep jump (`read.lua`).
    pub(super) async fn raw_redis(
        &mut self,
        redis: &backends::Redis,
        deep: u64,
    ) -> anyhow::Result<()> {
        crate::processes::require(
            "redis-benchmark",
            "it comes with redis-server (redis-tools)",
        )?;
        let source = ["select.lua", "pick.lua", "read.lua"]
            .map(|f| std::fs::read_to_string(self.ctx.repo.join("src/index/redis").join(f)))
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .context("reading the index's Lua scripts")?
            .concat();
        let sha =
            crate::redis_info::script_load(&mut backends::connect(&redis.url()).await?, &source)
                .await?;
        let keys: Vec<String> = (1..=5)
            .map(|r| format!("dynapage:idx:{{{SKU}}}:r{r}"))
            .collect();
        let (mut rps, mut p50, mut p99) = (vec![], vec![], vec![]);
        for run in 1..=self.args.runs {
            let output = tokio::process::Command::new("redis-benchmark")
                .args([
                    "-p",
                    &redis.port.to_string(),
                    "-c",
                    &self.args.connections.to_string(),
                ])
                .args(["-n", "200000", "--csv", "EVALSHA", &sha, "5"])
                .args(&keys)
                // A bare deep jump: the bound at rank deep - 1, no anchor, no pages.
                .args(["desc", "", "", &(deep - 1).to_string(), "none", "", ""])
                .args(["1", "newest", "none", "0"])
                .output()
                .await?;
            let text = String::from_utf8_lossy(&output.stdout);
            let line = text.lines().last().unwrap_or_default().to_owned();
            log(&format!("raw redis key_at run {run}: {line}"));
            let cells: Vec<f64> = line
                .split(',')
                .map(|c| c.trim_matches('"').parse().unwrap_or(0.0))
                .collect();
            rps.push(cells.get(1).copied().unwrap_or(0.0));
            p50.push(cells.get(4).copied().unwrap_or(0.0));
            p99.push(cells.get(6).copied().unwrap_or(0.0));
        }
        self.raw_csv.row(&[
            &"redis",
            &"EVALSHA read.lua bound (five sets)",
            &self.args.connections,
            &round(median(&rps), 2),
            &spread_pct(&rps).round(),
            &round(median(&p50), 3),
            &round(median(&p99), 3),
            &1,
        ])
    }

    /// The one-query pages again with DynamoDB Local and Redis on core 0 and the client side
    /// (the server and wrk, or the raw client) on core 1. On shared cores every cycle the API
    /// spends is taken from DynamoDB Local; confined, each side has a core of its own, as when
    /// the database is another machine (DynamoDB itself always is).
    pub(super) async fn pinned(
        &mut self,
        server: &Server,
        dynamo: &backends::DynamoDbLocal,
        redis: &backends::Redis,
        deep: u64,
    ) -> anyhow::Result<()> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if cores < 2 || crate::processes::require("taskset", "").is_err() {
            log("skipping the pinned pass (needs 2 cores and taskset)");
            return Ok(());
        }
        log(
            "pinned pass: DynamoDB Local and Redis on core 0, server and load generators on core 1",
        );
        for (core, pid) in [
            ("0", dynamo.process.pid()),
            ("0", redis.process.pid()),
            ("1", server.pid()),
        ] {
            let status = std::process::Command::new("taskset")
                .args(["-apc", core, &pid.to_string()])
                .stdout(std::process::Stdio::null())
                .status()?;
            anyhow::ensure!(status.success(), "taskset -apc {core} {pid} failed");
        }
        self.cpus = Some("1");
        self.warm_up(&server.api, deep, &redis.url()).await?;
        self.cases("dynamodb-pinned", &server.api, deep, Some(&redis.url()))
            .await?;
        self.cpus = None;
        Ok(())
    }
}
