//! `lambda-sync`: the records per second `dynapage lambda-sync` applies (BENCHMARKS.md,
//! "Consumers"). This tool serves the Lambda Runtime API on loopback to the real binary and
//! feeds it `records` synthetic DynamoDB stream INSERT records of one product, in batches of
//! each `--batch-sizes`, one invocation at a time, timing from the first batch handed out to
//! the last answer. The index is a redis-server of our own.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, ensure};
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use dynapage::domain::CommentId;
use serde_json::{Value, json};
use tokio::sync::{Mutex, Notify};

use crate::backends;
use crate::context::Context;
use crate::machine::Machine;
use crate::processes;
use crate::report::{Summary, log};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Records in each run
    #[arg(long, default_value_t = 20_000)]
    records: usize,
    /// Records per invocation, one run each
    #[arg(long, value_delimiter = ',', default_value = "100,1000")]
    batch_sizes: Vec<usize>,
}

const SKU: &str = "LAMBDA_BENCH";

/// One INSERT record as DynamoDB Streams delivers it to Lambda.
fn record(i: usize) -> Value {
    let ms = 1_767_225_600_000 + (i / 3) as u64;
    let id = CommentId::new(ms).to_string();
    let rating = 1 + i % 5;
    json!({
        "eventID": i.to_string(), "eventName": "INSERT", "eventVersion": "1.1",
        "eventSource": "aws:dynamodb", "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1_767_225_600.0,
            "Keys": { "id": { "S": id } },
            "NewImage": {
                "id": { "S": id }, "sku": { "S": SKU }, "sortKey": { "S": format!("{ms:013}#{id}") },
                "skuRating": { "S": format!("{SKU}#{rating}") }, "author": { "S": "bench" },
                "body": { "S": "x".repeat(120) }, "rating": { "N": rating.to_string() },
                "createdAt": { "N": ms.to_string() }, "version": { "N": "1" },
            },
            "SequenceNumber": (100_000_000_000_000_000_000u128 + i as u128).to_string(),
            "SizeBytes": 300, "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    })
}

/// The Runtime API's state: the batches, the next to hand out, and the answers.
#[derive(Debug)]
struct Runtime {
    batches: Vec<Bytes>,
    next: AtomicUsize,
    answered: AtomicUsize,
    failures: AtomicUsize,
    first_handed: Mutex<Option<Instant>>,
    last_answered: Mutex<Option<Instant>>,
    done: Notify,
}

/// `GET …/invocation/next` hands out the next batch (and waits for ever after the last);
/// `POST …/response` or `…/error` is an answer.
async fn handle(
    runtime: Arc<Runtime>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> axum::response::Response {
    if method == Method::GET {
        let i = runtime.next.fetch_add(1, Ordering::SeqCst);
        let Some(batch) = runtime.batches.get(i).cloned() else {
            return std::future::pending().await;
        };
        runtime
            .first_handed
            .lock()
            .await
            .get_or_insert_with(Instant::now);
        let deadline = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis()
            + 60_000;
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("lambda-runtime-aws-request-id", format!("r{i}")),
            ("lambda-runtime-deadline-ms", deadline.to_string()),
            (
                "lambda-runtime-invoked-function-arn",
                "arn:aws:lambda:us-east-1:1:function:f".to_owned(),
            ),
        ] {
            if let Ok(value) = value.parse() {
                headers.insert(name, value);
            }
        }
        return (headers, batch).into_response();
    }
    let failed = uri.path().contains("/error")
        || serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v["batchItemFailures"].as_array().map(|a| !a.is_empty()))
            .unwrap_or(false);
    if failed {
        runtime.failures.fetch_add(1, Ordering::SeqCst);
    }
    if runtime.answered.fetch_add(1, Ordering::SeqCst) + 1 == runtime.batches.len() {
        *runtime.last_answered.lock().await = Some(Instant::now());
        runtime.done.notify_one();
    }
    (StatusCode::ACCEPTED, "{}").into_response()
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    ctx.build_dynapage()?;
    let redis = backends::redis(ctx).await?;
    let mut out = Summary::create(&ctx.result("lambda-sync.txt"))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    for &batch in &args.batch_sizes {
        let line = one_run(ctx, &redis, batch, args.records).await?;
        out.line(&line)?;
    }
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

async fn one_run(
    ctx: &Context,
    redis: &backends::Redis,
    batch: usize,
    records: usize,
) -> anyhow::Result<String> {
    ensure!(
        batch > 0 && records >= batch,
        "a run needs at least one batch"
    );
    let batches: Vec<Bytes> = (0..records / batch)
        .map(|b| {
            let records: Vec<Value> = (0..batch).map(|j| record(b * batch + j)).collect();
            Bytes::from(json!({ "Records": records }).to_string())
        })
        .collect();
    let count = batches.len();
    let runtime = Arc::new(Runtime {
        batches,
        next: AtomicUsize::new(0),
        answered: AtomicUsize::new(0),
        failures: AtomicUsize::new(0),
        first_handed: Mutex::new(None),
        last_answered: Mutex::new(None),
        done: Notify::new(),
    });
    let app = axum::Router::new().fallback({
        let runtime = runtime.clone();
        move |method, uri, body| handle(runtime.clone(), method, uri, body)
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let api = tokio::spawn(async move { axum::serve(listener, app).await });
    let mut command = std::process::Command::new(ctx.dynapage());
    command
        .args([
            "lambda-sync",
            "--index",
            "redis",
            "--redis-url",
            &redis.url(),
        ])
        .args(["--redis-prefix", &format!("lb{batch}:")])
        .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", "f")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("RUST_LOG", "warn")
        .envs(crate::server::AWS_ENV);
    let lambda = processes::spawn(
        "dynapage lambda-sync",
        command,
        &ctx.raw(&format!("lambda-sync-{batch}.log")),
    )?;
    tokio::time::timeout(Duration::from_secs(300), runtime.done.notified())
        .await
        .context("lambda-sync did not answer every batch within 300 s")?;
    lambda.stop();
    api.abort();
    let (Some(first), Some(last)) = (
        *runtime.first_handed.lock().await,
        *runtime.last_answered.lock().await,
    ) else {
        anyhow::bail!("no batch was answered");
    };
    let seconds = last.duration_since(first).as_secs_f64();
    let n = batch * count;
    Ok(format!(
        "{n} records in {count} batches of {batch}: {seconds:.2} s = {:.0} records/s, {:.2} ms per batch, failures {}",
        n as f64 / seconds,
        seconds / count as f64 * 1e3,
        runtime.failures.load(Ordering::SeqCst)
    ))
}
