//! `dynapage lambda-sync`: the stream consumer as an AWS Lambda function, fed by the table's
//! DynamoDB stream through an event source mapping (`deploy/template.yaml`). It runs under the
//! Lambda runtime (`AWS_LAMBDA_RUNTIME_API` and the function's variables, which Lambda sets)
//! and applies each batch to the Redis index with the same code as `dynapage sync`
//! (`crate::sync::lambda`). Lambda keeps the checkpoints, so no `sync:` keys are written.
//! Settings that can never work, and commands the Redis user may not run (those
//! `startup::open_redis` refuses for the other commands), fail the function's init: reported
//! to the Runtime API, then a non-zero exit.

use anyhow::Context;
use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use clap::Args;
use lambda_runtime::{Diagnostic, LambdaEvent, service_fn};

use crate::config::{BackendArgs, IndexKind};
use crate::index::redis::RedisIndex;
use crate::live::redis_log::RedisLog;
use crate::live::{Publishing, Sink};
use crate::redis::RedisHandle;
use crate::startup::Process;
use crate::sync::apply_lambda_batch;

/// The variable Lambda sets to the Runtime API's `host:port`.
const RUNTIME_API: &str = "AWS_LAMBDA_RUNTIME_API";
/// The error type Lambda records for a function that could not start.
const INIT_ERROR: &str = "Runtime.InitError";
/// How long the report of an init error may take.
const REPORT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Args, Debug)]
pub struct LambdaSyncArgs {
    /// The Redis index (`--index redis` and its `--redis-*` settings; the store is not read).
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Purges the CDN after each batch (sent before the batch is acknowledged only as far as
    /// the invocation lasts: a frozen function sends the rest at its next invocation).
    #[command(flatten)]
    pub purge: crate::config::PurgeArgs,
}

pub(super) async fn run(args: LambdaSyncArgs) -> anyhow::Result<()> {
    let redis = match open_redis(&args).await {
        Ok(redis) => redis,
        Err(error) => {
            report_init_error(&error).await;
            return Err(error);
        }
    };
    tracing::info!("lambda-sync ready");
    // What it applies goes to the change log too, for the servers' subscriptions.
    let purger = args
        .purge
        .purger(&tokio_util::sync::CancellationToken::new())?;
    let index = Publishing::new(
        RedisIndex::new(&redis),
        Sink::Redis(RedisLog::new(
            &redis,
            crate::startup::log_len(args.backend.change_log_max_len),
        )),
    )
    .with_purger(purger);
    let handler = service_fn(move |event: LambdaEvent<Event>| {
        let index = index.clone();
        async move {
            apply_lambda_batch(&index, &event.payload.records)
                .await
                .map_err(lambda_runtime::Error::from)
        }
    });
    lambda_runtime::run::<_, _, DynamoDbEventResponse, _, _, _, _>(handler)
        .await
        .map_err(|e| anyhow::anyhow!(e))
        .context("the Lambda runtime stopped")
}

/// The index's Redis, checked as every command checks it at start-up (`startup::open_redis`):
/// settings Redis refuses (TLS, certificate, password) and commands the user's ACL refuses
/// fail the function's init instead of every batch after it.
async fn open_redis(args: &LambdaSyncArgs) -> anyhow::Result<RedisHandle> {
    anyhow::ensure!(
        args.backend.index == IndexKind::Redis,
        "`lambda-sync` writes the Redis index: set --index redis (DYNAPAGE_INDEX=redis) and \
         --redis-url (DYNAPAGE_REDIS_URL)"
    );
    crate::startup::open_redis(&args.backend, Process::LambdaSync).await
}

/// Tells Lambda why the function could not start (`POST /runtime/init/error`), so the reason is
/// the init error Lambda reports, not only a line in the function's log. The process then exits
/// non-zero with the message on stderr, as outside Lambda. lambda_runtime 1.5 posts there only
/// for its own SnapStart hooks and has no call for a handler's init, so the request is made here
/// with its Runtime API client. A report that fails is logged and changes nothing else.
async fn report_init_error(error: &anyhow::Error) {
    let Ok(api) = std::env::var(RUNTIME_API) else {
        return; // not under Lambda
    };
    let diagnostic = Diagnostic {
        error_type: INIT_ERROR.to_owned(),
        error_message: format!("{error:#}"),
    };
    // The Runtime API is local and answers at once; a stuck one must not hold the exit.
    let reported = tokio::time::timeout(REPORT_TIMEOUT, post_init_error(&api, &diagnostic)).await;
    if let Err(failure) = reported
        .map_err(anyhow::Error::from)
        .and_then(|posted| posted)
    {
        tracing::warn!(
            error = format!("{failure:#}"),
            "could not report the init error to the Lambda Runtime API"
        );
    }
}

async fn post_init_error(api: &str, diagnostic: &Diagnostic) -> anyhow::Result<()> {
    let client = lambda_runtime_api_client::Client::builder()
        .with_endpoint(
            format!("http://{api}")
                .parse()
                .with_context(|| format!("{RUNTIME_API}={api}"))?,
        )
        .build()?;
    let request = lambda_runtime_api_client::build_request()
        .method("POST")
        .uri("/2018-06-01/runtime/init/error")
        .header("lambda-runtime-function-error-type", INIT_ERROR)
        .body(serde_json::to_string(diagnostic)?.into())?;
    let response = client.call(request).await.map_err(|e| anyhow::anyhow!(e))?;
    anyhow::ensure!(
        response.status().is_success(),
        "the Runtime API answered {}",
        response.status()
    );
    Ok(())
}
