//! The one-box benchmark (BENCHMARKS.md, "One box for real"): durable writes per second with
//! 16 writers, start-up time and disk bytes per comment at 1 million comments, pages per
//! second against the in-memory store at offset 0 and deep, and export/import rates of the
//! embedded store (`.jsonl` and `.jsonl.zst`). Everything runs the release binary as separate processes on 127.0.0.1 and
//! talks to it over HTTP, like a client; every process it starts is killed when it ends.
//!
//! `cargo build --release --bin dynapage && cargo run --release --example one_box -- [COMMENTS]`

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const WRITERS: usize = 16;
const READERS: usize = 16;
const RUN: Duration = Duration::from_secs(8);
/// Longest wait for a server to answer `/readyz` (start-up loads and indexes every comment).
const READY_TIMEOUT: Duration = Duration::from_secs(600);
const SKU: &str = "DAFT_PUNK_TSHIRT";
const ADD: &str = "mutation($body: String!) { addComment(input: { sku: \"BOX\", author: \"bench\", body: $body, rating: 3 }) { comment { id } } }";
const PAGE: &str = "query($offset: Int) { comments(sku: \"DAFT_PUNK_TSHIRT\", first: 20, offset: $offset) { edges { cursor node { id author body rating createdAt } } pageInfo { hasNextPage hasPreviousPage } } }";

/// A server process, killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server binary of this example's own build (`target/release/dynapage` beside
/// `target/release/examples/one_box`, whatever the target directory; a debug build runs the
/// debug binary, whose figures mean nothing).
fn binary() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("dynapage")))
        .expect("the example runs from cargo's target directory")
}

/// Starts `dynapage serve ARGS` and waits until it answers; returns it and the start-up time.
async fn serve(args: &[&str]) -> (Server, Duration) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let started = Instant::now();
    let child = Command::new(binary())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--rate-limit-writes", "0", "--rate-limit-cost", "0"])
        .args(args)
        // Errors only: the demo defaults' warnings (no --auth, the public cursor key) are
        // expected here.
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .spawn()
        .expect("the server binary (cargo build --release --bin dynapage)");
    let mut server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let client = reqwest::Client::new();
    while started.elapsed() < READY_TIMEOUT {
        if let Ok(r) = client.get(format!("{}/readyz", server.url)).send().await {
            if r.status().is_success() {
                return (server, started.elapsed());
            }
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("dynapage serve {args:?} ended before it was ready: {status}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("dynapage serve {args:?} was not ready within {READY_TIMEOUT:?}");
}

async fn post(client: &reqwest::Client, url: &str, query: &str, variables: Value) -> bool {
    let body = json!({ "query": query, "variables": variables });
    match client
        .post(format!("{url}/graphql"))
        .json(&body)
        .send()
        .await
    {
        Ok(response) => response
            .json::<Value>()
            .await
            .is_ok_and(|v| v.get("errors").is_none()),
        Err(_) => false,
    }
}

/// `tasks` clients sending `query` as fast as answers come for [`RUN`]; answers without errors
/// per second. Fails if any answer had errors: a rate of failures is no figure.
async fn hammer(url: &str, tasks: usize, query: &'static str, variables: Value) -> f64 {
    let (done, failed, stop) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (url, done, failed, stop, variables) = (
                url.to_owned(),
                done.clone(),
                failed.clone(),
                stop.clone(),
                variables.clone(),
            );
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let mut variables = variables.clone();
                    if variables.get("body").is_some() {
                        variables["body"] = json!(format!("writer {t} comment {n}"));
                    }
                    let counter = if post(&client, &url, query, variables).await {
                        &done
                    } else {
                        &failed
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(RUN).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let count = done.load(Ordering::Relaxed);
    for handle in handles {
        let _ = handle.await;
    }
    let failed = failed.load(Ordering::Relaxed);
    assert_eq!(failed, 0, "{query}: {failed} answers with errors");
    count as f64 / elapsed
}

/// Runs a `dynapage` command to its end; returns how long it took.
fn run(args: &[&str]) -> Duration {
    let started = Instant::now();
    let status = Command::new(binary())
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .status()
        .expect("dynapage runs");
    assert!(status.success(), "{args:?}");
    started.elapsed()
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

#[tokio::main]
async fn main() {
    let comments: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let work = tempfile::tempdir().expect("a work directory");
    println!("one box, {comments} comments, {WRITERS} writers, {READERS} readers, {RUN:?} per run");

    let writes_dir = work.path().join("writes");
    let (server, _) = serve(&["--data-dir", text(&writes_dir)]).await;
    let durable = hammer(&server.url, WRITERS, ADD, json!({ "body": "" })).await;
    drop(server);
    let (server, _) = serve(&["--demo-comments", "0"]).await;
    let memory = hammer(&server.url, WRITERS, ADD, json!({ "body": "" })).await;
    drop(server);
    println!(
        "addComment/s over HTTP, {WRITERS} writers: durable {durable:.0}, in-memory {memory:.0}"
    );

    let big = work.path().join("big");
    let count = comments.to_string();
    let seeding = run(&[
        "seed",
        "--data-dir",
        text(&big),
        "--sku",
        SKU,
        "--count",
        &count,
    ]);
    println!(
        "seed {comments} into --data-dir: {:.1} s ({:.0} comments/s); disk: {} bytes, {:.0} bytes per comment",
        seeding.as_secs_f64(),
        comments as f64 / seeding.as_secs_f64(),
        dir_bytes(&big),
        dir_bytes(&big) as f64 / comments as f64
    );
    let (server, startup) = serve(&["--data-dir", text(&big)]).await;
    println!(
        "start-up with {comments} comments (load + index): {:.2} s",
        startup.as_secs_f64()
    );
    let deep = comments.saturating_sub(1_000);
    let mut pages = Vec::new();
    for offset in [0, deep] {
        pages.push(hammer(&server.url, READERS, PAGE, json!({ "offset": offset })).await);
    }
    drop(server);
    let (server, startup) = serve(&["--demo-comments", &count]).await;
    println!(
        "in-memory demo start-up with {comments} comments: {:.2} s",
        startup.as_secs_f64()
    );
    for (i, offset) in [0, deep].into_iter().enumerate() {
        let memory = hammer(&server.url, READERS, PAGE, json!({ "offset": offset })).await;
        println!(
            "pages/s at offset {offset}: durable {:.0}, in-memory {memory:.0} ({:.2}x)",
            pages[i],
            pages[i] / memory
        );
    }
    drop(server);

    for name in ["export.jsonl", "export.jsonl.zst"] {
        transfer(&big, &work.path().join(name), comments);
    }
    let backup = run(&[
        "backup",
        "--data-dir",
        text(&big),
        "--out",
        text(&work.path().join("b")),
    ]);
    println!("backup {:.1} s", backup.as_secs_f64());
}

/// Exports the store in `big` to `file`, imports it into a fresh store twice, and prints the
/// rates and the file's size.
fn transfer(big: &Path, file: &Path, comments: u64) {
    let export = run(&["export", "--data-dir", text(big), "--out", text(file)]);
    let fresh = file.with_extension("imported");
    let import = run(&["import", "--in", text(file), "--data-dir", text(&fresh)]);
    let again = run(&["import", "--in", text(file), "--data-dir", text(&fresh)]);
    let rate = |d: Duration| comments as f64 / d.as_secs_f64();
    let bytes = std::fs::metadata(file).map_or(0, |m| m.len());
    println!(
        "{}: {bytes} bytes; embedded export {:.0} comments/s, import {:.0}/s (again, nothing to write: {:.0}/s)",
        file.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
        rate(export),
        rate(import),
        rate(again),
    );
}
