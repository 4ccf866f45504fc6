//! The PostgreSQL database PostGraphile serves: created on the server of `--postgres-url` and
//! loaded with the demo product's comments, unless it already holds them.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use dynapage::cli::seed::NEWEST_GENERATED_MS;
use dynapage::domain::{Sku, millis_to_datetime};
use dynapage::generate::CommentGenerator;
use tokio::io::AsyncWriteExt as _;

use super::{Args, DEMO_SEED};
use crate::benchmarks::SKU;
use crate::processes::wait_until;
use crate::report::log;

/// The database PostGraphile serves.
pub(super) struct Database {
    pub url: String,
    pub version: String,
}

impl Database {
    /// Creates and loads the database, unless it already holds the same comments.
    pub(super) async fn load(args: &Args) -> anyhow::Result<Self> {
        let (base, _) = args
            .postgres_url
            .rsplit_once('/')
            .context("--postgres-url names no database")?;
        let url = format!("{base}/{}", args.database);
        let tag = format!("{SKU} seed {DEMO_SEED} newest {NEWEST_GENERATED_MS}");
        let version = psql(&args.postgres_url, "SHOW server_version").await?;
        let database = Self {
            url,
            version: format!("PostgreSQL {version}"),
        };
        let held = psql(
            &database.url,
            "SELECT comments || ' ' || generator FROM bench_data",
        )
        .await;
        if held.ok().as_deref() == Some(&format!("{} {tag}", args.comments)) {
            log(&format!("{} already holds the comments", args.database));
            return Ok(database);
        }
        let name = &args.database;
        psql(
            &args.postgres_url,
            &format!("DROP DATABASE IF EXISTS {name}"),
        )
        .await?;
        psql(&args.postgres_url, &format!("CREATE DATABASE {name}")).await?;
        psql(&database.url, SCHEMA).await?;
        database.copy_comments(args.comments).await?;
        log("indexing and analysing");
        psql(&database.url, INDEX).await?;
        psql(&database.url, "VACUUM ANALYZE comment").await?;
        psql(
            &database.url,
            &format!("INSERT INTO bench_data VALUES ({}, '{tag}')", args.comments),
        )
        .await?;
        Ok(database)
    }

    /// Writes `count` comments of the demo product through `\copy`, with progress.
    async fn copy_comments(&self, count: u64) -> anyhow::Result<()> {
        let copy = "\\copy comment (id, product_sku, author, body, rating, created_at) FROM pstdin WITH (FORMAT csv)";
        let mut child = tokio::process::Command::new("psql")
            .args([self.url.as_str(), "-v", "ON_ERROR_STOP=1", "-q", "-c", copy])
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting psql")?;
        let mut stdin = tokio::io::BufWriter::new(child.stdin.take().context("psql's input")?);
        let sku = Sku::parse(SKU)?;
        let generator = CommentGenerator::new(sku, DEMO_SEED, NEWEST_GENERATED_MS);
        for (i, comment) in generator.take(usize::try_from(count)?).enumerate() {
            let at = millis_to_datetime(comment.created_at_ms).format("%Y-%m-%d %H:%M:%S%.3f+00");
            let line = format!(
                "{},{SKU},{},{},{},{at}\n",
                comment.id,
                csv(&comment.author),
                csv(&comment.body),
                comment.rating.get()
            );
            stdin.write_all(line.as_bytes()).await?;
            if (i + 1) % (count as usize / 10).max(1) == 0 {
                log(&format!(
                    "PostgreSQL: {} of {count} comments written",
                    i + 1
                ));
            }
        }
        stdin.shutdown().await?;
        drop(stdin);
        let status = child.wait().await?;
        ensure!(status.success(), "psql \\copy failed ({status})");
        Ok(())
    }

    /// Waits until no query of PostGraphile's runs (at most two minutes).
    pub(super) async fn await_idle(&self) -> anyhow::Result<()> {
        let active = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()";
        wait_until(
            "PostgreSQL idle",
            Duration::from_secs(120),
            None,
            || async { psql(&self.url, active).await.is_ok_and(|n| n == "0") },
        )
        .await
    }

    pub(super) async fn setting(&self, name: &str) -> anyhow::Result<String> {
        psql(&self.url, &format!("SHOW {name}")).await
    }
}

/// The tables, as PostGraphile exposes them: `productBySku` and its `commentsByProductSku`.
/// Ids and SKUs compare byte by byte (`COLLATE "C"`), as dynapage orders equal times by id.
const SCHEMA: &str = r#"
CREATE TABLE product (sku text COLLATE "C" PRIMARY KEY, name text NOT NULL);
CREATE TABLE comment (
  id text COLLATE "C" PRIMARY KEY,
  product_sku text COLLATE "C" NOT NULL REFERENCES product (sku),
  author text NOT NULL,
  body text NOT NULL,
  rating smallint NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE TABLE bench_data (comments bigint NOT NULL, generator text NOT NULL);
INSERT INTO product VALUES ('DAFT_PUNK_TSHIRT', 'Daft Punk T-shirt');
"#;

/// The index of the page's order (newest first, equal times by id); a `VACUUM ANALYZE` follows
/// (statistics, and the visibility map with which `count(*)` reads the index alone).
const INDEX: &str =
    "CREATE INDEX comment_product_newest ON comment (product_sku, created_at DESC, id DESC)";

/// A CSV field, quoted.
fn csv(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// Runs `sql` with psql; returns what it printed (unaligned, tuples only), trimmed.
async fn psql(url: &str, sql: &str) -> anyhow::Result<String> {
    let output = tokio::process::Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql])
        .kill_on_drop(true)
        .output()
        .await
        .context("running psql")?;
    ensure!(
        output.status.success(),
        "psql failed on {sql:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
