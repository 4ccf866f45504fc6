//! `dynapage lambda-sync`: the stream consumer as an AWS Lambda function, fed by the table's
//! DynamoDB stream through an event source mapping (`deploy/template.yaml`). It runs under the
//! Lambda runtime (`AWS_LAMBDA_RUNTIME_API` and the function's variables, which Lambda sets)
//! and applies each batch to the Redis index with the same code as `dynapage sync`
//! (`crate::sync::lambda`). Lambda keeps the checkpoints, so no `sync:` keys are written.

use anyhow::Context;
use aws_lambda_events::event::dynamodb::Event;
use aws_lambda_events::event::streams::DynamoDbEventResponse;
use clap::Args;
use lambda_runtime::{LambdaEvent, service_fn};

use crate::config::{BackendArgs, IndexKind};
use crate::index::redis::RedisIndex;
use crate::sync::apply_lambda_batch;

#[derive(Args, Debug)]
pub struct LambdaSyncArgs {
    /// The Redis index (`--index redis` and its `--redis-*` settings; the store is not read).
    #[command(flatten)]
    pub backend: BackendArgs,
}

pub async fn run(args: LambdaSyncArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.backend.index == IndexKind::Redis,
        "`lambda-sync` writes the Redis index: set --index redis (DYNAPAGE_INDEX=redis) and \
         --redis-url (DYNAPAGE_REDIS_URL)"
    );
    let index = RedisIndex::connect(args.backend.redis_config()?)
        .await
        .context("--redis-url / DYNAPAGE_REDIS_URL, --redis-ca-file / DYNAPAGE_REDIS_CA_FILE")?;
    tracing::info!("lambda-sync ready");
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
